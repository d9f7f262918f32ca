//! `LookupChunk::decode` on untrusted bytes, given the hash of those very bytes: never a panic;
//! an accepted chunk reads back the same from its own encoding, and `find` answers without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use standings_core::{BoardDigest, LookupChunk};

fuzz_target!(|data: &[u8]| {
    if let Ok(chunk) = LookupChunk::decode(data, &BoardDigest::of(data)) {
        let bytes = chunk.encode();
        let again = LookupChunk::decode(&bytes, &BoardDigest::of(&bytes)).expect("an encoded chunk decodes");
        assert_eq!(again, chunk);
        for entry in chunk.entries.iter().take(4) {
            let _ = chunk.find(&entry.player);
        }
        let _ = chunk.find("p-nobody");
    }
});
