//! The writer's multi-row statements, built once per backend and connection.
//!
//! Preparing a statement costs more than running a small one, so multi-row inserts come only in
//! fixed sizes (1,000 rows and powers of two) and each is prepared once per connection. On SQLite
//! they use `?` and `INSERT OR FAIL`, and a chunk whose rows share game, mode, season, scopes,
//! `received_at`, source and status binds those seven once, as numbered parameters after the
//! per-row ones, because binding copies every text value twice. The next chunk's values are bound
//! while the database runs the current one. A group of up to 64 events decided without a look-up
//! goes as one statement in a transaction of its own (one round trip instead of begin, insert,
//! commit); a stored id aborts it whole and the group is decided again.

use super::{Backend, Store};

/// The columns of an event row, in the order every read of events takes them.
pub(super) const EVENT_COLUMNS: &str = "seq, game, event_id, player_id, mode, season, scopes, value, achieved_at, received_at, source, status, segments";

/// Rows per multi-row statement: within SQLite's 32,766 and PostgreSQL's 65,535 bound
/// parameters at 13 columns.
const ROWS_PER_STATEMENT: usize = 1_000;

/// The row counts of the multi-row statements: full ones, then powers of two for the rest.
const STATEMENT_SIZES: [usize; 11] = [ROWS_PER_STATEMENT, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1];

/// Splits `rows` into chunks of [`STATEMENT_SIZES`], largest first: 1,000 rows as one
/// statement, 37 as three (32, 4 and 1).
pub(super) fn statement_sizes<T>(mut rows: &[T]) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        let size = *STATEMENT_SIZES.iter().find(|&&size| size <= rows.len())?;
        let (chunk, rest) = rows.split_at(size);
        rows = rest;
        Some(chunk)
    })
}

/// The most rows [`Store::insert_events_at_once`] takes, in one statement of exactly that many
/// rows: a prepared statement for each size, 97 on the writer's connection with the 33 sizes of
/// the look-up and the two inserts, within sqlx's cache of 100 statements per connection.
pub const AT_ONCE_ROWS: usize = 64;

/// The multi-row statements the writer runs for every group.
#[derive(Clone, Copy)]
pub(super) enum Statement {
    FindEvents = 0,
    InsertEvents = 1,
    /// SQLite: an insert of rows that share their game, mode, season, scopes, `received_at`,
    /// source and status, bound once (see [`push_shared_rows`]).
    InsertShared = 2,
    InsertAtOnce = 3,
}

/// The columns of an event row that each row binds in a statement of shared rows; the other
/// seven are bound once for the whole statement.
pub(super) const OWN_COLUMNS: usize = 6;

/// `WITH r(...) AS (VALUES ...) INSERT OR FAIL INTO score_events (...) SELECT ... FROM r WHERE
/// true` for `rows` rows of which only the seq, event id, player, value, `achieved_at` and
/// dimension values are bound per row; the other seven columns are the parameters numbered
/// after them, `?{6 x rows + 1}` to `?{6 x rows + 7}`, bound once. (`WHERE true` is how SQLite tells an
/// upsert's `ON CONFLICT` from a join's `ON` after a `SELECT`.)
///
/// Each text value sqlx binds is copied by SQLite (and by sqlx before it) and freed after the
/// statement, so the seven shared columns are bound once rather than per row. The per-row parameters are anonymous and come
/// first in the text, so SQLite numbers them 1 to `6 x rows` in order, and sqlx binds them in
/// order without looking their names up; only the seven shared ones are named.
pub(super) fn push_shared_rows(sql: &mut String, rows: usize) {
    sql.push_str("WITH r(seq, event_id, player_id, value, achieved_at, segments) AS (VALUES ");
    for i in 0..rows {
        sql.push_str(if i == 0 {
            "(?, ?, ?, ?, ?, ?)"
        } else {
            ", (?, ?, ?, ?, ?, ?)"
        });
    }
    let shared = OWN_COLUMNS * rows;
    sql.push_str(
        ") INSERT OR FAIL INTO score_events (seq, game, event_id, player_id, mode, season, scopes, \
         value, achieved_at, received_at, source, status, segments) SELECT seq, ",
    );
    let named = |n: usize| format!("?{}", shared + n);
    sql.push_str(&format!(
        "{}, event_id, player_id, {}, {}, {}, value, achieved_at, {}, {}, {}, segments FROM r WHERE true",
        named(1),
        named(2),
        named(3),
        named(4),
        named(5),
        named(6),
        named(7)
    ));
}

/// ` score_events (columns) VALUES ($1, ..., $13), ...` for `rows` rows.
fn push_event_rows(sql: &mut String, rows: usize) {
    sql.push_str(
        " score_events (seq, game, event_id, player_id, mode, season, scopes, \
         value, achieved_at, received_at, source, status, segments) VALUES ",
    );
    for i in 0..rows {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = i * 13;
        sql.push('(');
        for c in 1..=13 {
            if c > 1 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(b + c).to_string());
        }
        sql.push(')');
    }
}

impl Store {
    /// The statement as this backend binds it fastest. SQLite looks a `$N` parameter's name up
    /// with a linear scan for every bound value, which makes a 12,000-parameter insert
    /// quadratic; anonymous `?` parameters, bound in order, skip the lookup. Every statement here
    /// names its `$N` once each, in increasing order, so the translation is exact.
    pub(super) fn positional<'q>(&self, sql: &'q str) -> std::borrow::Cow<'q, str> {
        if self.backend != Backend::Sqlite {
            return std::borrow::Cow::Borrowed(sql);
        }
        let mut out = String::with_capacity(sql.len());
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('?');
            } else {
                out.push(c);
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// The text of a multi-row statement for `rows` rows, as this backend runs it best. Only
    /// the sizes [`statement_sizes`] gives are ever asked for, so each is built once per process
    /// and prepared once per connection: a statement of any other size would be parsed and
    /// planned anew (12,000 parameters take longer to prepare than to run) and would push the
    /// sizes that recur out of the connection's statement cache.
    pub(super) fn statement(&self, which: Statement, rows: usize) -> &'static str {
        const SIZES: usize = STATEMENT_SIZES.len();
        const FIXED: usize = 6 * SIZES;
        static BUILT: [std::sync::OnceLock<String>; FIXED + 2 * AT_ONCE_ROWS] =
            [const { std::sync::OnceLock::new() }; FIXED + 2 * AT_ONCE_ROWS];
        let backend = usize::from(self.backend == Backend::Postgres);
        let slot = match which {
            Statement::InsertAtOnce => {
                assert!(
                    (1..=AT_ONCE_ROWS).contains(&rows),
                    "a statement of its own holds 1 to {AT_ONCE_ROWS} rows"
                );
                FIXED + backend * AT_ONCE_ROWS + rows - 1
            }
            Statement::FindEvents | Statement::InsertEvents | Statement::InsertShared => {
                let class = STATEMENT_SIZES
                    .iter()
                    .position(|&size| size == rows)
                    .expect("statements are built only for the sizes statement_sizes gives");
                (which as usize * 2 + backend) * SIZES + class
            }
        };
        BUILT[slot].get_or_init(|| {
            let sql = match which {
                Statement::FindEvents => {
                    let ids: Vec<String> = (0..rows).map(|i| format!("${}", i + 2)).collect();
                    format!(
                        "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND event_id IN ({})",
                        ids.join(", ")
                    )
                }
                Statement::InsertEvents => {
                    // On SQLite, OR FAIL: the default (ABORT) keeps a statement journal, a copy
                    // of every page the statement changes, to undo the statement alone; a
                    // failure here rolls the whole transaction back anyway. An id already
                    // stored is skipped, not an error: the writer inserts without looking ids
                    // up first and counts the rows stored (see `insert_events`).
                    let mut sql = String::from(match self.backend {
                        Backend::Sqlite => "INSERT OR FAIL INTO",
                        Backend::Postgres => "INSERT INTO",
                    });
                    push_event_rows(&mut sql, rows);
                    sql.push_str(" ON CONFLICT (game, event_id) DO NOTHING");
                    sql
                }
                Statement::InsertShared => {
                    // Named `?NNN` parameters: `positional` below leaves them as they are.
                    let mut sql = String::new();
                    push_shared_rows(&mut sql, rows);
                    sql.push_str(" ON CONFLICT (game, event_id) DO NOTHING");
                    sql
                }
                Statement::InsertAtOnce => {
                    // Its own transaction: a stored id aborts it whole (no statement journal
                    // outside a transaction), and the error says which constraint.
                    let mut sql = String::from("INSERT INTO");
                    push_event_rows(&mut sql, rows);
                    sql
                }
            };
            self.positional(&sql).into_owned()
        })
    }

    /// A statement of one row, `page`: the rows `select` gives, packed as a JSON array with
    /// an array of `columns` per row, in `order`. A driver reads one row, not thousands.
    pub(super) fn packed(&self, columns: &str, order: &str, select: &str) -> String {
        self.packed_rows(&self.json_array(columns), order, select)
    }

    /// [`Store::packed`] of events: an event without dimension values leaves its last column
    /// out rather than writing `null` (most events of most logs have none, and a replay reads
    /// every event through here).
    pub(super) fn packed_events(&self, select: &str) -> String {
        let without = EVENT_COLUMNS
            .strip_suffix(", segments")
            .expect("segments is the events' last column");
        let row = format!(
            "CASE WHEN segments IS NULL THEN {} ELSE {} END",
            self.json_array(without),
            self.json_array(EVENT_COLUMNS)
        );
        self.packed_rows(&row, "seq", select)
    }

    fn json_array(&self, columns: &str) -> String {
        match self.backend {
            Backend::Sqlite => format!("json_array({columns})"),
            Backend::Postgres => format!("json_build_array({columns})"),
        }
    }

    fn packed_rows(&self, row: &str, order: &str, select: &str) -> String {
        match self.backend {
            Backend::Sqlite => {
                format!("SELECT json_group_array({row} ORDER BY {order}) AS page FROM ({select})")
            }
            Backend::Postgres => format!(
                "SELECT COALESCE(json_agg({row} ORDER BY {order}), '[]'::json)::text AS page \
                 FROM ({select}) AS page"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_come_only_in_the_sizes_prepared_once() {
        let rows: Vec<u32> = (0..2_037).collect();
        let sizes: Vec<usize> = statement_sizes(&rows).map(<[u32]>::len).collect();
        assert_eq!(sizes, [1_000, 1_000, 32, 4, 1]);
        assert!(sizes.iter().all(|size| STATEMENT_SIZES.contains(size)));
        assert_eq!(
            statement_sizes(&rows).flatten().copied().collect::<Vec<_>>(),
            rows
        );
        assert_eq!(statement_sizes::<u32>(&[]).count(), 0);
    }
}
