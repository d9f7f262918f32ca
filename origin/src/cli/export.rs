//! `standings export`: the event log as NDJSON, in the format `standings import` reads.
//!
//! The file holds three kinds of line, each one JSON object:
//!
//! - `{"board": {...}}`: a board definition, as `PUT /v1/boards/...` takes it plus its id;
//!   all of them (of `--game`) come first, since board definitions are not log entries.
//! - `{"seq": N, "status": "APPLIED", "source": ..., "received_at": ..., "event": {...}}`: a
//!   score event, `event` exactly as `POST /v1/score-events` takes it.
//! - `{"seq": N, "game": ..., "action": {"kind": ...}, "moderation_id": ..., "actor": ...,
//!   "reason": ..., "created_at": ..., "request": {...}, "result": {...}}`: a season transition,
//!   a moderation action or a late-event decision, `action` as the log stores it.
//!
//! Events and actions are in `seq` order. Import feeds each line through the writer in file
//! order, so that every event and action is decided again on the state the ones before it left:
//! into an empty database, the boards come out with the same digests and board versions.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use standings_core::BoardId;

use super::{Global, load_config};
use crate::clock::format_rfc3339;

use crate::domain::{Action, ActionRow, BoardDef, LoggedEvent, Proposed};
use crate::store::Store;

pub(super) const LONG_ABOUT: &str = "\
Write the event log as NDJSON on stdout, in the format `standings import` reads.

First every board definition (of --game), then the score events with their status and the
actions (season transitions, moderation, late-event decisions) in seq order. The log is read in
pages, never whole; the export is the log as it was when the export began, so it may run beside
the service. Importing a whole export into an empty database gives every board the same digest
and board_version, every event the same status and source, every action its time. The import
receives each event at its exported receipt time, or a little later when it shares a group
commit with later ones (never past a close of one of its periods); the seqs are the importing
writer's. Friend lists and checkpoints are not part of the log and are not exported. Events and
moderation actions imported again are recognised as duplicates; season transitions and late-event
decisions are not, so import an export once (or its --since-seq continuation after it).";

/// The options of `standings export`.
#[derive(Debug, clap::Args)]
pub(super) struct ExportArgs {
    /// Only this game's boards, events and actions.
    #[arg(long, value_name = "GAME")]
    game: Option<String>,
    /// Only the log entries after this seq (board definitions are always written).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    since_seq: i64,
}

/// How many events one page of the log holds while exporting.
const EXPORT_PAGE_EVENTS: i64 = 10_000;

/// A board definition line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BoardLine {
    pub(super) board: BoardFields,
}

/// A board definition as exported: its id and the fields of `PUT /v1/boards/...`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BoardFields {
    game: String,
    mode: String,
    season: String,
    scope: String,
    score_mode: String,
    value_min: i64,
    value_max: i64,
    periods: Vec<String>,
    grace_seconds: i64,
    timezone: String,
    /// Absent in exports of builds before profiles: every board then took up to 256 bytes.
    #[serde(default = "crate::domain::profiles::default_metadata_cap")]
    metadata_max_bytes: i64,
    /// Absent in exports of builds before split boards: every board was whole.
    #[serde(default = "whole")]
    shards: i64,
    /// Absent in exports of builds before segments: no board had any.
    #[serde(default)]
    segments: BTreeMap<String, serde_json::Value>,
    /// Absent in exports of builds before the feed: no board put anything in it.
    #[serde(default)]
    feed: Option<serde_json::Value>,
}

fn whole() -> i64 {
    1
}

impl BoardFields {
    fn of(def: &BoardDef) -> BoardFields {
        BoardFields {
            game: def.id.game.clone(),
            mode: def.id.mode.clone(),
            season: def.id.season.clone(),
            scope: def.id.scope.clone(),
            score_mode: def.rules.score_mode.as_str().to_string(),
            value_min: def.rules.value_min,
            value_max: def.rules.value_max,
            periods: def.periods.clone(),
            grace_seconds: def.grace_seconds,
            timezone: def.timezone.clone(),
            metadata_max_bytes: def.metadata_max_bytes,
            shards: def.shards,
            segments: def.segments_view(),
            feed: (!def.feed.is_empty()).then(|| def.feed.view()),
        }
    }

    /// The definition, checked as `PUT /v1/boards/...` checks it.
    pub(super) fn definition(self) -> Result<BoardDef, String> {
        let id =
            BoardId::new(&self.game, &self.mode, &self.season, &self.scope).map_err(|e| e.to_string())?;
        BoardDef::checked(
            id.clone(),
            Proposed {
                score_mode: &self.score_mode,
                value_min: self.value_min,
                value_max: self.value_max,
                periods: &self.periods,
                timezone: &self.timezone,
                grace_seconds: self.grace_seconds,
                metadata_max_bytes: self.metadata_max_bytes,
                shards: self.shards,
                segments: &self.segments,
                feed: self.feed.as_ref(),
            },
        )
        .map_err(|e| format!("board {id}: {e}"))
    }
}

/// An event line as written.
#[derive(Serialize)]
struct EventOut<'a> {
    seq: i64,
    status: &'a str,
    source: &'a str,
    received_at: String,
    event: EventBodyOut<'a>,
}

/// A score event as `POST /v1/score-events` takes it.
#[derive(Serialize)]
struct EventBodyOut<'a> {
    event_id: &'a str,
    player_id: &'a str,
    game: &'a str,
    mode: &'a str,
    season: &'a str,
    scopes: &'a [String],
    value: i64,
    achieved_at: String,
    /// The metadata as sent; erased metadata is left out (nothing of it remains to export).
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Box<serde_json::value::RawValue>>,
    /// The event dimension values, as sent (`{"platform": "ios"}`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    segments: std::collections::BTreeMap<&'a str, &'a str>,
}

/// An event line as read: the submission stays a JSON value, for the API's own validation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EventLine {
    pub(super) seq: i64,
    pub(super) status: String,
    pub(super) source: String,
    pub(super) received_at: String,
    pub(super) event: serde_json::Value,
}

/// An action line, written and read.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ActionLine {
    pub(super) seq: i64,
    pub(super) game: String,
    pub(super) action: Action,
    pub(super) moderation_id: Option<String>,
    pub(super) actor: String,
    pub(super) reason: String,
    pub(super) created_at: String,
    pub(super) request: serde_json::Value,
    pub(super) result: serde_json::Value,
}

impl ActionLine {
    fn of(row: &ActionRow) -> Result<ActionLine, String> {
        let action = row.action.clone().map_err(|e| {
            format!(
                "the action at seq {} cannot be read ({} action: {})",
                row.seq, e.kind, e.why
            )
        })?;
        Ok(ActionLine {
            seq: row.seq,
            game: row.game.clone(),
            action,
            moderation_id: row.action_id.clone(),
            actor: row.actor.clone(),
            reason: row.reason.clone(),
            created_at: format_rfc3339(row.created_at),
            request: row.request.clone(),
            result: serde_json::to_value(&row.result).unwrap_or(serde_json::Value::Null),
        })
    }
}

fn write_event(out: &mut impl Write, e: &LoggedEvent) -> Result<(), String> {
    let line = EventOut {
        seq: e.seq,
        status: e.status.as_str(),
        source: &e.source,
        received_at: format_rfc3339(e.received_at),
        event: EventBodyOut {
            event_id: &e.event_id,
            player_id: &e.player_id,
            game: &e.game,
            mode: &e.mode,
            season: &e.season,
            scopes: &e.scopes,
            value: e.value,
            achieved_at: format_rfc3339(e.achieved_at),
            metadata: e
                .metadata
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| serde_json::value::RawValue::from_string(m.to_owned()))
                .transpose()
                .map_err(|err| format!("the metadata of event {} is not JSON: {err}", e.event_id))?,
            segments: e
                .segments
                .as_deref()
                .into_iter()
                .flat_map(|text| text.split(','))
                .filter_map(|pair| pair.split_once(':'))
                .collect(),
        },
    };
    write_line(out, &line)
}

fn write_line(out: &mut impl Write, line: &impl Serialize) -> Result<(), String> {
    serde_json::to_writer(&mut *out, line).map_err(|e| format!("cannot write the export: {e}"))?;
    out.write_all(b"\n")
        .map_err(|e| format!("cannot write the export: {e}"))
}

/// Writes the export on stdout. Cost: one pass over the log, O(page) memory for the events,
/// and the actions after `--since-seq` (season and moderation actions, few) read whole.
pub(super) async fn export(global: &Global, args: &ExportArgs) -> Result<ExitCode, String> {
    let (config, _, _) = load_config(global)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let (events, actions, boards) = match &config.cluster {
        None => {
            let store = Store::open(&config.database).await.map_err(|e| e.to_string())?;
            let result = write_export(&store, args, &mut out).await;
            store.close().await;
            result?
        }
        Some(_) => export_cluster(&config.database, args, &mut out).await?,
    };
    out.flush().map_err(|e| format!("cannot write the export: {e}"))?;
    tracing::info!(
        boards,
        events,
        actions,
        since_seq = args.since_seq,
        game = args.game.as_deref(),
        "exported"
    );
    Ok(ExitCode::SUCCESS)
}

/// A clustered database's export: each partition's log in turn (a game's entries are all in
/// its partition, in their order). `--since-seq` is a position in one partition's log, so it
/// needs `--game`.
async fn export_cluster(
    url: &str,
    args: &ExportArgs,
    out: &mut impl Write,
) -> Result<(u64, u64, u64), String> {
    let cluster = crate::store::cluster::ClusterStore::existing(url, &super::redact(url))
        .await
        .map_err(|e| crate::chain::Chain(&e).to_string())?;
    let only = args
        .game
        .as_deref()
        .map(|g| crate::cluster::lease::partition_of(g, cluster.partitions()));
    if args.since_seq != 0 && only.is_none() {
        return Err(
            "--since-seq is a position in one partition's log of a clustered database: name the game with --game too"
                .into(),
        );
    }
    let mut totals = (0, 0, 0);
    for p in (0..cluster.partitions()).filter(|p| only.is_none_or(|o| o == *p)) {
        let (events, actions, boards) = write_export(&cluster.partition(p), args, out).await?;
        totals = (totals.0 + events, totals.1 + actions, totals.2 + boards);
    }
    cluster.close().await;
    Ok(totals)
}

async fn write_export(
    store: &Store,
    args: &ExportArgs,
    out: &mut impl Write,
) -> Result<(u64, u64, u64), String> {
    let wanted = |game: &str| args.game.as_deref().is_none_or(|g| g == game);
    // The log as of now: the single writer commits in seq order, so every entry up to the
    // greatest seq is committed and stays as it is (but a late event's status).
    let upto = store.next_seq().await.map_err(|e| e.to_string())? - 1;
    let mut boards = 0u64;
    for def in store.boards().await.map_err(|e| e.to_string())? {
        if wanted(&def.id.game) {
            write_line(
                out,
                &BoardLine {
                    board: BoardFields::of(&def),
                },
            )?;
            boards += 1;
        }
    }
    let actions = store
        .actions_after(args.since_seq)
        .await
        .map_err(|e| e.to_string())?;
    let mut actions = actions
        .into_iter()
        .filter(|a| a.seq <= upto && wanted(&a.game))
        .peekable();
    let (mut events, mut actions_written) = (0u64, 0u64);
    let mut after = args.since_seq;
    'pages: loop {
        let page = store
            .events_after(after, EXPORT_PAGE_EVENTS)
            .await
            .map_err(|e| e.to_string())?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for e in &page {
            if e.seq > upto {
                break 'pages;
            }
            while let Some(action) = actions.next_if(|a| a.seq < e.seq) {
                write_line(out, &ActionLine::of(&action)?)?;
                actions_written += 1;
            }
            if wanted(&e.game) {
                write_event(out, e)?;
                events += 1;
            }
        }
    }
    for action in actions {
        write_line(out, &ActionLine::of(&action)?)?;
        actions_written += 1;
    }
    Ok((events, actions_written, boards))
}
