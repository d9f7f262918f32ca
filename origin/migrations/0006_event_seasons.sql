-- The seasons that have events, by game. Whether a never-set season may still be declared
-- open depends on it, and answering that from the log meant scanning it whole when the season
-- had none (2 s at 10M events, with the writer waiting). The writer adds a season's row in the
-- transaction of the first events it stores for it.
CREATE TABLE event_seasons (
    game TEXT NOT NULL,
    season TEXT NOT NULL,
    PRIMARY KEY (game, season)
);
INSERT INTO event_seasons (game, season) SELECT DISTINCT game, season FROM score_events
