-- The player index in sealed runs. The index on (game, player_id, mode, season, seq) took one
-- random page write per appended event (players arrive in no order), which at 10M events made
-- the disk, not the CPU, the bound on ingestion. Now the log is appended with no index on the
-- player, and every RUN of consecutive seqs, once complete, is indexed in one sorted insert:
-- `run` (the run's first seq) leads the key and grows, so a run's entries go to the right edge
-- of the tree in order. A recompute looks a player up in every sealed run and scans the short
-- unsealed tail of the log. Both tables only grow; a run is written with the events that
-- complete it, in the same transaction.
DROP INDEX score_events_player;
CREATE TABLE player_runs (
    run BIGINT NOT NULL,
    game TEXT NOT NULL,
    player_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    season TEXT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (run, game, player_id, mode, season, seq)
);
-- The sealed runs: seqs start_seq <= seq < end_seq are in player_runs under run = start_seq.
CREATE TABLE log_runs (
    start_seq BIGINT NOT NULL PRIMARY KEY,
    end_seq BIGINT NOT NULL
);
-- A log written before this migration becomes the first run.
INSERT INTO player_runs (run, game, player_id, mode, season, seq)
    SELECT 0, game, player_id, mode, season, seq FROM score_events
    ORDER BY game, player_id, mode, season, seq;
INSERT INTO log_runs (start_seq, end_seq)
    SELECT 0, COALESCE(MAX(seq), 0) + 1 FROM score_events;
-- The late-event queue is a handful of rows: a partial index finds them without a scan.
CREATE INDEX score_events_late ON score_events (game, seq) WHERE status = 'LATE'
