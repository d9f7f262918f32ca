//! The event log: appending a group's events, finding stored ones by id, reading the log page by
//! page (the replay), a player's events (through the player index), late events and their statuses,
//! and the seasons that have events.
//!
//! `score_events` is the truth: `seq` is commit order, shared with actions, and the unique `(game,
//! event_id)` is what tells a new event from a resubmission; a partial index covers the late ones.
//! The status is stored as text and parsed once, here, into `EventStatus`. `event_seasons` holds
//! each `(game, season)` with events, added by the group with a season's first events, so whether a
//! never-set season may still be declared open is one key, not a scan of the log. A replay reads
//! the log in pages that the database packs into one JSON row (`events_after`): row by row, the
//! driver's per-row cost would be most of a replay's time.

use std::collections::{HashMap, HashSet};

use sqlx::Row;
use sqlx::any::AnyRow;
use standings_core::BoardId;

use super::StoreError;
use super::error::{db_err, db_error, outcome_unknown};
use super::statements::{EVENT_COLUMNS, Statement, statement_sizes};
use super::{Backend, Store, Transaction};
use crate::domain::{EventStatus, LoggedEvent, NewEvent, player_pages};

/// What became of [`Store::insert_events_at_once`].
pub enum AtOnce {
    /// Every event is stored and committed.
    Stored,
    /// Some `(game, event_id)` was stored before; nothing was stored.
    Resubmitted,
    /// The database went away after the statement was sent: stored or not, the log will say.
    Unknown(StoreError),
}

impl Store {
    /// The stored events of `game` among `event_ids`, inside a transaction.
    /// O(ids), in statements of the prepared sizes.
    pub async fn find_events(
        &self,
        tx: &mut Transaction,
        game: &str,
        event_ids: &[&str],
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let tx = &mut tx.0;
        let mut found = Vec::new();
        for chunk in statement_sizes(event_ids) {
            let sql = self.statement(Statement::FindEvents, chunk.len());
            let mut query = sqlx::query(sql).bind(game);
            for id in chunk {
                query = query.bind(*id);
            }
            let rows = query
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err("cannot look up events"))?;
            for row in &rows {
                found.push(event_from_row(row)?);
            }
        }
        if !found.is_empty() {
            let sql = metadata_query(&found);
            let rows = sqlx::query(&sql)
                .persistent(false)
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err("cannot read events' metadata"))?;
            attach(&mut found, &rows)?;
        }
        Ok(found)
    }

    /// Stores the metadata of the events that carry any, inside the group's transaction, in
    /// one statement per [`SIDE_ROWS`] of them: a statement per event costs the single writer a
    /// round trip per event. An event without metadata writes nothing. O(events with metadata).
    pub async fn insert_event_metadata(
        &self,
        tx: &mut Transaction,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        let with: Vec<&LoggedEvent> = events.iter().filter(|e| e.metadata.is_some()).collect();
        for chunk in with.chunks(SIDE_ROWS) {
            let sql = side_insert("event_metadata (seq, game, player_id, metadata)", 4, chunk.len());
            let sql = self.positional(&sql);
            let mut query = sqlx::query(&sql).persistent(false);
            for e in chunk {
                query = query
                    .bind(e.seq)
                    .bind(e.game.as_str())
                    .bind(e.player_id.as_str())
                    .bind(e.metadata.as_deref().unwrap_or_default());
            }
            query
                .execute(&mut **tx)
                .await
                .map_err(db_err("cannot store events' metadata"))?;
        }
        Ok(())
    }

    /// Fills in the metadata of events read from the log. O(their seq span's metadata rows).
    async fn with_metadata(&self, mut events: Vec<LoggedEvent>) -> Result<Vec<LoggedEvent>, StoreError> {
        if events.is_empty() {
            return Ok(events);
        }
        let sql = metadata_query(&events);
        let rows = sqlx::query(&sql)
            .persistent(false)
            .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read events' metadata"))?;
        attach(&mut events, &rows)?;
        Ok(events)
    }

    /// Appends events inside a transaction, many rows per statement, and returns how many were
    /// stored: an event whose `(game, event_id)` is already stored is skipped. So fewer than
    /// `events.len()` means some were stored before, and the caller rolls back.
    /// O(events), in statements of the prepared sizes.
    pub async fn insert_events(
        &self,
        tx: &mut Transaction,
        events: &[LoggedEvent],
    ) -> Result<u64, StoreError> {
        let tx = &mut tx.0;
        let mut chunks = statement_sizes(events);
        let mut next = chunks.next().map(|chunk| self.insert_chunk(chunk));
        let mut stored = 0;
        while let Some(query) = next {
            // The next statement's 13,000 values are bound here while this one runs on the
            // database's side (its first poll hands it over), not after.
            let (done, following) = tokio::join!(query.execute(&mut **tx), async {
                chunks.next().map(|chunk| self.insert_chunk(chunk))
            });
            stored += done.map_err(db_err("cannot append events"))?.rows_affected();
            next = following;
        }
        Ok(stored)
    }

    /// Appends up to [`AT_ONCE_ROWS`](super::AT_ONCE_ROWS) events as one statement in a transaction of its own: one
    /// round trip to the database instead of three (begin, insert, commit). The statement is
    /// its own commit, so an error after it was sent leaves its outcome unknown.
    /// O(events), one statement.
    pub async fn insert_events_at_once(&self, events: &[LoggedEvent]) -> Result<AtOnce, StoreError> {
        match self
            .insert_query(Statement::InsertAtOnce, events)
            .execute(&self.writer)
            .await
        {
            Ok(_) => Ok(AtOnce::Stored),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(AtOnce::Resubmitted),
            Err(e) if outcome_unknown(&e) => Ok(AtOnce::Unknown(db_error("cannot append events", e))),
            Err(e) => Err(db_error("cannot append events", e)),
        }
    }

    /// An insert of `chunk` inside a transaction, its values bound: on SQLite, when its rows
    /// share the columns [`push_shared_rows`](super::statements::push_shared_rows) binds once, those are bound once. O(rows).
    fn insert_chunk<'q>(
        &self,
        chunk: &'q [LoggedEvent],
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        let [first, rest @ ..] = chunk else {
            return self.insert_query(Statement::InsertEvents, chunk);
        };
        let shared = |e: &LoggedEvent| {
            e.game == first.game
                && e.mode == first.mode
                && e.season == first.season
                && e.scopes == first.scopes
                && e.received_at == first.received_at
                && e.source == first.source
                && e.status == first.status
        };
        if self.backend != Backend::Sqlite || !rest.iter().all(shared) {
            return self.insert_query(Statement::InsertEvents, chunk);
        }
        let mut query = sqlx::query(self.statement(Statement::InsertShared, chunk.len()));
        for e in chunk {
            query = query
                .bind(e.seq)
                .bind(e.event_id.as_str())
                .bind(e.player_id.as_str())
                .bind(e.value)
                .bind(e.achieved_at)
                .bind(e.segments.as_deref());
        }
        query
            .bind(first.game.as_str())
            .bind(first.mode.as_str())
            .bind(first.season.as_str())
            .bind(first.scopes.join(","))
            .bind(first.received_at)
            .bind(first.source.as_str())
            .bind(first.status.as_str())
    }

    /// An insert of `chunk`, its values bound.
    fn insert_query<'q>(
        &self,
        which: Statement,
        chunk: &'q [LoggedEvent],
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        let mut query = sqlx::query(self.statement(which, chunk.len()));
        for e in chunk {
            query = bind_columns_before_segments(query, e).bind(e.segments.as_deref());
        }
        query
    }

    /// Up to `limit` events with `seq > after`, in `seq` order: the event log, page by page.
    ///
    /// The database packs the page into one row, a JSON array of one array per event, read
    /// here in one parse: row by row, the driver's cost per row (a hand-off between threads, a
    /// copy of every value, a row and its columns built anew) would be most of a replay's time.
    /// O(limit).
    pub async fn events_after(&self, after: i64, limit: i64) -> Result<Vec<LoggedEvent>, StoreError> {
        let sql = self.packed_events(&format!(
            "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq > $1 ORDER BY seq LIMIT $2"
        ));
        let row = sqlx::query(&sql)
            .bind(after)
            .bind(limit)
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the event log"))?;
        let page: String = row.try_get("page").map_err(db_err("bad page of the event log"))?;
        self.with_metadata(events_from_json(&page)?).await
    }

    /// One stored event.
    /// One index look-up.
    pub async fn find_event(&self, game: &str, event_id: &str) -> Result<Option<LoggedEvent>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND event_id = $2"
        ))
        .bind(game)
        .bind(event_id)
        .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read an event"))?;
        let found = row.as_ref().map(event_from_row).transpose()?;
        Ok(self.with_metadata(found.into_iter().collect()).await?.pop())
    }

    /// A player's events in one (game, mode, season), committed before `before_seq`, in order:
    /// looked up on one page of the player index per sealed run (`player_index`), plus a scan
    /// of the unsealed tail of the log. The runs and their pages are read first, in one
    /// statement; a run sealed after that covers seqs the tail scan still finds, so nothing is
    /// missed or counted twice. The log rows the pages point to are read with the player's
    /// fields in the condition, which drops any other player's whose key is the same.
    /// O(sealed runs + the unsealed tail + the player's events).
    pub async fn player_events(
        &self,
        board: &BoardId,
        player: &str,
        before_seq: i64,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let key = player_pages::player_key(&board.game, player, &board.mode, &board.season);
        // Per run, the page whose first key is the greatest not above the player's: the only
        // one that can hold it (a key's entries never straddle pages).
        let runs = sqlx::query(
            "SELECT r.start_seq AS start_seq, r.end_seq AS end_seq, (SELECT p.entries FROM \
             player_pages p WHERE p.run = r.start_seq AND p.first_key <= $1 ORDER BY p.first_key \
             DESC LIMIT 1) AS entries FROM log_runs r ORDER BY r.start_seq",
        )
        .bind(key)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the player index"))?;
        let mut sealed_below = 0i64;
        let mut seqs = Vec::new();
        for row in &runs {
            let start: i64 = row.try_get("start_seq").map_err(db_err("bad run"))?;
            let end: i64 = row.try_get("end_seq").map_err(db_err("bad run"))?;
            sealed_below = sealed_below.max(end);
            let page: Option<Vec<u8>> = row.try_get("entries").map_err(db_err("bad page"))?;
            if let Some(page) = page.filter(|_| start < before_seq) {
                let found = player_pages::seqs_on_page(start, &page, key).map_err(StoreError::Corrupt)?;
                seqs.extend(found.into_iter().filter(|&seq| seq < before_seq));
            }
        }
        let mut events = self
            .fetch_events(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq >= $1 AND seq < $2 AND \
                     game = $3 AND player_id = $4 AND mode = $5 AND season = $6"
                ),
                [sealed_below, before_seq],
                board,
                player,
            )
            .await?;
        // Seqs read from the index are integers, so writing them into the SQL is safe; a
        // statement of its own size is not kept in the connection's statement cache.
        for chunk in seqs.chunks(500) {
            let list: Vec<String> = chunk.iter().map(i64::to_string).collect();
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq IN ({}) AND seq >= $1 AND \
                 seq < $2 AND game = $3 AND player_id = $4 AND mode = $5 AND season = $6",
                list.join(", ")
            );
            events.extend(self.fetch_events(&sql, [0, before_seq], board, player).await?);
        }
        events.sort_unstable_by_key(|e| e.seq);
        self.with_metadata(events).await
    }

    /// The events `sql` selects, its parameters being a seq range, then the board's game, the
    /// player and the board's mode and season.
    async fn fetch_events(
        &self,
        sql: &str,
        [from, before]: [i64; 2],
        board: &BoardId,
        player: &str,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let rows = sqlx::query(sql)
            .persistent(false)
            .bind(from)
            .bind(before)
            .bind(&board.game)
            .bind(player)
            .bind(&board.mode)
            .bind(&board.season)
            .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read a player's events"))?;
        rows.iter().map(event_from_row).collect()
    }

    /// The events of a game waiting for a late decision, in order.
    /// O(the game's events), a scan by status.
    pub async fn late_events(&self, game: &str) -> Result<Vec<LoggedEvent>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND status = 'LATE' ORDER BY seq"
        ))
        .bind(game)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot list late events"))?;
        let events = rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>()?;
        self.with_metadata(events).await
    }

    /// Whether a season has any stored event.
    /// One index look-up.
    pub async fn season_has_events(&self, game: &str, season: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT 1 AS n FROM event_seasons WHERE game = $1 AND season = $2")
            .bind(game)
            .bind(season)
            .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot look for events"))?;
        Ok(row.is_some())
    }

    /// The seasons with stored events, by game.
    /// O(seasons with events).
    pub async fn event_seasons(&self) -> Result<HashMap<String, HashSet<String>>, StoreError> {
        let rows = sqlx::query("SELECT game, season FROM event_seasons")
            .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the seasons with events"))?;
        let mut seasons: HashMap<String, HashSet<String>> = HashMap::new();
        for row in &rows {
            let game: String = row.try_get("game").map_err(db_err("bad season row"))?;
            let season: String = row.try_get("season").map_err(db_err("bad season row"))?;
            seasons.entry(game).or_default().insert(season);
        }
        Ok(seasons)
    }

    /// Records, inside the transaction that stores their first events, seasons that have
    /// events now. A season recorded already is left as it is.
    /// O(seasons), one insert each.
    pub async fn add_event_seasons(
        &self,
        tx: &mut Transaction,
        seasons: &[(String, String)],
    ) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        for (game, season) in seasons {
            sqlx::query(
                "INSERT INTO event_seasons (game, season) VALUES ($1, $2) \
                 ON CONFLICT (game, season) DO NOTHING",
            )
            .bind(game.as_str())
            .bind(season.as_str())
            .execute(&mut **tx)
            .await
            .map_err(db_err("cannot record a season's events"))?;
        }
        Ok(())
    }

    /// Sets an event's status inside a transaction.
    /// One index look-up and update.
    pub async fn set_event_status(
        tx: &mut Transaction,
        game: &str,
        event_id: &str,
        status: EventStatus,
    ) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        sqlx::query("UPDATE score_events SET status = $1 WHERE game = $2 AND event_id = $3")
            .bind(status.as_str())
            .bind(game)
            .bind(event_id)
            .execute(&mut **tx)
            .await
            .map_err(db_err("cannot update an event's status"))?;
        Ok(())
    }
}

fn event_from_row(row: &AnyRow) -> Result<LoggedEvent, StoreError> {
    let bad = db_err("bad event row");
    let seq = row.try_get("seq").map_err(&bad)?;
    let scopes: String = row.try_get("scopes").map_err(&bad)?;
    let status: String = row.try_get("status").map_err(&bad)?;
    Ok(LoggedEvent {
        seq,
        status: status_from_text(seq, &status)?,
        received_at: row.try_get("received_at").map_err(&bad)?,
        event: NewEvent {
            game: row.try_get("game").map_err(&bad)?,
            event_id: row.try_get("event_id").map_err(&bad)?,
            player_id: row.try_get("player_id").map_err(&bad)?,
            mode: row.try_get("mode").map_err(&bad)?,
            season: row.try_get("season").map_err(&bad)?,
            scopes: scopes.split(',').map(str::to_string).collect(),
            value: row.try_get("value").map_err(&bad)?,
            achieved_at: row.try_get("achieved_at").map_err(&bad)?,
            source: row.try_get("source").map_err(&bad)?,
            metadata: None,
            segments: row
                .try_get::<Option<String>, _>("segments")
                .map_err(&bad)?
                .map(Into::into),
        },
    })
}

/// The most rows of one metadata insert: 4,000 parameters, within both databases' limits.
const SIDE_ROWS: usize = 1_000;

/// `INSERT INTO table (columns) VALUES ($1, ...), ...` for `rows` rows of `columns` values.
/// Built per group and not kept in the connection's cache, where it would push out the
/// writer's prepared statements. O(rows).
fn side_insert(table: &str, columns: usize, rows: usize) -> String {
    let mut sql = format!("INSERT INTO {table} VALUES ");
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 1..=columns {
            if c > 1 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", r * columns + c));
        }
        sql.push(')');
    }
    sql
}

/// Binds an event's columns up to `status`, the twelve every version of the log has, in
/// [`EVENT_COLUMNS`] order. O(1).
pub(super) fn bind_columns_before_segments<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    e: &'q LoggedEvent,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(e.seq)
        .bind(e.game.as_str())
        .bind(e.event_id.as_str())
        .bind(e.player_id.as_str())
        .bind(e.mode.as_str())
        .bind(e.season.as_str())
        .bind(e.scopes.join(","))
        .bind(e.value)
        .bind(e.achieved_at)
        .bind(e.received_at)
        .bind(e.source.as_str())
        .bind(e.status.as_str())
}

/// The statement reading the metadata of `events` (sorted or not): one range over their seqs
/// when it is dense (a replay's page), their seqs listed otherwise. Seqs are integers, so
/// writing them into the SQL is safe. O(events).
fn metadata_query(events: &[LoggedEvent]) -> String {
    let (low, high) = events
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), e| (lo.min(e.seq), hi.max(e.seq)));
    if (high - low) as u64 <= 4 * events.len() as u64 {
        return format!("SELECT seq, metadata FROM event_metadata WHERE seq >= {low} AND seq <= {high}");
    }
    let list: Vec<String> = events.iter().map(|e| e.seq.to_string()).collect();
    format!(
        "SELECT seq, metadata FROM event_metadata WHERE seq IN ({})",
        list.join(", ")
    )
}

/// Puts each metadata row on its event (rows of other seqs in a range are skipped).
fn attach(events: &mut [LoggedEvent], rows: &[AnyRow]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut by_seq: HashMap<i64, String> = HashMap::with_capacity(rows.len());
    for row in rows {
        let seq: i64 = row.try_get("seq").map_err(db_err("bad metadata row"))?;
        let metadata: String = row.try_get("metadata").map_err(db_err("bad metadata row"))?;
        by_seq.insert(seq, metadata);
    }
    for e in events {
        if let Some(metadata) = by_seq.remove(&e.seq) {
            e.event.metadata = Some(metadata.into());
        }
    }
    Ok(())
}

/// The status of the event at `seq` from its stored text.
fn status_from_text(seq: i64, text: &str) -> Result<EventStatus, StoreError> {
    EventStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("the event at seq {seq} has an unknown status {text:?}")))
}

/// The events of a page packed by [`Store::events_after`].
fn events_from_json(page: &str) -> Result<Vec<LoggedEvent>, StoreError> {
    let events: Vec<PackedEvent> = serde_json::from_str(page).map_err(|source| StoreError::Undecodable {
        context: "a page of the event log cannot be read",
        source,
    })?;
    Ok(events.into_iter().map(|e| e.0).collect())
}

/// One event of a packed page: an array of [`EVENT_COLUMNS`], read in their order with no map
/// of names in between (a replay reads every event of the log this way).
struct PackedEvent(LoggedEvent);

impl<'de> serde::Deserialize<'de> for PackedEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Columns;

        impl<'de> serde::de::Visitor<'de> for Columns {
            type Value = PackedEvent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of the event log's columns")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut columns: A,
            ) -> Result<PackedEvent, A::Error> {
                use serde::de::Error;
                let seq: i64 = column(&mut columns, 0)?;
                let game = column(&mut columns, 1)?;
                let event_id = column(&mut columns, 2)?;
                let player_id = column(&mut columns, 3)?;
                let mode = column(&mut columns, 4)?;
                let season = column(&mut columns, 5)?;
                let scopes: std::borrow::Cow<'de, str> = column(&mut columns, 6)?;
                let value = column(&mut columns, 7)?;
                let achieved_at = column(&mut columns, 8)?;
                let received_at = column(&mut columns, 9)?;
                let source = column(&mut columns, 10)?;
                let status: std::borrow::Cow<'de, str> = column(&mut columns, 11)?;
                // Left out for an event without values (see `packed_events`).
                let segments: Option<Box<str>> = columns.next_element::<Option<Box<str>>>()?.flatten();
                let status = EventStatus::parse(&status).ok_or_else(|| {
                    A::Error::custom(format!("the event at seq {seq} has an unknown status {status:?}"))
                })?;
                Ok(PackedEvent(LoggedEvent {
                    seq,
                    status,
                    received_at,
                    event: NewEvent {
                        game,
                        event_id,
                        player_id,
                        mode,
                        season,
                        scopes: scopes.split(',').map(str::to_string).collect(),
                        value,
                        achieved_at,
                        source,
                        metadata: None,
                        segments,
                    },
                }))
            }
        }

        deserializer.deserialize_seq(Columns)
    }
}

/// The `index`th column of a packed event.
fn column<'de, T: serde::Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
    columns: &mut A,
    index: usize,
) -> Result<T, A::Error> {
    columns
        .next_element()?
        .ok_or_else(|| serde::de::Error::invalid_length(index, &"the event log's 12 or 13 columns"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::PAGING_MIGRATION;
    use crate::store::tests::{event, written_before_migration};

    /// A packed page reads into logged events column by column, and a status the log does not
    /// know is an error that names the event's seq.
    #[test]
    fn a_packed_page_is_read_by_column_and_an_unknown_status_names_its_seq() {
        let page = r#"[[7,"g","e7","p","m","s","global,region:eu",70,1007,2007,"test","LATE"],
                        [8,"g","e8","p","m","s","global",80,1008,2008,"test","APPLIED","platform:ios"]]"#;
        let mut expected = event(7, "e7", "p");
        expected.status = EventStatus::Late;
        expected.event.scopes = vec!["global".into(), "region:eu".into()];
        let mut with_segments = event(8, "e8", "p");
        with_segments.event.segments = Some("platform:ios".into());
        assert_eq!(events_from_json(page).unwrap(), [expected, with_segments]);
        let unknown = r#"[[8,"g","e8","p","m","s","global",80,1008,2008,"test","SOON"]]"#;
        let error = events_from_json(unknown).unwrap_err();
        let error = format!("{error}: {}", std::error::Error::source(&error).unwrap());
        assert!(error.contains("seq 8") && error.contains("SOON"), "{error}");
        let short = r#"[[9,"g","e9","p","m","s","global",90,1009,2009,"test"]]"#;
        assert!(events_from_json(short).is_err());
    }

    /// Rows are stored as given whether a statement binds their shared columns once (a chunk
    /// whose rows agree on them) or per row (a chunk whose rows differ in any one of them), and
    /// a stored id is skipped either way.
    #[tokio::test]
    async fn rows_are_stored_as_given_with_their_shared_columns_bound_once_or_per_row() {
        let (dir, url) = written_before_migration(PAGING_MIGRATION, &[]).await;
        let store = Store::open(&url).await.unwrap();
        let shared = |seq: i64| {
            let mut e = event(seq, &format!("e{seq}"), &format!("p-{}", seq % 7));
            e.received_at = 5_000;
            e
        };
        // 1,000 rows that agree (one statement of shared rows), then 64 in which each shared
        // column differs once from the rest, so each of those chunks binds per row.
        let mut log: Vec<LoggedEvent> = (1..=1_000).map(shared).collect();
        for (i, seq) in (1_001..=1_064).enumerate() {
            let mut e = shared(seq);
            match i % 8 {
                0 => e.event.game = "g2".into(),
                1 => e.event.mode = "m2".into(),
                2 => e.event.season = "s2".into(),
                3 => e.event.scopes = vec!["global".into(), "region:eu".into()],
                4 => e.received_at += 1,
                5 => e.event.source = "other".into(),
                6 => e.status = EventStatus::Late,
                _ => {}
            }
            log.push(e);
        }
        let mut tx = store.begin().await.unwrap();
        assert_eq!(store.insert_events(&mut tx, &log).await.unwrap(), 1_064);
        tx.commit("a test").await.unwrap();
        assert_eq!(store.events_after(0, 10_000).await.unwrap(), log);
        // Again, with one new row among them: only it is stored.
        let mut again: Vec<LoggedEvent> = log[..999].to_vec();
        again.push(shared(2_000));
        let mut tx = store.begin().await.unwrap();
        assert_eq!(store.insert_events(&mut tx, &again).await.unwrap(), 1);
        tx.rollback("a test").await.unwrap();
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A log written before migration 6 has its seasons recorded by it: each season with
    /// events once, and no other.
    #[tokio::test]
    async fn the_event_seasons_migration_records_the_seasons_of_an_existing_log() {
        let mut log = vec![
            event(1, "e1", "p-a"),
            event(2, "e2", "p-b"),
            event(3, "e3", "p-a"),
        ];
        log[1].event.season = "t".into();
        log[2].event.game = "h".into();
        let (dir, url) = written_before_migration(5, &log).await;
        let store = Store::open(&url).await.unwrap();
        let seasons = store.event_seasons().await.unwrap();
        let mut pairs: Vec<(&str, &str)> = seasons
            .iter()
            .flat_map(|(game, seasons)| seasons.iter().map(move |s| (game.as_str(), s.as_str())))
            .collect();
        pairs.sort();
        assert_eq!(pairs, [("g", "s"), ("g", "t"), ("h", "s")]);
        assert!(store.season_has_events("g", "t").await.unwrap());
        assert!(!store.season_has_events("g", "u").await.unwrap());
        assert!(!store.season_has_events("i", "s").await.unwrap());
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
