-- Time and trust: period calendars on boards, event status for the late-event queue, the
-- action log (season transitions, moderation, late decisions) that shares `seq` with the
-- event log, and the immutable season results.
ALTER TABLE boards ADD COLUMN periods TEXT NOT NULL DEFAULT 'all_time';
ALTER TABLE boards ADD COLUMN grace_seconds BIGINT NOT NULL DEFAULT 300;
ALTER TABLE boards ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';

-- APPLIED, or LATE (waiting for a decision), LATE_APPLIED, LATE_REJECTED. A cache of what the
-- action log says, kept in the same transaction as the action, for listing the queue.
ALTER TABLE score_events ADD COLUMN status TEXT NOT NULL DEFAULT 'APPLIED';

-- Every action in commit order, sharing `seq` with score_events so a rebuild interleaves them
-- exactly as they happened. `action_id` is the client's moderation_id (unique per game).
CREATE TABLE actions (
    seq BIGINT NOT NULL PRIMARY KEY,
    game TEXT NOT NULL,
    kind TEXT NOT NULL,
    action_id TEXT,
    body TEXT NOT NULL,
    result TEXT NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    CONSTRAINT actions_game_action_id UNIQUE (game, action_id)
);

-- Finalized results: one immutable row per board and correction number.
CREATE TABLE season_results (
    game TEXT NOT NULL,
    mode TEXT NOT NULL,
    season TEXT NOT NULL,
    scope TEXT NOT NULL,
    correction BIGINT NOT NULL,
    board_version BIGINT NOT NULL,
    digest TEXT NOT NULL,
    finalized_at BIGINT NOT NULL,
    action_seq BIGINT NOT NULL,
    entries TEXT NOT NULL,
    PRIMARY KEY (game, mode, season, scope, correction)
);

-- A player's events on one board, for recomputing an aggregate after moderation.
CREATE INDEX score_events_player ON score_events (game, player_id, mode, season, seq);
