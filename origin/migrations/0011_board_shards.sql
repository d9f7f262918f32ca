-- Split boards (issue 39): how many score-range shards a board's instances are split into,
-- 1 (whole) to 64. A layout, not a rule: every answer is the whole board's.
ALTER TABLE boards ADD COLUMN shards BIGINT NOT NULL DEFAULT 1;
