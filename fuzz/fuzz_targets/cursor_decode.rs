//! Cursor decoding on untrusted input, as bytes (`Cursor::decode`) and as the token a client
//! sends back (URL-safe base64 without padding, then `Cursor::decode`): never a panic, and an
//! accepted cursor reads back the same from its own encoding. Cursors are checked against one
//! board instance, the one the seeds were made for (`core/examples/fuzz_seeds.rs`), so the
//! fuzzer starts past the binding; a cursor bound elsewhere must be refused.
#![no_main]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

use standings_core::{BoardId, Cursor, CursorBinding, DecodeError};

static BINDING: LazyLock<CursorBinding> = LazyLock::new(|| {
    CursorBinding::of(
        &BoardId::new("arena-clash", "solo", "S7", "global").unwrap(),
        "all_time",
    )
});

static ELSEWHERE: LazyLock<CursorBinding> = LazyLock::new(|| {
    CursorBinding::of(
        &BoardId::new("arena-clash", "solo", "S7", "global").unwrap(),
        "2026-10-13",
    )
});

fn check(bytes: &[u8]) {
    if let Ok(cursor) = Cursor::decode(bytes, *BINDING) {
        let again = Cursor::decode(&cursor.encode(*BINDING), *BINDING).expect("an encoded cursor decodes");
        assert_eq!(again, cursor);
        assert!(matches!(
            Cursor::decode(bytes, *ELSEWHERE),
            Err(DecodeError::OtherBoard)
        ));
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Ok(bytes) = URL_SAFE_NO_PAD.decode(data) {
        check(&bytes);
    }
});
