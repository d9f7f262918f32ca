//! `RankChunk::decode` on untrusted bytes, given the hash of those very bytes (so the fuzzer
//! reaches the decoding behind the hash check): never a panic, and an accepted chunk reads back
//! the same from its own encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use standings_core::{BoardDigest, RankChunk};

fuzz_target!(|data: &[u8]| {
    if let Ok(chunk) = RankChunk::decode(data, &BoardDigest::of(data)) {
        let bytes = chunk.encode();
        let again = RankChunk::decode(&bytes, &BoardDigest::of(&bytes)).expect("an encoded chunk decodes");
        assert_eq!(again, chunk);
    }
});
