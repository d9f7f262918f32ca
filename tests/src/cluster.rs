//! What the harnesses know of a clustered database: which partition a game lands in and which
//! schema holds it. The origin computes both (`cluster::lease::partition_of`,
//! `store::cluster::schema_of`); this crate cannot depend on the origin (the origin's tests
//! depend on it), so the origin's cluster tests check these against its own.

/// The partition of a game: FNV-1a of its id's bytes modulo the partition count.
pub fn partition_of(game: &str, partitions: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in game.as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % u64::from(partitions.max(1))) as u32
}

/// The schema that holds partition `p`.
pub fn schema_of(p: u32) -> String {
    format!("standings_p{p:04}")
}
