CREATE TABLE orders (
  order_id   BIGINT,
  customer   STRING,
  product    STRING,
  quantity   INT,
  price      DECIMAL(10, 2),
  status     STRING,
  order_time TIMESTAMP_LTZ(3),
  `partition` INT    METADATA VIRTUAL,
  `offset`    BIGINT METADATA VIRTUAL
) WITH (
  'connector' = 'kafka-sharegroup',
  'bootstrap.servers' = '127.0.0.1:9092',
  'topic' = 'orders',
  'share-group-id' = 'kshare-demo',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);
