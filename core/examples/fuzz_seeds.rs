//! Writes the seed corpora of the fuzz targets (`fuzz/corpus/<target>/`) from real encodings:
//! boards of each score mode and a few sizes, their snapshots (cut into small chunks so that
//! there are several) and their rank sketches, their checkpoints, the cursors of their pages,
//! and score-event bodies.
//!
//! `cargo run -p standings-core --example fuzz_seeds -- fuzz/corpus`

use std::path::Path;

use standings_core::{
    Board, BoardId, BoardRules, ChunkingOptions, CursorBinding, Profile, ScoreEvent, ScoreMode, Snapshot,
};

fn main() {
    let root = std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus".into());
    let root = Path::new(&root);
    let write = |target: &str, name: &str, bytes: &[u8]| {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    let options = ChunkingOptions {
        min_entries: 4,
        boundary_modulus: 4,
        max_entries: 16,
        lookup_target: 8,
    };
    let modes = [
        ScoreMode::Highest,
        ScoreMode::Cumulative,
        ScoreMode::Fastest,
        ScoreMode::Latest,
    ];
    for mode in modes {
        for players in [0u64, 1, 5, 40] {
            let mut board = Board::new(BoardRules::new(mode));
            for i in 0..players * 2 {
                let player = format!("p-{:03}", i % players.max(1));
                let value = (i as i64 * 7919) % 1000 - 100;
                // Every third event carries metadata and every other player a profile, so the
                // seeds hold the extras' encodings too (snapshot and checkpoint format 3).
                let metadata = (i % 3 == 0).then(|| format!(r#"{{"car":"c{i}"}}"#).into_boxed_str());
                let event = ScoreEvent::new(&format!("e-{i}"), &player, value, 1_760_000_000_000 + i as i64)
                    .unwrap()
                    .with_metadata(metadata);
                let profile = (i % 2 == 0).then(|| {
                    std::sync::Arc::new(Profile {
                        display_name: Some(format!("Zoë {i}").into()),
                        country: Some("DE".into()),
                        anonymous: i % 4 == 0,
                    })
                });
                let _ = board.apply_as(&event, profile.as_ref());
            }
            let name = format!("{mode:?}-{players}").to_lowercase();
            let snapshot = Snapshot::build_with(&board, options);
            write("manifest_decode", &name, &snapshot.manifest_bytes);
            for (i, chunk) in snapshot.rank_chunks.iter().enumerate().take(3) {
                write("rank_chunk_decode", &format!("{name}-{i}"), chunk);
            }
            for (i, chunk) in snapshot.lookup_chunks.iter().enumerate().take(2) {
                write("lookup_chunk_decode", &format!("{name}-{i}"), chunk);
            }
            write("sketch_decode", &name, &snapshot.sketch);
            let mut checkpoint = Vec::new();
            board.write_checkpoint(&mut checkpoint);
            write("checkpoint_decode", &name, &checkpoint);
            if let Some(cursor) = board.top(3, None).unwrap().next_cursor {
                // The board the `cursor_decode` target checks cursors against.
                let binding = CursorBinding::of(
                    &BoardId::new("arena-clash", "solo", "S7", "global").unwrap(),
                    "all_time",
                );
                write("cursor_decode", &format!("{name}-bytes"), &cursor.encode(binding));
                write(
                    "cursor_decode",
                    &format!("{name}-token"),
                    base64_url(&cursor.encode(binding)).as_bytes(),
                );
            }
        }
    }
    let fields = r#""player_id": "p-ava", "game": "arena-clash", "mode": "solo", "season": "S7""#;
    let events = [
        format!(r#"{{"event_id": "e-1", {fields}, "value": 9800, "achieved_at": "2026-10-13T10:00:00Z"}}"#),
        format!(
            r#"{{"event_id": "e-2", {fields}, "scopes": ["global", "eu"], "value": -5, "achieved_at": "2026-10-13T10:00:00.123+02:00"}}"#
        ),
        format!(r#"{{"event_id": "e-3", "event_id": "e-4", {fields}, "value": 1, "achieved_at": "2026-10-13T10:00:00Z"}}"#),
        format!(r#"{{"event_id": "e-5", "\u0076alue": 1, {fields}, "value": 1, "achieved_at": "2026-10-13T10:00:00Z"}}"#),
        format!(r#"{{"events": [{{"event_id": "e-6", {fields}, "value": 1, "achieved_at": "2026-10-13T10:00:00Z"}}], "events": []}}"#),
        r#"{"event_id": "e-7", "player_id": "p-\u0007", "value": 9223372036854775807, "extra": {"a": [1, 2.5, null, true, {"b": {}}]}}"#.to_string(),
        "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]".to_string(),
    ];
    for (i, body) in events.iter().enumerate() {
        write("event_parse", &format!("body-{i}"), body.as_bytes());
    }
}

/// URL-safe base64 without padding, as the origin writes cursor tokens.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}
