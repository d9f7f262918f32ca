//! Where a game lives in a cluster of origins: its partition, and the name of the schema that
//! holds that partition. Every node, `standings cluster status` and the harnesses must agree on
//! both for the cluster's whole life, so they are written once, here.

use alloc::format;
use alloc::string::String;

use crate::digest::fnv1a;

/// The partition of `game` among `partitions` (at least 1): FNV-1a of the game id's bytes,
/// modulo the count. O(game length).
pub fn partition_of(game: &str, partitions: u32) -> u32 {
    // The remainder is below a u32, so the conversion never fails.
    u32::try_from(fnv1a(game.as_bytes()) % u64::from(partitions.max(1))).unwrap_or(0)
}

/// The name of the PostgreSQL schema that holds partition `partition`: `standings_p0007`. O(1).
pub fn schema_of(partition: u32) -> String {
    format!("standings_p{partition:04}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned placements: a change to the hash or the modulo would move games between
    /// partitions of a cluster already running, so it must fail here first.
    #[test]
    fn games_are_placed_as_pinned() {
        for (game, of_64, of_8, of_4) in [
            ("arena-clash", 32, 0, 0),
            ("g-0", 51, 3, 3),
            ("g-1", 0, 0, 0),
            ("game-1999", 2, 2, 2),
            ("", 37, 5, 1),
        ] {
            assert_eq!(
                (
                    partition_of(game, 64),
                    partition_of(game, 8),
                    partition_of(game, 4)
                ),
                (of_64, of_8, of_4),
                "{game}"
            );
        }
        assert_eq!(partition_of("anything", 1), 0);
        assert_eq!(partition_of("anything", 0), 0);
        assert_eq!(schema_of(7), "standings_p0007");
        assert_eq!(schema_of(4095), "standings_p4095");
    }
}
