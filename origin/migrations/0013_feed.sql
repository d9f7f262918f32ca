-- The feed (issue 41): what players care about, per game, in `seq` order. A record's seq is
-- its log entry's seq times 4096 plus its place among that entry's records, so a record made
-- again from the log (a restart replays the entries after its checkpoint) is the same row.
ALTER TABLE boards ADD COLUMN feed TEXT NOT NULL DEFAULT '';

CREATE TABLE feed (
    game TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    record TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (game, seq)
);

-- The last record stored, whatever its game: where a start or a warm copy goes on making them.
CREATE INDEX feed_seq ON feed (seq);

-- The records retention removed, per game: a read from before `pruned_through` is refused.
CREATE TABLE feed_horizon (
    game TEXT NOT NULL PRIMARY KEY,
    pruned_through BIGINT NOT NULL
);
