//! The player index's format, pure: the key of a player's events in one (game, mode, season),
//! and the pages a sealed run's `(key, seq)` entries are cut into. The store keeps the pages
//! (`store/player_index.rs` says why the index is built this way); the writer computes the keys
//! of the unsealed tail.

/// Entries on a page, at least: a page ends at the first change of key after this many, so
/// all of a key's entries in one run are on one page. 512 entries are 6 KiB.
pub(crate) const PAGE_ENTRIES: usize = 512;

/// Bytes per entry: the key (8, little-endian), then the seq's offset from the run's first
/// seq (4, little-endian).
const ENTRY_BYTES: usize = 12;

/// The key of a player's events in one (game, mode, season): FNV-1a (64 bits) over each
/// field's length (4 bytes, little-endian) and bytes. Stored in pages, so it never changes.
/// O(length of the fields).
pub(crate) fn player_key(game: &str, player: &str, mode: &str, season: &str) -> i64 {
    let mut hash = standings_core::Fnv1a::new();
    for field in [game, player, mode, season] {
        let length = u32::try_from(field.len()).unwrap_or(u32::MAX);
        hash.write(&length.to_le_bytes());
        hash.write(field.as_bytes());
    }
    hash.finish() as i64
}

/// Cuts the entries `(key, seq)` of the run starting at `run` into pages, in key order:
/// `(first key on the page, bytes)`. The first keys are distinct. O(n log n).
///
/// # Panics
/// If a seq lies before `run` or 2^32 or more after it: the writer's runs are 65,536 seqs, and
/// the first run (a log indexed by migration 5) would need four billion events.
pub(crate) fn pages(run: i64, mut entries: Vec<(i64, i64)>) -> Vec<(i64, Vec<u8>)> {
    entries.sort_unstable();
    let mut pages: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut last_key = None;
    for (key, seq) in entries {
        let offset = u32::try_from(seq - run).expect("a run's seqs lie within 2^32 of its start");
        let full = pages
            .last()
            .is_none_or(|(_, bytes)| bytes.len() >= PAGE_ENTRIES * ENTRY_BYTES);
        if full && last_key != Some(key) {
            pages.push((key, Vec::with_capacity(PAGE_ENTRIES * ENTRY_BYTES)));
        }
        let bytes = &mut pages.last_mut().expect("a page was pushed").1;
        bytes.extend_from_slice(&key.to_le_bytes());
        bytes.extend_from_slice(&offset.to_le_bytes());
        last_key = Some(key);
    }
    pages
}

/// The seqs of `key` on a page of the run starting at `run`, in order. O(log n) to find them.
pub(crate) fn seqs_on_page(run: i64, page: &[u8], key: i64) -> Result<Vec<i64>, String> {
    if !page.len().is_multiple_of(ENTRY_BYTES) {
        return Err(format!(
            "a page of run {run} holds {} bytes, not a multiple of {ENTRY_BYTES}",
            page.len()
        ));
    }
    let entry = |i: usize| {
        let bytes = &page[i * ENTRY_BYTES..(i + 1) * ENTRY_BYTES];
        let key = i64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let offset = u32::from_le_bytes(bytes[8..].try_into().expect("4 bytes"));
        (key, run + i64::from(offset))
    };
    let count = page.len() / ENTRY_BYTES;
    // `partition_point` over the entries' indices: the first entry whose key is not below.
    let (mut low, mut high) = (0, count);
    while low < high {
        let middle = low + (high - low) / 2;
        if entry(middle).0 < key {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok((low..count)
        .map(entry)
        .take_while(|&(k, _)| k == key)
        .map(|(_, seq)| seq)
        .collect())
}

/// Consecutive seqs per sealed run of the player index (this module). A recompute scans
/// at most this many log rows past the last run and reads one page per run: 153 runs at 10M
/// events.
pub const RUN_SEQS: i64 = 65_536;

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are FNV-1a as documented: pages already stored must keep meaning the same players.
    #[test]
    fn keys_never_change() {
        // Computed apart from this code (Python, the same definition).
        assert_eq!(
            player_key("arena-clash", "p-ava", "solo", "S7"),
            0x9fca_4303_597f_5c98_u64 as i64
        );
        // The lengths keep fields apart: moving a byte from one field to the next is another key.
        assert_ne!(player_key("ab", "c", "m", "s"), player_key("a", "bc", "m", "s"));
    }

    /// Every key's seqs come back from the one page whose first key is the greatest not above
    /// it, whatever the page sizes: with a key holding more entries than a page, and with keys
    /// that have none.
    #[test]
    fn a_key_is_found_on_the_last_page_starting_at_or_before_it() {
        let run = 1_000;
        let mut entries = Vec::new();
        for seq in run..run + 5_000 {
            // Keys spread over the i64 range, negative ones included, one key with 700 seqs.
            let key = if seq % 7 == 0 {
                42
            } else {
                (seq % 1_301_i64).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64)
            };
            entries.push((key, seq));
        }
        let stored = pages(run, entries.clone());
        assert!(stored.len() > 5, "{} pages", stored.len());
        assert!(stored.windows(2).all(|w| w[0].0 < w[1].0), "first keys ascend");
        let find = |key: i64| {
            let page = stored.iter().rev().find(|(first, _)| *first <= key);
            page.map_or(Vec::new(), |(_, bytes)| seqs_on_page(run, bytes, key).unwrap())
        };
        let mut keys: Vec<i64> = entries.iter().map(|e| e.0).collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let mut expected: Vec<i64> = entries.iter().filter(|e| e.0 == key).map(|e| e.1).collect();
            expected.sort_unstable();
            assert_eq!(find(key), expected, "key {key}");
            assert_eq!(
                find(key.wrapping_add(1)).len(),
                entries.iter().filter(|e| e.0 == key + 1).count()
            );
        }
        assert_eq!(find(i64::MIN), Vec::<i64>::new());
        assert!(seqs_on_page(run, &[0; 13], 1).is_err(), "a torn page is an error");
    }
}
