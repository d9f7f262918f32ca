//! What players' names cost in memory and what a rename costs, at 1M members (issue 31):
//! `cargo bench -p standings-origin --bench names [-- MEMBERS]`.
//!
//! Memory is counted by a counting allocator around the very structures the origin holds: one
//! board (the ranked index, its delta history, and the extras of members that have any) and the
//! profile book (every named player of the game, each profile shared with the board through an
//! `Arc`). It builds the board twice from the same events, once with no profile at all and once
//! with a 10-character name on every player, and prints the bytes per member of each and their
//! difference. A naming through the API is a logged action per player; here the book is filled
//! directly, as replaying those actions does.
//!
//! The rename is timed on the named board: `Board::set_profile` (one version, one delta) and the
//! snapshot publication that follows it (one rank chunk and one lookup chunk re-cut), each the
//! median of many. The whole `PUT` through the service is measured by `loadgen names`.

use std::time::{Duration, Instant};

use standings_core::{Board, BoardRules, PlayerId, Publisher, ScoreEvent, ScoreMode};

#[path = "../../core/benches/common/counting.rs"]
mod counting;
use counting::held;
use standings_origin::domain::profile_book::{ProfileBook, profile_of};

fn player(i: u64) -> String {
    format!("player-{i:08}")
}

/// Member `i`'s event: values spread so the board is a real order, not ties.
fn event(i: u64) -> ScoreEvent {
    let value = (i.wrapping_mul(2_654_435_761) % 10_000_000) as i64;
    ScoreEvent::new(&format!("e{i}"), &player(i), value, 1_790_000_000_000 + i as i64).expect("valid ids")
}

/// A board of `n` members, each with the profile the book holds (none when it holds none),
/// packed as the origin packs a board at rest.
fn board(n: u64, book: &ProfileBook) -> Board {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    for i in 0..n {
        let profile = book.shown("g", &player(i));
        board.apply_as(&event(i), profile.as_ref()).expect("in range");
    }
    if let Some(packed) = board.repack() {
        board.install_repacked(packed);
    }
    board
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    println!("names: {n} members, 10-character names, a 16-byte player id each");

    let empty_book = ProfileBook::default();
    let before = held();
    let plain = board(n, &empty_book);
    let plain_bytes = held() - before;
    let plain_extras = plain.players_with_extras();
    drop(plain);

    let before = held();
    let book = ProfileBook::default();
    for i in 0..n {
        let name = format!("Name{:06}", i % 1_000_000);
        book.set_profile("g", &player(i), profile_of(Some(&name), None, false));
    }
    let book_bytes = held() - before;
    let named = board(n, &book);
    let named_bytes = held() - before;

    let per = |bytes: usize| bytes as f64 / n as f64;
    println!("| | bytes | bytes/member |\n| --- | --- | --- |");
    println!(
        "| board, no names ({plain_extras} members with extras) | {plain_bytes} | {:.1} |",
        per(plain_bytes)
    );
    println!(
        "| board + profile book, a name on every member | {named_bytes} | {:.1} |",
        per(named_bytes)
    );
    println!(
        "| of which the profile book | {book_bytes} | {:.1} |",
        per(book_bytes)
    );
    println!(
        "| a name's cost (named - plain) | {} | {:.1} (the name itself: 10) |",
        named_bytes - plain_bytes,
        per(named_bytes - plain_bytes)
    );

    // A rename on the named board: the core's change, then the snapshot's incremental re-cut.
    let mut named = named;
    let mut publisher = Publisher::new(Default::default());
    publisher.publish(&named);
    let mut changes = Vec::new();
    let mut publications = Vec::new();
    for k in 0..2_000u64 {
        let i = k.wrapping_mul(7_919) % n;
        let id = PlayerId::new(&player(i)).expect("valid id");
        let profile = profile_of(Some(&format!("Renamed{k:03}")), Some("DE"), false);
        let started = Instant::now();
        named.set_profile(&id, profile);
        changes.push(started.elapsed());
        if k % 10 == 0 {
            let started = Instant::now();
            let publication = publisher.publish(&named);
            publications.push(started.elapsed());
            assert!(!publication.new_parts.is_empty(), "a rename re-cuts parts");
        }
    }
    println!(
        "\nrename on a board of {n}: Board::set_profile median {:.2?} ({} samples); the next publication \
         (up to 10 renames since the last) median {:.2?} ({} samples)",
        median(changes),
        2_000,
        median(publications),
        200
    );
}
