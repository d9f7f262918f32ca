//! Strategies shared by the core's property tests.

use proptest::prelude::*;
use standings_core::interval::RankSketch;
use standings_core::snapshot::read::Parts;
use standings_core::{Board, LookupChunk, PlayerId, Profile, RankChunk, ScoreEvent, ScoreMode, Snapshot};

/// Any of the four score modes.
// Not every test binary that includes this module draws modes.
#[allow(dead_code)]
pub(crate) fn mode_strategy() -> impl Strategy<Value = ScoreMode> {
    prop_oneof![
        Just(ScoreMode::Highest),
        Just(ScoreMode::Cumulative),
        Just(ScoreMode::Fastest),
        Just(ScoreMode::Latest),
    ]
}

/// One change to a board between publications.
#[derive(Clone, Debug)]
// Not every test binary that includes this module publishes.
#[allow(dead_code)]
pub(crate) enum Change {
    /// An event for player `player` (new players enter this way).
    Apply { player: u16, value: i64, at: i64 },
    /// The player's aggregate recomputed from no events: they leave the board.
    Remove { player: u16 },
    /// The player's display name set to `name {name}`, or cleared for 0.
    Rename { player: u16, name: u8 },
}

#[allow(dead_code)]
impl Change {
    /// The same change with its player taken modulo `players`.
    pub(crate) fn within(&self, players: u16) -> Change {
        match *self {
            Change::Apply { player, value, at } => Change::Apply {
                player: player % players,
                value,
                at,
            },
            Change::Remove { player } => Change::Remove {
                player: player % players,
            },
            Change::Rename { player, name } => Change::Rename {
                player: player % players,
                name,
            },
        }
    }
}

/// The id of player `p`.
#[allow(dead_code)]
pub(crate) fn player(p: u16) -> String {
    format!("player-{p}")
}

/// Applies `change` to `board`; `serial` numbers the events.
#[allow(dead_code)]
pub(crate) fn apply(board: &mut Board, change: &Change, serial: &mut u64) {
    *serial += 1;
    match change {
        Change::Apply { player: p, value, at } => {
            let event = ScoreEvent::new(&format!("e{serial}"), &player(*p), *value, *at).unwrap();
            board.apply(&event).unwrap();
        }
        Change::Remove { player: p } => {
            board
                .recompute_player(&PlayerId::new(&player(*p)).unwrap(), [])
                .unwrap();
        }
        Change::Rename { player: p, name } => {
            let profile = (*name > 0).then(|| {
                std::sync::Arc::new(Profile {
                    display_name: Some(format!("name {name}").into()),
                    country: None,
                    anonymous: false,
                })
            });
            board.set_profile(&PlayerId::new(&player(*p)).unwrap(), profile);
        }
    }
}

/// One step of a random history: an event, or the invalidation of an earlier one (`pick` is
/// taken modulo the events so far).
#[derive(Clone, Debug)]
// Not every test binary that includes this module replays histories.
#[allow(dead_code)]
pub(crate) enum Op {
    Apply { player: u8, value: i64, at: i64 },
    Invalidate { pick: usize },
}

/// Steps over `players` players, values in `values` and times in `times`, four events to one
/// invalidation. Narrow ranges make ties, moves, leaves and returns common.
#[allow(dead_code)]
pub(crate) fn op_strategy(
    players: u8,
    values: std::ops::Range<i64>,
    times: std::ops::Range<i64>,
) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..players, values, times).prop_map(|(player, value, at)| Op::Apply { player, value, at }),
        1 => any::<usize>().prop_map(|pick| Op::Invalidate { pick }),
    ]
}

/// Every part of a snapshot, decoded (for the reader's tests).
// Not every test binary that includes this module reads snapshots.
#[allow(dead_code)]
pub(crate) struct AllParts {
    pub(crate) rank: Vec<RankChunk>,
    pub(crate) lookup: Vec<LookupChunk>,
    pub(crate) sketch: RankSketch,
}

#[allow(dead_code)]
impl AllParts {
    pub(crate) fn of(snapshot: &Snapshot) -> AllParts {
        let manifest = &snapshot.manifest;
        AllParts {
            rank: snapshot
                .rank_chunks
                .iter()
                .zip(&manifest.rank_chunks)
                .map(|(bytes, r)| RankChunk::decode(bytes, &r.hash).unwrap())
                .collect(),
            lookup: snapshot
                .lookup_chunks
                .iter()
                .zip(&manifest.lookup_chunks)
                .map(|(bytes, r)| LookupChunk::decode(bytes, &r.hash).unwrap())
                .collect(),
            sketch: RankSketch::decode(&snapshot.sketch, &manifest.sketch).unwrap(),
        }
    }
}

impl Parts for AllParts {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(i)
    }
    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(partition)
    }
    fn sketch(&self) -> Option<&RankSketch> {
        Some(&self.sketch)
    }
}

/// A deterministic stream of numbers (SplitMix64), so that a failure replays.
#[allow(dead_code)]
pub(crate) struct Mix(pub(crate) u64);

#[allow(dead_code)]
impl Mix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
