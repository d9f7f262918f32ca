//! `Manifest::decode` on untrusted bytes: never a panic; a manifest it accepts reads back the
//! same from its own encoding, and its look-ups (partition, rank chunk, first rank) do not
//! panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use standings_core::{Manifest, Standing};

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = Manifest::decode(data) else {
        return;
    };
    let again = Manifest::decode(&manifest.encode()).expect("an encoded manifest decodes");
    assert_eq!(again, manifest);
    let _ = manifest.partition_of("p-ava");
    if let Some(first) = manifest.rank_chunks.first() {
        let standing = Standing {
            value: first.last.value,
            achieved_at: first.last.achieved_at,
        };
        let _ = manifest.rank_chunk_of(&standing, &first.last.player);
    }
    let _ = manifest.first_rank_of_chunk(manifest.rank_chunks.len());
});
