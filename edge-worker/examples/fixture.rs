//! Writes a snapshot of a generated board as static files at the origin's snapshot paths, with
//! the answers the origin would give, so the built worker can be checked under `wrangler dev`
//! in front of a plain file server (`python3 -m http.server`) without building the origin:
//!
//! ```text
//! cargo run -p standings-edge --example fixture -- DIR [PLAYERS]
//! (cd DIR && python3 -m http.server 18091 --bind 127.0.0.1)
//! wrangler dev ... --var ORIGIN_URL:http://127.0.0.1:18091 --var PUBLIC_READS:true
//! ```
//!
//! `DIR/expected/<name>` holds the bytes each read in `DIR/expected/index.tsv` (name, path)
//! must answer, written by the core from the board itself.

use std::fs;
use std::path::Path;

use standings_core::json::{PeriodFields, write_nearby_answer, write_rank_answer, write_top_answer};
use standings_core::{Board, BoardDigest, BoardRules, ScoreMode, Snapshot, Standing};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: fixture DIR [PLAYERS]");
    let players: usize = args
        .next()
        .map_or(50_000, |n| n.parse().expect("PLAYERS is a number"));
    let dir = Path::new(&dir);
    let names: Vec<String> = (0..players).map(|i| format!("p{i:06}")).collect();
    let board = Board::from_aggregates(
        BoardRules::new(ScoreMode::Highest),
        17,
        names.iter().enumerate().map(|(i, p)| {
            let standing = Standing {
                value: (i as i64 * 7919) % 9973,
                achieved_at: 1_760_000_000_000 + (i as i64 % 977) * 1000,
            };
            (p.as_str(), standing, "")
        }),
    )
    .expect("the board holds the players");
    let snapshot = Snapshot::build(&board);
    let manifest_hash = BoardDigest::of(&snapshot.manifest_bytes);
    let write = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        fs::create_dir_all(path.parent().expect("a file path has a parent"))?;
        fs::write(path, bytes)
    };
    write(
        &dir.join(format!("v1/snapshots/manifests/{manifest_hash}")),
        &snapshot.manifest_bytes,
    )?;
    let refs = snapshot
        .manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(snapshot.manifest.lookup_chunks.iter().map(|c| c.hash));
    for (hash, bytes) in refs.zip(snapshot.rank_chunks.iter().chain(&snapshot.lookup_chunks)) {
        write(&dir.join(format!("v1/snapshots/chunks/{hash}")), bytes)?;
    }
    let head = format!(
        r#"{{"period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"board_version":{},"manifest":"{manifest_hash}","published_at":"2026-12-01T00:00:00Z","interval_ms":1000}}"#,
        board.version()
    );
    write(&dir.join("v1/snapshots/g/m/s/global/head"), head.as_bytes())?;

    let period = PeriodFields {
        kind: "all_time",
        key: "all_time",
        start_ms: None,
        end_ms: None,
    };
    let base = "/v1/leaderboards/g/m/s/global";
    let mut index = String::new();
    let mut expect = |name: &str, path: String, bytes: Vec<u8>| -> std::io::Result<()> {
        index.push_str(&format!("{name}\t{path}\n"));
        write(&dir.join("expected").join(name), &bytes)
    };
    // The next cursor goes on the wire as the edge writes it.
    let page = board.top(100, None).expect("a first page");
    let binding = standings_core::CursorBinding::of(
        &standings_core::BoardId::new("g", "m", "s", "global").expect("a valid id"),
        "all_time",
    );
    let next = page.next_cursor.as_ref().map(|c| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.encode(binding))
    });
    let mut out = Vec::new();
    write_top_answer(&mut out, &period, &page, next.as_deref());
    expect("top-100", format!("{base}/top?limit=100"), out)?;
    for i in [0, players / 2, players - 1] {
        let player = &names[i];
        let mut out = Vec::new();
        write_rank_answer(&mut out, &period, &board.player_rank(player).expect("ranked"));
        expect(
            &format!("rank-{player}"),
            format!("{base}/players/{player}/rank"),
            out,
        )?;
        let mut out = Vec::new();
        let window = board.nearby(player, 100).expect("ranked");
        write_nearby_answer(&mut out, &period, board.version(), window.iter().copied());
        expect(
            &format!("nearby-{player}"),
            format!("{base}/players/{player}/nearby?radius=100"),
            out,
        )?;
    }
    fs::write(dir.join("expected/index.tsv"), index)?;
    println!(
        "{players} players, {} rank chunks, {} lookup chunks, manifest {manifest_hash}",
        snapshot.manifest.rank_chunks.len(),
        snapshot.manifest.lookup_chunks.len()
    );
    Ok(())
}
