-- Who holds the log (issue 30). On PostgreSQL an origin holds a session-level advisory lock for
-- its whole life and records itself here, so that a second origin refused by the lock can name
-- it, and so that an origin which lost its lock's connection can tell, once it takes the lock
-- back, whether anyone held it in between. The lock decides; this row only describes its
-- holder (`session` is the backend pid of the connection holding the lock). SQLite keeps the
-- same record in the lock file beside the database and leaves this table empty.
CREATE TABLE log_owner (
    slot BIGINT NOT NULL PRIMARY KEY,
    role TEXT NOT NULL,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    listen TEXT,
    since BIGINT NOT NULL,
    session BIGINT NOT NULL
);
