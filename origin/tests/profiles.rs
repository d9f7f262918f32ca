//! Players by name (issue 31, `docs/players.md`) through the real router on SQLite and
//! PostgreSQL: the profile's rules and its no-op, moderated names, entry metadata and which event
//! it follows, anonymity per caller, a rename in every read and on the live stream, names in
//! season results, restarts, export and import, and an erasure searched for everywhere the
//! service keeps or sends bytes.
//!
//! Time is a manual clock, as in `live.rs`: a change answered is applied, and advancing the clock
//! by one window makes the live hub send it. Nothing sleeps to wait for state.

mod common;
mod process;

use std::process::Command;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use process::{BIN, free_addr, write_config};
use serde_json::{Value, json};
use standings_origin::clock::{Clock, parse_rfc3339};
use standings_origin::config::{Config, LiveConfig};
use standings_origin::writer::checkpoint::Restored;
use tower::ServiceExt;

const LB: &str = "/v1/leaderboards/arena-clash/solo/S7";
/// The clock of every test here, unless it says otherwise.
const NOW: &str = "2026-10-13T12:00:00Z";
/// When the day's events are achieved.
const DAY: &str = "2026-10-13T10:00:00Z";
/// The daily instance of [`DAY`], as a read names it.
const TODAY: &str = "period=daily&at=2026-10-13T11:00:00Z";
/// The live coalescing window.
const WINDOW_MS: i64 = 250;
/// A guard against a hang, never a wait for state.
const GUARD: Duration = Duration::from_secs(10);

on_both_databases!(
    every_profile_refusal_answers_its_code_and_changes_nothing,
    a_rename_shows_in_every_read_one_version_higher_and_as_one_live_delta,
    the_same_profile_twice_changes_nothing,
    moderators_clear_lock_and_unlock_names,
    metadata_follows_the_event_behind_the_entry,
    metadata_is_refused_by_its_rules_and_the_boards_cap,
    anonymous_players_show_their_fields_only_to_trusted_tokens,
    season_results_keep_the_names_of_their_finalization,
    a_restart_keeps_names_metadata_and_versions,
    an_export_imported_into_a_fresh_database_keeps_profiles_and_metadata,
    an_erasure_leaves_the_name_and_metadata_nowhere_and_the_rank_as_it_was,
);

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The service and its requests.

/// A service on a manual clock, with live windows of [`WINDOW_MS`] and heartbeats too rare to
/// show up.
struct Names {
    service: TestService,
    config: Config,
    clock: Clock,
}

impl Names {
    async fn start(db: Db) -> Names {
        Names::start_at(db, NOW, |_| {}).await
    }

    /// A start with the clock at `now` and the harness's config changed by `edit`.
    async fn start_at(db: Db, now: &str, edit: impl FnOnce(&mut Config)) -> Names {
        let db = TestDb::new(db).await;
        let mut config = config(&db.url);
        config.live = LiveConfig {
            window_ms: WINDOW_MS as u64,
            heartbeat_seconds: 3_600,
            ..LiveConfig::default()
        };
        edit(&mut config);
        let clock = Clock::manual(ms(now));
        let service = TestService::start_with_config(db, &config, clock.clone()).await;
        Names {
            service,
            config,
            clock,
        }
    }

    /// Stops the service without a checkpoint (as a crash does), lets `between` change the
    /// database, and starts it again on the same config and clock.
    async fn restart(self, between: impl AsyncFnOnce(&TestDb)) -> Names {
        let db = self.service.stop().await;
        between(&db).await;
        let service = TestService::start_with_config(db, &self.config, self.clock.clone()).await;
        Names {
            service,
            config: self.config,
            clock: self.clock,
        }
    }

    /// Defines `arena-clash/solo/{season}/{scope}`, asserting 201.
    async fn define_in(&self, season: &str, scope: &str, body: Value) {
        let (status, answer) = self
            .service
            .call(
                Method::PUT,
                &format!("/v1/boards/arena-clash/solo/{season}/{scope}"),
                Some(ADMIN),
                Some(&body),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }

    async fn define(&self, scope: &str, body: Value) {
        self.define_in("S7", scope, body).await;
    }

    /// Submits `event`, asserting it was accepted (so it is applied).
    async fn accept(&self, event: &Value) {
        let (status, body) = self.service.submit(event).await;
        assert_eq!(
            (status, body["status"].as_str()),
            (StatusCode::ACCEPTED, Some("ACCEPTED")),
            "{event}: {body}"
        );
    }

    /// `PUT .../players/{player}/profile` as `token`.
    async fn put_profile(&self, player: &str, token: &str, body: &Value) -> (StatusCode, Value) {
        self.service
            .call(Method::PUT, &profile_path(player), Some(token), Some(body))
            .await
    }

    /// A profile change as the service, asserting 200 and whether it changed anything.
    async fn set_profile(&self, player: &str, body: Value, changed: bool) -> Value {
        let (status, answer) = self.put_profile(player, SERVICE, &body).await;
        assert_eq!(status, StatusCode::OK, "{body}: {answer}");
        assert_eq!(answer["changed"], changed, "{body}: {answer}");
        answer
    }

    /// The profile as the admin reads it.
    async fn profile(&self, player: &str) -> Value {
        let (status, answer) = self
            .service
            .call(Method::GET, &profile_path(player), Some(ADMIN), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }

    /// A moderation action as the moderator token: the status and the answer.
    async fn moderate(&self, body: Value) -> (StatusCode, Value) {
        self.service
            .call(
                Method::POST,
                "/v1/moderation-actions",
                Some(MODERATOR),
                Some(&body),
            )
            .await
    }

    /// A moderation action that must be taken (201).
    async fn moderated(&self, body: Value) -> Value {
        let (status, answer) = self.moderate(body.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{body}: {answer}");
        answer
    }

    async fn set_season(&self, season: &str, state: &str) {
        self.clock.advance(1_000);
        let (status, body) = self
            .service
            .call(
                Method::PUT,
                &format!("/v1/seasons/arena-clash/{season}/state"),
                Some(ADMIN),
                Some(&json!({ "state": state })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{season} {state}: {body}");
    }

    async fn set_friends(&self, player: &str, friends: &[&str]) {
        let (status, body) = self
            .service
            .call(
                Method::PUT,
                &format!("/v1/games/arena-clash/players/{player}/friends"),
                Some(SERVICE),
                Some(&json!({ "friends": friends })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// `read` as `token`: the status and the answer.
    async fn read_as(&self, token: Option<&str>, read: &Read) -> (StatusCode, Value) {
        self.service
            .call(read.method.clone(), &read.path, token, read.body.as_ref())
            .await
    }

    /// `read` as `token`, asserting 200.
    async fn read(&self, token: Option<&str>, read: &Read) -> Value {
        let (status, answer) = self.read_as(token, read).await;
        assert_eq!(status, StatusCode::OK, "{}: {answer}", read.path);
        answer
    }

    /// The audit log of arena-clash, as the moderator reads it.
    async fn audit(&self) -> Value {
        self.read(Some(MODERATOR), &Read::get("/v1/audit?game=arena-clash".into()))
            .await
    }

    /// Ends the current live window: the hub sends what changed in it.
    fn flush(&self) {
        self.clock.advance(WINDOW_MS);
    }

    /// Opens a live subscription (SSE through the router) as the service token.
    async fn subscribe(&self, scope: &str, query: &str) -> Subscription {
        let path = format!("{LB}/{scope}/subscribe?{query}");
        let request = Request::builder()
            .method(Method::GET)
            .uri(&path)
            .header("accept", "text/event-stream")
            .header("authorization", format!("Bearer {SERVICE}"))
            .body(Body::empty())
            .unwrap();
        let response = self.service.app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        Subscription {
            path,
            body: response.into_body(),
            pending: Vec::new(),
        }
    }

    /// Moves the clock to `at` and waits until a round of snapshot publication ran then.
    async fn snapshot_round_at(&self, at: i64) {
        let mut rounds = self.service.state.snapshots().rounds();
        self.clock.set(at);
        tokio::time::timeout(GUARD, rounds.wait_for(|ran| *ran >= at))
            .await
            .expect("a round runs once the clock reaches it")
            .unwrap();
    }
}

fn profile_path(player: &str) -> String {
    format!("/v1/games/arena-clash/players/{player}/profile")
}

/// An event of arena-clash/solo/S7 on `scopes`, with `metadata` if given.
fn scored(id: &str, player: &str, value: i64, when: &str, scopes: &[&str], metadata: Option<Value>) -> Value {
    let mut e = event(id, player, value, when);
    e["scopes"] = json!(scopes);
    if let Some(metadata) = metadata {
        e["metadata"] = metadata;
    }
    e
}

/// One read request.
#[derive(Clone, Debug)]
struct Read {
    method: Method,
    path: String,
    body: Option<Value>,
}

impl Read {
    fn get(path: String) -> Read {
        Read {
            method: Method::GET,
            path,
            body: None,
        }
    }

    fn post(path: String, body: Value) -> Read {
        Read {
            method: Method::POST,
            path,
            body: Some(body),
        }
    }
}

/// Every read kind that shows `player` on `scope` of S7, in the period `period` (`""` for all
/// time, else `period=...&at=...`): top, rank, nearby, friends-of `friend_of` (itself included,
/// and `player` among its friends or `friend_of` itself) and rank-players.
fn every_read(scope: &str, player: &str, friend_of: &str, period: &str) -> Vec<Read> {
    let board = format!("{LB}/{scope}");
    let with = |path: String, query: &str| {
        let query = [query, period]
            .iter()
            .filter(|q| !q.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("&");
        if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        }
    };
    vec![
        Read::get(with(format!("{board}/top"), "limit=10")),
        Read::get(with(format!("{board}/players/{player}/rank"), "")),
        Read::get(with(format!("{board}/players/{player}/nearby"), "radius=2")),
        Read::get(with(
            format!("{board}/friends-of/{friend_of}"),
            "include_self=true",
        )),
        Read::post(
            with(format!("{board}/rank-players"), ""),
            json!({ "player_ids": [player, friend_of] }),
        ),
    ]
}

/// `player`'s entry in an answer: the answer itself for a rank answer, else the one in its
/// `entries`.
fn entry_of<'a>(answer: &'a Value, player: &str) -> Option<&'a Value> {
    if answer.get("player_id").is_some_and(|p| p == player) {
        return Some(answer);
    }
    answer
        .get("entries")?
        .as_array()?
        .iter()
        .find(|e| e["player_id"] == player)
}

/// `answer` as it must read after one change that names `player` `name`: one version higher,
/// the player's entries named so, nothing else changed.
fn renamed(answer: &Value, player: &str, name: &str) -> Value {
    let mut after = answer.clone();
    after["board_version"] = json!(answer["board_version"].as_u64().unwrap() + 1);
    let rename = |entry: &mut Value| {
        if entry["player_id"] == player {
            entry["display_name"] = json!(name);
        }
    };
    if after.get("player_id").is_some() {
        rename(&mut after);
    }
    if let Some(entries) = after.get_mut("entries").and_then(Value::as_array_mut) {
        entries.iter_mut().for_each(rename);
    }
    after
}

/// The text fields an entry may carry beside its standing.
const EXTRAS: [&str; 4] = ["display_name", "country", "metadata", "anonymous"];

/// Whether `haystack` holds `needle`'s bytes anywhere.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The needles that `text` holds.
fn found_in<'a>(text: &[u8], needles: &[&'a str]) -> Vec<&'a str> {
    needles.iter().copied().filter(|n| holds(text, n)).collect()
}

// ---------------------------------------------------------------------------------------------
// Live subscriptions.

/// A live subscription read through the router's SSE body.
struct Subscription {
    path: String,
    body: Body,
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
}

impl Subscription {
    /// The next message that is not a heartbeat: parsed, and its JSON text as sent.
    async fn next(&mut self) -> (Value, String) {
        loop {
            if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.pending.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let Some(data) = text.lines().find_map(|line| line.strip_prefix("data:")) else {
                    continue;
                };
                let data = data.strip_prefix(' ').unwrap_or(data).to_string();
                let message: Value = serde_json::from_str(&data).unwrap();
                if message["type"] == "heartbeat" {
                    continue;
                }
                return (message, data);
            }
            let frame = tokio::time::timeout(GUARD, self.body.frame())
                .await
                .unwrap_or_else(|_| panic!("no message within {GUARD:?} on {}", self.path));
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.pending.extend(data.iter().filter(|b| **b != b'\r'));
                    }
                }
                Some(Err(e)) => panic!("the stream of {} failed: {e}", self.path),
                None => panic!("the stream of {} ended", self.path),
            }
        }
    }

    /// The next message, which must be of `kind`.
    async fn expect(&mut self, kind: &str) -> (Value, String) {
        let (message, text) = self.next().await;
        assert_eq!(message["type"], kind, "{}: {text}", self.path);
        (message, text)
    }
}

// ---------------------------------------------------------------------------------------------
// The profile's rules.

/// How a refused request is sent.
enum Sent {
    /// A `PUT .../profile` with this JSON body.
    Put(Value),
    /// A `PUT .../profile` with this text as the body.
    PutRaw(&'static str),
    /// A moderator's `RENAME` with these fields besides the action's own.
    Rename(Value),
}

/// Every rule of a profile change, one row each, and the shapes a body may not have: each is
/// refused with its status and code as problem+json, and none changes the profile, a version
/// or the audit log.
async fn every_profile_refusal_answers_its_code_and_changes_nothing(db: Db) {
    let names = Names::start(db).await;
    names.define("global", json!({"score_mode": "highest"})).await;
    names
        .accept(&scored("e1", "p-ava", 100, DAY, &["global"], None))
        .await;
    names
        .set_profile("p-ava", json!({"display_name": "Ava", "country": "DE"}), true)
        .await;
    let top = Read::get(format!("{LB}/global/top"));
    let before = (
        names.read(Some(ADMIN), &top).await,
        names.profile("p-ava").await,
        names.audit().await,
    );

    let technologist = "👩\u{200D}💻";
    let rows: Vec<(&str, Sent, u16, &str)> = vec![
        (
            "an empty name",
            Sent::Put(json!({"display_name": ""})),
            400,
            "DISPLAY_NAME_EMPTY",
        ),
        (
            "33 grapheme clusters",
            Sent::Put(json!({"display_name": "a".repeat(33)})),
            400,
            "DISPLAY_NAME_TOO_LONG",
        ),
        (
            "32 clusters in 352 bytes",
            Sent::Put(json!({"display_name": technologist.repeat(32)})),
            400,
            "DISPLAY_NAME_TOO_MANY_BYTES",
        ),
        (
            "a zero-width space",
            Sent::Put(json!({"display_name": "Ava\u{200B}"})),
            400,
            "DISPLAY_NAME_FORBIDDEN_CHARACTER",
        ),
        (
            "a bidi override",
            Sent::Put(json!({"display_name": "A\u{202E}va"})),
            400,
            "DISPLAY_NAME_FORBIDDEN_CHARACTER",
        ),
        (
            "a control character",
            Sent::Put(json!({"display_name": "Ava\tLee"})),
            400,
            "DISPLAY_NAME_FORBIDDEN_CHARACTER",
        ),
        (
            "a leading space",
            Sent::Put(json!({"display_name": " Ava"})),
            400,
            "DISPLAY_NAME_SURROUNDING_SPACE",
        ),
        (
            "a trailing no-break space",
            Sent::Put(json!({"display_name": "Ava\u{A0}"})),
            400,
            "DISPLAY_NAME_SURROUNDING_SPACE",
        ),
        (
            "a number as the name",
            Sent::Put(json!({"display_name": 42})),
            400,
            "DISPLAY_NAME_NOT_TEXT",
        ),
        (
            "an object as the name",
            Sent::Put(json!({"display_name": {"first": "Ava"}})),
            400,
            "DISPLAY_NAME_NOT_TEXT",
        ),
        (
            "a lower-case country",
            Sent::Put(json!({"country": "de"})),
            400,
            "COUNTRY_NOT_ISO_3166",
        ),
        (
            "an unassigned country",
            Sent::Put(json!({"country": "XX"})),
            400,
            "COUNTRY_NOT_ISO_3166",
        ),
        (
            "a three-letter country",
            Sent::Put(json!({"country": "DEU"})),
            400,
            "COUNTRY_NOT_ISO_3166",
        ),
        (
            "a number as the country",
            Sent::Put(json!({"country": 276})),
            400,
            "COUNTRY_NOT_ISO_3166",
        ),
        (
            "anonymous as text",
            Sent::Put(json!({"anonymous": "yes"})),
            400,
            "ANONYMOUS_NOT_BOOLEAN",
        ),
        (
            "anonymous as null",
            Sent::Put(json!({"anonymous": null})),
            400,
            "ANONYMOUS_NOT_BOOLEAN",
        ),
        (
            "a valid name beside a bad country",
            Sent::Put(json!({"display_name": "Zed", "country": "de"})),
            400,
            "COUNTRY_NOT_ISO_3166",
        ),
        (
            "an unknown field",
            Sent::Put(json!({"nickname": "Ava"})),
            400,
            "INVALID_REQUEST",
        ),
        (
            "a valid name beside an unknown field",
            Sent::Put(json!({"display_name": "Zed", "avatar": "x.png"})),
            400,
            "INVALID_REQUEST",
        ),
        ("an array body", Sent::Put(json!(["Ava"])), 400, "INVALID_REQUEST"),
        ("a string body", Sent::Put(json!("Ava")), 400, "INVALID_REQUEST"),
        ("a null body", Sent::Put(Value::Null), 400, "INVALID_REQUEST"),
        (
            "a body that is not JSON",
            Sent::PutRaw("{display_name: Ava}"),
            400,
            "INVALID_JSON",
        ),
        (
            "a repeated key",
            Sent::PutRaw(r#"{"display_name": "Zed", "display_name": "Ava"}"#),
            400,
            "INVALID_JSON",
        ),
        (
            "a RENAME to a name with a trailing space",
            Sent::Rename(json!({"display_name": "Zed "})),
            400,
            "DISPLAY_NAME_SURROUNDING_SPACE",
        ),
        (
            "a RENAME to a letter under 60 accents",
            Sent::Rename(json!({"display_name": format!("a{}", "\u{301}".repeat(60))})),
            400,
            "DISPLAY_NAME_TOO_MANY_MARKS",
        ),
        (
            "a name of a Hangul filler",
            Sent::Put(json!({"display_name": "\u{3164}"})),
            400,
            "DISPLAY_NAME_FORBIDDEN_CHARACTER",
        ),
        (
            "a name of a lone accent",
            Sent::Put(json!({"display_name": "\u{301}"})),
            400,
            "DISPLAY_NAME_INVISIBLE",
        ),
        (
            "a RENAME to 33 clusters",
            Sent::Rename(json!({"display_name": "b".repeat(33)})),
            400,
            "DISPLAY_NAME_TOO_LONG",
        ),
        (
            "a RENAME without a name",
            Sent::Rename(json!({})),
            400,
            "INVALID_REQUEST",
        ),
    ];
    let mut mismatches = Vec::new();
    for (n, (what, sent, status, code)) in rows.iter().enumerate() {
        let (got, content_type, answer) = match sent {
            Sent::Put(body) => {
                names
                    .service
                    .call_full(Method::PUT, &profile_path("p-ava"), Some(SERVICE), Some(body))
                    .await
            }
            Sent::PutRaw(text) => {
                let (got, answer) = names
                    .service
                    .call_raw(Method::PUT, &profile_path("p-ava"), Some(SERVICE), text)
                    .await;
                // The harness's raw call does not hand back the content type; the status and
                // the code are checked.
                (got, "application/problem+json".into(), answer)
            }
            Sent::Rename(fields) => {
                let mut body = json!({"moderation_id": format!("refused-{n}"), "action_type": "RENAME",
                    "reason": "table", "game": "arena-clash", "target_player_id": "p-ava"});
                for (key, value) in fields.as_object().unwrap() {
                    body[key] = value.clone();
                }
                names
                    .service
                    .call_full(
                        Method::POST,
                        "/v1/moderation-actions",
                        Some(MODERATOR),
                        Some(&body),
                    )
                    .await
            }
        };
        if (got.as_u16(), answer["code"].as_str()) != (*status, Some(*code))
            || !content_type.starts_with("application/problem+json")
        {
            mismatches.push(format!(
                "{what}: expected {status} {code}, got {} {content_type} {answer}",
                got.as_u16()
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    let after = (
        names.read(Some(ADMIN), &top).await,
        names.profile("p-ava").await,
        names.audit().await,
    );
    assert_eq!(after, before, "no refused request changed a thing");
}

// ---------------------------------------------------------------------------------------------
// A rename, everywhere.

/// A rename shows in every read kind (top, rank, nearby, friends-of, rank-players) of the all-time
/// board and of its daily instance, each one version higher and otherwise unchanged, and reaches
/// subscribers of both as exactly one delta carrying the new name and nothing else.
async fn a_rename_shows_in_every_read_one_version_higher_and_as_one_live_delta(db: Db) {
    let names = Names::start(db).await;
    names
        .define(
            "global",
            json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        )
        .await;
    for (id, player, value) in [("e1", "p-ava", 300), ("e2", "p-ben", 200), ("e3", "p-chloe", 100)] {
        names
            .accept(&scored(id, player, value, DAY, &["global"], None))
            .await;
    }
    names.set_friends("p-ava", &["p-ben", "p-chloe"]).await;
    names
        .set_profile("p-ben", json!({"display_name": "Ben", "country": "FR"}), true)
        .await;
    let reads: Vec<Read> = every_read("global", "p-ben", "p-ava", "")
        .into_iter()
        .chain(every_read("global", "p-ben", "p-ava", TODAY))
        .collect();
    let mut before = Vec::new();
    for read in &reads {
        let answer = names.read(Some(SERVICE), read).await;
        let entry = entry_of(&answer, "p-ben").unwrap_or_else(|| panic!("{}: {answer}", read.path));
        assert_eq!(
            (&entry["display_name"], &entry["country"]),
            (&json!("Ben"), &json!("FR")),
            "{}",
            read.path
        );
        before.push(answer);
    }
    let mut top = names.subscribe("global", "view=top:3").await;
    let (snapshot, _) = top.expect("snapshot").await;
    let version = snapshot["board_version"].as_u64().unwrap();
    assert_eq!(entry_of(&snapshot, "p-ben").unwrap()["display_name"], "Ben");
    let mut daily = names
        .subscribe("global", &format!("view=player:p-ben&{TODAY}"))
        .await;
    let (daily_snapshot, _) = daily.expect("snapshot").await;
    let daily_version = daily_snapshot["board_version"].as_u64().unwrap();

    let answer = names
        .set_profile("p-ben", json!({"display_name": "Benedikt"}), true)
        .await;
    assert_eq!(
        (&answer["display_name"], &answer["country"]),
        (&json!("Benedikt"), &json!("FR")),
        "an absent field keeps what it was: {answer}"
    );
    for (read, before) in reads.iter().zip(&before) {
        let after = names.read(Some(SERVICE), read).await;
        assert_eq!(after, renamed(before, "p-ben", "Benedikt"), "{}", read.path);
    }

    names.flush();
    for (subscription, from) in [(&mut top, version), (&mut daily, daily_version)] {
        let (delta, text) = subscription.expect("delta").await;
        assert_eq!(
            (&delta["base_version"], &delta["board_version"]),
            (&json!(from), &json!(from + 1)),
            "{text}"
        );
        assert_eq!(delta["left"], json!([]), "{text}");
        let changed = delta["changed"].as_array().unwrap();
        assert_eq!(changed.len(), 1, "only the renamed entry: {text}");
        assert_eq!(
            (
                &changed[0]["player_id"],
                &changed[0]["display_name"],
                &changed[0]["country"]
            ),
            (&json!("p-ben"), &json!("Benedikt"), &json!("FR")),
            "{text}"
        );
    }
    // The next change moves both views again; its delta starts where the rename's ended, so
    // the rename was one delta and nothing more was sent for it.
    names
        .accept(&scored("e4", "p-chloe", 250, DAY, &["global"], None))
        .await;
    names.flush();
    for (subscription, from) in [(&mut top, version), (&mut daily, daily_version)] {
        let (delta, text) = subscription.expect("delta").await;
        assert_eq!(
            (&delta["base_version"], &delta["board_version"]),
            (&json!(from + 1), &json!(from + 2)),
            "{text}"
        );
    }
}

/// The same profile sent again (whole, in part, empty, or in another Unicode form of the same
/// name) answers `changed: false`, moves no version and logs nothing; a clear is a change; a
/// player not ranked costs the boards no version, and the event that ranks them brings the name.
/// The change names the log's position after it (the event, then the profile); a no-op the same.
async fn the_same_profile_twice_changes_nothing(db: Db) {
    let names = Names::start(db).await;
    names.define("global", json!({"score_mode": "highest"})).await;
    names
        .accept(&scored("e1", "p-ava", 100, DAY, &["global"], None))
        .await;
    let top = Read::get(format!("{LB}/global/top"));
    let version = |answer: &Value| answer["board_version"].as_u64().unwrap();
    let v0 = version(&names.read(Some(SERVICE), &top).await);
    let never = names.profile("p-nobody").await;
    assert_eq!(
        never,
        json!({"anonymous": false, "game": "arena-clash", "name_locked": false, "player_id": "p-nobody"})
    );

    let first = names
        .set_profile("p-ava", json!({"display_name": "Ava", "country": "DE"}), true)
        .await;
    assert_eq!(
        first,
        json!({"anonymous": false, "changed": true, "country": "DE", "display_name": "Ava",
               "game": "arena-clash", "name_locked": false, "player_id": "p-ava",
               "position": "p1-cac78ae0-2"})
    );
    let shown = names.read(Some(SERVICE), &top).await;
    assert_eq!(version(&shown), v0 + 1);
    let audit = names.audit().await;
    for same in [
        json!({"display_name": "Ava", "country": "DE"}),
        json!({"country": "DE"}),
        json!({"display_name": "Ava", "anonymous": false}),
        json!({}),
    ] {
        let mut answer = names.set_profile("p-ava", same.clone(), false).await;
        answer["changed"] = json!(true);
        assert_eq!(answer, first, "{same}");
        assert_eq!(names.read(Some(SERVICE), &top).await, shown, "{same}");
    }
    assert_eq!(names.audit().await, audit, "a no-op is not logged");

    // A decomposed "é" is the composed one: stored and shown in NFC, and the same name.
    let nfc = names
        .set_profile("p-ava", json!({"display_name": "Rene\u{301}e"}), true)
        .await;
    assert_eq!(nfc["display_name"], "Ren\u{e9}e");
    names
        .set_profile("p-ava", json!({"display_name": "Ren\u{e9}e"}), false)
        .await;
    let answer = names.read(Some(SERVICE), &top).await;
    assert_eq!(
        (version(&answer), &answer["entries"][0]["display_name"]),
        (v0 + 2, &json!("Ren\u{e9}e"))
    );
    let cleared = names.set_profile("p-ava", json!({"country": null}), true).await;
    assert!(cleared.get("country").is_none(), "{cleared}");
    let answer = names.read(Some(SERVICE), &top).await;
    assert_eq!(version(&answer), v0 + 3);
    assert!(answer["entries"][0].get("country").is_none(), "{answer}");

    // Not ranked anywhere: the profile is held, no board moves; the first event brings it.
    names
        .set_profile("p-zed", json!({"display_name": "Zed", "country": "NZ"}), true)
        .await;
    assert_eq!(version(&names.read(Some(SERVICE), &top).await), v0 + 3);
    assert_eq!(names.profile("p-zed").await["display_name"], "Zed");
    names
        .accept(&scored("e2", "p-zed", 50, DAY, &["global"], None))
        .await;
    let answer = names.read(Some(SERVICE), &top).await;
    assert_eq!(version(&answer), v0 + 4, "one version: the event");
    let zed = entry_of(&answer, "p-zed").unwrap();
    assert_eq!(
        (&zed["display_name"], &zed["country"]),
        (&json!("Zed"), &json!("NZ"))
    );
}

/// A moderator's CLEAR_NAME removes the name and keeps the country; LOCK_NAME refuses the
/// service's name changes (409 NAME_LOCKED, the whole request) but not its country changes, nor
/// a moderator's or an admin's; UNLOCK_NAME gives the name back to the service; each is
/// idempotent by its moderation id.
async fn moderators_clear_lock_and_unlock_names(db: Db) {
    let names = Names::start(db).await;
    names.define("global", json!({"score_mode": "highest"})).await;
    names
        .accept(&scored("e1", "p-ava", 100, DAY, &["global"], None))
        .await;
    names
        .set_profile("p-ava", json!({"display_name": "Ava", "country": "DE"}), true)
        .await;
    let rank = Read::get(format!("{LB}/global/players/p-ava/rank"));
    let v0 = names.read(Some(SERVICE), &rank).await["board_version"]
        .as_u64()
        .unwrap();
    let action = |id: &str, kind: &str| {
        json!({"moderation_id": id, "action_type": kind, "reason": "offensive name",
               "game": "arena-clash", "target_player_id": "p-ava"})
    };

    names.moderated(action("m1", "CLEAR_NAME")).await;
    let profile = names.profile("p-ava").await;
    assert!(profile.get("display_name").is_none(), "{profile}");
    assert_eq!(profile["country"], "DE");
    let shown = names.read(Some(SERVICE), &rank).await;
    assert!(shown.get("display_name").is_none(), "{shown}");
    assert_eq!(
        (&shown["country"], &shown["board_version"]),
        (&json!("DE"), &json!(v0 + 1))
    );
    let (status, again) = names.moderate(action("m1", "CLEAR_NAME")).await;
    assert_eq!((status, &again["replayed"]), (StatusCode::OK, &json!(true)));
    assert_eq!(
        names.read(Some(SERVICE), &rank).await,
        shown,
        "a retry changes nothing"
    );

    let mut rename = action("m2", "RENAME");
    rename["display_name"] = json!("Ava Prime");
    names.moderated(rename).await;
    assert_eq!(
        names.read(Some(SERVICE), &rank).await["display_name"],
        "Ava Prime"
    );

    names.moderated(action("m3", "LOCK_NAME")).await;
    assert_eq!(names.profile("p-ava").await["name_locked"], true);
    let locked = names.profile("p-ava").await;
    for body in [
        json!({"display_name": "Hacker"}),
        json!({"display_name": null}),
        json!({"display_name": "Hacker", "country": "FR"}),
    ] {
        let (status, answer) = names.put_profile("p-ava", SERVICE, &body).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::CONFLICT, Some("NAME_LOCKED")),
            "{body}: {answer}"
        );
        assert_eq!(names.profile("p-ava").await, locked, "{body} changed nothing");
    }
    // The same name is no change of the name; the country is the service's to change.
    names
        .set_profile("p-ava", json!({"display_name": "Ava Prime"}), false)
        .await;
    let answer = names.set_profile("p-ava", json!({"country": "FR"}), true).await;
    assert_eq!(
        (
            &answer["display_name"],
            &answer["country"],
            &answer["name_locked"]
        ),
        (&json!("Ava Prime"), &json!("FR"), &json!(true))
    );
    for (token, name) in [(MODERATOR, "Set By Moderator"), (ADMIN, "Set By Admin")] {
        let (status, answer) = names
            .put_profile("p-ava", token, &json!({ "display_name": name }))
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(
            (&answer["display_name"], &answer["changed"]),
            (&json!(name), &json!(true))
        );
        assert_eq!(names.read(Some(SERVICE), &rank).await["display_name"], name);
    }

    names.moderated(action("m4", "UNLOCK_NAME")).await;
    assert_eq!(names.profile("p-ava").await["name_locked"], false);
    names
        .set_profile("p-ava", json!({"display_name": "Ava Again"}), true)
        .await;
    assert_eq!(
        names.read(Some(SERVICE), &rank).await["display_name"],
        "Ava Again"
    );
    let (status, answer) = names.moderate(action("m3", "UNLOCK_NAME")).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::CONFLICT, Some("MODERATION_ID_CONFLICT")),
        "a moderation id names one action: {answer}"
    );
}

// ---------------------------------------------------------------------------------------------
// Entry metadata.

/// An entry shows the metadata of the event behind its aggregate: on a `highest` board the best
/// event's, through an INVALIDATE and a RESTORE of it and a tie won by an earlier event without
/// metadata; on a `cumulative` board the most recent counted event's. Metadata is shown as sent.
async fn metadata_follows_the_event_behind_the_entry(db: Db) {
    let names = Names::start(db).await;
    names.define("best", json!({"score_mode": "highest"})).await;
    names.define("coins", json!({"score_mode": "cumulative"})).await;
    let best = Read::get(format!("{LB}/best/players/p-ava/rank"));
    let coins = Read::get(format!("{LB}/coins/players/p-ava/rank"));
    let shown = async |read: &Read| {
        let answer = names.read(Some(SERVICE), read).await;
        (answer["value"].as_i64().unwrap(), answer.get("metadata").cloned())
    };
    for (id, value, when, run) in [
        ("m1", 100, "2026-10-13T09:00:00Z", "one"),
        ("m2", 200, "2026-10-13T09:10:00Z", "two"),
        ("m3", 150, "2026-10-13T09:20:00Z", "three"),
    ] {
        names
            .accept(&scored(
                id,
                "p-ava",
                value,
                when,
                &["best"],
                Some(json!({ "run": run })),
            ))
            .await;
    }
    assert_eq!(shown(&best).await, (200, Some(json!({"run": "two"}))));
    let invalidate = |id: &str, kind: &str, event: &str| {
        json!({"moderation_id": id, "action_type": kind, "reason": "replay check",
               "game": "arena-clash", "target_event_id": event})
    };
    names.moderated(invalidate("x1", "INVALIDATE", "m2")).await;
    assert_eq!(shown(&best).await, (150, Some(json!({"run": "three"}))));
    names.moderated(invalidate("x2", "RESTORE", "m2")).await;
    assert_eq!(shown(&best).await, (200, Some(json!({"run": "two"}))));
    // The same value earlier wins, and it has no metadata: the entry shows none.
    names
        .accept(&scored(
            "m4",
            "p-ava",
            200,
            "2026-10-13T09:05:00Z",
            &["best"],
            None,
        ))
        .await;
    let answer = names.read(Some(SERVICE), &best).await;
    assert_eq!(answer["achieved_at"], "2026-10-13T09:05:00Z");
    assert!(answer.get("metadata").is_none(), "{answer}");
    names.moderated(invalidate("x3", "INVALIDATE", "m4")).await;
    assert_eq!(shown(&best).await, (200, Some(json!({"run": "two"}))));

    for (id, value, when, coin) in [
        ("c1", 10, "2026-10-13T09:00:00Z", Some("a")),
        ("c2", 5, "2026-10-13T09:30:00Z", Some("b")),
        ("c3", 7, "2026-10-13T08:00:00Z", None),
    ] {
        names
            .accept(&scored(
                id,
                "p-ava",
                value,
                when,
                &["coins"],
                coin.map(|c| json!({ "coin": c })),
            ))
            .await;
    }
    assert_eq!(shown(&coins).await, (22, Some(json!({"coin": "b"}))));
    names.moderated(invalidate("x4", "INVALIDATE", "c2")).await;
    assert_eq!(shown(&coins).await, (17, Some(json!({"coin": "a"}))));
    names.moderated(invalidate("x5", "RESTORE", "c2")).await;
    assert_eq!(shown(&coins).await, (22, Some(json!({"coin": "b"}))));
    names.moderated(invalidate("x6", "INVALIDATE", "c1")).await;
    assert_eq!(shown(&coins).await, (12, Some(json!({"coin": "b"}))));

    // The text as sent, spacing and key order kept.
    let sent = r#"{"z": 1, "a": [true, null]}"#;
    let body = format!(
        r#"{{"event_id": "raw", "player_id": "p-ben", "game": "arena-clash", "mode": "solo",
            "season": "S7", "scopes": ["best"], "value": 5, "achieved_at": "{DAY}", "metadata": {sent}}}"#
    );
    let (status, answer) = names
        .service
        .call_raw(Method::POST, "/v1/score-events", Some(SERVICE), &body)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let (status, _, bytes) = names
        .service
        .get_raw(&format!("{LB}/best/players/p-ben/rank"), Some(SERVICE), &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        holds(&bytes, &format!("\"metadata\":{sent}")),
        "{}",
        String::from_utf8_lossy(&bytes)
    );
}

/// Metadata that is not an object, too large for a board, or sent to a board that takes none is
/// refused 422 with its code, and nothing of the event is applied on any board; a board's cap is
/// 0 to 256 bytes of the text as sent, and the cap itself is checked when a board is defined.
async fn metadata_is_refused_by_its_rules_and_the_boards_cap(db: Db) {
    let names = Names::start(db).await;
    names.define("open", json!({"score_mode": "highest"})).await;
    names
        .define(
            "small",
            json!({"score_mode": "highest", "metadata_max_bytes": 16}),
        )
        .await;
    names
        .define(
            "closed",
            json!({"score_mode": "highest", "metadata_max_bytes": 0}),
        )
        .await;
    // `{"note":"..."}` is 11 bytes around its text.
    let note = |bytes: usize| json!({ "note": "x".repeat(bytes - 11) });
    assert_eq!(note(256).to_string().len(), 256);
    let digests = async || {
        let mut all = Vec::new();
        for scope in ["open", "small", "closed"] {
            all.push(
                names
                    .read(Some(ADMIN), &Read::get(format!("{LB}/{scope}/top")))
                    .await,
            );
        }
        all
    };
    let before = digests().await;
    let rows: Vec<(&str, &[&str], Value, &str)> = vec![
        ("an array", &["open"], json!([1]), "METADATA_NOT_OBJECT"),
        ("a string", &["open"], json!("R8"), "METADATA_NOT_OBJECT"),
        ("a number", &["open"], json!(5), "METADATA_NOT_OBJECT"),
        ("257 bytes", &["open"], note(257), "METADATA_TOO_LARGE"),
        (
            "17 bytes on a 16-byte board",
            &["small"],
            note(17),
            "METADATA_TOO_LARGE",
        ),
        (
            "an empty object where none is taken",
            &["closed"],
            json!({}),
            "METADATA_NOT_ALLOWED",
        ),
        (
            "a board that takes it beside one that does not",
            &["open", "closed"],
            json!({"car": "R8"}),
            "METADATA_NOT_ALLOWED",
        ),
        (
            "a board that takes it beside one it is too large for",
            &["open", "small"],
            note(40),
            "METADATA_TOO_LARGE",
        ),
    ];
    let mut mismatches = Vec::new();
    for (n, (what, scopes, metadata, code)) in rows.iter().enumerate() {
        let e = scored(
            &format!("bad-{n}"),
            "p-ava",
            100,
            DAY,
            scopes,
            Some(metadata.clone()),
        );
        let (status, answer) = names.service.submit(&e).await;
        if (status, answer["code"].as_str()) != (StatusCode::UNPROCESSABLE_ENTITY, Some(*code)) {
            mismatches.push(format!("{what}: expected 422 {code}, got {status} {answer}"));
        }
        let (status, answer) = names.service.submit_batch(std::slice::from_ref(&e)).await;
        let result = &answer["results"][0];
        if status != StatusCode::OK || result["status"] != "REJECTED" || result["code"] != *code {
            mismatches.push(format!(
                "{what}, in a batch: expected REJECTED {code}, got {status} {answer}"
            ));
        }
    }
    let repeated = format!(
        r#"{{"event_id": "bad-repeated", "player_id": "p-ava", "game": "arena-clash", "mode": "solo",
            "season": "S7", "scopes": ["open"], "value": 100, "achieved_at": "{DAY}",
            "metadata": {{"car": "R8", "car": "A4"}}}}"#
    );
    let (status, answer) = names
        .service
        .call_raw(Method::POST, "/v1/score-events", Some(SERVICE), &repeated)
        .await;
    if (status, answer["code"].as_str()) != (StatusCode::UNPROCESSABLE_ENTITY, Some("METADATA_NOT_OBJECT")) {
        mismatches.push(format!(
            "a repeated key: expected 422 METADATA_NOT_OBJECT, got {status} {answer}"
        ));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert_eq!(digests().await, before, "no refused event was applied anywhere");

    // At the caps, and without metadata where none is taken, events are taken.
    names
        .accept(&scored("ok-1", "p-ava", 1, DAY, &["open"], Some(note(256))))
        .await;
    names
        .accept(&scored("ok-2", "p-ava", 1, DAY, &["small"], Some(note(16))))
        .await;
    names
        .accept(&scored("ok-3", "p-ava", 1, DAY, &["closed"], None))
        .await;
    let answer = names
        .read(
            Some(SERVICE),
            &Read::get(format!("{LB}/small/players/p-ava/rank")),
        )
        .await;
    assert_eq!(answer["metadata"], note(16));

    for cap in [json!(257), json!(-1)] {
        let (status, answer) = names
            .service
            .call(
                Method::PUT,
                "/v1/boards/arena-clash/solo/S7/capped",
                Some(ADMIN),
                Some(&json!({"score_mode": "highest", "metadata_max_bytes": cap})),
            )
            .await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("INVALID_BOARD")),
            "{cap}: {answer}"
        );
    }
    let (status, answer) = names
        .service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/small",
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "metadata_max_bytes": 32})),
        )
        .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::CONFLICT, Some("BOARD_RULES_CONFLICT")),
        "a board's cap is part of its fixed definition: {answer}"
    );
}

// ---------------------------------------------------------------------------------------------
// Anonymity.

/// An anonymous player's name, country and metadata, with `"anonymous": true`, are shown to the
/// game's service, moderator and admin tokens in every read kind; the player's own token, another
/// player's JWT, a caller without a token (public reads), live messages and snapshot parts show
/// none of them and do not say the player is anonymous; turning it off shows the name to all.
async fn anonymous_players_show_their_fields_only_to_trusted_tokens(db: Db) {
    let names = Names::start_at(db, NOW, |config| config.public_reads = true).await;
    names.define("global", json!({"score_mode": "highest"})).await;
    names
        .accept(&scored(
            "e1",
            "p-ava",
            300,
            DAY,
            &["global"],
            Some(json!({"hero": "masked-heron"})),
        ))
        .await;
    names
        .accept(&scored(
            "e2",
            "p-ben",
            200,
            DAY,
            &["global"],
            Some(json!({"hero": "open-otter"})),
        ))
        .await;
    names.set_friends("p-ava", &["p-ben"]).await;
    names.set_friends("p-ben", &["p-ava"]).await;
    names
        .set_profile(
            "p-ava",
            json!({"display_name": "Anonyma", "country": "SE", "anonymous": true}),
            true,
        )
        .await;
    names
        .set_profile("p-ben", json!({"display_name": "Benno", "country": "AT"}), true)
        .await;
    let hidden = ["Anonyma", "masked-heron"];

    let trusted = json!({"display_name": "Anonyma", "country": "SE",
                         "metadata": {"hero": "masked-heron"}, "anonymous": true});
    for token in [SERVICE, MODERATOR, ADMIN] {
        for read in every_read("global", "p-ava", "p-ben", "") {
            let answer = names.read(Some(token), &read).await;
            let entry = entry_of(&answer, "p-ava").unwrap();
            let extras: serde_json::Map<String, Value> = EXTRAS
                .iter()
                .filter_map(|key| Some((key.to_string(), entry.get(*key)?.clone())))
                .collect();
            assert_eq!(Value::Object(extras), trusted, "{} as {token}", read.path);
        }
    }
    let ben_jwt = player_jwt("p-ben", &["arena-clash"]);
    // Each public caller reads friends-of a player it may: its own, or anyone's without a token
    // is refused (a friend list is private), so that read is left out for it.
    for (who, token, friend_of) in [
        ("p-ava's own token", Some(PLAYER), Some("p-ava")),
        ("p-ben's JWT", Some(ben_jwt.as_str()), Some("p-ben")),
        ("no token", None, None),
    ] {
        let reads = every_read("global", "p-ava", friend_of.unwrap_or("p-ben"), "");
        for read in reads {
            if friend_of.is_none() && read.path.contains("/friends-of/") {
                continue;
            }
            let (status, answer) = names.read_as(token, &read).await;
            assert_eq!(status, StatusCode::OK, "{} as {who}: {answer}", read.path);
            let entry = entry_of(&answer, "p-ava").unwrap_or_else(|| panic!("{}: {answer}", read.path));
            for key in EXTRAS {
                assert!(
                    entry.get(key).is_none(),
                    "{} as {who} shows {key}: {answer}",
                    read.path
                );
            }
            let ben = entry_of(&answer, "p-ben");
            if let Some(ben) = ben {
                assert_eq!(ben["display_name"], "Benno", "{} as {who}", read.path);
            }
            assert_eq!(
                found_in(answer.to_string().as_bytes(), &hidden),
                Vec::<&str>::new()
            );
        }
    }

    let mut live = names.subscribe("global", "view=top:2").await;
    let (snapshot, text) = live.expect("snapshot").await;
    assert_eq!(found_in(text.as_bytes(), &hidden), Vec::<&str>::new(), "{text}");
    assert_eq!(entry_of(&snapshot, "p-ben").unwrap()["display_name"], "Benno");

    let (status, head) = names
        .service
        .call(
            Method::GET,
            "/v1/snapshots/arena-clash/solo/S7/global/head",
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{head}");
    let parts = snapshot_parts(&names, &head).await;
    assert!(
        parts.iter().any(|(_, bytes)| holds(bytes, "Benno")),
        "the parts carry names, so the search below can find one"
    );
    for (path, bytes) in &parts {
        assert_eq!(found_in(bytes, &hidden), Vec::<&str>::new(), "{path}");
    }

    names
        .set_profile("p-ava", json!({"anonymous": false}), true)
        .await;
    let answer = names
        .read(None, &Read::get(format!("{LB}/global/players/p-ava/rank")))
        .await;
    assert_eq!(
        (&answer["display_name"], &answer["country"], &answer["metadata"]),
        (&json!("Anonyma"), &json!("SE"), &json!({"hero": "masked-heron"}))
    );
    assert!(answer.get("anonymous").is_none(), "{answer}");
    names.flush();
    let (delta, text) = live.expect("delta").await;
    assert_eq!(delta["changed"][0]["display_name"], "Anonyma", "{text}");
}

/// The manifest a head names and every chunk it names, fetched as the admin: each path and its
/// bytes.
async fn snapshot_parts(names: &Names, head: &Value) -> Vec<(String, Vec<u8>)> {
    let manifest_path = format!("/v1/snapshots/manifests/{}", head["manifest"].as_str().unwrap());
    let (status, _, bytes) = names.service.get_raw(&manifest_path, Some(ADMIN), &[]).await;
    assert_eq!(status, StatusCode::OK, "{manifest_path}");
    let mut parts = vec![(manifest_path, bytes.to_vec())];
    // A patch names its base manifest, whose chunks it reads over: both are served parts.
    let manifest = match standings_core::Root::decode(&bytes).unwrap() {
        standings_core::Root::Manifest(manifest) => manifest,
        standings_core::Root::Patch(patch) => {
            let base_path = format!("/v1/snapshots/manifests/{}", patch.base);
            let (status, _, bytes) = names.service.get_raw(&base_path, Some(ADMIN), &[]).await;
            assert_eq!(status, StatusCode::OK, "{base_path}");
            parts.push((base_path, bytes.to_vec()));
            standings_core::Manifest::decode(&bytes).unwrap()
        }
    };
    let hashes = manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash.to_string())
        .chain(manifest.lookup_chunks.iter().map(|c| c.hash.to_string()));
    for hash in hashes {
        let path = format!("/v1/snapshots/chunks/{hash}");
        let (status, _, bytes) = names.service.get_raw(&path, Some(ADMIN), &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        parts.push((path, bytes.to_vec()));
    }
    parts
}

// ---------------------------------------------------------------------------------------------
// Season results.

/// Season results show the names as they were at finalization and keep them through a later
/// rename and a restart; a correction taken after the rename shows the new name, the original
/// still the old one.
async fn season_results_keep_the_names_of_their_finalization(db: Db) {
    let names = Names::start(db).await;
    names.define("global", json!({"score_mode": "highest"})).await;
    names
        .accept(&scored(
            "e1",
            "p-ava",
            300,
            DAY,
            &["global"],
            Some(json!({"car": "R8"})),
        ))
        .await;
    names
        .accept(&scored("e2", "p-ben", 200, DAY, &["global"], None))
        .await;
    names
        .set_profile("p-ava", json!({"display_name": "Ava Old", "country": "DE"}), true)
        .await;
    for state in ["frozen", "finalized", "published"] {
        names.set_season("S7", state).await;
    }
    let results = Read::get(format!("{LB}/results?scope=global"));
    let original = names.read(Some(SERVICE), &results).await;
    let ava = entry_of(&original, "p-ava").unwrap();
    assert_eq!(
        (&ava["display_name"], &ava["country"], &ava["metadata"]),
        (&json!("Ava Old"), &json!("DE"), &json!({"car": "R8"}))
    );

    names
        .set_profile("p-ava", json!({"display_name": "Ava New"}), true)
        .await;
    let top = names
        .read(Some(SERVICE), &Read::get(format!("{LB}/global/top")))
        .await;
    assert_eq!(entry_of(&top, "p-ava").unwrap()["display_name"], "Ava New");
    assert_eq!(
        names.read(Some(SERVICE), &results).await,
        original,
        "a rename corrects no result"
    );

    let names = names.restart(async |_| {}).await;
    assert_eq!(
        names.read(Some(SERVICE), &results).await,
        original,
        "after a restart"
    );

    // A correction is taken now, with the names of now.
    names
        .moderated(
            json!({"moderation_id": "c1", "action_type": "INVALIDATE", "reason": "cheat",
                          "game": "arena-clash", "target_event_id": "e2"}),
        )
        .await;
    let corrected = names.read(Some(SERVICE), &results).await;
    assert_eq!(corrected["correction"], 1);
    assert_eq!(entry_of(&corrected, "p-ava").unwrap()["display_name"], "Ava New");
    let (status, first) = names
        .read_as(
            Some(SERVICE),
            &Read::get(format!("{LB}/results?scope=global&correction=0")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["entries"], original["entries"]);
}

// ---------------------------------------------------------------------------------------------
// A log full of names: restarts, export and import.

/// Builds a log with names of every kind on three boards (one with a daily instance, one
/// cumulative with a cap, one taking no metadata): profiles set, cleared in part and anonymous,
/// a moderator's rename and lock, metadata on events and an invalidation that changes it.
async fn build_named_log(names: &Names) {
    names
        .define(
            "global",
            json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        )
        .await;
    names
        .define(
            "coins",
            json!({"score_mode": "cumulative", "metadata_max_bytes": 64}),
        )
        .await;
    names
        .define("plain", json!({"score_mode": "highest", "metadata_max_bytes": 0}))
        .await;
    names
        .set_profile("p-ava", json!({"display_name": "Ava", "country": "DE"}), true)
        .await;
    names
        .set_profile(
            "p-ben",
            json!({"display_name": "Ben", "country": "FR", "anonymous": true}),
            true,
        )
        .await;
    let hero = |name: &str| Some(json!({ "hero": name }));
    for e in [
        scored(
            "g1",
            "p-ava",
            300,
            "2026-10-13T09:00:00Z",
            &["global", "coins"],
            hero("valkyrie"),
        ),
        scored(
            "g2",
            "p-ben",
            200,
            "2026-10-13T09:10:00Z",
            &["global", "coins"],
            hero("rogue"),
        ),
        scored(
            "g3",
            "p-chloe",
            100,
            "2026-10-13T09:20:00Z",
            &["global", "plain"],
            None,
        ),
        scored(
            "g4",
            "p-dev",
            250,
            "2026-10-13T09:30:00Z",
            &["global", "coins"],
            hero("mage"),
        ),
        scored(
            "g5",
            "p-ava",
            350,
            "2026-10-13T09:40:00Z",
            &["global"],
            hero("paladin"),
        ),
    ] {
        names.accept(&e).await;
    }
    names.set_profile("p-chloe", json!({"country": "JP"}), true).await;
    names
        .set_profile(
            "p-dev",
            json!({"display_name": "Dev Null", "country": "NL"}),
            true,
        )
        .await;
    names.set_friends("p-ava", &["p-ben", "p-chloe", "p-dev"]).await;
    names
        .moderated(json!({"moderation_id": "n1", "action_type": "RENAME", "reason": "typo",
                          "game": "arena-clash", "target_player_id": "p-chloe", "display_name": "Chloe\u{301}"}))
        .await;
    names
        .moderated(
            json!({"moderation_id": "n2", "action_type": "LOCK_NAME", "reason": "disputed",
                          "game": "arena-clash", "target_player_id": "p-ava"}),
        )
        .await;
    names.set_profile("p-ava", json!({"country": "AT"}), true).await;
    names
        .moderated(
            json!({"moderation_id": "n3", "action_type": "INVALIDATE", "reason": "glitch",
                          "game": "arena-clash", "target_event_id": "g5"}),
        )
        .await;
}

/// More of the same after [`build_named_log`], for the log after a checkpoint.
async fn extend_named_log(names: &Names) {
    names
        .moderated(
            json!({"moderation_id": "t1", "action_type": "RENAME", "reason": "requested",
                          "game": "arena-clash", "target_player_id": "p-ava", "display_name": "Ava Prime"}),
        )
        .await;
    names
        .accept(&scored(
            "g6",
            "p-ben",
            400,
            "2026-10-13T09:50:00Z",
            &["global", "coins"],
            Some(json!({"hero": "bard"})),
        ))
        .await;
    names
        .moderated(
            json!({"moderation_id": "t2", "action_type": "RESTORE", "reason": "verified",
                          "game": "arena-clash", "target_event_id": "g5"}),
        )
        .await;
    names
        .moderated(
            json!({"moderation_id": "t3", "action_type": "UNLOCK_NAME", "reason": "settled",
                          "game": "arena-clash", "target_player_id": "p-ava"}),
        )
        .await;
    names
        .moderated(
            json!({"moderation_id": "t4", "action_type": "CLEAR_NAME", "reason": "rude",
                          "game": "arena-clash", "target_player_id": "p-chloe"}),
        )
        .await;
    names
        .set_profile("p-zed", json!({"display_name": "Zed"}), true)
        .await;
    names
        .accept(&scored(
            "g7",
            "p-zed",
            50,
            DAY,
            &["global"],
            Some(json!({"hero": "monk"})),
        ))
        .await;
    names
        .set_profile("p-ben", json!({"anonymous": false}), true)
        .await;
}

/// What the service shows of the names: every read kind of every board (the daily instance too)
/// as the admin and as p-ava's own token, and every profile. Each path with its status and
/// answer.
async fn shown(names: &Names) -> Vec<(String, StatusCode, Value)> {
    let mut reads = Vec::new();
    for (scope, period) in [("global", ""), ("global", TODAY), ("coins", ""), ("plain", "")] {
        for player in ["p-ava", "p-ben", "p-chloe", "p-dev", "p-zed"] {
            reads.extend(every_read(scope, player, "p-ava", period));
        }
    }
    let mut shown = Vec::new();
    for token in [ADMIN, PLAYER] {
        for read in &reads {
            let (status, answer) = names.read_as(Some(token), read).await;
            shown.push((format!("{} as {token}", read.path), status, answer));
        }
    }
    for player in ["p-ava", "p-ben", "p-chloe", "p-dev", "p-zed"] {
        let path = profile_path(player);
        let (status, answer) = names.service.call(Method::GET, &path, Some(ADMIN), None).await;
        shown.push((path, status, answer));
    }
    shown
}

/// Asserts two [`shown`] lists are equal, naming the first read that differs.
fn assert_shown_eq(
    after: &[(String, StatusCode, Value)],
    before: &[(String, StatusCode, Value)],
    what: &str,
) {
    assert_eq!(after.len(), before.len(), "{what}");
    for (after, before) in after.iter().zip(before) {
        assert_eq!(after, before, "{what}: {}", before.0);
    }
}

/// A crash after a checkpoint restarts from it and the log after it (renames, a lock lifted, a
/// name cleared, metadata events, a restore, an erasure before it), and a start from the whole
/// log with no checkpoint: both show every read, name, metadata and version as before.
async fn a_restart_keeps_names_metadata_and_versions(db: Db) {
    let names = Names::start(db).await;
    build_named_log(&names).await;
    let (status, answer) = names
        .service
        .call(
            Method::POST,
            "/v1/games/arena-clash/players/p-dev/erase",
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // The erasure wrote a checkpoint of its own; one more event makes the next one newer.
    names
        .accept(&scored("g3b", "p-chloe", 120, DAY, &["global"], None))
        .await;
    let written = names.service.state.ingest().checkpoint().await.unwrap().unwrap();
    extend_named_log(&names).await;
    let before = shown(&names).await;
    assert!(
        before.iter().any(|(_, _, a)| a.to_string().contains("Ava Prime")),
        "the tail's rename is shown"
    );
    let live = instances(names.service.state.registry());

    let names = names.restart(async |_| {}).await;
    match names.service.state.restored() {
        Restored::Checkpoint { seq, tail, .. } => {
            assert_eq!(*seq, written.seq);
            assert!(*tail >= 8, "the log after the checkpoint was replayed: {tail}");
        }
        other => panic!("the checkpoint was not used: {other:?}"),
    }
    assert_eq!(instances(names.service.state.registry()), live);
    assert_shown_eq(&shown(&names).await, &before, "from the checkpoint and the tail");

    let names = names
        .restart(async |db| execute(&db.url, "DELETE FROM checkpoint_parts").await)
        .await;
    match names.service.state.restored() {
        Restored::FullReplay { unusable: None } => {}
        other => panic!("expected a replay of the whole log: {other:?}"),
    }
    assert_eq!(instances(names.service.state.registry()), live);
    assert_shown_eq(&shown(&names).await, &before, "from the whole log");
}

/// Runs `standings export` on `db` (it may run beside the service) and answers its text.
fn export(db: &TestDb) -> String {
    let config = write_config(&db.dir, &db.url, &free_addr());
    let output = Command::new(BIN)
        .arg("export")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `standings export` of a log with profiles, moderated names, metadata and an erasure carries
/// the profile actions and the metadata; `standings import` into a fresh database replays them
/// to the same answers, names, metadata and versions.
async fn an_export_imported_into_a_fresh_database_keeps_profiles_and_metadata(db: Db) {
    let names = Names::start(db).await;
    build_named_log(&names).await;
    let (status, answer) = names
        .service
        .call(
            Method::POST,
            "/v1/games/arena-clash/players/p-dev/erase",
            Some(ADMIN),
            Some(&json!({"reason": "asked to"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    extend_named_log(&names).await;
    let before = shown(&names).await;
    let live = instances(names.service.state.registry());
    let source = names.service.stop().await;

    let text = export(&source);
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["action"]["kind"].as_str())
        .collect();
    for kind in [
        "PROFILE",
        "RENAME",
        "CLEAR_NAME",
        "LOCK_NAME",
        "UNLOCK_NAME",
        "ERASE",
    ] {
        assert!(
            kinds.contains(&kind),
            "the export carries a {kind} action: {kinds:?}"
        );
    }
    let metadata = |id: &str| {
        lines
            .iter()
            .find(|l| l["event"]["event_id"] == id)
            .map(|l| l["event"].get("metadata").cloned())
            .unwrap_or_else(|| panic!("no event {id} in the export"))
    };
    assert_eq!(metadata("g1"), Some(json!({"hero": "valkyrie"})));
    assert_eq!(metadata("g3"), None);
    assert_eq!(metadata("g4"), None, "erased metadata is left out");
    assert!(!text.contains("Dev Null"), "nor is an erased name exported");

    let target = TestDb::new(db).await;
    let file = target.dir.join("export.ndjson");
    std::fs::write(&file, &text).unwrap();
    let config = write_config(&target.dir, &target.url, &free_addr());
    let output = Command::new(BIN)
        .arg("import")
        .arg("--config")
        .arg(&config)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let service = TestService::start_with_config(target, &names.config, names.clock.clone()).await;
    let imported = Names {
        service,
        config: names.config,
        clock: names.clock,
    };
    assert_eq!(instances(imported.service.state.registry()), live);
    assert_shown_eq(&shown(&imported).await, &before, "imported");
}

// ---------------------------------------------------------------------------------------------
// Erasure.

/// Where the stored bytes of `db` hold one of `needles`: on SQLite the raw bytes of every file of
/// the database (the main file, the WAL and its index), on PostgreSQL every text and bytea
/// column of every table of the database. Each find as "place: needle"; the places searched
/// are checked to include those an erasure rewrites.
async fn stored_holding(db: &TestDb, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    if db.url.starts_with("sqlite:") {
        let mut files = 0;
        for file in std::fs::read_dir(&db.dir).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.starts_with("standings.db") {
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            for needle in found_in(&bytes, needles) {
                found.push(format!("{name}: {needle}"));
            }
        }
        assert!(files >= 1, "no database file in {}", db.dir.display());
        return found;
    }
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let columns: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND data_type IN ('text', 'bytea', 'character varying', 'json', 'jsonb') \
         ORDER BY table_name, column_name",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let searched: Vec<String> = columns.iter().map(|(t, c, _)| format!("{t}.{c}")).collect();
    for place in [
        "actions.body",
        "event_metadata.metadata",
        "season_results.entries",
        "period_snapshots.entries",
        "checkpoint_parts.body",
    ] {
        assert!(
            searched.iter().any(|s| s == place),
            "{place} is not searched: {searched:?}"
        );
    }
    for (table, column, data_type) in &columns {
        let holding = if data_type == "bytea" {
            format!("position(convert_to($1, 'UTF8') in \"{column}\") > 0")
        } else {
            format!("strpos(\"{column}\"::text, $1) > 0")
        };
        for needle in needles {
            let rows: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM \"{table}\" WHERE {holding}"))
                .bind(*needle)
                .fetch_one(&mut conn)
                .await
                .unwrap();
            if rows > 0 {
                found.push(format!("{table}.{column}: {needle} ({rows} rows)"));
            }
        }
    }
    let _ = conn.close().await;
    found
}

/// Every part of the checkpoint in use, as stored.
async fn checkpoint_bytes(names: &Names) -> (i64, Vec<u8>) {
    let (seq, parts) = names
        .service
        .state
        .store()
        .checkpoint()
        .await
        .unwrap()
        .expect("a checkpoint is stored");
    (seq, parts.concat())
}

/// After an erasure no answer (every read kind of a live board, its daily instance today and a
/// closed day read from storage, season results, the profile, the audit log), no live message,
/// snapshot part, export, checkpoint or stored byte holds the player's names or metadata, each
/// of which held them before; the player's ranks and values are as they were.
async fn an_erasure_leaves_the_name_and_metadata_nowhere_and_the_rank_as_it_was(db: Db) {
    const OLD_NAME: &str = "Zephyrine Quill";
    const NAME: &str = "Zephyrine Kestrelwing";
    const OLD_METADATA: &str = "amber-lantern";
    const METADATA: &str = "obsidian-kestrel";
    let needles = ["Zephyrine", "Kestrelwing", OLD_METADATA, METADATA];
    let nothing = Vec::<&str>::new();
    // Two days before NOW: the day's instance closes and leaves memory by NOW.
    let names = Names::start_at(db, "2026-10-11T12:00:00Z", |_| {}).await;
    let daily = json!({"score_mode": "highest", "periods": ["all_time", "daily"]});
    names.define("global", daily.clone()).await;
    names
        .define_in("S6", "global", json!({"score_mode": "highest"}))
        .await;
    let relic = |name: &str| Some(json!({ "relic": name }));
    let early = "2026-10-11T10:00:00Z";
    for e in [
        scored("z1", "p-ava", 300, early, &["global"], relic(METADATA)),
        scored("z2", "p-ben", 400, early, &["global"], relic("plain-pebble")),
        scored("z3", "p-chloe", 100, early, &["global"], None),
    ] {
        names.accept(&e).await;
    }
    let mut s6 = scored("z4", "p-ava", 50, early, &["global"], relic(OLD_METADATA));
    s6["season"] = json!("S6");
    names.accept(&s6).await;
    let mut s6 = scored("z5", "p-ben", 40, early, &["global"], None);
    s6["season"] = json!("S6");
    names.accept(&s6).await;
    names
        .set_profile("p-ava", json!({"display_name": OLD_NAME, "country": "NZ"}), true)
        .await;
    names
        .moderated(
            json!({"moderation_id": "r1", "action_type": "RENAME", "reason": "their wish",
                          "game": "arena-clash", "target_player_id": "p-ava", "display_name": NAME}),
        )
        .await;
    names
        .set_profile("p-ben", json!({"display_name": "Ben"}), true)
        .await;
    for state in ["frozen", "finalized", "published"] {
        names.set_season("S6", state).await;
    }
    // Today: the day closed two days ago leaves memory for storage, and today's instance is new.
    names.clock.set(ms(NOW));
    names.service.state.ingest().evict_closed().await.unwrap();
    names
        .accept(&scored("z6", "p-ava", 250, DAY, &["global"], relic(METADATA)))
        .await;
    names
        .accept(&scored("z7", "p-chloe", 260, DAY, &["global"], None))
        .await;
    names.set_friends("p-ben", &["p-ava", "p-chloe"]).await;

    let closed_day = "period=daily&at=2026-10-11T11:00:00Z";
    let mut reads: Vec<Read> = [("", "global"), (TODAY, "global"), (closed_day, "global")]
        .iter()
        .flat_map(|(period, scope)| every_read(scope, "p-ava", "p-ben", period))
        .collect();
    reads.push(Read::get(
        "/v1/leaderboards/arena-clash/solo/S6/global/top".into(),
    ));
    reads.push(Read::get(
        "/v1/leaderboards/arena-clash/solo/S6/results?scope=global".into(),
    ));
    reads.push(Read::get(profile_path("p-ava")));
    reads.push(Read::get("/v1/audit?game=arena-clash".into()));
    let mut standings = Vec::new();
    let mut held_before = Vec::new();
    for read in &reads {
        let answer = names.read(Some(ADMIN), read).await;
        held_before.extend(found_in(answer.to_string().as_bytes(), &needles));
        standings.push(
            entry_of(&answer, "p-ava")
                .map(|e| (e["rank"].clone(), e["value"].clone(), e["achieved_at"].clone())),
        );
    }
    for needle in needles {
        assert!(held_before.contains(&needle), "the answers show {needle} before");
    }
    // A page of a version before the erasure, for later.
    let first_page = names
        .read(Some(ADMIN), &Read::get(format!("{LB}/global/top?limit=1")))
        .await;
    let cursor = first_page["next_cursor"].as_str().unwrap().to_string();

    let mut live = names.subscribe("global", "view=top:3").await;
    let (_, text) = live.expect("snapshot").await;
    assert!(holds(text.as_bytes(), NAME), "{text}");
    // The heads of the all-time board, today's instance and the closed day.
    let heads = ["", TODAY, closed_day]
        .map(|period| format!("/v1/snapshots/arena-clash/solo/S7/global/head?{period}"));
    let mut old_parts = Vec::new();
    for head in &heads {
        let parts = snapshot_parts(&names, &names.read(Some(ADMIN), &Read::get(head.clone())).await).await;
        assert!(parts.iter().any(|(_, bytes)| holds(bytes, NAME)), "{head}");
        old_parts.extend(parts);
    }
    names.service.state.ingest().checkpoint().await.unwrap();
    assert_eq!(
        found_in(&checkpoint_bytes(&names).await.1, &needles),
        needles,
        "the checkpoint held the names and the metadata"
    );
    let exported = export(&names.service.db);
    assert_eq!(found_in(exported.as_bytes(), &needles), needles);
    assert!(!stored_holding(&names.service.db, &needles).await.is_empty());

    let (status, erased) = names
        .service
        .call(
            Method::POST,
            "/v1/games/arena-clash/players/p-ava/erase",
            Some(ADMIN),
            Some(&json!({"reason": "GDPR request 42"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    assert_eq!(
        (&erased["game"], &erased["player_id"]),
        (&json!("arena-clash"), &json!("p-ava"))
    );
    assert_eq!(
        stored_holding(&names.service.db, &needles).await,
        Vec::<String>::new(),
        "the database right after the erasure's answer"
    );
    // The RENAME resent under its moderation id is still the same request, and answers as a
    // replay, telling nothing of the erased name.
    let (status, replayed) = names
        .moderate(
            json!({"moderation_id": "r1", "action_type": "RENAME", "reason": "their wish",
                   "game": "arena-clash", "target_player_id": "p-ava", "display_name": NAME}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{replayed}");
    assert_eq!(replayed["replayed"], true, "{replayed}");
    assert_eq!(found_in(replayed.to_string().as_bytes(), &needles), nothing);

    // Right after the erasure, and after a round of publication, every head names parts without
    // the fields, and no part that held them is served.
    let interval = names.service.state.snapshots().config().interval_ms as i64;
    for round in [false, true] {
        if round {
            names.snapshot_round_at(names.clock.now_ms() + interval).await;
        }
        for head in &heads {
            let head = names.read(Some(ADMIN), &Read::get(head.clone())).await;
            for (path, bytes) in snapshot_parts(&names, &head).await {
                assert_eq!(
                    found_in(&bytes, &needles),
                    nothing,
                    "{path} of {head}, round: {round}"
                );
            }
        }
        for (path, bytes) in &old_parts {
            if found_in(bytes, &needles).is_empty() {
                continue;
            }
            let (status, _, _) = names.service.get_raw(path, Some(ADMIN), &[]).await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "{path} held the name and is still served, round: {round}"
            );
        }
    }

    for (read, standing) in reads.iter().zip(&standings) {
        let answer = names.read(Some(ADMIN), read).await;
        assert_eq!(
            found_in(answer.to_string().as_bytes(), &needles),
            nothing,
            "{}: {answer}",
            read.path
        );
        let entry = entry_of(&answer, "p-ava");
        assert_eq!(
            &entry.map(|e| (e["rank"].clone(), e["value"].clone(), e["achieved_at"].clone())),
            standing,
            "{}: the standing stays",
            read.path
        );
        // The profile answer always says `"anonymous": false`; an entry never does.
        if let Some(entry) = entry {
            for key in EXTRAS {
                assert!(
                    entry.get(key).is_none_or(|v| v == false),
                    "{} shows {key}: {answer}",
                    read.path
                );
            }
        }
    }
    let (status, page) = names
        .read_as(
            Some(ADMIN),
            &Read::get(format!("{LB}/global/top?limit=1&cursor={cursor}")),
        )
        .await;
    // Either the page as of then without the fields, or that version is no longer held.
    assert!(
        status == StatusCode::OK || (status, &page["code"]) == (StatusCode::GONE, &json!("STALE_CURSOR")),
        "{status} {page}"
    );
    assert_eq!(
        found_in(page.to_string().as_bytes(), &needles),
        nothing,
        "a page of a version before the erasure ({status}): {page}"
    );

    names.flush();
    let (delta, text) = live.expect("delta").await;
    assert_eq!(found_in(text.as_bytes(), &needles), nothing, "{text}");
    assert!(
        delta["changed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["player_id"] == "p-ava"),
        "the erased entry changed for subscribers: {text}"
    );
    let mut fresh = names.subscribe("global", "view=top:3").await;
    let (_, text) = fresh.expect("snapshot").await;
    assert_eq!(found_in(text.as_bytes(), &needles), nothing, "{text}");

    let store = names.service.state.store();
    let (seq, bytes) = checkpoint_bytes(&names).await;
    assert!(
        seq >= erased["seq"].as_i64().unwrap(),
        "a checkpoint as of the erasure is in use"
    );
    assert_eq!(found_in(&bytes, &needles), nothing, "the erasure's checkpoint");
    assert_eq!(
        store.other_checkpoint_parts(seq).await.unwrap(),
        Vec::new(),
        "no older checkpoint is kept"
    );
    names.service.state.ingest().checkpoint().await.unwrap();
    assert_eq!(
        found_in(&checkpoint_bytes(&names).await.1, &needles),
        nothing,
        "a fresh checkpoint"
    );
    assert_eq!(
        found_in(export(&names.service.db).as_bytes(), &needles),
        nothing,
        "the export"
    );

    assert_eq!(
        stored_holding(&names.service.db, &needles).await,
        Vec::<String>::new(),
        "the database at the end"
    );
}
