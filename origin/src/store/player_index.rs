//! The player index of the sealed log, as stored: for each run of consecutive seqs, the
//! `(player key, seq)` of every event in it, sorted by key and cut into pages of a few hundred
//! entries, one row each (`player_pages`). A recompute reads one page per run.
//!
//! The index used to be SQL rows `(run, game, player_id, mode, season, seq)`, which SQLite
//! sorted (four text columns) and inserted into two B-trees for every event when a run was
//! sealed: 150 ms per run of 65,536 events inside the writer's transaction, a fifth of the
//! database's time under batch load. Here the writer sorts 64-bit keys it already holds in
//! memory and stores 12 bytes per event. Keys are hashes, so a page may name a few seqs of
//! other players; the log rows they point to are checked, so a collision costs a row read,
//! never a wrong answer.

/// Entries on a page, at least: a page ends at the first change of key after this many, so
/// all of a key's entries in one run are on one page. 512 entries are 6 KiB.
pub const PAGE_ENTRIES: usize = 512;

/// Bytes per entry: the key (8, little-endian), then the seq's offset from the run's first
/// seq (4, little-endian).
const ENTRY_BYTES: usize = 12;

/// The key of a player's events in one (game, mode, season): FNV-1a (64 bits) over each
/// field's length (4 bytes, little-endian) and bytes. Stored in pages, so it never changes.
/// O(length of the fields).
pub fn player_key(game: &str, player: &str, mode: &str, season: &str) -> i64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for field in [game, player, mode, season] {
        let length = u32::try_from(field.len()).unwrap_or(u32::MAX);
        for &byte in length.to_le_bytes().iter().chain(field.as_bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash as i64
}

/// Cuts the entries `(key, seq)` of the run starting at `run` into pages, in key order:
/// `(first key on the page, bytes)`. The first keys are distinct. O(n log n).
///
/// # Panics
/// If a seq lies before `run` or 2^32 or more after it: the writer's runs are 65,536 seqs, and
/// the first run (a log indexed by migration 5) would need four billion events.
pub fn pages(run: i64, mut entries: Vec<(i64, i64)>) -> Vec<(i64, Vec<u8>)> {
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
pub fn seqs_on_page(run: i64, page: &[u8], key: i64) -> Result<Vec<i64>, String> {
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
