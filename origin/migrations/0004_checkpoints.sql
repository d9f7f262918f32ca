-- Restart checkpoints: every in-memory board instance and the season and moderation state as
-- of one log `seq`, so a start loads them and replays only the log after that `seq`. Derived
-- state, never the truth: without a usable checkpoint a start replays the whole log. Part 0 is
-- the manifest (JSON), parts 1.. the boards' bytes in order. Only the newest is kept.
CREATE TABLE checkpoint_parts (
    seq BIGINT NOT NULL,
    part BIGINT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (seq, part)
);
