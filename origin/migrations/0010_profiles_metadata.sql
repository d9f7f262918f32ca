-- Players by name (issue 31). A score event's metadata lives beside the log, one row per event
-- that has any, so an event without metadata costs nothing more than before; a rebuild reads it
-- with the event. `player_id` lets an erasure find a player's rows. Profiles themselves are
-- actions in the log (`PROFILE`, `RENAME`, ...), so they need no table of their own.
CREATE TABLE event_metadata (
    seq BIGINT NOT NULL PRIMARY KEY,
    game TEXT NOT NULL,
    player_id TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX event_metadata_player ON event_metadata (game, player_id);
-- The largest metadata a board takes, 0 (none) to 256 bytes.
ALTER TABLE boards ADD COLUMN metadata_max_bytes BIGINT NOT NULL DEFAULT 256;
-- The target player of an action that names one (profiles and their moderation), so that an
-- erasure finds the rows that held a name without reading every action.
ALTER TABLE actions ADD COLUMN target_player_id TEXT;
CREATE INDEX actions_target_player ON actions (game, target_player_id);
