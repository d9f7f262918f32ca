//! The isolate's counters, answered by `GET /edge/stats` for tests and operators. They count
//! from the isolate's start; a data centre runs many isolates, each with its own.

use serde::Serialize;

/// Requests by what they asked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Requests {
    /// Top pages.
    pub top: u64,
    /// Ranks.
    pub rank: u64,
    /// Nearby windows.
    pub nearby: u64,
    /// Friends-of boards.
    pub friends_of: u64,
    /// Rank-players boards.
    pub rank_players: u64,
    /// Lists of a game's boards.
    pub boards: u64,
    /// Requests the edge does not serve (writes, other paths, subscriptions it cannot read),
    /// forwarded.
    pub forwarded: u64,
    /// WebSocket subscriptions handed to a live object.
    pub live: u64,
    /// `GET /edge/stats`.
    pub stats: u64,
}

/// Hits and misses of the caches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheCounts {
    /// Top pages made before: found in the isolate's memory or the Cache API.
    pub top_hits: u64,
    /// Of `top_hits`, those found in the isolate's memory.
    pub top_memory_hits: u64,
    /// Top pages computed.
    pub top_misses: u64,
    /// Parts (manifests, chunks) found decoded in the isolate.
    pub decoded_hits: u64,
    /// Parts found in the Cache API.
    pub part_hits: u64,
    /// Parts fetched from the origin.
    pub part_misses: u64,
}

/// Requests the edge made to the origin, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OriginFetches {
    /// Heads.
    pub head: u64,
    /// Manifests.
    pub manifest: u64,
    /// Rank and lookup chunks, one at a time.
    pub chunk: u64,
    /// Bundles of chunks (`/v1/snapshots/chunks?hashes=`), for reads needing many.
    pub bundle: u64,
    /// Token introspections.
    pub introspect: u64,
    /// Friend lists.
    pub friends: u64,
    /// Lists of a game's boards.
    pub boards: u64,
    /// Requests forwarded (the edge's own fallbacks included).
    pub forwarded: u64,
    /// Of all the above, those that found the origin unreachable.
    pub unreachable: u64,
}

/// Reads the edge could serve but handed to the origin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Fallbacks {
    /// A top page's cursor was made at another version than the snapshot's.
    pub stale_cursor: u64,
    /// The query needed more parts than `MAX_SUBREQUESTS` allows.
    pub too_many_parts: u64,
    /// A static token was refused for another game (the words are the origin's).
    pub auth: u64,
    /// A rank-players body the edge does not read (the origin's words for it).
    pub body: u64,
    /// The origin refused the instance's head (`SNAPSHOT_INSTANCES_FULL`: it follows as many
    /// instances as its caps allow), so its read API answers instead.
    pub instances_full: u64,
    /// A service, moderator or admin token, which sees anonymous players' names that snapshots
    /// do not carry (`docs/players.md`).
    pub trusted: u64,
    /// A read handed back a write's position (`min_position`): only the origin knows whether
    /// its boards reached it, and it waits for them (`docs/api.md`).
    pub min_position: u64,
    /// A read within a segment (`segment=country:DE`) of a version published as a patch,
    /// which does not restate the chunks' segment members (`docs/segments.md`).
    pub segment: u64,
}

/// Every counter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Requests by kind.
    pub requests: Requests,
    /// Cache hits and misses.
    pub cache: CacheCounts,
    /// Origin fetches by kind.
    pub origin_fetches: OriginFetches,
    /// Reads forwarded to the origin.
    pub fallbacks: Fallbacks,
    /// Read answers marked stale (the origin unreachable).
    pub stale_answers: u64,
    /// Heads held now, one per board instance read (and one per board and period for the
    /// current instance).
    pub held_heads: usize,
    /// Period instance ranges learned from heads and held now.
    pub known_instances: usize,
    /// Bytes of decoded parts held now.
    pub decoded_cache_bytes: usize,
    /// Decoded parts held now.
    pub decoded_cache_parts: usize,
    /// The decoded-cache budget.
    pub decoded_cache_budget: usize,
}
