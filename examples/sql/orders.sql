-- An unchanged Flink SQL script for bluegreen-sql-runner (docs/sql.md), run locally by
-- examples/manifests/sql-job-real.yaml. ${WORK} is set by the runner's --var WORK=...
SET 'table.local-time-zone' = 'UTC';

-- 20 orders a second, event times up to 1 s in the past, 8 keys.
CREATE TABLE orders (
  id BIGINT,
  k INT,
  ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '20',
  'fields.k.min' = '0',
  'fields.k.max' = '7',
  'fields.ts.max-past' = '1 s'
);

CREATE TABLE per_window (
  k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, window_time TIMESTAMP_LTZ(3)
) WITH ('connector' = 'filesystem', 'path' = 'file://${WORK}/output/sql-job/per_window', 'format' = 'csv');

CREATE TABLE projected (id BIGINT, k INT, ts TIMESTAMP_LTZ(3))
  WITH ('connector' = 'filesystem', 'path' = 'file://${WORK}/output/sql-job/projected', 'format' = 'csv');

EXECUTE STATEMENT SET BEGIN
  -- A 10 s tumbling count per key: window state that green restores from blue's savepoint.
  INSERT INTO per_window
    SELECT k, window_start, window_end, COUNT(*), window_time
    FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY k, window_start, window_end, window_time;
  -- Append-only: every order, with its event time.
  INSERT INTO projected SELECT id, k, ts FROM orders;
END;
