//! The store's errors (`StoreError`): unavailable, database, undecodable, corrupt, each keeping its
//! source, so the log shows sqlx's whole chain rather than a flattened string.
//!
//! The classification lives here because only the store knows what a driver error means: an absent
//! database is answered 503 `DATABASE_UNAVAILABLE` and retried by clients; a commit whose answer
//! was lost is an unknown outcome, which the writer resolves from the log.

/// The SQLSTATE the fence raises when a write's lease is not held (a class of our own).
pub(crate) const FENCED_CODE: &str = "SF001";

/// Why the store could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database cannot be reached or cannot serve now (stopped, restarting, locked past
    /// the wait): a retry is safe (503 `DATABASE_UNAVAILABLE`).
    #[error("{context}")]
    Unavailable {
        /// What was being done.
        context: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// The database answered a statement with an error.
    #[error("{context}")]
    Database {
        /// What was being done.
        context: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A packed page of rows cannot be read.
    #[error("{context}")]
    Undecodable {
        /// What was being read.
        context: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// In a cluster, a write of a partition this node does not hold at the epoch it proved
    /// (its lease expired or another node took it): nothing was written, and the partition is
    /// answered by its owner (503 `PARTITION_MOVING` here, meanwhile).
    #[error("{context}")]
    Fenced {
        /// What was being done.
        context: String,
        /// The database's refusal.
        #[source]
        source: sqlx::Error,
    },
    /// A stored row holds what no version of the service writes (an unknown status, a board
    /// whose range is reversed, a page of the player index cut short).
    #[error("{0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether it is the database's absence rather than its answer.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. } | StoreError::Fenced { .. })
    }

    /// Whether a write was refused because this node does not hold the partition's lease.
    pub fn is_fenced(&self) -> bool {
        matches!(self, StoreError::Fenced { .. })
    }
}

#[cfg(test)]
impl StoreError {
    /// The database's absence while doing `context`, for tests outside the store (which name no
    /// driver type).
    pub(crate) fn unavailable_for_tests(context: &str) -> StoreError {
        StoreError::Unavailable {
            context: context.into(),
            source: sqlx::Error::PoolTimedOut,
        }
    }
}

/// Maps a database error to the store's: one that says the database cannot be reached or
/// cannot serve now is [`StoreError::Unavailable`] (503, retried by clients), anything else a
/// failure of the database. Both keep the driver's error as their source.
pub(super) fn db_err(context: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    move |e| db_error(context, e)
}

/// [`db_err`] for one error.
pub(super) fn db_error(context: impl Into<String>, source: sqlx::Error) -> StoreError {
    let context = context.into();
    if let sqlx::Error::Database(db) = &source
        && db.code().as_deref() == Some(FENCED_CODE)
    {
        return StoreError::Fenced { context, source };
    }
    if unavailable(&source) {
        StoreError::Unavailable { context, source }
    } else {
        StoreError::Database { context, source }
    }
}

/// Whether a statement (a commit) that met this error may have been carried out all the same:
/// the database went away after it may have received it. An error getting a connection from
/// the pool means it was never sent.
pub(super) fn outcome_unknown(e: &sqlx::Error) -> bool {
    unavailable(e) && !matches!(e, sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed)
}

/// Whether an error is the database's absence rather than its answer to the statement: the
/// connection broke or could not be had, PostgreSQL is shutting down, starting or full, or
/// SQLite's lock stayed taken past the busy timeout. A statement that met such an error may or
/// may not have been carried out (a commit whose answer was lost); the writer finds out.
fn unavailable(e: &sqlx::Error) -> bool {
    use sqlx::Error::*;
    match e {
        Io(_) | Tls(_) | Protocol(_) | PoolTimedOut | PoolClosed | WorkerCrashed => true,
        Database(db) => db.code().is_some_and(|code| unavailable_code(&code)),
        _ => false,
    }
}

/// Whether a database error code is one of unavailability. PostgreSQL's SQLSTATEs have five
/// characters; SQLite's codes are numbers of at most four digits, their low byte the primary
/// code.
fn unavailable_code(code: &str) -> bool {
    if code.len() == 5 {
        // Connection exceptions, admin or crash shutdown, cannot connect now, too many
        // connections; and a session ended for idling inside a transaction, which a cluster's
        // sessions are after a lease time (a node paused mid-write, whose lease another node
        // may take): its transaction was rolled back, and the connection is gone.
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "25P03");
    }
    // SQLITE_BUSY and SQLITE_LOCKED, with their extended codes (BUSY_SNAPSHOT and the rest).
    code.parse::<u32>().is_ok_and(|code| matches!(code & 0xff, 5 | 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The database's absence is told apart from its answers: broken or unobtainable
    /// connections, PostgreSQL's connection and shutdown states and SQLite's lock are
    /// unavailability (503, and of unknown outcome for a commit); a constraint is not.
    #[test]
    fn unavailability_is_told_apart_from_the_databases_answers() {
        let io = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "expected to read 5 bytes, got 0 bytes at EOF",
        );
        for e in [
            sqlx::Error::Io(io),
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Protocol("unexpected message".into()),
            sqlx::Error::WorkerCrashed,
        ] {
            let shown = e.to_string();
            assert!(db_error("x", e).is_unavailable(), "{shown}");
        }
        // A statement that never got a connection was never sent.
        assert!(!outcome_unknown(&sqlx::Error::PoolTimedOut));
        assert!(outcome_unknown(&sqlx::Error::Protocol(
            "unexpected message".into()
        )));
        assert!(matches!(
            db_error("x", sqlx::Error::RowNotFound),
            StoreError::Database { .. }
        ));
        // PostgreSQL: connection failure, admin shutdown, starting up, too many connections,
        // a session ended idle in a transaction; SQLite: BUSY, BUSY_SNAPSHOT, LOCKED,
        // LOCKED_SHAREDCACHE.
        for code in [
            "08006", "08001", "57P01", "57P03", "53300", "25P03", "5", "517", "6", "262",
        ] {
            assert!(unavailable_code(code), "{code}");
        }
        // Unique violations (PostgreSQL, SQLite's UNIQUE and PRIMARY KEY), SQLite's CONSTRAINT
        // and IOERR, a serialization failure.
        for code in ["23505", "2067", "1555", "19", "10", "40001"] {
            assert!(!unavailable_code(code), "{code}");
        }
    }
}
