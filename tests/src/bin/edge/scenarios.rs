//! The scenarios, in the order they run: each one returns what it measured or why it failed,
//! and a failure does not stop the ones after it (they report their own).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::json;
use standings_tests::edge::{numbers, sign_jwt};
use standings_tests::http::{Client, Reply};
use standings_tests::service::ADMIN_TOKEN;
use standings_tests::workload::Rng;

use crate::Args;
use crate::stack::{
    BOARD, DAYS_BOARD, DAYS_DEFINE, DEFINE, GAME, HEAD_MAX_AGE_SECONDS, JWT_SECRET, OTHER_GAME_TOKEN,
    READER_PLAYER, READER_TOKEN, READY_TIMEOUT, Stack, WRITER_TOKEN,
};

/// How long the edge may take to reach the origin's version after seeding (the first heads
/// publish whole boards, and the first chunks fill the caches).
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times a comparison is asked again when a publish came between the two answers.
const VERSION_RETRIES: usize = 20;
/// Player ids that never scored: unranked everywhere.
const GHOSTS: u64 = 50;
/// The player with a friend list of 600, far longer than the rest.
const BIG_LIST_OWNER: &str = "p-00002";
/// A day in ms.
const DAY_MS: i64 = 86_400_000;
/// Reads of the daily board at distinct `at`s, each compared edge against origin.
const PERIOD_READS: usize = 240;
/// The display names players get (every third player, with its number after it): escapes,
/// accents, other scripts, emoji and a zero-width-joiner sequence, each printed by the core's
/// JSON on both tiers.
const NAMES: [&str; 8] = [
    "Zoë 🚀",
    "Łukasz",
    "李小龍",
    "the \"quoted\" one",
    "back\\slash",
    "Ο Νίκος",
    "👩\u{200d}👩\u{200d}👧 family",
    "Ava",
];
/// The countries players get (every fourth player).
const COUNTRIES: [&str; 5] = ["DE", "FR", "JP", "BR", "NZ"];
/// The player who shows anonymously: first on the board, in the reader's friend list, with a
/// name, a country and metadata that only the origin's answers to trusted tokens show.
pub(crate) const ANONYMOUS: &str = "p-00004";
/// The anonymous player's name, which no answer of the edge may hold.
pub(crate) const ANONYMOUS_NAME: &str = "Hidden Hana";
/// The player renamed in the rename scenario (named, and ranked near the top).
const RENAMED: &str = "p-00006";

/// What the scenarios share: the stack, one client of each side, the seeded players and
/// friend lists, and counts of what was asked of the edge.
pub(crate) struct Run<'a> {
    pub(crate) args: &'a Args,
    pub(crate) stack: Stack,
    pub(crate) origin: Client,
    edge: Client,
    rng: Rng,
    /// Every player with a score.
    pub(crate) players: Vec<String>,
    /// Players with a friend list, and the list.
    friends: BTreeMap<String, Vec<String>>,
    /// Reads the harness sent to the worker.
    edge_reads: u64,
    /// Of them, answers marked `x-standings-cache: HIT`.
    hits_seen: u64,
    /// `x-standings-cache` of the very first top page the edge served.
    first_top_cache: Option<String>,
    /// Milliseconds the origin was up since the epoch when the run began, for `achieved_at`.
    started_ms: i64,
    /// The event ids sent so far, to keep them unique.
    events_sent: u64,
    /// Answers compared equal that carried a display name, a country and metadata.
    extras_seen: Extras,
    /// Edge answers that held the anonymous player's name (there must be none).
    leaks: Vec<String>,
    /// Values the fan-out's star took so far, so that each side's are new bests.
    pub(crate) fanout_values: i64,
}

/// How many equal answers carried each of an entry's extras.
#[derive(Clone, Copy, Debug, Default)]
struct Extras {
    display_name: u64,
    country: u64,
    metadata: u64,
}

/// Passed and failed scenarios.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
}

impl Tally {
    fn record(&mut self, name: &str, outcome: Result<String, String>) {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("edge: PASS {name}: {detail}");
            }
            Err(why) => {
                self.failed += 1;
                println!("edge: FAIL {name}: {why}");
            }
        }
    }
}

/// Runs the smoke check or every scenario. Returns (passed, failed); an error is a run that
/// could not start.
pub(crate) async fn run(args: &Args) -> Result<(u64, u64), String> {
    let stack = Stack::start(args).await?;
    let mut tally = Tally::default();
    let mut run = Run {
        args,
        origin: stack.origin_client(),
        edge: stack.edge_client(),
        stack,
        rng: Rng::stream(args.seed, 0x0065_6467),
        players: Vec::new(),
        friends: BTreeMap::new(),
        edge_reads: 0,
        hits_seen: 0,
        first_top_cache: None,
        started_ms: now_ms(),
        events_sent: 0,
        extras_seen: Extras::default(),
        leaks: Vec::new(),
        fanout_values: 0,
    };
    tally.record("the worker answers /edge/stats", smoke(&mut run).await);
    if args.smoke {
        return Ok((tally.passed, tally.failed));
    }
    let seeded = seed(&mut run).await;
    let seeded_ok = seeded.is_ok();
    tally.record(
        "seed a board (daily period, friend lists, profiles, metadata) and converge",
        seeded,
    );
    if !seeded_ok {
        println!("edge: the rest needs a seeded board; {}", run.stack.logs());
        tally.failed += 1;
        return Ok((tally.passed, tally.failed));
    }
    tally.record("a repeated top page is a cache HIT", cache_hit(&mut run).await);
    tally.record(
        "every read kind answers as the origin does at the same board_version",
        same_answers(&mut run).await,
    );
    tally.record(
        "reads of a daily board at many distinct `at`s answer as the origin does, which follows only the days with events",
        period_instances(&mut run).await,
    );
    tally.record("the edge catches up after new events", catch_up(&mut run).await);
    tally.record(
        "a rename: the edge catches up to the new name at the new version",
        rename(&mut run).await,
    );
    tally.record(
        "writes through the edge land at the origin",
        writes(&mut run).await,
    );
    tally.record(
        "read auth: player JWT, static token, bad token, another game",
        auth(&mut run).await,
    );
    tally.record(
        "read auth: public reads on a second worker",
        public_reads(&mut run).await,
    );
    tally.record(
        "an anonymous player: players get the public form at the edge; trusted tokens get the origin's answer",
        anonymity(&mut run).await,
    );
    tally.record("/edge/stats agrees with what the run did", stats(&mut run).await);
    tally.record(
        "live subscriptions through the edge's live objects: the origin's messages byte for byte, one upstream per view, no gap across an origin restart, going_away when it stays down",
        crate::live::through_the_edge(&mut run).await,
    );
    if args.fanout_sockets > 0 {
        tally.record(
            "fan-out: one view watched through the edge's live object and directly at the origin",
            crate::fanout::fan_out(&mut run).await,
        );
    }
    tally.record(
        "origin stopped: stale reads, 503 writes; restarted: fresh again",
        origin_outage(&mut run).await,
    );
    let leaks = std::mem::take(&mut run.leaks);
    tally.record(
        "no edge answer held the anonymous player's name",
        if leaks.is_empty() {
            Ok(format!("{} edge reads", run.edge_reads))
        } else {
            Err(format!("{} answers did: {}", leaks.len(), leaks.join(", ")))
        },
    );
    if tally.failed > 0 {
        println!("edge: logs for the failures:\n{}", run.stack.logs());
    }
    Ok((tally.passed, tally.failed))
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// RFC 3339 of `ms`.
pub(crate) fn rfc3339(ms: i64) -> String {
    let mut out = Vec::new();
    standings_tests::workload::push_rfc3339(&mut out, ms);
    String::from_utf8_lossy(&out).into_owned()
}

/// The worker answers `/edge/stats` with a JSON object.
async fn smoke(run: &mut Run<'_>) -> Result<String, String> {
    let reply = run.edge.get("/edge/stats", None).await?;
    if reply.status != 200 {
        return Err(format!("/edge/stats answered {}: {}", reply.status, reply.text()));
    }
    let stats = reply.json()?;
    if !stats.is_object() {
        return Err(format!("/edge/stats is not a JSON object: {}", reply.text()));
    }
    Ok(format!("{} counters", numbers(&stats).len()))
}

/// The version an edge answer is at.
fn edge_version(reply: &Reply) -> Option<u64> {
    reply.header("x-standings-board-version")?.parse().ok()
}

/// The version an origin answer is at.
fn origin_version(reply: &Reply) -> Option<u64> {
    reply.json().ok()?.get("board_version")?.as_u64()
}

/// `?period=daily` appended to `path` (with `&` when it has a query already), or nothing.
pub(crate) fn with_period(path: &str, daily: bool) -> String {
    match (daily, path.contains('?')) {
        (false, _) => path.to_string(),
        (true, true) => format!("{path}&period=daily"),
        (true, false) => format!("{path}?period=daily"),
    }
}

/// One score event's JSON.
/// The platforms the board declares; an event carries one by its id.
const PLATFORMS: [&str; 3] = ["ios", "android", "pc"];

fn event_json(id: &str, player: &str, value: i64, achieved_at: i64) -> String {
    let platform = PLATFORMS[id.bytes().map(usize::from).sum::<usize>() % PLATFORMS.len()];
    json!({
        "event_id": id, "player_id": player, "game": GAME, "mode": "solo", "season": "s1",
        "scopes": ["global"], "value": value, "achieved_at": rfc3339(achieved_at),
        "segments": {"platform": platform},
    })
    .to_string()
}

/// `event` (an event's JSON object) with `metadata` added as this very text, which the service
/// keeps and prints as sent (spaces and escapes included).
fn with_metadata(event: String, metadata: &str) -> String {
    let object = event.strip_suffix('}').unwrap_or(&event);
    format!("{object},\"metadata\":{metadata}}}")
}

/// The metadata of an event: spaces, an escape, a nested array and a `value` field, as sent.
fn metadata_text(n: u64) -> String {
    format!(r#"{{"lap": {n}, "car":"R\u00e9 \"8\"", "splits":[1.5,2], "value": {n}}}"#)
}

/// The path of `player`'s profile.
fn profile_path(player: &str) -> String {
    format!("/v1/games/{GAME}/players/{player}/profile")
}

/// Counts the extras an answer's body carries.
fn count_extras(seen: &mut Extras, body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    seen.display_name += u64::from(text.contains("\"display_name\":"));
    seen.country += u64::from(text.contains("\"country\":"));
    seen.metadata += u64::from(text.contains("\"metadata\":"));
}

impl Run<'_> {
    /// An `achieved_at` of today (the daily period's), at most a few minutes ago.
    fn achieved_now(&mut self) -> i64 {
        let now = now_ms();
        let day_start = now - now.rem_euclid(86_400_000);
        (now - self.rng.below(300_000) as i64)
            .max(day_start)
            .max(self.started_ms - 600_000)
    }

    /// A fresh event id.
    pub(crate) fn event_id(&mut self) -> String {
        self.events_sent += 1;
        format!("e2e-{}-{}", self.started_ms, self.events_sent)
    }

    /// Submits `events` (player, value) to the origin, or through the edge, in batches of
    /// 1000, and requires every event ACCEPTED.
    pub(crate) async fn submit(&mut self, to_edge: bool, events: &[(String, i64)]) -> Result<(), String> {
        for batch in events.chunks(1000) {
            let mut body = String::from("{\"events\":[");
            for (i, (player, value)) in batch.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                let id = self.event_id();
                let at = self.achieved_now();
                let event = event_json(&id, player, *value, at);
                // Every seventh event carries metadata.
                if self.events_sent.is_multiple_of(7) || player == ANONYMOUS {
                    body.push_str(&with_metadata(event, &metadata_text(self.events_sent)));
                } else {
                    body.push_str(&event);
                }
            }
            body.push_str("]}");
            let client = if to_edge { &mut self.edge } else { &mut self.origin };
            let reply = client
                .post("/v1/score-events/batch", Some(WRITER_TOKEN), body.as_bytes())
                .await?;
            let accepted = String::from_utf8_lossy(&reply.body)
                .matches("\"ACCEPTED\"")
                .count();
            if reply.status != 200 || accepted != batch.len() {
                return Err(format!(
                    "a batch of {} answered {} with {accepted} accepted: {}",
                    batch.len(),
                    reply.status,
                    reply.text()
                ));
            }
        }
        Ok(())
    }

    /// A read sent to the worker, counted (and its HIT, if it was one) for `/edge/stats`.
    async fn edge_read(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<Reply, String> {
        self.edge_reads += 1;
        let reply = self.edge.request(method, path, token, body).await?;
        if reply.header("x-standings-cache") == Some("HIT") {
            self.hits_seen += 1;
        }
        // A trusted token's read is the origin's answer to it, which shows the name by design.
        let trusted = reply.header("x-standings-fallback") == Some("trusted-caller");
        if !trusted && String::from_utf8_lossy(&reply.body).contains(ANONYMOUS_NAME) && self.leaks.len() < 5 {
            self.leaks.push(format!("{method} {path}"));
        }
        Ok(reply)
    }

    /// A `GET` read sent to the worker, counted.
    async fn edge_get(&mut self, path: &str, token: Option<&str>) -> Result<Reply, String> {
        self.edge_read("GET", path, token, None).await
    }

    /// How long after a write the edge may take to serve it: the publish interval, the head
    /// lifetime and the slack.
    fn catch_up_bound(&self) -> Duration {
        Duration::from_millis(self.args.interval_ms + HEAD_MAX_AGE_SECONDS * 1000 + self.args.slack_ms)
    }

    /// The origin's current version of the board (all time, or today's).
    async fn origin_now(&mut self, daily: bool) -> Result<u64, String> {
        let reply = self
            .origin
            .get(
                &with_period(&format!("{BOARD}/top?limit=1"), daily),
                Some(ADMIN_TOKEN),
            )
            .await?;
        if reply.status != 200 {
            return Err(format!(
                "the origin's top answered {}: {}",
                reply.status,
                reply.text()
            ));
        }
        origin_version(&reply)
            .ok_or_else(|| format!("the origin's top has no board_version: {}", reply.text()))
    }

    /// Reads `path` at the edge until its version is at least `version`, within `timeout`.
    /// Returns the answer and how long it took.
    async fn edge_reaches(
        &mut self,
        path: &str,
        version: u64,
        timeout: Duration,
    ) -> Result<(Reply, Duration), String> {
        let started = Instant::now();
        loop {
            let reply = self.edge_get(path, Some(READER_TOKEN)).await;
            let last;
            match reply {
                Ok(reply) if reply.status == 200 => {
                    if path.contains("/top") && self.first_top_cache.is_none() {
                        self.first_top_cache = reply.header("x-standings-cache").map(str::to_string);
                    }
                    match edge_version(&reply) {
                        Some(v) if v >= version => return Ok((reply, started.elapsed())),
                        Some(v) => last = format!("version {v}"),
                        None => {
                            return Err(format!(
                                "an edge answer without x-standings-board-version: {:?}",
                                reply.headers
                            ));
                        }
                    }
                }
                Ok(reply) => last = format!("{}: {}", reply.status, reply.text()),
                Err(why) => last = why,
            }
            if started.elapsed() >= timeout {
                return Err(format!(
                    "the edge's {path} did not reach board_version {version} within {timeout:?} (last: {last})"
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends the same read to the edge (with `edge_token`) and the origin (with
    /// `origin_token`) and requires the same status and the same bytes. A 200 is compared only
    /// when the edge's `x-standings-board-version` equals the origin's `board_version` (a
    /// publish between the two is asked again); an answer without a version (the boards list,
    /// an error) is asked again for a head lifetime before a difference counts. Returns the
    /// edge's answer.
    async fn same(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        edge_token: Option<&str>,
        origin_token: Option<&str>,
    ) -> Result<Reply, String> {
        let started = Instant::now();
        let deadline = started + Duration::from_secs(HEAD_MAX_AGE_SECONDS) * 3;
        // The edge may answer from a head it holds for a head lifetime, so after a publish it
        // can trail the origin by about that (plus the interval and the slack).
        let versions_by = started + self.catch_up_bound() * 2;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let edge = self.edge_read(method, path, edge_token, body).await?;
            let origin = self.origin.request(method, path, origin_token, body).await?;
            let versioned = origin.status == 200 && origin_version(&origin).is_some();
            if versioned && edge.status == 200 {
                let Some(ev) = edge_version(&edge) else {
                    let bodies = if edge.body == origin.body {
                        "the bodies are equal".to_string()
                    } else {
                        first_difference(&edge.body, &origin.body)
                    };
                    return Err(format!(
                        "{method} {path}: the edge's 200 has no x-standings-board-version ({bodies}): {:?}",
                        edge.headers
                    ));
                };
                let ov = origin_version(&origin).unwrap_or_default();
                let age = edge.header("x-standings-snapshot-age-ms").map(str::parse::<u64>);
                let cache = edge.header("x-standings-cache");
                if !matches!(age, Some(Ok(_))) || !matches!(cache, Some("HIT" | "MISS")) {
                    return Err(format!(
                        "{method} {path}: the edge's read headers are incomplete (x-standings-snapshot-age-ms {age:?}, \
                         x-standings-cache {cache:?})"
                    ));
                }
                if ev != ov {
                    if Instant::now() < versions_by {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                    return Err(format!(
                        "{method} {path}: versions never met in {attempts} tries over {:?} (edge {ev}, origin {ov})",
                        started.elapsed()
                    ));
                }
            }
            if edge.status == origin.status && edge.body == origin.body {
                count_extras(&mut self.extras_seen, &edge.body);
                return Ok(edge);
            }
            if !versioned && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            return Err(format!(
                "{method} {path}{}: the edge answered {} and the origin {}; {}",
                body.map(|b| format!(" {}", String::from_utf8_lossy(b)))
                    .unwrap_or_default(),
                edge.status,
                origin.status,
                first_difference(&edge.body, &origin.body)
            ));
        }
    }
}

/// Where two bodies first differ, with some context of each.
fn first_difference(edge: &[u8], origin: &[u8]) -> String {
    let at = edge
        .iter()
        .zip(origin)
        .position(|(a, b)| a != b)
        .unwrap_or(edge.len().min(origin.len()));
    let around = |bytes: &[u8]| {
        let from = at.saturating_sub(80);
        let to = (at + 80).min(bytes.len());
        String::from_utf8_lossy(&bytes[from.min(to)..to]).into_owned()
    };
    format!(
        "bodies of {} and {} bytes first differ at byte {at}: edge ...{}... origin ...{}...",
        edge.len(),
        origin.len(),
        around(edge),
        around(origin)
    )
}

/// Defines the board (all time and daily), seeds `--players` players (with ties, a second
/// round of events for a tenth of them, metadata on every seventh event, and the anonymous and
/// renamed players near the top), sets friend lists (with unranked friends, the anonymous
/// player in the reader's, and one list far longer than the rest) and profiles (a display name
/// for every fifth player, a country for every tenth, the anonymous player's), and waits until
/// the edge serves the origin's versions.
async fn seed(run: &mut Run<'_>) -> Result<String, String> {
    let started = Instant::now();
    let reply = run
        .origin
        .put(
            DEFINE,
            Some(ADMIN_TOKEN),
            // Split by score range: every answer must still be the whole board's, at the edge too.
            // Segments by country and platform: the edge answers reads within them from snapshots.
            br#"{"score_mode":"highest","value_min":0,"value_max":1000000,"periods":["all_time","daily"],"shards":4,
                "segments":{"country":"profile","platform":["ios","android","pc"]}}"#,
        )
        .await?;
    if reply.status != 201 && reply.status != 200 {
        return Err(format!(
            "defining the board answered {}: {}",
            reply.status,
            reply.text()
        ));
    }
    run.players = (0..run.args.players).map(|i| format!("p-{i:05}")).collect();
    // Values from a small range, so many players tie and dense ranks differ from ranks.
    let mut events: Vec<(String, i64)> = Vec::with_capacity(run.players.len());
    for i in 0..run.players.len() {
        let value = (run.rng.below(2_000) * run.rng.below(2_000) / 2_000) as i64;
        events.push((run.players[i].clone(), value));
    }
    for _ in 0..run.players.len() / 10 {
        let who = run.rng.below(run.players.len() as u64) as usize;
        events.push((run.players[who].clone(), run.rng.below(3_000) as i64));
    }
    events.push((ANONYMOUS.to_string(), 999_999));
    events.push((RENAMED.to_string(), 999_000));
    run.submit(false, &events).await?;
    let with_lists = (run.players.len() / 20).max(10);
    for n in 0..with_lists {
        let owner = match n {
            0 => READER_PLAYER.to_string(),
            1 => BIG_LIST_OWNER.to_string(),
            _ => run.players[run.rng.below(run.players.len() as u64) as usize].clone(),
        };
        if run.friends.contains_key(&owner) {
            continue;
        }
        // One list far longer than the rest, which an edge may answer by forwarding.
        let size = if n == 1 { 600 } else { run.rng.below(40) as usize };
        let mut list: Vec<String> = Vec::with_capacity(size);
        while list.len() < size {
            let friend = if run.rng.below(10) == 0 {
                format!("ghost-{}", run.rng.below(GHOSTS))
            } else {
                run.players[run.rng.below(run.players.len() as u64) as usize].clone()
            };
            if friend != owner && !list.contains(&friend) {
                list.push(friend);
            }
        }
        if n == 0 && !list.iter().any(|f| f == ANONYMOUS) {
            list.push(ANONYMOUS.to_string());
        }
        let body = json!({ "friends": list }).to_string();
        let path = format!("/v1/games/{GAME}/players/{owner}/friends");
        let reply = run.origin.put(&path, Some(WRITER_TOKEN), body.as_bytes()).await?;
        if reply.status != 200 {
            return Err(format!("PUT {path} answered {}: {}", reply.status, reply.text()));
        }
        run.friends.insert(owner, list);
    }
    let mut profiles = 0;
    for (i, player) in run.players.iter().enumerate() {
        let mut profile = serde_json::Map::new();
        if i % 5 == 0 || player == RENAMED {
            let name = format!("{} {i}", NAMES[(i / 5) % NAMES.len()]);
            profile.insert("display_name".into(), json!(name));
        }
        if i % 10 == 0 {
            profile.insert("country".into(), json!(COUNTRIES[(i / 10) % COUNTRIES.len()]));
        }
        if player == ANONYMOUS {
            profile.insert("display_name".into(), json!(ANONYMOUS_NAME));
            profile.insert("country".into(), json!("SE"));
            profile.insert("anonymous".into(), json!(true));
        }
        if profile.is_empty() {
            continue;
        }
        let path = profile_path(player);
        let body = serde_json::Value::Object(profile).to_string();
        let reply = run.origin.put(&path, Some(WRITER_TOKEN), body.as_bytes()).await?;
        if reply.status != 200 {
            return Err(format!(
                "PUT {path} {body} answered {}: {}",
                reply.status,
                reply.text()
            ));
        }
        profiles += 1;
    }
    let seeded = started.elapsed();
    let mut waits = Vec::new();
    for daily in [false, true] {
        let version = run.origin_now(daily).await?;
        let path = with_period(&format!("{BOARD}/top?limit=10"), daily);
        let (_, took) = run.edge_reaches(&path, version, CONVERGE_TIMEOUT).await?;
        waits.push(format!(
            "{} version {version} after {took:.1?}",
            if daily { "daily" } else { "all time" }
        ));
    }
    Ok(format!(
        "{} events for {} players, {} friend lists and {profiles} profiles in {seeded:.1?}; the edge served {}",
        events.len(),
        run.players.len(),
        run.friends.len(),
        waits.join(", ")
    ))
}

/// The first top page of the run was a MISS (the Cache API started empty); a page never asked
/// for is a MISS, and asked again at the same version, a HIT with the same bytes.
async fn cache_hit(run: &mut Run<'_>) -> Result<String, String> {
    if run.first_top_cache.as_deref() != Some("MISS") {
        return Err(format!(
            "the run's first top page was x-standings-cache {:?}, not MISS",
            run.first_top_cache
        ));
    }
    for attempt in 0..VERSION_RETRIES {
        let limit = 37 + attempt;
        let path = format!("{BOARD}/top?limit={limit}");
        let first = run.edge_get(&path, Some(READER_TOKEN)).await?;
        let second = run.edge_get(&path, Some(READER_TOKEN)).await?;
        if first.status != 200 || second.status != 200 {
            return Err(format!(
                "{path} answered {} then {}: {}",
                first.status,
                second.status,
                second.text()
            ));
        }
        if edge_version(&first) != edge_version(&second) {
            continue;
        }
        let caches = (
            first.header("x-standings-cache"),
            second.header("x-standings-cache"),
        );
        if caches != (Some("MISS"), Some("HIT")) {
            return Err(format!("{path}: x-standings-cache {caches:?}, not (MISS, HIT)"));
        }
        if first.body != second.body {
            return Err(format!(
                "{path}: the HIT differs from the MISS: {}",
                first_difference(&second.body, &first.body)
            ));
        }
        return Ok(format!(
            "top?limit={limit}: MISS then HIT, same bytes; the run's first top page was a MISS"
        ));
    }
    Err("the board changed between every pair of reads".into())
}

/// `--queries` random reads of every kind, each answered by the edge as by the origin.
async fn same_answers(run: &mut Run<'_>) -> Result<String, String> {
    let mut asked: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let owners: Vec<String> = run.friends.keys().cloned().collect();
    // The widest reads first: the largest page, radius and rank-players call, and the longest
    // friend list, which may need more parts than the edge fetches for one request.
    let widest: Vec<String> = run.players.iter().take(1_000).cloned().collect();
    let widest = json!({ "player_ids": widest }).to_string();
    let player = run.players[run.players.len() / 2].clone();
    // Friend lists are private: a player reads only its own, so friends-of is read with the
    // owner's JWT; every other read with a static player token. Both get the public form.
    let big_list_token = jwt(BIG_LIST_OWNER, &[GAME]);
    for daily in [false, true] {
        for (method, path, body) in [
            ("GET", format!("{BOARD}/top?limit=1000"), None),
            ("GET", format!("{BOARD}/players/{player}/nearby?radius=100"), None),
            (
                "GET",
                format!("{BOARD}/friends-of/{BIG_LIST_OWNER}?include_self=true"),
                None,
            ),
            ("POST", format!("{BOARD}/rank-players"), Some(widest.as_bytes())),
            ("GET", format!("{BOARD}/players/ghost-1/nearby?radius=3"), None),
        ] {
            *asked.entry("widest reads").or_default() += 1;
            let path = with_period(&path, daily);
            let token = if path.contains("/friends-of/") {
                big_list_token.as_str()
            } else {
                READER_TOKEN
            };
            if let Err(why) = run.same(method, &path, body, Some(token), Some(token)).await {
                failures.push(why);
            }
        }
    }
    // The reads that must show names: the anonymous and the renamed player (first and second
    // on the board), a friend list holding the anonymous player, a rank-players call of named
    // and unnamed players.
    let named =
        json!({ "player_ids": [ANONYMOUS, RENAMED, "p-00000", "p-00010", "p-00001", "ghost-3"] }).to_string();
    for daily in [false, true] {
        for (method, path, body) in [
            ("GET", format!("{BOARD}/players/{ANONYMOUS}/rank"), None),
            ("GET", format!("{BOARD}/players/{RENAMED}/rank"), None),
            ("GET", format!("{BOARD}/players/{RENAMED}/nearby?radius=2"), None),
            ("GET", format!("{BOARD}/top?limit=20"), None),
            (
                "GET",
                format!("{BOARD}/friends-of/{READER_PLAYER}?include_self=true"),
                None,
            ),
            ("POST", format!("{BOARD}/rank-players"), Some(named.as_bytes())),
        ] {
            *asked.entry("reads of named players").or_default() += 1;
            let path = with_period(&path, daily);
            if let Err(why) = run
                .same(method, &path, body, Some(READER_TOKEN), Some(READER_TOKEN))
                .await
            {
                failures.push(why);
            }
        }
    }
    // Bad input: the edge refuses it with the origin's status, code and words, byte for byte.
    let long_id = "p".repeat(200);
    for (method, path, body) in [
        ("GET", format!("{BOARD}/top?limit=0"), None),
        ("GET", format!("{BOARD}/top?limit=1001"), None),
        ("GET", format!("{BOARD}/top?limit=ten"), None),
        ("GET", format!("{BOARD}/top?cursor=not-a-cursor"), None),
        ("GET", format!("{BOARD}/top?period=weekly"), None),
        ("GET", format!("{BOARD}/top?period=daily&at=yesterday"), None),
        ("GET", format!("{BOARD}/players/{player}/nearby?radius=101"), None),
        ("GET", format!("{BOARD}/players/{player}/nearby?radius=-1"), None),
        ("GET", format!("{BOARD}/players/{long_id}/rank"), None),
        ("GET", format!("{BOARD}/players/ghost-1/rank"), None),
        (
            "GET",
            format!("/v1/leaderboards/{GAME}/solo/no-such-season/global/top"),
            None,
        ),
        (
            "POST",
            format!("{BOARD}/rank-players"),
            Some(&b"{\"player_ids\": \"p-1\"}"[..]),
        ),
        ("POST", format!("{BOARD}/rank-players"), Some(&b"not json"[..])),
    ] {
        *asked.entry("bad input").or_default() += 1;
        if let Err(why) = run
            .same(method, &path, body, Some(READER_TOKEN), Some(READER_TOKEN))
            .await
        {
            failures.push(why);
        }
    }
    // Reads within a segment, by country and by platform: members, non-members, the anonymous
    // player (in no country segment), a next page, and the refusals.
    let in_de = run.players[0].clone();
    let members =
        json!({ "player_ids": [ANONYMOUS, RENAMED, "p-00000", "p-00010", "p-00050", "p-00001", "ghost-3"] })
            .to_string();
    for daily in [false, true] {
        let mut paths: Vec<(&str, String, Option<&[u8]>)> = Vec::new();
        for segment in [
            "country:DE",
            "country:FR",
            "country:SE",
            "platform:ios",
            "platform:pc",
        ] {
            paths.extend([
                ("GET", format!("{BOARD}/top?limit=50&segment={segment}"), None),
                (
                    "GET",
                    format!("{BOARD}/players/{in_de}/rank?segment={segment}"),
                    None,
                ),
                (
                    "GET",
                    format!("{BOARD}/players/{player}/rank?segment={segment}"),
                    None,
                ),
                (
                    "GET",
                    format!("{BOARD}/players/{ANONYMOUS}/rank?segment={segment}"),
                    None,
                ),
                (
                    "GET",
                    format!("{BOARD}/players/{in_de}/nearby?radius=7&segment={segment}"),
                    None,
                ),
                (
                    "GET",
                    format!("{BOARD}/players/{player}/nearby?radius=3&segment={segment}"),
                    None,
                ),
                (
                    "POST",
                    format!("{BOARD}/rank-players?segment={segment}"),
                    Some(members.as_bytes()),
                ),
                (
                    "GET",
                    format!("{BOARD}/friends-of/{READER_PLAYER}?include_self=true&segment={segment}"),
                    None,
                ),
            ]);
        }
        paths.extend([
            (
                "GET",
                format!("{BOARD}/top?limit=1000&segment=platform:android"),
                None,
            ),
            ("GET", format!("{BOARD}/top?segment=region:eu"), None),
            ("GET", format!("{BOARD}/top?segment=platform:switch"), None),
            ("GET", format!("{BOARD}/top?segment=country:de"), None),
            ("GET", format!("{BOARD}/top?segment=DE"), None),
            (
                "GET",
                format!("{BOARD}/players/{in_de}/rank?segment=country:DE&approximate=interval"),
                None,
            ),
        ]);
        for (method, path, body) in paths {
            *asked.entry("reads within a segment").or_default() += 1;
            let path = with_period(&path, daily);
            let token = if path.contains("/friends-of/") {
                jwt(READER_PLAYER, &[GAME])
            } else {
                READER_TOKEN.to_string()
            };
            match run.same(method, &path, body, Some(&token), Some(&token)).await {
                Ok(reply) if reply.header("x-standings-fallback").is_some() => failures.push(format!(
                    "{path}: the edge handed it to the origin ({:?})",
                    reply.header("x-standings-fallback")
                )),
                Ok(reply) => {
                    // The next page, through the cursor the first one handed out.
                    let next = reply
                        .json()
                        .ok()
                        .and_then(|v| v["next_cursor"].as_str().map(str::to_string));
                    if let (Some(cursor), true) = (next, path.contains("/top?limit=50")) {
                        *asked.entry("reads within a segment").or_default() += 1;
                        let page = format!("{path}&cursor={cursor}");
                        if let Err(why) = run.same("GET", &page, None, Some(&token), Some(&token)).await {
                            failures.push(why);
                        }
                    }
                }
                Err(why) => failures.push(why),
            }
        }
    }
    for q in 0..run.args.queries {
        let daily = run.rng.below(3) == 0;
        let kind = q % 8;
        let player = run.players[run.rng.below(run.players.len() as u64) as usize].clone();
        let outcome = match kind {
            0 => {
                // A top page and up to two more through next_cursor.
                let limit = 1 + run.rng.below(150);
                let mut path = with_period(&format!("{BOARD}/top?limit={limit}"), daily);
                let mut outcome = Ok(());
                for _ in 0..3 {
                    match run
                        .same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                        .await
                    {
                        Ok(reply) => {
                            *asked.entry("top").or_default() += 1;
                            let next = reply
                                .json()
                                .ok()
                                .and_then(|v| v["next_cursor"].as_str().map(str::to_string));
                            match next {
                                Some(cursor) => {
                                    path = with_period(
                                        &format!("{BOARD}/top?limit={limit}&cursor={cursor}"),
                                        daily,
                                    )
                                }
                                None => break,
                            }
                        }
                        Err(why) => {
                            outcome = Err(why);
                            break;
                        }
                    }
                }
                outcome
            }
            1 if q % 16 == 9 => {
                // The edge answers it from the sketch and the lookup chunk alone.
                *asked.entry("rank interval").or_default() += 1;
                let path = with_period(
                    &format!("{BOARD}/players/{player}/rank?approximate=interval"),
                    daily,
                );
                run.same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                    .await
                    .map(drop)
            }
            1 => {
                *asked.entry("rank").or_default() += 1;
                let path = with_period(&format!("{BOARD}/players/{player}/rank"), daily);
                run.same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                    .await
                    .map(drop)
            }
            2 => {
                *asked.entry("rank of an unranked player").or_default() += 1;
                let ghost = format!("ghost-{}", run.rng.below(GHOSTS));
                let path = with_period(&format!("{BOARD}/players/{ghost}/rank"), daily);
                run.same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                    .await
                    .map(drop)
            }
            3 => {
                *asked.entry("nearby").or_default() += 1;
                let radius = run.rng.below(26);
                let path = with_period(&format!("{BOARD}/players/{player}/nearby?radius={radius}"), daily);
                run.same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                    .await
                    .map(drop)
            }
            4 => {
                *asked.entry("friends-of").or_default() += 1;
                let owner = owners[run.rng.below(owners.len() as u64) as usize].clone();
                let include_self = run.rng.below(2) == 0;
                let path = with_period(
                    &format!("{BOARD}/friends-of/{owner}?include_self={include_self}"),
                    daily,
                );
                let token = jwt(&owner, &[GAME]);
                run.same("GET", &path, None, Some(&token), Some(&token))
                    .await
                    .map(drop)
            }
            5 => {
                *asked.entry("rank-players").or_default() += 1;
                let n = 1 + run.rng.below(40);
                let ids: Vec<String> = (0..n)
                    .map(|_| {
                        if run.rng.below(8) == 0 {
                            format!("ghost-{}", run.rng.below(GHOSTS))
                        } else {
                            run.players[run.rng.below(run.players.len() as u64) as usize].clone()
                        }
                    })
                    .collect();
                let body = json!({ "player_ids": ids }).to_string();
                let path = with_period(&format!("{BOARD}/rank-players"), daily);
                run.same(
                    "POST",
                    &path,
                    Some(body.as_bytes()),
                    Some(READER_TOKEN),
                    Some(READER_TOKEN),
                )
                .await
                .map(drop)
            }
            _ => {
                *asked.entry("boards list").or_default() += 1;
                let path = format!("/v1/games/{GAME}/boards");
                run.same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                    .await
                    .map(drop)
            }
        };
        if let Err(why) = outcome {
            failures.push(why);
        }
    }
    let seen = run.extras_seen;
    if seen.display_name == 0 || seen.country == 0 || seen.metadata == 0 {
        failures.push(format!(
            "the equal answers should carry names, countries and metadata; they carried {seen:?}"
        ));
    }
    let summary = asked
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    if failures.is_empty() {
        Ok(format!(
            "all equal: {summary}; answers with display names {}, countries {}, metadata {}",
            seen.display_name, seen.country, seen.metadata
        ))
    } else {
        Err(format!(
            "{} of the reads differ ({summary}); the first few:\n  {}",
            failures.len(),
            failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n  ")
        ))
    }
}

/// One number of the origin's `/metrics`: the value of the sample line named `name` (a metric
/// without labels).
async fn origin_metric(run: &mut Run<'_>, name: &str) -> Result<f64, String> {
    let reply = run.origin.get("/metrics", None).await?;
    if reply.status != 200 {
        return Err(format!("/metrics answered {}: {}", reply.status, reply.text()));
    }
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    text.lines()
        .find_map(|line| {
            let (metric, value) = line.split_once(' ')?;
            (metric == name).then(|| value.trim().parse::<f64>().ok())?
        })
        .ok_or_else(|| format!("/metrics has no {name}"))
}

/// One counter of the worker's `/edge/stats`, by its dotted path.
async fn edge_counter(run: &mut Run<'_>, name: &str) -> Result<f64, String> {
    let reply = run.edge.get("/edge/stats", None).await?;
    let counters = numbers(&reply.json()?);
    counters
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .ok_or_else(|| format!("/edge/stats has no {name}: {}", reply.text()))
}

/// A second daily board, with a grace of three days, gets events today and on the two days
/// before. Then reads of it through the edge, at distinct `at`s within today and within five
/// other days (the two with events, two past days without, and a day to come), written in UTC
/// or with an offset, answer byte for byte as the origin does. The origin follows no more
/// instances for them than the days with events (`standings_snapshot_instances`), and answers
/// the others' heads with the empty snapshot (`standings_snapshot_empty_heads_total`, no more
/// than the heads the edge asked for); the edge asks for a head per day and head lifetime, not
/// per `at`.
async fn period_instances(run: &mut Run<'_>) -> Result<String, String> {
    let reply = run
        .origin
        .put(
            DAYS_DEFINE,
            Some(ADMIN_TOKEN),
            br#"{"score_mode":"highest","value_min":0,"value_max":1000000,"periods":["daily"],"grace_seconds":259200}"#,
        )
        .await?;
    if reply.status != 201 && reply.status != 200 {
        return Err(format!(
            "defining {DAYS_DEFINE} answered {}: {}",
            reply.status,
            reply.text()
        ));
    }
    let now = now_ms();
    let today = now - now.rem_euclid(DAY_MS);
    // Days by their offset from today; those with events get 200 of them, each before now.
    let days: [(i64, bool); 6] = [
        (0, true),
        (-1, true),
        (-2, true),
        (-3, false),
        (-5, false),
        (2, false),
    ];
    let scope = DAYS_BOARD.rsplit('/').next().unwrap_or_default();
    let mut scorers: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (offset, with_events) in days {
        if !with_events {
            continue;
        }
        let start = today + offset * DAY_MS;
        let latest = (start + DAY_MS).min(now) - start;
        let mut body = String::from("{\"events\":[");
        let mut players = Vec::new();
        for i in 0..200 {
            let player = run.players[run.rng.below(run.players.len() as u64) as usize].clone();
            let achieved_at = start + run.rng.below(latest.max(1) as u64) as i64;
            if i > 0 {
                body.push(',');
            }
            let id = run.event_id();
            let event = json!({
                "event_id": id, "player_id": player, "game": GAME, "mode": "solo", "season": "s1",
                "scopes": [scope], "value": run.rng.below(5_000) as i64, "achieved_at": rfc3339(achieved_at),
            })
            .to_string();
            if i % 5 == 0 {
                body.push_str(&with_metadata(event, &metadata_text(i)));
            } else {
                body.push_str(&event);
            }
            players.push(player);
        }
        body.push_str("]}");
        let reply = run
            .origin
            .post("/v1/score-events/batch", Some(WRITER_TOKEN), body.as_bytes())
            .await?;
        let accepted = String::from_utf8_lossy(&reply.body)
            .matches("\"ACCEPTED\"")
            .count();
        if reply.status != 200 || accepted != 200 {
            return Err(format!(
                "200 events of day {offset} answered {} with {accepted} accepted: {}",
                reply.status,
                reply.text()
            ));
        }
        scorers.insert(offset, players);
    }
    let instances_before = origin_metric(run, "standings_snapshot_instances").await?;
    let empty_before = origin_metric(run, "standings_snapshot_empty_heads_total").await?;
    let heads_before = edge_counter(run, "origin_fetches.head").await?;
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut forwarded = 0;
    let mut asked: BTreeSet<(i64, i64)> = BTreeSet::new();
    for n in 0..PERIOD_READS {
        // Half the reads are today's, the rest spread over the other days.
        let (offset, _) = if n % 2 == 0 {
            days[0]
        } else {
            days[1 + (n / 2) % (days.len() - 1)]
        };
        let start = today + offset * DAY_MS;
        let at_ms = loop {
            let at_ms = start + run.rng.below(DAY_MS as u64) as i64;
            if asked.insert((offset, at_ms)) {
                break at_ms;
            }
        };
        // Every fourth `at` is written with an offset: the same instant, another text.
        let at = if n % 4 == 3 {
            let local = rfc3339(at_ms + 19_800_000);
            format!("{}%2B05:30", local.trim_end_matches('Z'))
        } else {
            rfc3339(at_ms)
        };
        let player = match scorers.get(&offset) {
            Some(players) if run.rng.below(4) != 0 => {
                players[run.rng.below(players.len() as u64) as usize].clone()
            }
            _ => format!("ghost-{}", run.rng.below(GHOSTS)),
        };
        let path = match n % 3 {
            0 => format!(
                "{DAYS_BOARD}/top?period=daily&at={at}&limit={}",
                1 + run.rng.below(50)
            ),
            1 => format!("{DAYS_BOARD}/players/{player}/rank?period=daily&at={at}"),
            _ => format!(
                "{DAYS_BOARD}/players/{player}/nearby?period=daily&at={at}&radius={}",
                run.rng.below(6)
            ),
        };
        match run
            .same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
            .await
        {
            Ok(reply) => forwarded += usize::from(reply.header("x-standings-fallback").is_some()),
            Err(why) => failures.push(why),
        }
    }
    let elapsed = started.elapsed();
    let instances_after = origin_metric(run, "standings_snapshot_instances").await?;
    let empty_heads = origin_metric(run, "standings_snapshot_empty_heads_total").await? - empty_before;
    let heads = edge_counter(run, "origin_fetches.head").await? - heads_before;
    let with_events = days.iter().filter(|(_, e)| *e).count() as f64;
    let without = days.len() as f64 - with_events;
    // A head per day for its first `at`, then one per day and head lifetime at most.
    let lifetimes = elapsed.as_secs_f64() / HEAD_MAX_AGE_SECONDS as f64;
    let heads_bound = days.len() as f64 * (lifetimes.ceil() + 2.0);
    let mut problems = Vec::new();
    if !failures.is_empty() {
        problems.push(format!(
            "{} of {PERIOD_READS} reads differ; the first few:\n  {}",
            failures.len(),
            failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n  ")
        ));
    }
    if instances_after > instances_before + with_events {
        problems.push(format!(
            "the origin follows {instances_after} instances, {instances_before} before the reads: more than the \
             {with_events} days with events added"
        ));
    }
    if empty_heads < without || empty_heads > heads {
        problems.push(format!(
            "{empty_heads} empty heads answered: fewer than the {without} days without events, or more than the \
             {heads} heads the edge asked for"
        ));
    }
    if heads > heads_bound {
        problems.push(format!(
            "the edge asked for {heads} heads for {PERIOD_READS} reads of {} days in {elapsed:.1?}: more than \
             {heads_bound} (a head per day and lifetime)",
            days.len()
        ));
    }
    if forwarded > 0 {
        problems.push(format!("{forwarded} reads were forwarded to the origin"));
    }
    let summary = format!(
        "{PERIOD_READS} reads at distinct `at`s over {} days in {elapsed:.1?}; {heads} heads asked by the edge \
         (bound {heads_bound}); origin instances {instances_before} -> {instances_after} ({with_events} days with \
         events), {empty_heads} empty heads ({without} days without)",
        days.len()
    );
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(format!("{}; {summary}", problems.join("; ")))
    }
}

/// After new events at the origin, the edge reaches the origin's new version within
/// `interval_ms` plus the head lifetime plus the slack; three rounds, all time and daily. A
/// cursor made before the writes is then answered as the origin answers it.
async fn catch_up(run: &mut Run<'_>) -> Result<String, String> {
    let bound = run.catch_up_bound();
    let mut took = Vec::new();
    // A cursor of the version before the writes, for the next page after them.
    let first = run
        .origin
        .get(&format!("{BOARD}/top?limit=50"), Some(WRITER_TOKEN))
        .await?;
    let old_cursor = first.json()?["next_cursor"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the first page of 50 has no next_cursor: {}", first.text()))?;
    for round in 0..3 {
        let daily = round == 1;
        let before = run.origin_now(daily).await?;
        let events: Vec<(String, i64)> = (0..20)
            .map(|_| {
                let who = run.rng.below(run.players.len() as u64) as usize;
                (run.players[who].clone(), 3_000 + run.rng.below(10_000) as i64)
            })
            .collect();
        run.submit(false, &events).await?;
        let written = Instant::now();
        let visible_by = Instant::now() + Duration::from_secs(10);
        let version = loop {
            let now = run.origin_now(daily).await?;
            if now > before {
                break now;
            }
            if Instant::now() >= visible_by {
                return Err(format!(
                    "the origin's version stayed {before} 10 s after 20 accepted events"
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let path = with_period(&format!("{BOARD}/top?limit=10"), daily);
        run.edge_reaches(&path, version, bound * 4).await?;
        let elapsed = written.elapsed();
        if elapsed > bound {
            return Err(format!(
                "round {round}: the edge reached version {version} {elapsed:.0?} after the write, past {bound:?} \
                 (interval {} ms + head {HEAD_MAX_AGE_SECONDS} s + slack {} ms)",
                run.args.interval_ms, run.args.slack_ms
            ));
        }
        took.push(format!("{elapsed:.0?}"));
    }
    // The old cursor is answered as the origin answers it (the edge may forward it).
    let path = format!("{BOARD}/top?limit=50&cursor={old_cursor}");
    let stale = run
        .same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
        .await?;
    Ok(format!(
        "a cursor of the version before answered {} as at the origin; caught up in {} (bound {bound:?}: interval {} ms + head {HEAD_MAX_AGE_SECONDS} s + slack {} ms)",
        stale.status,
        took.join(", "),
        run.args.interval_ms,
        run.args.slack_ms
    ))
}

/// A rename of a ranked player (a profile `PUT` at the origin) moves each board instance where
/// they are ranked (all time and today) by exactly one version. The edge reaches that version
/// within the catch-up bound, its answer there shows the new name and country, and the
/// player's rank, window and a top page are byte for byte the origin's at that version.
async fn rename(run: &mut Run<'_>) -> Result<String, String> {
    let bound = run.catch_up_bound();
    let new_name = "Zoë 🚀 renamed \"ß\"";
    let printed = format!(
        "\"display_name\":{},\"country\":\"IS\"",
        serde_json::to_string(new_name).map_err(|e| e.to_string())?
    );
    let before = [run.origin_now(false).await?, run.origin_now(true).await?];
    let body = json!({ "display_name": new_name, "country": "IS" }).to_string();
    let reply = run
        .origin
        .put(&profile_path(RENAMED), Some(WRITER_TOKEN), body.as_bytes())
        .await?;
    if reply.status != 200 {
        return Err(format!("the rename answered {}: {}", reply.status, reply.text()));
    }
    let renamed = Instant::now();
    let mut reached = Vec::new();
    for (daily, before) in [false, true].into_iter().zip(before) {
        let rank = with_period(&format!("{BOARD}/players/{RENAMED}/rank"), daily);
        // The rename is durable when answered and visible a moment later.
        let visible_by = Instant::now() + Duration::from_secs(10);
        let version = loop {
            let reply = run.origin.get(&rank, Some(READER_TOKEN)).await?;
            if reply.status == 200 && reply.text().contains(&printed) {
                break origin_version(&reply)
                    .ok_or_else(|| format!("{rank} at the origin has no board_version: {}", reply.text()))?;
            }
            if Instant::now() >= visible_by {
                return Err(format!(
                    "the origin's {rank} does not show the rename 10 s after it: {}",
                    reply.text()
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        if version != before + 1 {
            return Err(format!(
                "{rank}: the rename moved board_version from {before} to {version}, not by one"
            ));
        }
        let (reply, _) = run.edge_reaches(&rank, version, bound * 4).await?;
        let elapsed = renamed.elapsed();
        if edge_version(&reply) != Some(version) || !reply.text().contains(&printed) {
            return Err(format!(
                "the edge's {rank} at version {:?} (the rename's is {version}) does not show the new name: {}",
                edge_version(&reply),
                reply.text()
            ));
        }
        if elapsed > bound {
            return Err(format!(
                "{rank}: the edge showed the new name {elapsed:.0?} after the rename, past {bound:?}"
            ));
        }
        for path in [
            rank.clone(),
            with_period(&format!("{BOARD}/players/{RENAMED}/nearby?radius=2"), daily),
            with_period(&format!("{BOARD}/top?limit=5"), daily),
        ] {
            let reply = run
                .same("GET", &path, None, Some(READER_TOKEN), Some(READER_TOKEN))
                .await?;
            if !reply.text().contains(&printed) {
                return Err(format!("{path} does not show the new name: {}", reply.text()));
            }
        }
        reached.push(format!(
            "{} version {before} -> {version} at the edge after {elapsed:.0?}",
            if daily { "daily" } else { "all time" }
        ));
    }
    Ok(format!(
        "{}; rank, window and top equal the origin's there (bound {bound:?})",
        reached.join(", ")
    ))
}

/// The anonymous player: the origin answers the game's service token their name, country and
/// metadata with `"anonymous":true`, and a player none of them. The edge answers a player the
/// public form from snapshots (which carry nothing else), and hands the service token's reads
/// to the origin, so each caller gets the origin's own answer.
async fn anonymity(run: &mut Run<'_>) -> Result<String, String> {
    let rank = format!("{BOARD}/players/{ANONYMOUS}/rank");
    let trusted = run.origin.get(&rank, Some(WRITER_TOKEN)).await?.json()?;
    if trusted["display_name"] != json!(ANONYMOUS_NAME)
        || trusted["country"] != json!("SE")
        || trusted["anonymous"] != json!(true)
        || !trusted["metadata"].is_object()
    {
        return Err(format!(
            "the origin's answer to the service token does not show the anonymous player's fields: {trusted}"
        ));
    }
    let public = run
        .same("GET", &rank, None, Some(READER_TOKEN), Some(READER_TOKEN))
        .await?
        .json()?;
    let shown: Vec<&str> = ["display_name", "country", "metadata", "anonymous"]
        .into_iter()
        .filter(|field| public.get(field).is_some())
        .collect();
    if !shown.is_empty() {
        return Err(format!(
            "a player's answer shows the anonymous player's {shown:?}: {public}"
        ));
    }
    let mut compared = 0;
    for path in [
        rank.clone(),
        format!("{BOARD}/top?limit=3"),
        format!("{BOARD}/players/{ANONYMOUS}/nearby?radius=1&period=daily"),
    ] {
        let through = run
            .same("GET", &path, None, Some(WRITER_TOKEN), Some(WRITER_TOKEN))
            .await?;
        if through.header("x-standings-fallback") != Some("trusted-caller") {
            return Err(format!(
                "the edge answered the service token's {path} itself, not through the origin"
            ));
        }
        compared += 1;
    }
    Ok(format!(
        "the origin shows the service token {ANONYMOUS_NAME:?} with \"anonymous\":true and a player nothing; \
         {compared} reads of the service token through the edge are the origin's answers to it"
    ))
}

/// A single event, a batch and a friend list sent through the edge are answered as the origin
/// answers them and are then visible at the origin.
async fn writes(run: &mut Run<'_>) -> Result<String, String> {
    let id = run.event_id();
    let at = run.achieved_now();
    let single = event_json(&id, "p-through-edge-1", 4_242, at);
    let reply = run
        .edge
        .post("/v1/score-events", Some(WRITER_TOKEN), single.as_bytes())
        .await?;
    if reply.status != 202 || !reply.text().contains("\"ACCEPTED\"") {
        return Err(format!(
            "a single event through the edge answered {}: {}",
            reply.status,
            reply.text()
        ));
    }
    // The same event again is a DUPLICATE, as at the origin.
    let again = run
        .edge
        .post("/v1/score-events", Some(WRITER_TOKEN), single.as_bytes())
        .await?;
    if again.status != 200 || !again.text().contains("\"DUPLICATE\"") {
        return Err(format!(
            "a resent event through the edge answered {}: {}",
            again.status,
            again.text()
        ));
    }
    run.submit(true, &[("p-through-edge-2".to_string(), 4_343)])
        .await?;
    let friends = br#"{"friends":["p-00002","p-00003","ghost-1"]}"#;
    let path = format!("/v1/games/{GAME}/players/p-through-edge-1/friends");
    let reply = run.edge.put(&path, Some(WRITER_TOKEN), friends).await?;
    if reply.status != 200 {
        return Err(format!(
            "PUT {path} through the edge answered {}: {}",
            reply.status,
            reply.text()
        ));
    }
    // An edge that forwards unchanged forwards a refusal unchanged too.
    let refused = run
        .edge
        .post("/v1/score-events", Some(READER_TOKEN), single.as_bytes())
        .await?;
    let refused_at_origin = run
        .origin
        .post("/v1/score-events", Some(READER_TOKEN), single.as_bytes())
        .await?;
    if (refused.status, &refused.body) != (refused_at_origin.status, &refused_at_origin.body) {
        return Err(format!(
            "a reader's write answered {} at the edge and {} at the origin: {}",
            refused.status,
            refused_at_origin.status,
            first_difference(&refused.body, &refused_at_origin.body)
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for (player, value) in [("p-through-edge-1", 4_242), ("p-through-edge-2", 4_343)] {
        let path = format!("{BOARD}/players/{player}/rank");
        loop {
            let reply = run.origin.get(&path, Some(ADMIN_TOKEN)).await?;
            if reply.status == 200 && reply.json()?["value"] == json!(value) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{player} is not on the origin's board with {value}: {}",
                    reply.text()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        run.players.push(player.to_string());
    }
    let stored = run
        .origin
        .get(
            &format!("/v1/games/{GAME}/players/p-through-edge-1/friends"),
            Some(ADMIN_TOKEN),
        )
        .await?;
    if stored.status != 200 || stored.json()?["friends"] != json!(["p-00002", "p-00003", "ghost-1"]) {
        return Err(format!(
            "the friend list set through the edge reads {}: {}",
            stored.status,
            stored.text()
        ));
    }
    Ok(format!(
        "an event (202 ACCEPTED, resent 200 DUPLICATE), a batch and a friend list landed; a refused write answered {} as at the origin",
        refused.status
    ))
}

/// The `code` of a problem answer.
fn code_of(reply: &Reply) -> String {
    reply
        .json()
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("(no code: {})", reply.text()))
}

/// A player JWT of `games` for `player`, valid for an hour.
pub(crate) fn jwt(player: &str, games: &[&str]) -> String {
    let now = now_ms() / 1000;
    sign_jwt(
        JWT_SECRET.as_bytes(),
        &json!({"sub": player, "iat": now, "exp": now + 3_600, "games": games}),
    )
}

/// A player JWT reads (checked in the worker) and answers as at the origin, its own friends
/// too; a static player token reads through introspection; no token, a bad token and a forged
/// JWT are 401 and another game's JWT is 403, as at the origin; another game's static token is
/// refused.
async fn auth(run: &mut Run<'_>) -> Result<String, String> {
    let player = run.players[7].clone();
    let token = jwt(&player, &[GAME]);
    run.same(
        "GET",
        &format!("{BOARD}/players/{player}/rank"),
        None,
        Some(&token),
        Some(&token),
    )
    .await?;
    run.same(
        "GET",
        &format!("{BOARD}/top?limit=15"),
        None,
        Some(&token),
        Some(&token),
    )
    .await?;
    run.same(
        "GET",
        &format!("{BOARD}/top?limit=16"),
        None,
        Some(READER_TOKEN),
        Some(READER_TOKEN),
    )
    .await?;
    run.same(
        "GET",
        &format!("{BOARD}/friends-of/{READER_PLAYER}?include_self=true"),
        None,
        Some(READER_TOKEN),
        Some(READER_TOKEN),
    )
    .await?;
    let forged = sign_jwt(
        b"not-the-shared-secret-not-the-shared",
        &json!({"sub": player, "exp": now_ms() / 1000 + 3_600, "games": [GAME]}),
    );
    let other_game_jwt = jwt(&player, &["other-game"]);
    let path = format!("{BOARD}/top?limit=5");
    let mut checked = Vec::new();
    for (what, token, status) in [
        ("no token", None, 401),
        ("an unknown token", Some("not-a-token-anyone-was-given-000"), 401),
        ("a JWT signed with another key", Some(forged.as_str()), 401),
        ("a JWT of another game", Some(other_game_jwt.as_str()), 403),
    ] {
        let edge = run.edge_get(&path, token).await?;
        let origin = run.origin.get(&path, token).await?;
        if (edge.status, origin.status) != (status, status) || code_of(&edge) != code_of(&origin) {
            return Err(format!(
                "{what}: the edge answered {} {} and the origin {} {} (expected {status})",
                edge.status,
                code_of(&edge),
                origin.status,
                code_of(&origin)
            ));
        }
        checked.push(format!("{what} {status} {}", code_of(&edge)));
    }
    // The edge learns of a static token only what introspection tells it about its own games,
    // so another game's token is unknown to it (401) where the origin knows it (403).
    let edge = run.edge_get(&path, Some(OTHER_GAME_TOKEN)).await?;
    if edge.status != 401 && edge.status != 403 {
        return Err(format!(
            "another game's static token read through the edge: {} {}",
            edge.status,
            edge.text()
        ));
    }
    checked.push(format!("another game's static token {}", edge.status));
    Ok(format!(
        "player JWT, static player token (introspected) and its own friends equal the origin's; {}",
        checked.join(", ")
    ))
}

/// A second worker with `PUBLIC_READS=true` answers reads without a token as the origin
/// answers a player (the public form: names, countries and metadata, none of the anonymous
/// player's), and still refuses friends-of without a token (friend lists are private).
async fn public_reads(run: &mut Run<'_>) -> Result<String, String> {
    let addr = run.stack.public_worker().await?.addr.clone();
    let mut public = Client::new(&addr);
    let player = run.players[10].clone();
    let mut compared = 0;
    let rank_players = json!({ "player_ids": [ANONYMOUS, RENAMED, player.clone(), "ghost-4"] }).to_string();
    for (method, path, body) in [
        ("GET", format!("{BOARD}/top?limit=20"), None),
        ("GET", format!("{BOARD}/players/{player}/nearby?radius=4"), None),
        ("GET", format!("{BOARD}/players/{player}/rank?period=daily"), None),
        ("GET", format!("{BOARD}/players/{ANONYMOUS}/rank"), None),
        (
            "POST",
            format!("{BOARD}/rank-players"),
            Some(rank_players.as_bytes()),
        ),
    ] {
        let deadline = Instant::now() + CONVERGE_TIMEOUT;
        loop {
            let edge = public.request(method, &path, None, body).await?;
            if String::from_utf8_lossy(&edge.body).contains(ANONYMOUS_NAME) {
                return Err(format!(
                    "{path} without a token shows the anonymous player's name: {}",
                    edge.text()
                ));
            }
            let origin = run
                .origin
                .request(method, &path, Some(READER_TOKEN), body)
                .await?;
            if edge.status == 200 && edge_version(&edge) == origin_version(&origin) {
                if edge.body != origin.body {
                    return Err(format!("{path}: {}", first_difference(&edge.body, &origin.body)));
                }
                count_extras(&mut run.extras_seen, &edge.body);
                compared += 1;
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{path} without a token answered {} at version {:?} (origin {:?}): {}",
                    edge.status,
                    edge_version(&edge),
                    origin_version(&origin),
                    edge.text()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let owner = READER_PLAYER;
    let friends = public.get(&format!("{BOARD}/friends-of/{owner}"), None).await?;
    if friends.status != 401 {
        return Err(format!(
            "friends-of without a token on the public worker answered {}: {}",
            friends.status,
            friends.text()
        ));
    }
    Ok(format!(
        "{compared} tokenless reads equal the origin's; friends-of without a token 401"
    ))
}

/// `/edge/stats` agrees with what the harness saw: read requests counted (no more than it
/// sent), top-page hits once HITs were answered (no more than the reads), fewer snapshot
/// fetches from the origin (heads, manifests, chunks) than reads, and no stale answer while
/// the origin was up.
async fn stats(run: &mut Run<'_>) -> Result<String, String> {
    let reply = run.edge.get("/edge/stats", None).await?;
    if reply.status != 200 {
        return Err(format!("/edge/stats answered {}: {}", reply.status, reply.text()));
    }
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let counters: BTreeMap<String, f64> = numbers(&reply.json()?).into_iter().collect();
    let counter = |name: &str| {
        counters
            .get(name)
            .copied()
            .ok_or_else(|| format!("/edge/stats has no {name}: {text}"))
    };
    let mut reads = 0.0;
    for kind in ["top", "rank", "nearby", "friends_of", "rank_players", "boards"] {
        reads += counter(&format!("requests.{kind}"))?;
    }
    let top_hits = counter("cache.top_hits")?;
    let mut snapshot_fetches = 0.0;
    for kind in ["head", "manifest", "chunk"] {
        snapshot_fetches += counter(&format!("origin_fetches.{kind}"))?;
    }
    let stale = counter("stale_answers")?;
    let sent = run.edge_reads as f64;
    let seen = run.hits_seen as f64;
    let mut problems = Vec::new();
    if reads < 1.0 || reads > sent {
        problems.push(format!("{reads} read requests counted, {sent} sent"));
    }
    if top_hits < seen.min(1.0) || top_hits > reads {
        problems.push(format!("{top_hits} top hits counted, {seen} HIT answers seen"));
    }
    if snapshot_fetches < 1.0 || snapshot_fetches >= reads {
        problems.push(format!(
            "{snapshot_fetches} snapshot fetches from the origin for {reads} reads (expected some, and fewer)"
        ));
    }
    if stale != 0.0 {
        problems.push(format!("{stale} stale answers while the origin was up"));
    }
    if !problems.is_empty() {
        return Err(format!("{}: {text}", problems.join("; ")));
    }
    Ok(format!(
        "{reads} reads ({sent} sent), {top_hits} top hits ({seen} HITs seen), {snapshot_fetches} snapshot \
         fetches from the origin: {text}"
    ))
}

/// With the origin killed: the edge serves the last fresh answers, marked stale (header and
/// `"stale":true`, otherwise the same bytes), and a write answers 503 ORIGIN_UNAVAILABLE. With
/// the origin started again on the same port and database, the edge is fresh again within a
/// head lifetime plus the slack.
async fn origin_outage(run: &mut Run<'_>) -> Result<String, String> {
    let player = run.players[3].clone();
    let owner = READER_PLAYER.to_string();
    let rank_body =
        json!({"player_ids": [run.players[5].clone(), run.players[6].clone(), "ghost-2"]}).to_string();
    let reads: Vec<(&str, String, Option<&[u8]>)> = vec![
        ("GET", format!("{BOARD}/top?limit=10"), None),
        ("GET", format!("{BOARD}/top?limit=10&period=daily"), None),
        ("GET", format!("{BOARD}/players/{player}/rank"), None),
        ("GET", format!("{BOARD}/players/{player}/nearby?radius=3"), None),
        (
            "GET",
            format!("{BOARD}/friends-of/{owner}?include_self=true"),
            None,
        ),
        (
            "POST",
            format!("{BOARD}/rank-players"),
            Some(rank_body.as_bytes()),
        ),
    ];
    // The last fresh answers, all at one version per period (no writes come in between).
    let mut fresh = Vec::new();
    for (method, path, body) in &reads {
        fresh.push(
            run.same(method, path, *body, Some(READER_TOKEN), Some(READER_TOKEN))
                .await?,
        );
    }
    run.stack.origin.kill()?;
    let killed = Instant::now();
    let stale_by = Duration::from_millis(HEAD_MAX_AGE_SECONDS * 1000 + run.args.slack_ms);
    // Within a head lifetime the edge may still answer from the head it holds (then it must be
    // the last fresh answer itself); after that, stale. Each read is asked until it is.
    let mut stale_after = Duration::ZERO;
    for ((method, path, body), fresh) in reads.iter().zip(&fresh) {
        let mut expected = fresh.body.clone();
        match expected.iter().rposition(|&b| b == b'}') {
            Some(at) => {
                expected.splice(at..at, b",\"stale\":true".iter().copied());
            }
            None => return Err(format!("{path}: the fresh answer is not a JSON object")),
        }
        loop {
            let reply = run.edge_read(method, path, Some(READER_TOKEN), *body).await?;
            let stale = reply.header("x-standings-stale") == Some("true");
            if reply.status != 200 {
                return Err(format!(
                    "{method} {path} with the origin down answered {} (x-standings-stale {:?}): {}",
                    reply.status,
                    reply.header("x-standings-stale"),
                    reply.text()
                ));
            }
            if edge_version(&reply) != edge_version(fresh) {
                return Err(format!(
                    "{method} {path} with the origin down says version {:?}, the last fresh answer {:?}",
                    edge_version(&reply),
                    edge_version(fresh)
                ));
            }
            if !stale {
                if reply.body != fresh.body {
                    return Err(format!(
                        "{method} {path}: with the origin down, an answer not marked stale differs from the last fresh one: {}",
                        first_difference(&reply.body, &fresh.body)
                    ));
                }
                if killed.elapsed() > stale_by * 3 {
                    return Err(format!(
                        "{method} {path}: {:?} after the origin was killed the edge still answers without x-standings-stale",
                        killed.elapsed()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            if reply.body != expected {
                return Err(format!(
                    "{method} {path}: the stale answer is not the last fresh one with \"stale\":true: {}",
                    first_difference(&reply.body, &expected)
                ));
            }
            stale_after = stale_after.max(killed.elapsed());
            break;
        }
    }
    let id = run.event_id();
    let at = run.achieved_now();
    let event = event_json(&id, "p-00009", 1, at);
    let write = run
        .edge
        .post("/v1/score-events", Some(WRITER_TOKEN), event.as_bytes())
        .await?;
    let problem = write
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/problem+json"));
    if write.status != 503 || code_of(&write) != "ORIGIN_UNAVAILABLE" || !problem {
        return Err(format!(
            "a write with the origin down answered {} ({:?}): {}",
            write.status,
            write.header("content-type"),
            write.text()
        ));
    }
    let restart = run.stack.origin.start(READY_TIMEOUT).await?;
    let restarted = Instant::now();
    let fresh_by = Duration::from_millis(HEAD_MAX_AGE_SECONDS * 1000 + run.args.slack_ms);
    let mut versions = Vec::new();
    for daily in [false, true] {
        let version = run.origin_now(daily).await?;
        let path = with_period(&format!("{BOARD}/top?limit=10"), daily);
        loop {
            let reply = run.edge_get(&path, Some(READER_TOKEN)).await?;
            if reply.status == 200
                && reply.header("x-standings-stale") != Some("true")
                && edge_version(&reply) == Some(version)
            {
                break;
            }
            if restarted.elapsed() > fresh_by * 3 {
                return Err(format!(
                    "{:?} after the origin was ready again the edge answers {} at {:?} (origin {version}), stale {:?}",
                    restarted.elapsed(),
                    reply.status,
                    edge_version(&reply),
                    reply.header("x-standings-stale")
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        versions.push(version);
    }
    let fresh_after = restarted.elapsed();
    if fresh_after > fresh_by {
        return Err(format!(
            "fresh again {fresh_after:.0?} after the origin was ready, past {fresh_by:?} (head lifetime + slack)"
        ));
    }
    // The answers after the restart are the origin's again.
    for (method, path, body) in &reads {
        run.same(method, path, *body, Some(READER_TOKEN), Some(READER_TOKEN))
            .await?;
    }
    Ok(format!(
        "stale {stale_after:.0?} after the kill, {} stale reads equal the last fresh ones, the write 503 \
         ORIGIN_UNAVAILABLE; the origin ready {restart:.1?} after its start, the edge fresh {fresh_after:.0?} after that \
         (versions {versions:?})",
        reads.len()
    ))
}
