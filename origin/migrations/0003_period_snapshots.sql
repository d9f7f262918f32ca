-- Closed periods leave memory after the retention and are read from here: the ranked entries
-- of one board in one period, at the board_version they closed with.
CREATE TABLE period_snapshots (
    game TEXT NOT NULL,
    mode TEXT NOT NULL,
    season TEXT NOT NULL,
    scope TEXT NOT NULL,
    period_key TEXT NOT NULL,
    board_version BIGINT NOT NULL,
    entries TEXT NOT NULL,
    PRIMARY KEY (game, mode, season, scope, period_key)
);
