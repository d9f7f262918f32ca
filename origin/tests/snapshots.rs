//! Snapshots for the edge (`docs/snapshots.md`), through the real router on SQLite and
//! PostgreSQL: a head publishes its board instance on the first ask; its manifest and chunks are
//! fetched by hash, decoded with the core and restored to the origin's board at that version;
//! a changed board is published again once the interval passed on the manual clock, reusing
//! most parts; an old part stays fetchable for the retention and is gone after; the headers,
//! periods, auth and the friend list the edge reads.
//!
//! Time is a manual clock. A round of publication runs when the clock reaches it; a test that
//! moves the clock waits (with a real-time guard against a hang) until a round has run at the
//! new time, and never sleeps.

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_core::{BoardDigest, LookupChunk, Manifest, RankChunk, Root, Snapshot};
use standings_origin::clock::{Clock, format_rfc3339, parse_rfc3339};
use standings_origin::config::{Config, Role, TokenConfig};

on_both_databases!(
    a_first_head_publishes_and_its_parts_restore_the_board,
    a_changed_board_is_published_again_after_the_interval_reusing_most_parts,
    a_changed_board_is_published_as_a_patch_over_its_last_manifest,
    parts_are_immutable_answer_304_and_refuse_bad_hashes,
    a_bundle_answers_the_chunks_named_in_order_or_nothing,
    a_period_head_is_resolved_as_reads_resolve_it,
    snapshots_are_read_by_the_edge_or_admin_of_the_game_or_with_public_reads,
    the_friend_list_is_read_as_friends_of_is,
    a_board_nobody_asks_for_stops_being_published,
    heads_follow_only_instances_with_events_and_within_the_caps,
    a_closed_day_is_restored_once_for_reads_and_heads,
);

const BOARD: &str = "arena-clash/solo/S7/global";
const HEAD: &str = "/v1/snapshots/arena-clash/solo/S7/global/head";
const NOW: &str = "2026-10-13T12:00:00Z";
const DAY: &str = "2026-10-13T10:00:00Z";
const INTERVAL_MS: i64 = 1_000;
const RETENTION_MS: i64 = 60_000;
/// The default chunking cuts a board this size into several rank chunks and lookup partitions.
const PLAYERS: usize = 4_000;
/// The edge token of arena-clash, and one of another game.
const EDGE: &str = "edge-arena-secret-0000000000";
const EDGE_OTHER: &str = "edge-other-secret-0000000000";
/// A guard against a hang, never a wait for state.
const GUARD: Duration = Duration::from_secs(30);

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

/// A service on a manual clock at [`NOW`] with the harness's tokens and the two edge tokens,
/// its config changed by `edit`.
struct Snap {
    service: TestService,
    clock: Clock,
}

impl Snap {
    async fn start(db: Db) -> Snap {
        Snap::start_with(db, |_| {}).await
    }

    async fn start_with(db: Db, edit: impl FnOnce(&mut Config)) -> Snap {
        Snap::start_at(db, NOW, edit).await
    }

    /// A start with the clock at `now`.
    async fn start_at(db: Db, now: &str, edit: impl FnOnce(&mut Config)) -> Snap {
        let db = TestDb::new(db).await;
        let mut config = config(&db.url);
        for (name, secret, game) in [
            ("edge-arena", EDGE, "arena-clash"),
            ("edge-other", EDGE_OTHER, "other-game"),
        ] {
            config.tokens.push(TokenConfig {
                name: name.into(),
                secret: secret.into(),
                role: Role::Edge,
                games: vec![game.into()],
                player_id: None,
                rate_limit_per_second: None,
            });
        }
        edit(&mut config);
        let clock = Clock::manual(ms(now));
        let service = TestService::start_with_config(db, &config, clock.clone()).await;
        Snap { service, clock }
    }

    /// `PLAYERS` players on the board, `p-00000` ... with shuffled values.
    async fn seed(&self) {
        self.service.define(BOARD, "highest").await;
        let players: Vec<usize> = (0..PLAYERS).collect();
        for batch in players.chunks(1_000) {
            let events: Vec<Value> = batch
                .iter()
                .map(|&i| event(&format!("seed-{i}"), &player(i), value_of(i), DAY))
                .collect();
            let (status, body) = self.service.submit_batch(&events).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert!(
                body["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|r| r["status"] == "ACCEPTED"),
                "{body}"
            );
        }
    }

    /// A GET of `path` as `token`, answered as status, headers and bytes.
    async fn fetch(
        &self,
        path: &str,
        token: Option<&str>,
    ) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
        self.service.get_raw(path, token, &[]).await
    }

    /// The head at `path` as the edge, asserting 200: the parsed answer and its text.
    async fn head(&self, path: &str) -> (Value, String) {
        let (status, headers, bytes) = self.fetch(path, Some(EDGE)).await;
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        assert_eq!(status, StatusCode::OK, "{text}");
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["cache-control"], "public, max-age=1");
        (serde_json::from_str(&text).unwrap(), text)
    }

    /// The manifest a head names, fetched as the edge and decoded.
    async fn manifest(&self, head: &Value) -> Manifest {
        let hash = head["manifest"].as_str().unwrap();
        let (status, _, bytes) = self
            .fetch(&format!("/v1/snapshots/manifests/{hash}"), Some(EDGE))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(BoardDigest::of(&bytes).to_string(), hash, "named by its hash");
        Manifest::decode(&bytes).unwrap()
    }

    /// Every rank chunk of `manifest`, fetched and decoded (which checks each hash).
    async fn rank_chunks(&self, manifest: &Manifest) -> Vec<RankChunk> {
        let mut chunks = Vec::new();
        for chunk in &manifest.rank_chunks {
            let (status, _, bytes) = self
                .fetch(&format!("/v1/snapshots/chunks/{}", chunk.hash), Some(EDGE))
                .await;
            assert_eq!(status, StatusCode::OK, "{}", chunk.hash);
            chunks.push(RankChunk::decode(&bytes, &chunk.hash).unwrap());
        }
        chunks
    }

    /// The origin's rank of `player` on the board, read as the edge.
    async fn rank_of(&self, player: &str) -> u64 {
        let path = format!("/v1/leaderboards/{BOARD}/players/{player}/rank");
        let (status, rank) = self.service.call(Method::GET, &path, Some(EDGE), None).await;
        assert_eq!(status, StatusCode::OK, "{rank}");
        rank["rank"].as_u64().unwrap()
    }

    /// Moves the clock to `at` and waits until a round of publication has run at that time.
    async fn round_at(&self, at: i64) {
        let mut rounds = self.service.state.snapshots().rounds();
        self.clock.set(at);
        tokio::time::timeout(GUARD, rounds.wait_for(|ran| *ran >= at))
            .await
            .expect("a round runs once the clock reaches it")
            .unwrap();
    }

    /// The value of an unlabelled metric.
    async fn metric(&self, name: &str) -> f64 {
        let (status, _, bytes) = self.fetch("/metrics", None).await;
        assert_eq!(status, StatusCode::OK);
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics"))
    }
}

fn player(i: usize) -> String {
    format!("p-{i:05}")
}

fn value_of(i: usize) -> i64 {
    ((i * 7_919) % 100_003) as i64
}

/// Whether the problem answer has this status and code.
fn refused(
    answer: &(StatusCode, axum::http::HeaderMap, axum::body::Bytes),
    status: StatusCode,
    code: &str,
) -> Value {
    let body: Value = serde_json::from_slice(&answer.2).unwrap_or(Value::Null);
    assert_eq!((answer.0, &body["code"]), (status, &json!(code)), "{body}");
    assert_eq!(answer.1["content-type"], "application/problem+json");
    body
}

/// The first head of a never-published board publishes it before answering, with the fields
/// in the contract's order; its manifest and every chunk it names are fetched and decoded,
/// and restoring them gives the origin's board at that version: the same top, size and digest.
async fn a_first_head_publishes_and_its_parts_restore_the_board(db: Db) {
    let snap = Snap::start(db).await;
    snap.seed().await;
    assert_eq!(snap.metric("standings_snapshot_publications_total").await, 0.0);
    let (head, text) = snap.head(HEAD).await;
    let (_, top) = snap
        .service
        .call(
            Method::GET,
            &format!("/v1/leaderboards/{BOARD}/top?limit=1000"),
            Some(EDGE),
            None,
        )
        .await;
    assert_eq!(
        head["board_version"], top["board_version"],
        "nothing moved in between"
    );
    let expected = format!(
        "{{\"period\":\"all_time\",\"period_key\":\"all_time\",\"period_start\":null,\"period_end\":null,\"board_version\":{},\"manifest\":\"{}\",\"published_at\":\"{}\",\"interval_ms\":1000}}",
        top["board_version"],
        head["manifest"].as_str().unwrap(),
        format_rfc3339(ms(NOW)),
    );
    assert_eq!(text, expected);
    let manifest = snap.manifest(&head).await;
    assert_eq!(manifest.board_version, head["board_version"].as_u64().unwrap());
    assert_eq!(manifest.total_players, PLAYERS as u64);
    assert!(
        manifest.rank_chunks.len() >= 2,
        "{} rank chunks",
        manifest.rank_chunks.len()
    );
    assert!(
        manifest.lookup_chunks.len() >= 2,
        "{} lookup chunks",
        manifest.lookup_chunks.len()
    );
    for chunk in &manifest.lookup_chunks {
        let (status, _, bytes) = snap
            .fetch(&format!("/v1/snapshots/chunks/{}", chunk.hash), Some(EDGE))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            LookupChunk::decode(&bytes, &chunk.hash).unwrap().entries.len(),
            chunk.count as usize
        );
    }
    let restored = Snapshot::restore(&manifest, &snap.rank_chunks(&manifest).await).unwrap();
    assert_eq!(restored.version(), manifest.board_version);
    let page = restored.top(1_000, None).unwrap();
    let entries: Vec<(u64, String, i64, String)> = page
        .entries
        .iter()
        .map(|e| {
            (
                e.rank,
                e.player.to_string(),
                e.value,
                format_rfc3339(e.achieved_at),
            )
        })
        .collect();
    let read: Vec<(u64, String, i64, String)> = top["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["rank"].as_u64().unwrap(),
                e["player_id"].as_str().unwrap().to_string(),
                e["value"].as_i64().unwrap(),
                e["achieved_at"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(entries, read);
    let (_, digest) = snap
        .service
        .call(
            Method::GET,
            &format!("/v1/leaderboards/{BOARD}/digest"),
            Some(EDGE),
            None,
        )
        .await;
    assert_eq!(restored.digest().to_string(), digest["digest"].as_str().unwrap());
    assert_eq!(restored.total_players(), PLAYERS as u64);
    // A second ask is answered from the publication, not by another.
    let (again, _) = snap.head(HEAD).await;
    assert_eq!(again, head);
    assert_eq!(snap.metric("standings_snapshot_publications_total").await, 1.0);
    // The manifest and every part it names, each once (chunks and the sketch).
    let parts = 1 + manifest
        .part_hashes()
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert_eq!(snap.metric("standings_snapshot_parts_held").await, parts as f64);
    assert!(snap.metric("standings_snapshot_bytes_held").await > 0.0);
    assert_eq!(snap.metric("standings_snapshot_instances").await, 1.0);
}

/// With every version published whole (`max_patch_bytes = 0`): after an event, the head stays
/// on its publication until the interval passes on the clock; then a round publishes a higher
/// version whose manifest reuses most chunks. The replaced manifest and the chunk only it named
/// stay fetchable for the retention, then answer 404.
async fn a_changed_board_is_published_again_after_the_interval_reusing_most_parts(db: Db) {
    let snap = Snap::start_with(db, |c| c.snapshots.max_patch_bytes = 0).await;
    snap.seed().await;
    let (first, _) = snap.head(HEAD).await;
    let old = snap.manifest(&first).await;
    // A player from the middle of the board moves up a little.
    let mover = 2_321;
    let (status, body) = snap
        .service
        .submit(&event("move-1", &player(mover), value_of(mover) + 3, DAY))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (unchanged, _) = snap.head(HEAD).await;
    assert_eq!(unchanged, first, "published at most once an interval");
    let moved_at = ms(NOW) + INTERVAL_MS;
    snap.round_at(moved_at).await;
    let (second, _) = snap.head(HEAD).await;
    assert!(
        second["board_version"].as_u64() > first["board_version"].as_u64(),
        "{first} then {second}"
    );
    assert_eq!(second["published_at"], format_rfc3339(moved_at));
    let new = snap.manifest(&second).await;
    let old_chunks: Vec<_> = old
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(old.lookup_chunks.iter().map(|c| c.hash))
        .collect();
    let new_chunks: Vec<_> = new
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(new.lookup_chunks.iter().map(|c| c.hash))
        .collect();
    let reused = new_chunks.iter().filter(|h| old_chunks.contains(h)).count();
    let changed = new_chunks.len() - reused;
    assert!(
        (1..=3).contains(&changed),
        "{changed} of {} chunks are new",
        new_chunks.len()
    );
    assert!(reused > changed, "{reused} reused, {changed} new");
    assert_eq!(snap.metric("standings_snapshot_publications_total").await, 2.0);
    // The new version restores to the origin's board too.
    let restored = Snapshot::restore(&new, &snap.rank_chunks(&new).await).unwrap();
    assert_eq!(
        restored.player_rank(&player(mover)).unwrap().entry.rank,
        snap.rank_of(&player(mover)).await
    );
    // What only the old version named: its manifest and the chunks it held the mover in.
    let old_manifest = format!("/v1/snapshots/manifests/{}", first["manifest"].as_str().unwrap());
    let dropped = old_chunks.iter().find(|h| !new_chunks.contains(h)).unwrap();
    let dropped_chunk = format!("/v1/snapshots/chunks/{dropped}");
    let kept_chunk = format!(
        "/v1/snapshots/chunks/{}",
        new_chunks.iter().find(|h| old_chunks.contains(h)).unwrap()
    );
    snap.clock.set(moved_at + RETENTION_MS - 1);
    for path in [&old_manifest, &dropped_chunk, &kept_chunk] {
        assert_eq!(
            snap.fetch(path, Some(EDGE)).await.0,
            StatusCode::OK,
            "{path} within the retention"
        );
    }
    snap.clock.set(moved_at + RETENTION_MS);
    for path in [&old_manifest, &dropped_chunk] {
        let body = refused(
            &snap.fetch(path, Some(EDGE)).await,
            StatusCode::NOT_FOUND,
            "SNAPSHOT_PART_NOT_FOUND",
        );
        assert!(body["detail"].as_str().unwrap().contains("retention"), "{body}");
    }
    assert_eq!(
        snap.fetch(&kept_chunk, Some(EDGE)).await.0,
        StatusCode::OK,
        "still named"
    );
    // The next round sweeps what expired out of memory.
    snap.round_at(moved_at + RETENTION_MS + INTERVAL_MS).await;
    let parts = 1 + new.part_hashes().collect::<std::collections::HashSet<_>>().len();
    assert_eq!(snap.metric("standings_snapshot_parts_held").await, parts as f64);
}

/// By default a changed board's next version is a patch over its last manifest: the head names
/// the patch, which names that manifest as its base and no new chunk, only the version's
/// sketch; base, chunks and patch restore the origin's board at the new version. Past what a
/// patch over the manifest may hold the next version is a whole manifest again, and the patch
/// before it and its sketch go on their retention.
async fn a_changed_board_is_published_as_a_patch_over_its_last_manifest(db: Db) {
    let snap = Snap::start_with(db, |c| c.snapshots.max_patch_bytes = 1_024).await;
    snap.seed().await;
    let (first, _) = snap.head(HEAD).await;
    let base = snap.manifest(&first).await;
    let mover = 2_321;
    let (status, body) = snap
        .service
        .submit(&event("move-1", &player(mover), value_of(mover) + 3, DAY))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let moved_at = ms(NOW) + INTERVAL_MS;
    snap.round_at(moved_at).await;
    let (second, _) = snap.head(HEAD).await;
    let patch_path = format!("/v1/snapshots/manifests/{}", second["manifest"].as_str().unwrap());
    let (status, _, bytes) = snap.fetch(&patch_path, Some(EDGE)).await;
    assert_eq!(status, StatusCode::OK);
    let Root::Patch(patch) = Root::decode(&bytes).unwrap() else {
        panic!("one move is published as a patch");
    };
    assert_eq!(patch.base.to_string(), first["manifest"].as_str().unwrap());
    assert_eq!(patch.board_version, second["board_version"].as_u64().unwrap());
    assert_eq!((patch.removed.len(), patch.inserted.len()), (1, 1));
    let sketch = format!("/v1/snapshots/chunks/{}", patch.sketch);
    assert_eq!(snap.fetch(&sketch, Some(EDGE)).await.0, StatusCode::OK);
    let restored = Snapshot::restore_patched(&base, &snap.rank_chunks(&base).await, &[&patch]).unwrap();
    assert_eq!(
        restored.player_rank(&player(mover)).unwrap().entry.rank,
        snap.rank_of(&player(mover)).await
    );
    assert_eq!(restored.version(), patch.board_version);
    // More moves than a patch over the manifest may hold (16 times 1 KB): the next version
    // is whole again.
    for batch in 0..2 {
        let events: Vec<Value> = (batch * 500..(batch + 1) * 500)
            .map(|i| {
                event(
                    &format!("move-many-{i}"),
                    &player(i * 4),
                    value_of(i * 4) + 11,
                    DAY,
                )
            })
            .collect();
        let (status, body) = snap.service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    snap.round_at(moved_at + INTERVAL_MS).await;
    let (third, _) = snap.head(HEAD).await;
    let whole = snap.manifest(&third).await;
    assert_eq!(whole.board_version, third["board_version"].as_u64().unwrap());
    let restored = Snapshot::restore(&whole, &snap.rank_chunks(&whole).await).unwrap();
    assert_eq!(restored.total_players(), PLAYERS as u64);
    // The patch and its sketch stay for the retention, then go.
    snap.clock.set(moved_at + INTERVAL_MS + RETENTION_MS);
    for path in [&patch_path, &sketch] {
        refused(
            &snap.fetch(path, Some(EDGE)).await,
            StatusCode::NOT_FOUND,
            "SNAPSHOT_PART_NOT_FOUND",
        );
    }
}

/// A part answers with its bytes, `application/octet-stream`, an immutable Cache-Control and
/// its hash as the ETag; `If-None-Match` with that ETag answers 304 with no body. A hash never
/// published (or a manifest asked for as a chunk) is 404 and a malformed one 400, each as
/// problem+json saying why.
async fn parts_are_immutable_answer_304_and_refuse_bad_hashes(db: Db) {
    let snap = Snap::start(db).await;
    snap.service.define(BOARD, "highest").await;
    let (status, body) = snap.service.submit(&event("e-1", "p-ava", 10, DAY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (head, _) = snap.head(HEAD).await;
    let hash = head["manifest"].as_str().unwrap().to_string();
    let manifest = snap.manifest(&head).await;
    let chunk = manifest.rank_chunks[0].hash.to_string();
    for (path, hash) in [
        (format!("/v1/snapshots/manifests/{hash}"), &hash),
        (format!("/v1/snapshots/chunks/{chunk}"), &chunk),
    ] {
        let (status, headers, bytes) = snap.fetch(&path, Some(EDGE)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-type"], "application/octet-stream");
        assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
        assert_eq!(headers["etag"], format!("\"{hash}\"").as_str());
        assert_eq!(BoardDigest::of(&bytes).to_string(), *hash);
        for if_none_match in [
            format!("\"{hash}\""),
            format!("W/\"{hash}\""),
            format!("\"other\", \"{hash}\""),
        ] {
            let (status, headers, bytes) = snap
                .service
                .get_raw(&path, Some(EDGE), &[("if-none-match", &if_none_match)])
                .await;
            assert_eq!(status, StatusCode::NOT_MODIFIED, "{if_none_match}");
            assert!(bytes.is_empty());
            assert_eq!(headers["etag"], format!("\"{hash}\"").as_str());
            assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
        }
        let (status, _, _) = snap
            .service
            .get_raw(&path, Some(EDGE), &[("if-none-match", "\"0000\"")])
            .await;
        assert_eq!(status, StatusCode::OK, "another ETag is no match");
    }
    let never = BoardDigest::of(b"never published").to_string();
    for path in [
        format!("/v1/snapshots/manifests/{never}"),
        format!("/v1/snapshots/chunks/{never}"),
        format!("/v1/snapshots/chunks/{hash}"),
        format!("/v1/snapshots/manifests/{chunk}"),
    ] {
        refused(
            &snap.fetch(&path, Some(EDGE)).await,
            StatusCode::NOT_FOUND,
            "SNAPSHOT_PART_NOT_FOUND",
        );
    }
    for (bad, says) in [
        ("abc".to_string(), "the hash has 3 characters"),
        (hash.to_uppercase(), "at position"),
        (format!("{}z", &hash[..63]), "the hash has 'z' at position 63"),
    ] {
        for kind in ["manifests", "chunks"] {
            let body = refused(
                &snap
                    .fetch(&format!("/v1/snapshots/{kind}/{bad}"), Some(EDGE))
                    .await,
                StatusCode::BAD_REQUEST,
                "INVALID_REQUEST",
            );
            let detail = body["detail"].as_str().unwrap();
            assert!(
                detail.contains(says) && detail.contains("64 lowercase hex digits"),
                "{detail}"
            );
        }
    }
}

/// `GET /v1/snapshots/chunks?hashes=` answers every chunk named, in the order named, each after
/// its length as 4 bytes big-endian, immutable; the bytes equal the single fetches. One unknown
/// hash, a manifest, a malformed hash, a hash named twice (200 of one hash would make a 13 KB
/// URL a megabyte answer), more than 200 hashes, no hashes, an unknown parameter or an edge of
/// another game refuse the whole bundle.
async fn a_bundle_answers_the_chunks_named_in_order_or_nothing(db: Db) {
    let snap = Snap::start(db).await;
    snap.seed().await;
    let (head, _) = snap.head(HEAD).await;
    let manifest = snap.manifest(&head).await;
    let named: Vec<String> = manifest
        .rank_chunks
        .iter()
        .rev()
        .take(3)
        .map(|c| c.hash)
        .chain(manifest.lookup_chunks.iter().take(2).map(|c| c.hash))
        .map(|hash| hash.to_string())
        .collect();
    let path = format!("/v1/snapshots/chunks?hashes={}", named.join(","));
    let (status, headers, bytes) = snap.fetch(&path, Some(EDGE)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
    let mut rest = &bytes[..];
    for hash in &named {
        let (length, tail) = rest.split_at(4);
        let length = u32::from_be_bytes(length.try_into().unwrap()) as usize;
        let (part, tail) = tail.split_at(length);
        let (status, _, single) = snap
            .fetch(&format!("/v1/snapshots/chunks/{hash}"), Some(EDGE))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(part, &single[..], "{hash}");
        rest = tail;
    }
    assert!(rest.is_empty(), "nothing after the chunks named");

    let never = BoardDigest::of(b"never published").to_string();
    let manifest_hash = head["manifest"].as_str().unwrap();
    for (hashes, code, says) in [
        (
            format!("{},{never}", named[0]),
            StatusCode::NOT_FOUND,
            "no snapshot chunk",
        ),
        (
            manifest_hash.to_string(),
            StatusCode::NOT_FOUND,
            "no snapshot chunk",
        ),
        (
            format!("{},abc", named[0]),
            StatusCode::BAD_REQUEST,
            "the hash has 3 characters",
        ),
        (
            vec![named[0].as_str(); 201].join(","),
            StatusCode::BAD_REQUEST,
            "at most 200",
        ),
        (
            format!("{},{},{}", named[0], named[1], named[0]),
            StatusCode::BAD_REQUEST,
            "more than once; name each chunk once",
        ),
        (
            vec![named[0].as_str(); 200].join(","),
            StatusCode::BAD_REQUEST,
            "more than once; name each chunk once",
        ),
    ] {
        let answer = snap
            .fetch(&format!("/v1/snapshots/chunks?hashes={hashes}"), Some(EDGE))
            .await;
        let code_name = if code == StatusCode::NOT_FOUND {
            "SNAPSHOT_PART_NOT_FOUND"
        } else {
            "INVALID_REQUEST"
        };
        let body = refused(&answer, code, code_name);
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    for (query, says) in [
        ("", "hashes=H1,H2,... is required"),
        (
            &format!("?hashes={}&hashes={}", named[0], named[1])[..],
            "more than once",
        ),
        (
            &format!("?hashes={}&limit=2", named[0])[..],
            "unknown query parameter",
        ),
    ] {
        let body = refused(
            &snap
                .fetch(&format!("/v1/snapshots/chunks{query}"), Some(EDGE))
                .await,
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST",
        );
        assert!(body["detail"].as_str().unwrap().contains(says), "{body}");
    }
    refused(
        &snap.fetch(&path, Some(EDGE_OTHER)).await,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    );
}

/// `?period=daily&at=` names the day's instance as the read API does: the same period fields
/// and version as its top read, a manifest of its own that restores to that day's board; a
/// period the board does not keep, and an unknown board, are refused as reads refuse them.
async fn a_period_head_is_resolved_as_reads_resolve_it(db: Db) {
    // Just after midnight, so that the day before is still open (within its grace) for Ava.
    let snap = Snap::start_at(db, "2026-10-13T00:02:00Z", |_| {}).await;
    snap.service
        .define_scope(
            "daily",
            &json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        )
        .await;
    for (i, (player, value, at)) in [
        ("p-ava", 30, "2026-10-12T23:00:00Z"),
        ("p-ben", 20, "2026-10-13T00:00:30Z"),
        ("p-chloe", 10, "2026-10-13T00:01:00Z"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut e = event(&format!("d-{i}"), player, value, at);
        e["scopes"] = json!(["daily"]);
        let (status, body) = snap.service.submit(&e).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let query = "period=daily&at=2026-10-13T08:00:00Z";
    let (day, _) = snap
        .head(&format!("/v1/snapshots/arena-clash/solo/S7/daily/head?{query}"))
        .await;
    let (_, read) = snap
        .service
        .call(
            Method::GET,
            &format!("/v1/leaderboards/arena-clash/solo/S7/daily/top?{query}"),
            Some(EDGE),
            None,
        )
        .await;
    for field in [
        "period",
        "period_key",
        "period_start",
        "period_end",
        "board_version",
    ] {
        assert_eq!(day[field], read[field], "{field}");
    }
    assert_eq!(day["period_key"], "2026-10-13");
    let (all_time, _) = snap.head("/v1/snapshots/arena-clash/solo/S7/daily/head").await;
    assert_ne!(all_time["manifest"], day["manifest"]);
    let manifest = snap.manifest(&day).await;
    let restored = Snapshot::restore(&manifest, &snap.rank_chunks(&manifest).await).unwrap();
    let players: Vec<String> = restored
        .top(10, None)
        .unwrap()
        .entries
        .iter()
        .map(|e| e.player.to_string())
        .collect();
    assert_eq!(players, ["p-ben", "p-chloe"], "the day's board, not all time's");
    // The day before has its own instance.
    let (before, _) = snap
        .head("/v1/snapshots/arena-clash/solo/S7/daily/head?period=daily&at=2026-10-12T23:00:00Z")
        .await;
    assert_eq!(before["period_key"], "2026-10-12");
    assert_ne!(before["manifest"], day["manifest"]);
    let weekly = snap
        .fetch(
            "/v1/snapshots/arena-clash/solo/S7/daily/head?period=weekly",
            Some(EDGE),
        )
        .await;
    let body = refused(&weekly, StatusCode::BAD_REQUEST, "INVALID_REQUEST");
    let (_, read) = snap
        .service
        .call(
            Method::GET,
            "/v1/leaderboards/arena-clash/solo/S7/daily/top?period=weekly",
            Some(EDGE),
            None,
        )
        .await;
    assert_eq!(body["detail"], read["detail"], "the read's words");
    refused(
        &snap
            .fetch("/v1/snapshots/arena-clash/solo/S7/nowhere/head", Some(EDGE))
            .await,
        StatusCode::NOT_FOUND,
        "UNKNOWN_BOARD",
    );
    refused(
        &snap
            .fetch(
                "/v1/snapshots/arena-clash/solo/S7/daily/head?at=yesterday",
                Some(EDGE),
            )
            .await,
        StatusCode::BAD_REQUEST,
        "INVALID_REQUEST",
    );
}

/// Snapshots hold every player's score: the edge or admin token of the game reads them, an edge
/// of another game is 403 on the head and on the parts, a player (static token or JWT), a
/// service or a moderator token is 403 saying why, no token or a bad one 401. With
/// public_reads anyone reads them, a token is still held to its games and a bad one is 401.
async fn snapshots_are_read_by_the_edge_or_admin_of_the_game_or_with_public_reads(db: Db) {
    let snap = Snap::start(db).await;
    snap.service.define(BOARD, "highest").await;
    snap.service.define("other-game/solo/S7/global", "highest").await;
    let (status, body) = snap.service.submit(&event("e-1", "p-ava", 10, DAY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (head, _) = snap.head(HEAD).await;
    let manifest = format!("/v1/snapshots/manifests/{}", head["manifest"].as_str().unwrap());
    let chunk = format!(
        "/v1/snapshots/chunks/{}",
        snap.manifest(&head).await.rank_chunks[0].hash
    );
    for path in [HEAD, &manifest, &chunk] {
        for token in [EDGE, ADMIN] {
            assert_eq!(snap.fetch(path, Some(token)).await.0, StatusCode::OK, "{path}");
        }
        let body = refused(
            &snap.fetch(path, Some(EDGE_OTHER)).await,
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
        );
        assert!(body["detail"].as_str().unwrap().contains("edge-other"), "{body}");
        let jwt = player_jwt("p-ava", &["arena-clash"]);
        for player in [PLAYER, jwt.as_str()] {
            let body = refused(
                &snap.fetch(path, Some(player)).await,
                StatusCode::FORBIDDEN,
                "FORBIDDEN",
            );
            assert!(
                body["detail"].as_str().unwrap().contains("every player's score"),
                "{body}"
            );
        }
        for token in [SERVICE, MODERATOR] {
            let body = refused(
                &snap.fetch(path, Some(token)).await,
                StatusCode::FORBIDDEN,
                "FORBIDDEN",
            );
            assert!(
                body["detail"].as_str().unwrap().contains("edge or admin token"),
                "{body}"
            );
        }
        refused(
            &snap.fetch(path, None).await,
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
        );
        refused(
            &snap.fetch(path, Some("not-a-token-anyone-was-given-000")).await,
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
        );
    }
    // The other game's edge reads its own game's head.
    let (status, _, _) = snap
        .fetch("/v1/snapshots/other-game/solo/S7/global/head", Some(EDGE_OTHER))
        .await;
    assert_eq!(status, StatusCode::OK);

    let open = Snap::start_with(db, |config| config.public_reads = true).await;
    open.service.define(BOARD, "highest").await;
    let (status, body) = open.service.submit(&event("e-1", "p-ava", 10, DAY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, _, bytes) = open.fetch(HEAD, None).await;
    assert_eq!(status, StatusCode::OK);
    let head: Value = serde_json::from_slice(&bytes).unwrap();
    let manifest = format!("/v1/snapshots/manifests/{}", head["manifest"].as_str().unwrap());
    for path in [HEAD, &manifest] {
        for token in [None, Some(PLAYER), Some(SERVICE)] {
            assert_eq!(
                open.fetch(path, token).await.0,
                StatusCode::OK,
                "{path} as {token:?}"
            );
        }
        refused(
            &open.fetch(path, Some(OTHER_GAME)).await,
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
        );
        refused(
            &open.fetch(path, Some("not-a-token-anyone-was-given-000")).await,
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
        );
    }
}

/// `GET /v1/games/{game}/players/{player_id}/friends` answers the stored list in its order
/// with the fields in the contract's order, to the edge and admin of the game and to the
/// player's own token; another player's token, another game's edge and a caller without a
/// token (even with public_reads) are refused, as friends-of refuses them.
async fn the_friend_list_is_read_as_friends_of_is(db: Db) {
    let snap = Snap::start_with(db, |config| config.public_reads = true).await;
    let path = "/v1/games/arena-clash/players/p-ava/friends";
    let (status, body) = snap
        .service
        .call(
            Method::PUT,
            path,
            Some(SERVICE),
            Some(&json!({"friends": ["p-chloe", "p-ben", "p-chloe"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let jwt = player_jwt("p-ava", &["arena-clash"]);
    for token in [EDGE, ADMIN, SERVICE, PLAYER, jwt.as_str()] {
        let (status, headers, bytes) = snap.fetch(path, Some(token)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(
            String::from_utf8(bytes.to_vec()).unwrap(),
            r#"{"game":"arena-clash","player_id":"p-ava","friends":["p-chloe","p-ben"]}"#
        );
    }
    let (status, body) = snap
        .service
        .call(
            Method::GET,
            "/v1/games/arena-clash/players/p-ben/friends",
            Some(EDGE),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"game": "arena-clash", "player_id": "p-ben", "friends": []})
    );
    let ben = player_jwt("p-ben", &["arena-clash"]);
    for token in [EDGE_OTHER, OTHER_GAME, ben.as_str()] {
        refused(
            &snap.fetch(path, Some(token)).await,
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
        );
    }
    let body = refused(
        &snap.fetch(path, None).await,
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
    );
    assert!(body["detail"].as_str().unwrap().contains("private"), "{body}");
    refused(
        &snap
            .fetch("/v1/games/arena-clash/players/p%07/friends", Some(EDGE))
            .await,
        StatusCode::BAD_REQUEST,
        "INVALID_REQUEST",
    );
}

/// A board whose head nobody asked for during idle_seconds stops being published: a round
/// forgets it and its parts go on their retention; the next ask publishes it again at once.
async fn a_board_nobody_asks_for_stops_being_published(db: Db) {
    let snap = Snap::start_with(db, |config| config.snapshots.idle_seconds = 5).await;
    snap.service.define(BOARD, "highest").await;
    let (status, body) = snap.service.submit(&event("e-1", "p-ava", 10, DAY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (first, _) = snap.head(HEAD).await;
    assert_eq!(snap.metric("standings_snapshot_instances").await, 1.0);
    let (status, body) = snap.service.submit(&event("e-2", "p-ben", 20, DAY)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let idle_at = ms(NOW) + 5_000;
    snap.round_at(idle_at).await;
    assert_eq!(snap.metric("standings_snapshot_instances").await, 0.0);
    assert_eq!(
        snap.metric("standings_snapshot_publications_total").await,
        1.0,
        "the change after the last ask was not published"
    );
    let old_manifest = format!("/v1/snapshots/manifests/{}", first["manifest"].as_str().unwrap());
    assert_eq!(
        snap.fetch(&old_manifest, Some(EDGE)).await.0,
        StatusCode::OK,
        "within the retention"
    );
    let (second, _) = snap.head(HEAD).await;
    assert!(second["board_version"].as_u64() > first["board_version"].as_u64());
    assert_eq!(second["published_at"], format_rfc3339(idle_at));
    snap.clock.set(idle_at + RETENTION_MS);
    refused(
        &snap.fetch(&old_manifest, Some(EDGE)).await,
        StatusCode::NOT_FOUND,
        "SNAPSHOT_PART_NOT_FOUND",
    );
}

/// Submits one event of `player` on the daily board at `at`, with the clock moved there first.
async fn score_daily(snap: &Snap, id: &str, player: &str, value: i64, at: &str) {
    snap.clock.set(ms(at));
    let mut e = event(id, player, value, at);
    e["scopes"] = json!(["daily"]);
    let (status, body) = snap.service.submit(&e).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

const DAILY_HEAD: &str = "/v1/snapshots/arena-clash/solo/S7/daily/head";

/// Issue 28: a head of a day with no events (a past day nobody played, or one in the future)
/// names the empty snapshot of the board's rules and follows nothing, however many are asked
/// for; past the per-board cap a closed day with events is refused 503
/// `SNAPSHOT_INSTANCES_FULL` with `Retry-After` (its read still answers), while the current day
/// takes the place of the closed day asked for least recently. Every case is counted.
async fn heads_follow_only_instances_with_events_and_within_the_caps(db: Db) {
    let snap = Snap::start_at(db, "2026-10-09T10:00:00Z", |config| {
        config.snapshots.max_instances_per_board = 3;
    })
    .await;
    snap.service
        .define_scope(
            "daily",
            &json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        )
        .await;
    for day in 9..=13 {
        let at = format!("2026-10-{day:02}T10:00:00Z");
        score_daily(&snap, &format!("d-{day}"), "p-ava", day, &at).await;
    }
    snap.clock.set(ms(NOW));
    let mut empty = None;
    for n in 0..300 {
        // Days of 2025 and of 2027: none has events, whichever side of now.
        let at = format_rfc3339(ms("2025-01-01T12:00:00Z") + n * 2 * 86_400_000);
        let (head, _) = snap.head(&format!("{DAILY_HEAD}?period=daily&at={at}")).await;
        assert_eq!(head["board_version"], 0, "{head}");
        let manifest = head["manifest"].as_str().unwrap().to_string();
        assert_eq!(empty.get_or_insert(manifest.clone()), &manifest);
    }
    assert_eq!(snap.metric("standings_snapshot_instances").await, 0.0);
    assert_eq!(snap.metric("standings_snapshot_empty_heads_total").await, 300.0);
    // The empty snapshot answers as the read of such a day does.
    let (head, _) = snap
        .head(&format!("{DAILY_HEAD}?period=daily&at=2027-03-01T00:00:00Z"))
        .await;
    let restored = Snapshot::restore(&snap.manifest(&head).await, &[]).unwrap();
    assert_eq!(restored.total_players(), 0);

    for day in 9..=11 {
        let (head, _) = snap
            .head(&format!(
                "{DAILY_HEAD}?period=daily&at=2026-10-{day:02}T12:00:00Z"
            ))
            .await;
        assert_eq!(head["board_version"], 1, "{head}");
    }
    assert_eq!(snap.metric("standings_snapshot_instances").await, 3.0);
    let full = snap
        .fetch(
            &format!("{DAILY_HEAD}?period=daily&at=2026-10-12T12:00:00Z"),
            Some(EDGE),
        )
        .await;
    let body = refused(&full, StatusCode::SERVICE_UNAVAILABLE, "SNAPSHOT_INSTANCES_FULL");
    assert_eq!(full.1["retry-after"], "10", "{body}");
    assert_eq!(snap.metric("standings_snapshot_refused_heads_total").await, 1.0);
    let (status, read) = snap
        .service
        .call(
            Method::GET,
            "/v1/leaderboards/arena-clash/solo/S7/daily/top?period=daily&at=2026-10-12T12:00:00Z",
            Some(EDGE),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["entries"][0]["value"], 12);

    let (today, _) = snap.head(&format!("{DAILY_HEAD}?period=daily")).await;
    assert_eq!(today["period_key"], "2026-10-13");
    assert_eq!(snap.metric("standings_snapshot_instances").await, 3.0);
    assert_eq!(snap.metric("standings_snapshot_displaced_total").await, 1.0);
}

/// Issue 28: a closed day that left memory is restored from storage once, and every later read
/// and head of it answers from that copy (its top as fast as a live board's); past
/// `closed_periods_cached` the least recently used copy goes, and reading it again restores
/// it again.
async fn a_closed_day_is_restored_once_for_reads_and_heads(db: Db) {
    let snap = Snap::start_at(db, "2026-10-10T10:00:00Z", |config| {
        config.closed_periods_cached = 1;
        config.closed_period_retention_seconds = 60;
    })
    .await;
    snap.service
        .define_scope(
            "daily",
            &json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        )
        .await;
    for (day, players) in [(10, 3), (11, 4)] {
        for p in 0..players {
            let at = format!("2026-10-{day}T10:00:{p:02}Z");
            score_daily(&snap, &format!("d-{day}-{p}"), &format!("p-{p}"), 10 + p, &at).await;
        }
    }
    snap.clock.set(ms(NOW));
    snap.service.state.ingest().evict_closed().await.unwrap();
    assert_eq!(snap.metric("standings_closed_periods_cached").await, 1.0);
    let top = |day: u32| {
        format!("/v1/leaderboards/arena-clash/solo/S7/daily/top?period=daily&at=2026-10-{day:02}T12:00:00Z")
    };
    let mut answers = Vec::new();
    for _ in 0..20 {
        let (status, headers, bytes) = snap.fetch(&top(10), Some(EDGE)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["x-standings-board-version"], "3");
        answers.push(bytes);
        snap.head(&format!("{DAILY_HEAD}?period=daily&at=2026-10-10T12:00:00Z"))
            .await;
    }
    assert!(answers.iter().all(|a| *a == answers[0]));
    let read: Value = serde_json::from_slice(&answers[0]).unwrap();
    assert_eq!(read["entries"].as_array().unwrap().len(), 3);
    assert_eq!(snap.metric("standings_closed_period_restores_total").await, 1.0);
    // The 11th was the one kept at eviction; reading it again restores nothing, reading the
    // 10th again (given up for the 11th) restores it once more.
    let (status, _, _) = snap.fetch(&top(11), Some(EDGE)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(snap.metric("standings_closed_period_restores_total").await, 2.0);
    let (status, _, again) = snap.fetch(&top(10), Some(EDGE)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, answers[0]);
    assert_eq!(snap.metric("standings_closed_period_restores_total").await, 3.0);
    assert_eq!(snap.metric("standings_closed_periods_cached").await, 1.0);
}
