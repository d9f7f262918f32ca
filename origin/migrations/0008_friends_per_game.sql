-- Friend lists belong to a game: that game's service sets them and that game's friends-of
-- reads them, so no other game can plant a friend in them. Every existing list is copied to
-- each game its player has events in (one scan of the log). A list whose player has no events
-- in any game has no game to go to; it stays as it was in `friends_without_game`, which the
-- service never reads, so that no list is lost and an operator can set it again per game.
CREATE TABLE game_friends (
    game TEXT NOT NULL,
    player_id TEXT NOT NULL,
    friend_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (game, player_id, friend_id)
);

INSERT INTO game_friends (game, player_id, friend_id, position)
SELECT owners.game, f.player_id, f.friend_id, f.position
FROM friends f
JOIN (
    SELECT DISTINCT game, player_id FROM score_events
    WHERE player_id IN (SELECT player_id FROM friends)
) owners ON owners.player_id = f.player_id;

DELETE FROM friends WHERE player_id IN (SELECT player_id FROM game_friends);

ALTER TABLE friends RENAME TO friends_without_game;

ALTER TABLE game_friends RENAME TO friends
