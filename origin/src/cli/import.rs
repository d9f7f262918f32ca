//! `standings import`: loads NDJSON through the writer, as the API would take it.
//!
//! A line is a score event as `POST /v1/score-events` takes it, or one of the lines `export`
//! writes (a board definition, an event with its status, an action; see `export`). Lines are
//! carried out in file order: events in groups of up to a batch, a board or an action on its
//! own once the events before it are committed.
//!
//! Each event is checked by `crate::intake` as the API checks it, and refusals are reported with
//! the codes and words the batch endpoint answers with (`http::write::submit_checked`,
//! `http::error::problem_of`): the import reports in the API's terms.
//!
//! The writer runs on a manual clock. Exported events are submitted at the time they were first
//! received and actions performed at the time they were first performed, so that every period
//! closed or open then is so again: an event that came in time is not late because the import
//! comes a week later. Consecutive events share a group commit (and its receipt time, the
//! latest of theirs) as long as none of their periods closes in between; plain submissions are
//! received now.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::Value;
use standings_core::BoardId;

use super::export::{ActionLine, BoardLine, EventLine};
use super::progress::{Progress, Unit};
use super::{Global, load_config};
use crate::chain::Chain;
use crate::clock::{Clock, parse_rfc3339};
use crate::http::Shared;
use crate::http::error::problem_of;
use crate::intake::{MAX_BATCH, Submitter, check_value};
use crate::store::Defined;
use crate::writer::ActionRequest;

/// The options of `standings import`.
#[derive(Debug, clap::Args)]
pub(super) struct ImportArgs {
    /// The NDJSON file: one score event per line, or what `standings export` wrote.
    #[arg(value_name = "FILE.ndjson")]
    file: PathBuf,
}

/// The source of the events of a file that does not name theirs (plain submissions).
const IMPORT_SOURCE: &str = "import";

/// The import submits to every game, as [`IMPORT_SOURCE`]; an exported event then takes back
/// the source it had.
struct Importer;

impl Submitter for Importer {
    fn name(&self) -> &str {
        IMPORT_SOURCE
    }

    fn may_write(&self, _game: &str) -> bool {
        true
    }
}

/// How many refusals are written out one by one; the rest are only counted.
const REFUSALS_SHOWN: u64 = 20;

/// What an import did, line kind by line kind.
#[derive(Default)]
struct Totals {
    read: u64,
    accepted: u64,
    duplicates: u64,
    rejected: u64,
    boards: u64,
    actions: u64,
    actions_already: u64,
}

impl Totals {
    /// Counts a refused line: `entry` is the event's id or the action's export seq.
    fn refuse(&mut self, entry: &str, code: &str, detail: &str) {
        self.rejected += 1;
        if self.rejected <= REFUSALS_SHOWN {
            tracing::warn!(entry, code, detail, "rejected");
        }
    }
}

/// One event waiting to be submitted: the submission, the name of the token that sent it in
/// the first place, and where it came from in an export.
struct Pending {
    event: Value,
    source: String,
    exported: Option<Exported>,
}

/// What an export said of an event.
struct Exported {
    seq: i64,
    status: String,
    received_at: i64,
}

/// The events of the next group commit.
struct Batch {
    events: Vec<Pending>,
    /// When the group is received: the latest of its exported events' receipts; `None` for
    /// plain submissions, received now.
    received_at: Option<i64>,
    /// The first close of a period of one of its events after that event's receipt: the group
    /// must be received before it, or the event would turn late.
    closes_at: Option<i64>,
}

pub(super) async fn import(global: &Global, args: &ImportArgs) -> Result<ExitCode, String> {
    let file = &args.file;
    let (config, _, _) = load_config(global)?;
    // The writer assigns commit order itself, so a second writer on the same log must not run.
    if tokio::net::TcpStream::connect(&config.listen).await.is_ok() {
        return Err(format!(
            "a service is listening on {}; stop it before importing, or submit through its batch endpoint",
            config.listen
        ));
    }
    // Held until the import ends: a service on the same database, wherever it listens, refuses
    // to start meanwhile, and an import refuses while one serves it.
    let _owner = super::claim_log(&config, "standings import").await?;
    let opened = std::fs::File::open(file).map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    let size = opened.metadata().map(|m| m.len()).ok();
    let reader = std::io::BufReader::new(opened);
    let clock = Clock::manual(crate::clock::now_ms());
    let state = crate::start_with_clock(&config, clock.clone())
        .await
        .map_err(|e| Chain(&e).to_string())?;
    let mut progress = Progress::new("importing", Unit::Bytes, size);
    let started = Instant::now();
    let mut totals = Totals::default();
    let mut pending = Batch {
        events: Vec::with_capacity(MAX_BATCH),
        received_at: None,
        closes_at: None,
    };
    let mut bytes = 0u64;
    for (line_no, line) in (1u64..).zip(reader.lines()) {
        let line = line.map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        bytes += line.len() as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at = |e: &dyn std::fmt::Display| format!("{}:{line_no}: {e}", file.display());
        // The same reader as a request body: a repeated key stops the import as it refuses a
        // batch.
        let value = crate::json_value::read_value(line.as_bytes()).map_err(|e| at(&e))?;
        let kind = ["board", "action", "event"]
            .into_iter()
            .find(|key| value.get(key).is_some());
        match kind {
            Some("board") => {
                flush(&state, &mut pending, &mut totals).await?;
                let line: BoardLine = serde_json::from_value(value).map_err(|e| at(&e))?;
                define(&state, line, &mut totals).await.map_err(|e| at(&e))?;
            }
            Some("action") => {
                flush(&state, &mut pending, &mut totals).await?;
                let line: ActionLine = serde_json::from_value(value).map_err(|e| at(&e))?;
                clock.set(parse_rfc3339(&line.created_at).map_err(|e| at(&e))?);
                act(&state, line, &mut totals).await;
            }
            Some(_) => {
                let line: EventLine = serde_json::from_value(value).map_err(|e| at(&e))?;
                let event = Pending {
                    event: line.event,
                    source: line.source,
                    exported: Some(Exported {
                        seq: line.seq,
                        status: line.status,
                        received_at: parse_rfc3339(&line.received_at).map_err(|e| at(&e))?,
                    }),
                };
                add(&state, &mut pending, &mut totals, event).await?;
            }
            None => {
                let event = Pending {
                    event: value,
                    source: IMPORT_SOURCE.into(),
                    exported: None,
                };
                add(&state, &mut pending, &mut totals, event).await?
            }
        }
        progress.update(bytes);
    }
    flush(&state, &mut pending, &mut totals).await?;
    clock.set(crate::clock::now_ms());
    progress.finish();
    let took = started.elapsed();
    let Totals {
        read,
        accepted,
        duplicates,
        rejected,
        boards,
        actions,
        actions_already,
    } = totals;
    let others = if boards + actions > 0 {
        format!(
            "; {} defined, {} ({actions_already} performed before)",
            crate::words::counted(boards, "board", "boards"),
            crate::words::counted(actions, "action", "actions")
        )
    } else {
        String::new()
    };
    println!(
        "imported {read} events in {took:.2?} ({:.0} events/s): {accepted} accepted, {duplicates} duplicates, {rejected} rejected{others}",
        read as f64 / took.as_secs_f64().max(1e-9)
    );
    if let Err(e) = state.ingest.checkpoint().await {
        tracing::warn!(error = %Chain(&e), "the checkpoint after the import failed (the next start replays the log)");
    }
    state.store.close().await;
    Ok(if rejected == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(4)
    })
}

/// Queues one event, submitting the queue first when it is full, or when the event cannot
/// share its receipt time (see [`Batch`]).
async fn add(state: &Shared, batch: &mut Batch, totals: &mut Totals, event: Pending) -> Result<(), String> {
    let received_at = event.exported.as_ref().map(|e| e.received_at);
    let closes_at = received_at.and_then(|at| next_close(state, &event.event, at));
    let apart = match (received_at, batch.received_at) {
        (Some(at), Some(batch_at)) => {
            batch.closes_at.is_some_and(|close| at >= close)
                || closes_at.is_some_and(|close| batch_at >= close)
        }
        (None, None) => false,
        _ => !batch.events.is_empty(),
    };
    if apart || batch.events.len() == MAX_BATCH {
        flush(state, batch, totals).await?;
    }
    batch.received_at = received_at.max(batch.received_at);
    batch.closes_at = match (closes_at, batch.closes_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    batch.events.push(event);
    totals.read += 1;
    Ok(())
}

/// The first close, after `received_at`, of a period the event feeds; `None` when they all
/// stay open (all time) or were closed already. An event the API would refuse has none: it is
/// refused whenever it is submitted. Cost: one board look-up per scope.
fn next_close(state: &Shared, event: &Value, received_at: i64) -> Option<i64> {
    let text = |key: &str| event.get(key).and_then(Value::as_str);
    let achieved_at = parse_rfc3339(text("achieved_at")?).ok()?;
    let (game, mode, season) = (text("game")?, text("mode")?, text("season")?);
    let scopes: Vec<&str> = match event.get("scopes") {
        Some(Value::Array(scopes)) => scopes.iter().filter_map(Value::as_str).collect(),
        _ => vec!["global"],
    };
    let mut first: Option<i64> = None;
    for scope in scopes {
        let Some(entry) = BoardId::new(game, mode, season, scope)
            .ok()
            .and_then(|id| state.registry.entry(&id))
        else {
            continue;
        };
        for period in entry.calendar.periods_of(achieved_at) {
            if let Some(close) = entry
                .calendar
                .closes_at(&period)
                .filter(|close| *close > received_at)
            {
                first = Some(first.map_or(close, |f| f.min(close)));
            }
        }
    }
    first
}

/// Submits the queued events as one group commit, each as its source, at the batch's receipt
/// time, and counts the answers. An exported event must come out as it did in its log: applied,
/// or late.
async fn flush(state: &Shared, batch: &mut Batch, totals: &mut Totals) -> Result<(), String> {
    if batch.events.is_empty() {
        return Ok(());
    }
    let now = batch.received_at.take().unwrap_or_else(crate::clock::now_ms);
    batch.closes_at = None;
    state.clock.set(now);
    let mut exported = Vec::with_capacity(batch.events.len());
    let checked = batch
        .events
        .drain(..)
        .map(|p| {
            exported.push(p.exported);
            let mut checked = check_value(&state.registry, &Importer, p.event, now);
            if let Ok(event) = &mut checked {
                event.source = p.source;
            }
            checked
        })
        .collect();
    let answers = crate::http::write::submit_checked(state, checked)
        .await
        .map_err(|e| e.to_string())?;
    for (answer, exported) in answers.into_iter().zip(exported) {
        let late = answer.status == "LATE";
        match (answer.status, &exported) {
            ("DUPLICATE", _) => totals.duplicates += 1,
            ("ACCEPTED" | "LATE", None) => totals.accepted += 1,
            ("ACCEPTED" | "LATE", Some(e)) if late == e.status.starts_with("LATE") => totals.accepted += 1,
            ("ACCEPTED" | "LATE", Some(e)) => totals.refuse(
                &answer.event_id,
                "STATUS_DIFFERS",
                &format!(
                    "it was {} at seq {} of the export but is {} here",
                    e.status, e.seq, answer.status
                ),
            ),
            _ => totals.refuse(
                &answer.event_id,
                answer.code.unwrap_or_default(),
                &answer.detail.unwrap_or_default(),
            ),
        }
    }
    Ok(())
}

/// Defines a board as `PUT /v1/boards/...` does; the same definition again is a no-op.
async fn define(state: &Shared, line: BoardLine, totals: &mut Totals) -> Result<(), String> {
    let def = line.board.definition()?;
    match state.store.define_board(&def).await.map_err(|e| e.to_string())? {
        Defined::Created => {
            state.registry.add(&def)?;
            totals.boards += 1;
        }
        Defined::Identical => {}
        Defined::Conflict(existing) => {
            return Err(format!(
                "board {} exists here with another definition ({} {}..={})",
                existing.id, existing.rules.score_mode, existing.rules.value_min, existing.rules.value_max
            ));
        }
    }
    Ok(())
}

/// Performs an exported action through the writer, with its actor and reason.
async fn act(state: &Shared, line: ActionLine, totals: &mut Totals) {
    let seq = line.seq;
    let answer = state
        .ingest
        .act(ActionRequest {
            game: line.game,
            action: line.action,
            action_id: line.moderation_id,
            request: line.request,
            actor: line.actor,
            reason: line.reason,
            profile_patch: None,
        })
        .await;
    match answer {
        Ok(answer) if answer.replayed => totals.actions_already += 1,
        Ok(_) => totals.actions += 1,
        Err(e) => {
            let problem = problem_of(e);
            totals.refuse(&format!("action at seq {seq}"), problem.code, &problem.detail)
        }
    }
}
