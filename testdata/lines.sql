CREATE TABLE t (line STRING) WITH (
  'connector' = 'kafka-sharegroup',
  'bootstrap.servers' = '127.0.0.1:9092',
  'topic' = 't',
  'share-group-id' = 'readme',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'raw'
);
SELECT line FROM t LIMIT 5;
