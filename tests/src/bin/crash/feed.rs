//! The feed and a webhook under the chaos (issue 41, `docs/feed.md`). Both boards of every game
//! declare bands, and each game has a webhook endpoint on a receiver in this process that
//! answers one delivery in [`FAIL_EVERY`] with a 500. After the last restart, with the boards
//! quiet, each game's feed must hold exactly the band records a model makes from its log (the
//! acknowledged events in `seq` order folded into a core board with the core's
//! `band_crossings`, for each board's all-time instance), and the receiver must have had every
//! record at least once, each game's first arriving in `seq` order ([`Receiver::check`]).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use standings_core::{Applied, Band, Board, BoardRules, ScoreEvent, ScoreMode};
use standings_tests::http::HttpConn;
use standings_tests::receiver::Receiver;
use standings_tests::service::{ADMIN_TOKEN, SERVICE_TOKEN};

use super::Event;

/// One delivery in this many is answered 500, so retries run under the kills too.
pub(crate) const FAIL_EVERY: u64 = 7;

/// How long the feed may take to be stored and delivered once the boards are quiet.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The feed each board declares, as its definition's field.
pub(crate) fn declared(mode: ScoreMode) -> &'static str {
    match mode {
        ScoreMode::Cumulative => r#""feed":{"bands":[1,10,"5%"]}"#,
        _ => r#""feed":{"bands":[1,10,100]}"#,
    }
}

/// The bands [`declared`] names, as the core and the records name them.
fn bands(mode: ScoreMode) -> Vec<(Band, &'static str)> {
    match mode {
        ScoreMode::Cumulative => vec![
            (Band::Top(1), "top:1"),
            (Band::Top(10), "top:10"),
            (Band::Percent(500), "top:5%"),
        ],
        _ => vec![
            (Band::Top(1), "top:1"),
            (Band::Top(10), "top:10"),
            (Band::Top(100), "top:100"),
        ],
    }
}

/// The webhook settings the service runs with: retries soon, so a 500 costs little.
pub(crate) const CONFIG: &str = "webhook_backoff_ms = 20\nwebhook_timeout_ms = 5000\n";

/// Registers `game`'s endpoint (every kind) at `url`, through `addr`.
pub(crate) async fn register(addr: &str, game: &str, url: &str) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    let body = json!({
        "url": url,
        "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "kinds": ["overtaken", "band_entered", "band_left", "period_closed", "season_finalized", "reward", "correction"],
    });
    let answer = conn
        .put(
            &format!("/v1/games/{game}/webhooks/crash"),
            body.to_string().as_bytes(),
        )
        .await?;
    if answer.status != 200 && answer.status != 201 {
        return Err(format!(
            "registering {game}'s webhook answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    Ok(())
}

/// Every record of `game`'s feed, through `addr`.
async fn read(addr: &str, game: &str) -> Result<Vec<Value>, String> {
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let mut all = Vec::new();
    let mut since = 0i64;
    loop {
        let answer = conn
            .get(&format!("/v1/games/{game}/feed?since_seq={since}&limit=1000"))
            .await?;
        let page: Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("{game}'s feed is not JSON: {e}"))?;
        if answer.status != 200 {
            return Err(format!("{game}'s feed answered {}: {page}", answer.status));
        }
        let records = page["records"].as_array().cloned().unwrap_or_default();
        if records.is_empty() {
            return Ok(all);
        }
        since = page["next_seq"].as_i64().ok_or("a feed page without next_seq")?;
        all.extend(records);
    }
}

/// `game`'s feed once it stopped growing and its endpoint delivered it all, read through
/// `addr` (the boards are quiet).
pub(crate) async fn settled(addr: &str, game: &str) -> Result<Vec<Value>, String> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let mut last: Option<Vec<Value>> = None;
    loop {
        let feed = read(addr, game).await?;
        let newest = feed.last().and_then(|r| r["seq"].as_i64()).unwrap_or(0);
        let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
        let answer = conn.get(&format!("/v1/games/{game}/webhooks/crash")).await?;
        let state: Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("{game}'s webhook state is not JSON: {e}"))?;
        if state["state"] == "parked" {
            return Err(format!("{game}'s webhook is parked: {state}"));
        }
        let through = state["delivered_through"].as_i64().unwrap_or(-1);
        if last.as_ref() == Some(&feed) && through >= newest {
            return Ok(feed);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{game}'s feed ({} records, newest {newest}) was not delivered within {SETTLE_TIMEOUT:?}: {state}",
                feed.len()
            ));
        }
        last = Some(feed);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Checks `feed`'s band records of `board`'s all-time instance against the model of `order`
/// (the game's logged events, in `seq` order). Answers how many there were.
pub(crate) fn check_model(
    feed: &[Value],
    board: &str,
    mode: ScoreMode,
    order: &[&Event],
) -> Result<usize, String> {
    let bands = bands(mode);
    let core_bands: Vec<Band> = bands.iter().map(|(b, _)| *b).collect();
    let mut model_board = Board::new(BoardRules::new(mode));
    let mut expected = Vec::new();
    for event in order {
        let scored = ScoreEvent::new(&event.id, &event.player, event.value, event.achieved_at)
            .map_err(|e| format!("the model cannot take {}: {e}", event.id))?;
        let Applied::Changed(delta) = model_board
            .apply(&scored)
            .map_err(|e| format!("the model cannot apply {}: {e}", event.id))?
        else {
            continue;
        };
        for c in model_board.band_crossings(&delta, &core_bands) {
            expected.push(json!({
                "kind": if c.entered { "band_entered" } else { "band_left" },
                "player_id": c.player,
                "band": bands[c.band].1,
                "rank_before": c.rank_before,
                "rank_after": c.rank_after,
                "board_version": model_board.version(),
            }));
        }
    }
    let got: Vec<Value> = feed
        .iter()
        .filter(|r| r["board"] == board && r["period"] == "all_time")
        .filter(|r| r["kind"] == "band_entered" || r["kind"] == "band_left")
        .map(|r| {
            json!({
                "kind": r["kind"], "player_id": r["player_id"], "band": r["band"],
                "rank_before": r["rank_before"], "rank_after": r["rank_after"],
                "board_version": r["board_version"],
            })
        })
        .collect();
    if got == expected {
        return Ok(got.len());
    }
    let first = got
        .iter()
        .zip(&expected)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(expected.len()));
    Err(format!(
        "{board}'s feed has {} band records where the model of its log has {}; the first that differs, #{first}: {} against the model's {}",
        got.len(),
        expected.len(),
        got.get(first).map_or("none".into(), Value::to_string),
        expected.get(first).map_or("none".into(), Value::to_string),
    ))
}

/// Checks every game's settled feed against the model of its log, and the receiver against
/// the feeds. `order` is each game's logged events in `seq` order; `boards` the boards and
/// their modes; `feeds` each game's settled feed. Answers the figures for the summary.
pub(crate) fn check(
    feeds: &BTreeMap<String, Vec<Value>>,
    order: &HashMap<String, Vec<&Event>>,
    boards: impl Fn(&str) -> Vec<(String, ScoreMode)>,
    receiver: &Receiver,
) -> Result<String, String> {
    let mut band_records = 0;
    for (game, feed) in feeds {
        let events = order.get(game).map(Vec::as_slice).unwrap_or_default();
        for (board, mode) in boards(game) {
            band_records += check_model(feed, &board, mode, events)?;
        }
    }
    let seqs: BTreeMap<String, Vec<i64>> = feeds
        .iter()
        .map(|(game, feed)| {
            (
                game.clone(),
                feed.iter().filter_map(|r| r["seq"].as_i64()).collect(),
            )
        })
        .collect();
    let (deliveries, repeats) = receiver.check(&seqs)?;
    let records: usize = feeds.values().map(Vec::len).sum();
    Ok(format!(
        "feed: {records} records ({band_records} band records equal to the model of the log), \
         {deliveries} webhook deliveries, every record at least once and in seq order \
         ({repeats} repeats, 1 in {FAIL_EVERY} answered 500)"
    ))
}
