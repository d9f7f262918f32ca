//! `Board::read_checkpoint` on untrusted bytes: never a panic. A board it accepts answers its
//! queries, and writing it and reading it back gives the same board (digest, version, count).
#![no_main]

use libfuzzer_sys::fuzz_target;
use standings_core::Board;

fuzz_target!(|data: &[u8]| {
    let Ok(board) = Board::read_checkpoint(data) else {
        return;
    };
    let page = board.top(10, None).expect("a first page always answers");
    if let Some(entry) = page.entries.first() {
        let player = entry.player.to_string();
        assert!(board.player_rank(&player).is_some(), "a ranked player has a rank");
        let _ = board.nearby(&player, 2);
    }
    if let Some(cursor) = &page.next_cursor {
        let _ = board.top(10, Some(cursor));
    }
    let mut again = Vec::new();
    board.write_checkpoint(&mut again);
    let back = Board::read_checkpoint(&again).expect("a written checkpoint reads back");
    assert_eq!(back.digest(), board.digest());
    assert_eq!(back.version(), board.version());
    assert_eq!(back.total_players(), board.total_players());
});
