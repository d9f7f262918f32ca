-- The player index in pages (see `player_index.rs`): for every sealed run, the (player key,
-- seq) of its events sorted by key, 512 or more to a row, keyed by the first key on the row.
-- It replaces `player_runs`, whose rows (four text columns each, in two B-trees) SQLite sorted
-- and inserted inside the writer's transaction whenever a group sealed a run: a fifth of the
-- database's time under batch load. The keys are hashes, which SQL cannot compute, so the
-- migration's code (`Store::page_sealed_runs`) pages the runs already sealed from the log and
-- then drops `player_runs`, in this migration's transaction.
CREATE TABLE player_pages (
    run BIGINT NOT NULL,
    first_key BIGINT NOT NULL,
    entries BYTEA NOT NULL,
    PRIMARY KEY (run, first_key)
)
