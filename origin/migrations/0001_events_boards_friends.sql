-- The event log, board definitions and friend lists. The same SQL runs on SQLite and PostgreSQL.
CREATE TABLE boards (
    game TEXT NOT NULL,
    mode TEXT NOT NULL,
    season TEXT NOT NULL,
    scope TEXT NOT NULL,
    score_mode TEXT NOT NULL,
    value_min BIGINT NOT NULL,
    value_max BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (game, mode, season, scope)
);

-- Events are the truth. `seq` is the order in which they were committed and applied; a rebuild
-- replays them in that order. `scopes` lists the boards of (game, mode, season) the event
-- feeds, comma-separated (scope names cannot hold commas).
CREATE TABLE score_events (
    seq BIGINT NOT NULL PRIMARY KEY,
    game TEXT NOT NULL,
    event_id TEXT NOT NULL,
    player_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    season TEXT NOT NULL,
    scopes TEXT NOT NULL,
    value BIGINT NOT NULL,
    achieved_at BIGINT NOT NULL,
    received_at BIGINT NOT NULL,
    source TEXT NOT NULL,
    CONSTRAINT score_events_game_event_id UNIQUE (game, event_id)
);

CREATE TABLE friends (
    player_id TEXT NOT NULL,
    friend_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (player_id, friend_id)
);
