//! The Standings ranking core.
//!
//! Board rules, the total tie-break order, the ranked index, deltas and the versioned snapshot
//! format, with no IO, no clock and no randomness: times and ids come in as arguments, and the
//! same events in any order give the same board, byte for byte. It builds without `std` (for
//! `wasm32-unknown-unknown`) and is shared by the origin service, the edge worker and the
//! browser package.
//!
//! The entry point is [`Board`]: [`Board::apply`] a [`ScoreEvent`], get an [`Applied`] back
//! (nothing, or a [`Delta`] with the new `board_version`), and query it with [`Board::top`],
//! [`Board::player_rank`], [`Board::nearby`] and [`Board::rank_among`]. [`Snapshot`] ships a
//! board; [`ClientView`] follows one by deltas, and [`ViewState`] follows one live [`View`]
//! of it (a top, a window around a player, one player) by [`ViewDelta`]s.
//!
//! With the `json` feature, [`json`] writes the read views' JSON (entries, period fields, the
//! rank and nearby answers) byte for byte as the origin's API prints them.
//!
//! Event id uniqueness is the caller's duty: the core cannot tell a retried event from a new
//! one, so the origin enforces uniqueness durably before an event reaches a board.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod board;
mod checkpoint;
mod client;
mod codec;
#[cfg(feature = "contract")]
pub mod contract;
mod cursor;
mod digest;
mod error;
mod event;
mod index;
mod interner;
pub mod interval;
mod join;
#[cfg(feature = "json")]
pub mod json;
#[cfg(feature = "jwt")]
pub mod jwt;
mod live;
#[cfg(feature = "json")]
pub mod live_message;
pub mod partition;
pub mod profile;
mod replay;
mod rules;
mod segments;
mod shards;
pub mod snapshot;
mod tree;

pub use board::{
    Applied, Band, Board, Crossing, DEFAULT_HISTORY_LIMIT, Delta, FriendEntry, FriendsBoard, Overtake, Page,
    PlayerInterval, PlayerRank, Repacked, SegmentFriends, SegmentPage, SegmentRank,
};
pub use checkpoint::{CHECKPOINT_FORMAT_VERSION, reads_checkpoint_format};
pub use client::ClientView;
pub use cursor::{Cursor, CursorBinding};
pub use digest::{BoardDigest, ChunkHash, Fnv1a, fnv1a};
pub use error::{ApplyError, CapacityError, DecodeError, DeltaError, IdError, QueryError};
pub use event::{EventId, MAX_ID_BYTES, PlayerId, ScoreEvent, check_id};
pub use index::{MemoryUsage, RankedEntry, RankedIndex, ValueRanks};
pub use interner::MemberId;
#[cfg(feature = "std")]
pub use join::Threads;
pub use join::{Join, OneThread};
pub use live::{
    ALL_TIME_KEY, First, MAX_AROUND_RADIUS, MAX_TOP_LIMIT, Position, PositionError, Segment, View, ViewDelta,
    ViewDeltaError, ViewEntry, ViewError, ViewState, first_message,
};
pub use profile::{Audience, EntryInfo, Extras, Profile};
pub use replay::Replay;
pub use rules::{BoardId, BoardRules, ScoreMode, Standing};
pub use segments::{
    COUNTRY, EventDimension, MAX_DIMENSION_TEXT, MAX_DIMENSION_VALUES, MAX_EVENT_DIMENSIONS, SegmentEntry,
    SegmentKey, SegmentSpec,
};
pub use shards::{MAX_SHARDS, ShardInfo};
pub use snapshot::{
    ChunkingOptions, LookupChunk, LookupChunkRef, MAX_PATCH_LEVELS, Manifest, ManifestPatch, Publication,
    Publisher, RankChunk, RankChunkRef, Root, SNAPSHOT_FORMAT_VERSION, Snapshot, SnapshotEntry,
};
