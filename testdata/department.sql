CREATE MODEL department
INPUT (product STRING)
OUTPUT (department STRING)
WITH (
  'provider' = 'command',
  'command' = 'python3 testdata/department.py',
  'max-concurrent-operations' = '4'
);
SELECT order_id, product, department
FROM ML_PREDICT(TABLE orders, MODEL department, DESCRIPTOR(product))
WHERE department <> 'other';
