//! Cursor decoding on untrusted input, as bytes (`Cursor::decode`) and as the token a client
//! sends back (URL-safe base64 without padding, then `Cursor::decode`): never a panic, and an
//! accepted cursor reads back the same from its own encoding.
#![no_main]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use standings_core::Cursor;

fn check(bytes: &[u8]) {
    if let Ok(cursor) = Cursor::decode(bytes) {
        let again = Cursor::decode(&cursor.encode()).expect("an encoded cursor decodes");
        assert_eq!(again, cursor);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Ok(bytes) = URL_SAFE_NO_PAD.decode(data) {
        check(&bytes);
    }
});
