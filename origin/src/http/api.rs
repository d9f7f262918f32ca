//! The API's description: one table of every operation (`OPERATIONS`), from which the OpenAPI
//! document is generated and the cluster routes. The document cannot drift from the routes: a
//! test checks that every documented operation is routed, the access matrix
//! (`tests/access.rs`) calls each one as every kind of caller, on its game and on another, and
//! a test below checks that every code an error can be answered with is documented.

use serde_json::{Value, json};

use crate::domain::profiles::rule;
use crate::http::error::Code;

/// One operation of the API, as documented. The router and this table are checked against each
/// other by the tests, so the document cannot drift from the routes.
pub struct Operation {
    /// The HTTP method, lower case.
    pub method: &'static str,
    /// The path template, OpenAPI style.
    pub path: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Who may call it: `none`; `read` (any token of the game, or anyone with `public_reads`);
    /// `read-own` (a player token for its own player, a service, moderator, admin or edge token
    /// of the game for anyone); `service`, `moderator` or `admin` (that role or a higher one);
    /// `edge` (an edge or admin token, answered for the caller's games); `snapshot` (an edge
    /// or admin token of the game, or anyone with `public_reads`).
    pub security: &'static str,
    /// Where a cluster finds the partition that answers it (`cluster/route.rs` routes by this).
    pub partition: Partition,
    /// The request body schema name, if any.
    pub body: Option<&'static str>,
    /// The success status and schema name.
    pub ok: (u16, &'static str),
    /// The error codes it can answer, with their statuses.
    pub errors: &'static [Code],
}

const AUTH_ERRORS: [Code; 3] = [Code::UNAUTHENTICATED, Code::FORBIDDEN, Code::RATE_LIMITED];

/// What a read of a game may also answer: it may hand back a write's position (`min_position`,
/// `http/position.rs`); one that is not a position of the game is refused, and one the boards
/// do not reach in time too.
const POSITION_ERRORS: [Code; 2] = [Code::INVALID_REQUEST, Code::POSITION_NOT_REACHED];

impl Operation {
    /// Whether it is a read of one game, which takes `min_position`. O(path length).
    pub fn reads_a_game(&self) -> bool {
        self.method == "get" && self.path.contains("{game}")
    }

    /// The codes it answers: its own, the auth codes when it needs a token, and the position's
    /// when it reads a game.
    pub fn all_errors(&self) -> impl Iterator<Item = &Code> {
        let auth: &[Code] = if self.security == "none" {
            &[]
        } else {
            &AUTH_ERRORS
        };
        let position: &[Code] = if self.reads_a_game() {
            &POSITION_ERRORS
        } else {
            &[]
        };
        self.errors.iter().chain(auth).chain(position)
    }
}

/// The codes any operation may be answered with, listed once in the `Problem` schema rather
/// than on each operation: no such route or method, a bug, a service starting or stopping, and
/// in a cluster a partition between owners.
pub const ANY_OPERATION: &[Code] = &[
    Code::NOT_FOUND,
    Code::METHOD_NOT_ALLOWED,
    Code::INTERNAL,
    Code::UNAVAILABLE,
    Code::PARTITION_MOVING,
];

/// Every code the API answers with: the shared ones and the profile's rules.
pub fn every_code() -> Vec<Code> {
    let mut codes: Vec<Code> = standings_core::contract::code::ALL
        .iter()
        .chain(rule::ALL)
        .copied()
        .collect();
    codes.sort_unstable_by_key(|code| code.name);
    codes
}

/// Where the partition of a request comes from, so that a cluster sends it to the node that
/// owns it: each operation of the table says it, and the cluster routes from the table alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// The `{game}` segment of the path.
    PathGame,
    /// The `{game}` segment of the path, for a read of the boards that a node's warm copy of
    /// the partition answers as its owner does (`cluster/standby.rs`).
    PathGameRead,
    /// The query's `game` (any engine answers without one, or with it repeated: a refusal).
    QueryGame,
    /// The body's top-level `game`, else the query's.
    BodyGame,
    /// Each event's `game`: a batch is split by partition.
    Batch,
    /// A content-addressed snapshot part: whichever partition holds it.
    Part,
    /// The node's own: health, readiness, metrics, the cluster's table.
    Node,
    /// Any engine answers alike.
    Any,
}

/// The operations only a cluster node answers (`docs/cluster.md`); a single origin answers them
/// 404. Described in the same document, apart from [`OPERATIONS`], which the single node's
/// router is checked against.
pub const CLUSTER_OPERATIONS: &[Operation] = &[Operation {
    method: "get",
    path: "/v1/cluster",
    summary: "Cluster nodes only: the nodes, and every partition's owner, epoch, lease, log end and standbys; ?game= adds where that game lives (admin).",
    security: "admin",
    partition: Partition::Node,
    body: None,
    ok: (200, "ClusterStatus"),
    errors: &[Code::INVALID_REQUEST, Code::DATABASE_UNAVAILABLE],
}];

/// Every operation of the API.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        method: "put",
        path: "/v1/boards/{game}/{mode}/{season}/{scope}",
        summary: "Define a board (admin). 201 created, 200 identical, 409 when it exists with other rules.",
        security: "admin",
        partition: Partition::PathGame,
        body: Some("BoardDefinition"),
        ok: (201, "Board"),
        errors: &[
            Code::INVALID_JSON,
            Code::INVALID_BOARD,
            Code::BOARD_RULES_CONFLICT,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "post",
        path: "/v1/score-events",
        summary: "Submit one verified score event; 202 ACCEPTED (or LATE, queued for a closed period or a season that left active) only once durably committed, 200 DUPLICATE for a retry.",
        security: "service",
        partition: Partition::BodyGame,
        body: Some("ScoreEvent"),
        ok: (202, "EventResult"),
        errors: &[
            Code::INVALID_JSON,
            Code::UNKNOWN_BOARD,
            Code::EVENT_ID_CONFLICT,
            Code::EVENT_INVALIDATED,
            Code::PLAYER_DISQUALIFIED,
            Code::SEASON_NOT_ACTIVE,
            Code::PAYLOAD_TOO_LARGE,
            Code::INVALID_EVENT,
            Code::VALUE_OUT_OF_RANGE,
            rule::METADATA_NOT_ALLOWED,
            rule::METADATA_TOO_LARGE,
            rule::METADATA_NOT_OBJECT,
            Code::BOARD_BROKEN,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "post",
        path: "/v1/score-events/batch",
        summary: "Submit up to 1,000 events; per-event results in order.",
        security: "service",
        partition: Partition::Batch,
        body: Some("EventBatch"),
        ok: (200, "BatchResults"),
        errors: &[
            Code::INVALID_JSON,
            Code::PAYLOAD_TOO_LARGE,
            Code::INVALID_EVENT,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "put",
        path: "/v1/games/{game}/players/{player_id}/friends",
        summary: "Replace a player's friend list in a game (up to 1,000); only that game's friends-of reads it.",
        security: "service",
        partition: Partition::PathGame,
        body: Some("FriendList"),
        ok: (200, "FriendList"),
        errors: &[
            Code::INVALID_JSON,
            Code::INVALID_REQUEST,
            Code::PAYLOAD_TOO_LARGE,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/top",
        summary: "A page of the top (limit 1..=1000, opaque cursor), all from one board_version. Every read takes ?period=all_time|daily|weekly|monthly and ?at=RFC3339 and answers period_key, period_start, period_end.",
        security: "read",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "TopPage"),
        errors: &[
            Code::INVALID_CURSOR,
            Code::INVALID_REQUEST,
            Code::UNKNOWN_BOARD,
            Code::STALE_CURSOR,
            Code::BOARD_BROKEN,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/players/{player_id}/rank",
        summary: "A player's rank, competition and dense rank, and percentile. With approximate=interval, a rank interval that always holds the exact rank, at most 0.01 % of the board wide (docs/split-boards.md); the edge answers it without a rank chunk.",
        security: "read",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "PlayerRank"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::PLAYER_NOT_RANKED,
            Code::UNKNOWN_BOARD,
            Code::BOARD_BROKEN,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/players/{player_id}/nearby",
        summary: "The window of ranks around a player (radius 0..=100, default 5).",
        security: "read",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "Entries"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::PLAYER_NOT_RANKED,
            Code::UNKNOWN_BOARD,
            Code::BOARD_BROKEN,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/friends-of/{player_id}",
        summary: "A player's friends in this game ranked among themselves (include_self=true adds the player). A player token may ask only for itself (403 FORBIDDEN otherwise); a service, moderator, admin or edge token of the game for anyone; a token is needed even with public_reads.",
        security: "read-own",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "FriendsBoard"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::UNKNOWN_BOARD,
            Code::BOARD_BROKEN,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "post",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/rank-players",
        summary: "The given players ranked among themselves; players with no score are listed as unranked.",
        security: "read",
        partition: Partition::PathGameRead,
        body: Some("PlayerIds"),
        ok: (200, "FriendsBoard"),
        errors: &[
            Code::INVALID_JSON,
            Code::UNKNOWN_BOARD,
            Code::PAYLOAD_TOO_LARGE,
            Code::BOARD_BROKEN,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe",
        summary: "Follow a view of the board live (docs/live.md): Server-Sent Events by default, a WebSocket when the request asks to upgrade (101), the same JSON messages on both: snapshot, delta, heartbeat, resync, closed, going_away. ?since_version=N (or Last-Event-ID) catches up in one delta when the board still holds N. A player JWT may come as ?access_token= for clients that cannot set headers; a static token may not. Refusals come before the stream starts.",
        security: "read",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "EventStream"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::UNKNOWN_BOARD,
            Code::TOO_MANY_SUBSCRIPTIONS,
            Code::SUBSCRIBERS_FULL,
            Code::LIVE_BUSY,
            Code::UNAVAILABLE,
            Code::BOARD_BROKEN,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/{scope}/digest",
        summary: "The board digest (SHA-256 over the entries in rank order) with its board_version; O(players) the first time at a version, then kept.",
        security: "read",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "Digest"),
        errors: &[Code::UNKNOWN_BOARD, Code::BOARD_BROKEN],
    },
    Operation {
        method: "get",
        path: "/v1/games/{game}/boards",
        summary: "The boards of a game (scope discovery).",
        security: "read",
        partition: Partition::PathGameRead,
        body: None,
        ok: (200, "GameBoards"),
        errors: &[],
    },
    Operation {
        method: "put",
        path: "/v1/seasons/{game}/{season}/state",
        summary: "Move a season one step: open -> active -> frozen -> finalized -> published -> archived (admin). Finalizing snapshots every board's results.",
        security: "admin",
        partition: Partition::PathGame,
        body: Some("SeasonStateChange"),
        ok: (200, "SeasonState"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::INVALID_TRANSITION,
            Code::BOARD_BROKEN,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/seasons/{game}/{season}/state",
        summary: "A season's state (a season never set is active).",
        security: "read",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "SeasonState"),
        errors: &[],
    },
    Operation {
        method: "post",
        path: "/v1/moderation-actions",
        summary: "INVALIDATE / RESTORE an event, DISQUALIFY / REINSTATE a player on a board, or RENAME / CLEAR_NAME / LOCK_NAME / UNLOCK_NAME a player's display name (moderator). A retry with the same moderation_id answers the same (200).",
        security: "moderator",
        partition: Partition::BodyGame,
        body: Some("ModerationAction"),
        ok: (201, "ModerationResult"),
        errors: &[
            Code::INVALID_REQUEST,
            rule::DISPLAY_NAME_EMPTY,
            rule::DISPLAY_NAME_TOO_LONG,
            rule::DISPLAY_NAME_TOO_MANY_BYTES,
            rule::DISPLAY_NAME_FORBIDDEN_CHARACTER,
            rule::DISPLAY_NAME_SURROUNDING_SPACE,
            rule::DISPLAY_NAME_TOO_MANY_MARKS,
            rule::DISPLAY_NAME_INVISIBLE,
            Code::UNKNOWN_BOARD,
            Code::UNKNOWN_EVENT,
            Code::MODERATION_ID_CONFLICT,
            Code::SEASON_ARCHIVED,
            Code::VALUE_OUT_OF_RANGE,
            Code::BOARD_BROKEN,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/late-events",
        summary: "Events waiting for a late decision (?game=, moderator).",
        security: "moderator",
        partition: Partition::QueryGame,
        body: None,
        ok: (200, "LateEvents"),
        errors: &[Code::INVALID_REQUEST, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "post",
        path: "/v1/late-events/{event_id}/decision",
        summary: "Apply or reject a late event (moderator); applying after finalization writes a correction.",
        security: "moderator",
        partition: Partition::BodyGame,
        body: Some("LateDecision"),
        ok: (200, "ModerationResult"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::UNKNOWN_EVENT,
            Code::NOT_LATE,
            Code::VALUE_OUT_OF_RANGE,
            Code::BOARD_BROKEN,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/audit",
        summary: "Every action of a game (?game=): who, when, why and what it changed (moderator).",
        security: "moderator",
        partition: Partition::QueryGame,
        body: None,
        ok: (200, "Audit"),
        errors: &[Code::INVALID_REQUEST, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "get",
        path: "/v1/leaderboards/{game}/{mode}/{season}/results",
        summary: "A published season's result snapshot (?scope=global, ?correction=N; the latest correction by default).",
        security: "read",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "Results"),
        errors: &[
            Code::UNKNOWN_BOARD,
            Code::RESULTS_NOT_PUBLISHED,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "post",
        path: "/v1/auth/introspect",
        summary: "What a bearer token is, for an edge that holds no static secrets (edge or admin token): {\"active\": true, \"role\", \"games\" (only the caller's), \"player_id\" (null for a non-player), \"cache_seconds\"} -- 60 for a static token, a player JWT's remaining life up to 300 -- or, for an unknown, malformed, expired, forged token or one of none of the caller's games, 200 {\"active\": false, \"cache_seconds\": 10}; 401 and 403 are about the caller's own token.",
        security: "edge",
        partition: Partition::Any,
        body: Some("IntrospectionRequest"),
        ok: (200, "Introspection"),
        errors: &[Code::INVALID_JSON, Code::INVALID_REQUEST],
    },
    Operation {
        method: "get",
        path: "/v1/snapshots/{game}/{mode}/{season}/{scope}/head",
        summary: "The latest snapshot of a board instance, for the edge (docs/snapshots.md): {period fields, board_version, manifest (its hash, 64 hex digits), published_at, interval_ms}, Cache-Control: public, max-age=head_max_age_seconds. ?period= and ?at= as in reads. The first request for an instance publishes it; after that it is published again at most every interval_ms while it changes and while its head is asked for. An edge or admin token of the game (a player token is 403: a snapshot holds every player's score), or anyone with public_reads.",
        security: "snapshot",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "SnapshotHead"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::UNKNOWN_BOARD,
            Code::BOARD_BROKEN,
            Code::SNAPSHOT_INSTANCES_FULL,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/snapshots/manifests/{hash}",
        summary: "A snapshot manifest by its hash (standings_core::snapshot, format 2): the bytes, Cache-Control: public, max-age=31536000, immutable, ETag \"<hash>\" (If-None-Match answers 304). Fetchable while a head names it and retention_seconds after. An edge or admin token of a game that published it, or anyone with public_reads.",
        security: "snapshot",
        partition: Partition::Part,
        body: None,
        ok: (200, "SnapshotPart"),
        errors: &[Code::INVALID_REQUEST, Code::SNAPSHOT_PART_NOT_FOUND],
    },
    Operation {
        method: "get",
        path: "/v1/snapshots/chunks",
        summary: "Several snapshot chunks in one answer: ?hashes=H1,H2,... (at most 200, as manifests name them); the body is each chunk in that order, preceded by its length as 4 bytes big-endian. Immutable, as single chunks are; for an edge whose read needs more chunks than it may fetch one by one.",
        security: "snapshot",
        partition: Partition::Part,
        body: None,
        ok: (200, "SnapshotPart"),
        errors: &[Code::INVALID_REQUEST, Code::SNAPSHOT_PART_NOT_FOUND],
    },
    Operation {
        method: "get",
        path: "/v1/snapshots/chunks/{hash}",
        summary: "A snapshot rank or lookup chunk by its hash, as a manifest names it: bytes, immutable, ETag \"<hash>\", as manifests are.",
        security: "snapshot",
        partition: Partition::Part,
        body: None,
        ok: (200, "SnapshotPart"),
        errors: &[Code::INVALID_REQUEST, Code::SNAPSHOT_PART_NOT_FOUND],
    },
    Operation {
        method: "put",
        path: "/v1/games/{game}/webhooks/{endpoint_id}",
        summary: "Define a webhook endpoint of the game's feed (201; it delivers from the feed's next record) or change one (200; it keeps how far it is delivered). url is http:// (https is not built: put a TLS-terminating proxy in front), secret whsec_ and base64 of 24 to 64 bytes (Standard Webhooks), kinds the record kinds it takes. A new secret rotates: the old one signs beside it for 24 hours (docs/feed.md).",
        security: "admin",
        partition: Partition::PathGame,
        body: Some("WebhookDefinition"),
        ok: (201, "WebhookEndpoint"),
        errors: &[
            Code::INVALID_JSON,
            Code::INVALID_REQUEST,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/games/{game}/webhooks/{endpoint_id}",
        summary: "A webhook endpoint's state: delivered_through (the last seq the receiver acknowledged, or skipped as a kind it does not take), attempts at the next record and the last error, and state parked with parked_reason once every attempt failed.",
        security: "admin",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "WebhookEndpoint"),
        errors: &[Code::UNKNOWN_WEBHOOK, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "post",
        path: "/v1/games/{game}/webhooks/{endpoint_id}/resume",
        summary: "A parked webhook endpoint tries again from the record it stopped at.",
        security: "admin",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "WebhookEndpoint"),
        errors: &[Code::UNKNOWN_WEBHOOK, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "delete",
        path: "/v1/games/{game}/webhooks/{endpoint_id}",
        summary: "Remove a webhook endpoint: nothing more is delivered to it.",
        security: "admin",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "WebhookDeleted"),
        errors: &[Code::UNKNOWN_WEBHOOK, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "get",
        path: "/v1/games/{game}/feed",
        summary: "The game's feed: records after since_seq (0: from the oldest kept), in seq order, up to limit (100, at most 1,000): players who entered or left a board's bands and players passed by someone on their friend list (docs/feed.md). next_seq is the since_seq of the next page.",
        security: "service",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "FeedPage"),
        errors: &[
            Code::INVALID_REQUEST,
            Code::FEED_SEQ_EXPIRED,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/games/{game}/players/{player_id}/friends",
        summary: "A player's friend list in a game, in its stored order, readable as friends-of is: a player token only its own; a service, moderator, admin or edge token of the game anyone's; a token is needed even with public_reads.",
        security: "read-own",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "FriendList"),
        errors: &[Code::INVALID_REQUEST, Code::DATABASE_UNAVAILABLE],
    },
    Operation {
        method: "put",
        path: "/v1/games/{game}/players/{player_id}/profile",
        summary: "Set a player's display name, country and anonymity in a game (service, moderator, admin); each field optional, null clears. Logged before it is answered; the same profile again changes nothing (changed: false). A name a moderator locked is refused to a service token (409 NAME_LOCKED).",
        security: "service",
        partition: Partition::PathGame,
        body: Some("ProfileChange"),
        ok: (200, "Profile"),
        errors: &[
            Code::INVALID_JSON,
            Code::INVALID_REQUEST,
            rule::DISPLAY_NAME_EMPTY,
            rule::DISPLAY_NAME_TOO_LONG,
            rule::DISPLAY_NAME_TOO_MANY_BYTES,
            rule::DISPLAY_NAME_FORBIDDEN_CHARACTER,
            rule::DISPLAY_NAME_SURROUNDING_SPACE,
            rule::DISPLAY_NAME_TOO_MANY_MARKS,
            rule::DISPLAY_NAME_INVISIBLE,
            rule::DISPLAY_NAME_NOT_TEXT,
            rule::COUNTRY_NOT_ISO_3166,
            rule::ANONYMOUS_NOT_BOOLEAN,
            Code::NAME_LOCKED,
            Code::PAYLOAD_TOO_LARGE,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/v1/games/{game}/players/{player_id}/profile",
        summary: "A player's profile in a game as the log holds it (empty when never set): a player token only its own; a service, moderator, admin or edge token of the game anyone's.",
        security: "read-own",
        partition: Partition::PathGame,
        body: None,
        ok: (200, "Profile"),
        errors: &[Code::INVALID_REQUEST],
    },
    Operation {
        method: "post",
        path: "/v1/games/{game}/players/{player_id}/erase",
        summary: "Erase a player's display name, country and entry metadata everywhere (admin): answers, snapshot parts, live messages, exports, checkpoints, results and the database files. Scores and ranks stay. The optional body gives a reason for the audit log.",
        security: "admin",
        partition: Partition::PathGame,
        body: Some("Erasure"),
        ok: (200, "Erased"),
        errors: &[
            Code::INVALID_JSON,
            Code::INVALID_REQUEST,
            Code::DATABASE_UNAVAILABLE,
        ],
    },
    Operation {
        method: "get",
        path: "/healthz",
        summary: "Liveness.",
        security: "none",
        partition: Partition::Node,
        body: None,
        ok: (200, "Status"),
        errors: &[],
    },
    Operation {
        method: "get",
        path: "/readyz",
        summary: "Readiness: start-up done and the database answers; `degraded` (still 200) lists the boards a log entry could not be carried out on at start, which answer 503 BOARD_BROKEN.",
        security: "none",
        partition: Partition::Node,
        body: None,
        ok: (200, "Status"),
        errors: &[Code::UNAVAILABLE],
    },
    Operation {
        method: "get",
        path: "/metrics",
        summary: "Prometheus metrics: durable-ack latency, event-to-visible lag, query latency by kind, duplicates, rejections by code, members per board, broken boards.",
        security: "none",
        partition: Partition::Node,
        body: None,
        ok: (200, "Metrics"),
        errors: &[],
    },
    Operation {
        method: "get",
        path: "/openapi.json",
        summary: "This document.",
        security: "none",
        partition: Partition::Any,
        body: None,
        ok: (200, "OpenApi"),
        errors: &[],
    },
];

/// The query and header parameters of the subscribe operation; the other operations document
/// only their path parameters.
fn subscribe_parameters() -> Vec<Value> {
    vec![
        json!({"name": "view", "in": "query", "required": true, "description": "top:N (N 1..=100), around:PLAYER:R (R 0..=25) or player:PLAYER; any of them within a segment as in:country:DE:top:10",
               "schema": {"type": "string"}}),
        json!({"name": "segment", "in": "query", "required": false, "description": "the view within a segment the board declares (country:DE): ranks within it, each entry with its global_rank",
               "schema": {"type": "string", "pattern": "^[a-z_]+:[^:]+$"}}),
        json!({"name": "since_version", "in": "query", "required": false, "description": "where the client holds the view: PERIOD_KEY:VERSION (the id: of its last snapshot or delta, e.g. all_time:42 or 2026-10-13:46), or a bare board_version of an all_time view",
               "schema": {"type": "string", "pattern": "^([^:]+:)?[0-9]+$"}}),
        json!({"name": "period", "in": "query", "required": false, "description": "the period instance, as in reads (all_time by default)",
               "schema": {"type": "string", "enum": ["all_time", "daily", "weekly", "monthly"]}}),
        json!({"name": "at", "in": "query", "required": false, "description": "a time in the period (RFC 3339), as in reads; now by default",
               "schema": {"type": "string", "format": "date-time"}}),
        json!({"name": "access_token", "in": "query", "required": false, "description": "a player JWT, for clients that cannot set headers (EventSource); never a static token",
               "schema": {"type": "string"}}),
        json!({"name": "Last-Event-ID", "in": "header", "required": false, "description": "stands for since_version when the query has none (EventSource sends it on reconnect)",
               "schema": {"type": "string"}}),
    ]
}

/// The schemas of players' profiles and their erasure.
fn profile_schemas() -> Value {
    json!({
        "ProfileChange": {
            "type": "object", "additionalProperties": false,
            "properties": {
                "display_name": {"type": ["string", "null"], "minLength": 1, "maxLength": 128,
                    "description": "NFC, 1 to 32 grapheme clusters, at most 128 bytes, no control, format or private-use characters, no surrounding spaces; null clears"},
                "country": {"type": ["string", "null"], "pattern": "^[A-Z]{2}$", "description": "ISO 3166-1 alpha-2; null clears"},
                "anonymous": {"type": "boolean"}
            }
        },
        "Profile": {
            "type": "object", "required": ["game", "player_id", "anonymous", "name_locked"],
            "properties": {
                "game": {"type": "string"}, "player_id": {"type": "string"},
                "display_name": {"type": "string"}, "country": {"type": "string"},
                "anonymous": {"type": "boolean"}, "name_locked": {"type": "boolean"},
                "changed": {"type": "boolean", "description": "on a PUT: whether the profile changed"},
                "position": {"type": "string", "description": "on a write: the position of the game's log it is at or before; a read handed it as min_position answers at or after it"}
            }
        },
        "WebhookDefinition": {"type": "object", "additionalProperties": false, "required": ["url", "secret", "kinds"],
            "properties": {"url": {"type": "string", "pattern": "^https?://"}, "secret": {"type": "string", "pattern": "^whsec_"},
                "kinds": {"type": "array", "minItems": 1, "items": {"enum": ["overtaken", "band_entered", "band_left", "period_closed", "season_finalized", "reward", "correction"]}}}},
        "WebhookEndpoint": {"type": "object", "properties": {"game": {"type": "string"}, "endpoint_id": {"type": "string"},
            "url": {"type": "string"}, "kinds": {"type": "array", "items": {"type": "string"}},
            "state": {"enum": ["active", "parked"]}, "parked_reason": {"type": ["string", "null"]},
            "delivered_through": {"type": "integer"}, "attempts": {"type": "integer"},
            "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
            "last_error": {"type": ["string", "null"]}, "rotating_until": {"type": ["string", "null"], "format": "date-time"}}},
        "WebhookDeleted": {"type": "object", "properties": {"game": {"type": "string"}, "endpoint_id": {"type": "string"},
            "deleted": {"type": "boolean"}}},
        "FeedPage": {"type": "object", "required": ["records", "next_seq"], "properties": {
            "records": {"type": "array", "items": {"type": "object", "required": ["seq", "kind", "game", "board", "board_version"],
                "properties": {"seq": {"type": "integer"}, "kind": {"enum": ["overtaken", "band_entered", "band_left", "period_closed", "season_finalized", "reward", "correction"]},
                    "game": {"type": "string"}, "board": {"type": "string"}, "period": {"type": "string"},
                    "period_key": {"type": "string"}, "board_version": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
                    "player_id": {"type": "string"}, "by": {"type": "string"}, "band": {"type": "string"},
                    "rank_before": {"type": ["integer", "null"]}, "rank_after": {"type": ["integer", "null"]},
                    "by_rank_before": {"type": ["integer", "null"]}, "by_rank_after": {"type": "integer"}}}},
            "next_seq": {"type": "integer", "description": "the since_seq of the next page"}}},
        "Erasure": {"type": "object", "additionalProperties": false, "properties": {"reason": {"type": "string"}}},
        "Erased": {"type": "object", "properties": {"game": {"type": "string"}, "player_id": {"type": "string"},
            "seq": {"type": "integer"}}}
    })
}

fn schemas() -> Value {
    let entry = json!({
        "type": "object",
        "required": ["rank", "player_id", "value", "achieved_at"],
        "properties": {
            "rank": {"type": "integer", "minimum": 1},
            "global_rank": {"type": "integer", "minimum": 1, "description": "with segment=: the board-wide rank (rank counts within the segment)"},
            "player_id": {"type": "string"},
            "value": {"type": "integer", "format": "int64"},
            "achieved_at": {"type": "string", "format": "date-time"},
            "display_name": {"type": "string", "description": "when set; hidden for an anonymous player but from the game's service, moderator and admin tokens"},
            "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
            "metadata": {"type": "object", "description": "the metadata of the event behind the entry, as sent"},
            "anonymous": {"type": "boolean", "description": "only to the game's service, moderator and admin tokens, when true"}
        }
    });
    let friends_board = json!({
        "type": "object",
        "properties": {
            "board_version": {"type": "integer"},
            "segment": {"type": "string", "description": "with segment=: the segment asked"},
            "entries": {"type": "array", "items": {"type": "object", "properties": {
                "rank": {"type": "integer"}, "global_rank": {"type": "integer"},
                "segment_rank": {"type": "integer", "description": "with segment=: the rank within the whole segment"},
                "player_id": {"type": "string"}, "value": {"type": "integer"},
                "achieved_at": {"type": "string", "format": "date-time"},
                "display_name": {"type": "string"}, "country": {"type": "string"},
                "metadata": {"type": "object"}, "anonymous": {"type": "boolean"}}}},
            "unranked": {"type": "array", "items": {"type": "string"}}
        }
    });
    let live_message = json!({
        "type": "object", "required": ["type"],
        "description": "One message of a live subscription (docs/live.md).",
        "properties": {
            "type": {"enum": ["snapshot", "delta", "heartbeat", "resync", "closed", "going_away"]},
            "view": {"type": "string"}, "period": {"type": "string"}, "period_key": {"type": "string"},
            "period_start": {"type": ["string", "null"], "format": "date-time"},
            "period_end": {"type": ["string", "null"], "format": "date-time"},
            "base_version": {"type": "integer"}, "board_version": {"type": "integer"},
            "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
            "changed": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
            "left": {"type": "array", "items": {"type": "string"}},
            "reason": {"type": "string"}, "detail": {"type": "string"}
        }
    });
    let rank_interval = json!({"type": "object", "description": "only with approximate=interval: the exact rank lies in low..=high",
                               "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}}});
    let player_rank = json!({
        "type": "object",
        "properties": {
            "board_version": {"type": "integer"}, "player_id": {"type": "string"},
            "segment": {"type": "string", "description": "with segment=: the segment asked"},
            "rank": {"type": ["integer", "null"], "description": "null with approximate=interval; with segment=, the rank within the segment"},
            "global_rank": {"type": "integer", "description": "with segment=: the board-wide rank"},
            "rank_interval": rank_interval,
            "approximate": {"type": "boolean", "description": "only with approximate=interval, always true; exact answers never carry it"},
            "value": {"type": "integer"}, "achieved_at": {"type": "string", "format": "date-time"},
            "display_name": {"type": "string"}, "country": {"type": "string"},
            "metadata": {"type": "object"}, "anonymous": {"type": "boolean"},
            "competition_rank": {"type": ["integer", "null"]}, "dense_rank": {"type": ["integer", "null"]},
            "percentile": {"type": ["number", "null"]}, "total_players": {"type": "integer"}
        }
    });
    let mut all = json!({
        "Problem": {
            "type": "object",
            "required": ["type", "title", "status", "code", "detail"],
            "properties": {
                "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                "code": {
                    "enum": every_code().iter().map(|code| code.name).collect::<Vec<_>>(),
                    "description": format!(
                        "each operation lists the codes it answers with; any operation may also answer {}",
                        ANY_OPERATION.iter().map(|code| code.name).collect::<Vec<_>>().join(", ")
                    )
                },
                "detail": {"type": "string"}
            }
        },
        "BoardDefinition": {
            "type": "object", "required": ["score_mode"], "additionalProperties": false,
            "properties": {
                "score_mode": {"enum": ["highest", "cumulative", "fastest", "latest"]},
                "value_min": {"type": "integer", "format": "int64"},
                "value_max": {"type": "integer", "format": "int64"},
                "periods": {"type": "array", "items": {"enum": ["all_time", "daily", "weekly", "monthly"]}, "default": ["all_time"]},
                "grace_seconds": {"type": "integer", "default": 300},
                "timezone": {"type": "string", "default": "UTC", "description": "IANA time zone name"},
                "metadata_max_bytes": {"type": "integer", "minimum": 0, "maximum": 256, "default": 256,
                    "description": "the largest event metadata the board takes, in bytes of JSON as sent; 0 refuses metadata"},
                "shards": {"type": "integer", "minimum": 1, "maximum": 64, "default": 1,
                    "description": "score-range shards each instance is split into; every answer is the whole board's (docs/split-boards.md)"},
                "feed": {"type": "object", "additionalProperties": false, "default": {},
                    "properties": {"bands": {"type": "array", "maxItems": 8, "items": {"type": ["integer", "string"]}},
                        "overtakes": {"type": "boolean"}},
                    "description": "what the board's changes put in the game's feed: entries and exits of bands (10, \"1%\") and overtakes by friends (docs/feed.md)"},
                "segments": {"type": "object", "default": {}, "maxProperties": 5,
                    "properties": {"country": {"enum": ["profile"]}},
                    "additionalProperties": {"type": "array", "minItems": 1, "maxItems": 32, "uniqueItems": true,
                        "items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,32}$"}},
                    "description": "dimensions whose segments the board ranks, read with segment=country:DE: country from the player's profile, and up to 4 event dimensions (names ^[a-z][a-z0-9_]{0,31}$) listing the values an event may carry, as \"platform\": [\"ios\", \"android\", \"pc\"] (docs/segments.md)"}
            }
        },
        "SeasonStateChange": {"type": "object", "required": ["state"],
            "properties": {"state": {"enum": ["open", "active", "frozen", "finalized", "published", "archived"]},
                "rewards": {"type": "array", "maxItems": 32, "description": "with finalized only: rank ranges mapped to reward ids, one reward record per rewarded player in the feed",
                    "items": {"type": "object", "required": ["ranks", "reward"], "properties": {
                        "ranks": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1000000}, "minItems": 2, "maxItems": 2},
                        "reward": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$"}}}}}},
        "SeasonState": {"type": "object", "properties": {"game": {"type": "string"}, "season": {"type": "string"},
            "state": {"type": "string"}, "rewards": {"type": "array", "description": "the reward bands declared when the season was finalized",
                "items": {"type": "object", "properties": {"ranks": {"type": "array", "items": {"type": "integer"}}, "reward": {"type": "string"}}}}}},
        "ModerationAction": {"type": "object", "required": ["moderation_id", "action_type", "reason", "game"],
            "properties": {"moderation_id": {"type": "string"}, "action_type": {"enum": ["INVALIDATE", "RESTORE", "DISQUALIFY", "REINSTATE",
                    "RENAME", "CLEAR_NAME", "LOCK_NAME", "UNLOCK_NAME"]},
                "display_name": {"type": "string", "description": "RENAME only: the new name, under the profile's rules"},
                "reason": {"type": "string"}, "game": {"type": "string"}, "target_event_id": {"type": "string"},
                "mode": {"type": "string"}, "season": {"type": "string"}, "scope": {"type": "string"},
                "target_player_id": {"type": "string"}}},
        "ModerationResult": {"type": "object", "properties": {"boards": {"type": "array", "items": {"type": "object",
            "properties": {"game": {"type": "string"}, "mode": {"type": "string"}, "season": {"type": "string"},
                "scope": {"type": "string"}, "period_key": {"type": "string"}, "player_id": {"type": "string"},
                "rank": {"type": ["integer", "null"]}, "board_version": {"type": "integer"}}}},
            "corrections": {"type": "array", "items": {"type": "object"}}, "position": {"type": "string", "description": "on a write: the position of the game's log it is at or before; a read handed it as min_position answers at or after it"}}},
        "LateDecision": {"type": "object", "required": ["decision", "reason"],
            "properties": {"decision": {"enum": ["apply", "reject"]}, "reason": {"type": "string"}, "game": {"type": "string"}}},
        "LateEvents": {"type": "object", "properties": {"late_events": {"type": "array", "items": {"type": "object"}}}},
        "Audit": {"type": "object", "properties": {"audit": {"type": "array", "items": {"type": "object"}}}},
        "Results": {"type": "object", "properties": {"correction": {"type": "integer"}, "latest_correction": {"type": "integer"},
            "board_version": {"type": "integer"}, "digest": {"type": "string"}, "finalized_at": {"type": "string", "format": "date-time"},
            "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}}}},
        "Board": {
            "type": "object",
            "properties": {
                "game": {"type": "string"}, "mode": {"type": "string"}, "season": {"type": "string"},
                "scope": {"type": "string"}, "score_mode": {"type": "string"},
                "value_min": {"type": "integer"}, "value_max": {"type": "integer"},
                "shards": {"type": "integer"},
                "segments": {"type": "object", "description": "the dimensions whose segments the board ranks"},
                "shard_members": {"type": "array", "items": {"type": "integer"}, "description": "a split board's ranked players per shard, best range first"}
            }
        },
        "ScoreEvent": {
            "type": "object", "additionalProperties": false,
            "required": ["event_id", "player_id", "game", "mode", "season", "value", "achieved_at"],
            "properties": {
                "event_id": {"type": "string", "maxLength": 128},
                "player_id": {"type": "string", "maxLength": 128},
                "game": {"type": "string"}, "mode": {"type": "string"}, "season": {"type": "string"},
                "scopes": {"type": "array", "items": {"type": "string"}, "default": ["global"]},
                "value": {"type": "integer", "format": "int64"},
                "achieved_at": {"type": "string", "format": "date-time"},
                "metadata": {"type": "object", "description": "a JSON object of at most the boards' metadata_max_bytes (256) bytes as sent; the entry shows the metadata of the event behind it"},
                "segments": {"type": "object", "maxProperties": 4, "additionalProperties": {"type": "string"},
                    "description": "the event's value of each event dimension its boards declare, as {\"platform\": \"ios\"}: every dimension declared by one of its boards, every value by each board declaring it; the entry is in the segment of the event behind its standing (docs/segments.md)"}
            }
        },
        "EventResult": {
            "type": "object",
            "properties": {"event_id": {"type": "string"}, "status": {"enum": ["ACCEPTED", "DUPLICATE", "REJECTED"]},
                           "code": {"type": "string"}, "detail": {"type": "string"},
                           "position": {"type": "string", "description": "a single submission stored or found stored: the position a read hands back as min_position to see it"}}
        },
        "EventBatch": {
            "type": "object", "required": ["events"],
            "properties": {"events": {"type": "array", "maxItems": 1000, "items": {"$ref": "#/components/schemas/ScoreEvent"}}}
        },
        "BatchResults": {
            "type": "object",
            "properties": {"results": {"type": "array", "items": {"$ref": "#/components/schemas/EventResult"}},
                           "position": {"type": "string", "description": "on a write: the position of the game's log it is at or before; a read handed it as min_position answers at or after it"},
                           "positions": {"type": "object", "additionalProperties": {"type": "string"}, "description": "a batch of several games: each game's position"}}
        },
        "FriendList": {
            "type": "object", "required": ["friends"],
            "properties": {"game": {"type": "string"}, "player_id": {"type": "string"}, "friends": {"type": "array", "maxItems": 1000, "items": {"type": "string"}}}
        },
        "PlayerIds": {
            "type": "object", "required": ["player_ids"],
            "properties": {"player_ids": {"type": "array", "maxItems": 1000, "items": {"type": "string"}}}
        },
        "IntrospectionRequest": {
            "type": "object", "required": ["token"], "additionalProperties": false,
            "properties": {"token": {"type": "string", "minLength": 1, "description": "the bearer token asked about, as it follows `Bearer ` in a request"}}
        },
        "Introspection": {
            "type": "object", "required": ["active", "cache_seconds"],
            "properties": {
                "active": {"type": "boolean", "description": "whether the origin takes the token for one of the caller's games"},
                "role": {"enum": ["player", "service", "moderator", "admin", "edge"], "description": "only when active"},
                "games": {"type": "array", "items": {"type": "string"}, "description": "only when active: the caller's games the token may touch, [\"*\"] for all"},
                "player_id": {"type": ["string", "null"], "description": "only when active: the player a player token reads as, null otherwise"},
                "cache_seconds": {"type": "integer", "minimum": 1, "description": "how long the answer may be cached"}
            }
        },
        "SnapshotHead": {
            "type": "object",
            "required": ["period", "period_key", "period_start", "period_end", "board_version", "manifest", "published_at", "interval_ms"],
            "properties": {
                "period": {"type": "string"}, "period_key": {"type": "string"},
                "period_start": {"type": ["string", "null"], "format": "date-time"},
                "period_end": {"type": ["string", "null"], "format": "date-time"},
                "board_version": {"type": "integer"},
                "manifest": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "the manifest's hash: GET /v1/snapshots/manifests/{hash}"},
                "published_at": {"type": "string", "format": "date-time"},
                "interval_ms": {"type": "integer", "description": "how often a changing board is published"}
            }
        },
        "Entry": entry,
        "TopPage": {
            "type": "object",
            "properties": {
                "board_version": {"type": "integer"}, "total_players": {"type": "integer"},
                "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
                "next_cursor": {"type": ["string", "null"]}
            }
        },
        "PlayerRank": player_rank,
        "Entries": {
            "type": "object",
            "properties": {"board_version": {"type": "integer"},
                           "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}}}
        },
        "FriendsBoard": friends_board,
        "GameBoards": {
            "type": "object",
            "properties": {"game": {"type": "string"}, "boards": {"type": "array", "items": {"$ref": "#/components/schemas/Board"}}}
        },
        "Status": {"type": "object", "properties": {"status": {"type": "string"}}},
        "Digest": {"type": "object", "properties": {"board_version": {"type": "integer"},
                   "total_players": {"type": "integer"}, "digest": {"type": "string"}}},
        "Metrics": {"type": "string"},
        "LiveMessage": live_message,
        "OpenApi": {"type": "object"}
    });
    let cluster_status = json!({"type": "object", "properties": {
        "node_id": {"type": "string"}, "partitions": {"type": "integer"},
        "game": {"type": "object", "description": "with ?game=: the game, its partition and the partition's owner",
                 "properties": {"game": {"type": "string"}, "partition": {"type": "integer"}, "owner": {"type": ["string", "null"]}}},
        "nodes": {"type": "array", "items": {"type": "object"}},
        "leases": {"type": "array", "items": {"type": "object"}}}});
    if let Some(all) = all.as_object_mut() {
        all.insert("ClusterStatus".into(), cluster_status);
    }
    if let (Some(all), Value::Object(more)) = (all.as_object_mut(), profile_schemas()) {
        all.extend(more);
    }
    all
}

/// The OpenAPI 3.1 document, generated from [`OPERATIONS`].
pub fn openapi_document() -> Value {
    let mut paths: std::collections::BTreeMap<&str, serde_json::Map<String, Value>> =
        std::collections::BTreeMap::new();
    for op in OPERATIONS.iter().chain(CLUSTER_OPERATIONS) {
        let mut parameters: Vec<Value> = op
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut responses = serde_json::Map::new();
        let ok_content = if op.ok.1 == "Metrics" {
            json!({"text/plain": {"schema": {"type": "string"}}})
        } else if op.ok.1 == "SnapshotPart" {
            responses.insert(
                "304".into(),
                json!({"description": "Not Modified: If-None-Match named the part's ETag"}),
            );
            json!({"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}})
        } else if op.ok.1 == "EventStream" {
            parameters.extend(subscribe_parameters());
            responses.insert(
                "101".into(),
                json!({"description": "Switching Protocols: the WebSocket, asked for with Connection: Upgrade and Upgrade: websocket; each LiveMessage is one text frame, and a close frame follows the last"}),
            );
            json!({"text/event-stream": {
                "schema": {"type": "string", "description": "one SSE event per LiveMessage: `event:` its type, `id:` PERIOD_KEY:VERSION, the instance and board_version it brings the client to (snapshot and delta), `data:` the JSON on one line"},
                "x-standings-message": {"$ref": "#/components/schemas/LiveMessage"}
            }})
        } else {
            json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", op.ok.1)}}})
        };
        responses.insert(
            op.ok.0.to_string(),
            json!({"description": "success", "content": ok_content}),
        );
        if op.path.ends_with("/players/{player_id}/rank") {
            parameters.push(json!({"name": "approximate", "in": "query", "required": false,
                "schema": {"type": "string", "enum": ["interval"]},
                "description": "interval: answer rank_interval in place of the exact rank (exact is the default)"}));
        }
        if ["/top", "/rank", "/nearby", "/rank-players"]
            .iter()
            .any(|end| op.path.ends_with(end))
            || op.path.contains("/friends-of/")
        {
            parameters.push(json!({"name": "segment", "in": "query", "required": false,
                "schema": {"type": "string", "pattern": "^[a-z_]+:.+$"},
                "description": "dimension:value (country:DE): the answer within the segment, rank counted among its members and global_rank board-wide (docs/segments.md)"}));
        }
        if op.reads_a_game() {
            parameters.push(json!({"name": "min_position", "in": "query", "required": false, "schema": {"type": "string"},
                "description": "a write's x-standings-position: answered at or after it, or 503 POSITION_NOT_REACHED"}));
            parameters.push(json!({"name": "x-standings-min-position", "in": "header", "required": false, "schema": {"type": "string"}}));
        }
        // Each error status is described by its codes, in the order listed.
        let mut codes: Vec<(u16, Vec<&str>)> = Vec::new();
        for &Code { status, name: code } in op.all_errors() {
            match codes.iter_mut().find(|(s, _)| *s == status) {
                Some((_, listed)) => listed.push(code),
                None => codes.push((status, vec![code])),
            }
        }
        for (status, listed) in codes {
            responses.entry(status.to_string()).or_insert_with(|| {
                json!({"description": listed.join(", "), "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
            });
        }
        let mut operation = serde_json::Map::new();
        operation.insert("summary".into(), op.summary.into());
        operation.insert("parameters".into(), parameters.into());
        operation.insert("responses".into(), responses.into());
        operation.insert("x-standings-role".into(), op.security.into());
        if op.security != "none" {
            operation.insert("security".into(), json!([{"bearer": []}]));
        }
        if let Some(body) = op.body {
            operation.insert(
                "requestBody".into(),
                json!({
                    "required": true,
                    "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}}
                }),
            );
        }
        paths
            .entry(op.path)
            .or_default()
            .insert(op.method.to_string(), operation.into());
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Standings",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Exact, live leaderboards. Every error is application/problem+json with a stable code."
        },
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code an error can be answered with is in the document, with its status: on an
    /// operation that answers it, or among those any operation may answer; and no operation
    /// lists a code no error has.
    #[test]
    fn every_code_an_error_can_answer_is_documented() {
        let every = every_code();
        let listed: Vec<Code> = OPERATIONS
            .iter()
            .chain(CLUSTER_OPERATIONS)
            .flat_map(|op| op.all_errors())
            .copied()
            .collect();
        for code in &every {
            assert!(
                listed.contains(code) || ANY_OPERATION.contains(code),
                "{code:?} is answered by no documented operation"
            );
        }
        for code in &listed {
            assert!(
                every.contains(code),
                "{code:?} is documented, though no error has it"
            );
        }
        let doc = openapi_document();
        let names: Vec<&str> = doc["components"]["schemas"]["Problem"]["properties"]["code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        assert_eq!(names, every.iter().map(|code| code.name).collect::<Vec<_>>());
        assert!(names.contains(&"PARTITION_MOVING") && names.contains(&"DISPLAY_NAME_INVISIBLE"));
    }

    /// The subscribe operation documents what a client needs beyond the path: its query and
    /// header parameters, the event stream, the WebSocket's 101, and every refusal's code.
    #[test]
    fn the_subscribe_operation_documents_its_stream_and_refusals() {
        let doc = openapi_document();
        let op = &doc["paths"]["/v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe"]["get"];
        let parameters: Vec<(&str, &str, bool)> = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["in"].as_str().unwrap(),
                    p["required"].as_bool().unwrap(),
                )
            })
            .collect();
        for wanted in [
            ("game", "path", true),
            ("scope", "path", true),
            ("view", "query", true),
            ("segment", "query", false),
            ("since_version", "query", false),
            ("period", "query", false),
            ("at", "query", false),
            ("access_token", "query", false),
            ("Last-Event-ID", "header", false),
        ] {
            assert!(parameters.contains(&wanted), "{wanted:?} in {parameters:?}");
        }
        assert!(op["responses"]["200"]["content"]["text/event-stream"].is_object());
        assert!(op["responses"]["101"].is_object());
        let since = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "since_version")
            .unwrap();
        assert_eq!(
            since["schema"]["type"], "string",
            "since_version names its period instance"
        );
        for (status, code) in [
            ("400", "INVALID_REQUEST"),
            ("401", "UNAUTHENTICATED"),
            ("403", "FORBIDDEN"),
            ("404", "UNKNOWN_BOARD"),
            ("429", "TOO_MANY_SUBSCRIPTIONS"),
            ("503", "SUBSCRIBERS_FULL"),
            ("503", "UNAVAILABLE"),
        ] {
            let description = op["responses"][status]["description"].as_str().unwrap();
            assert!(description.contains(code), "{status}: {description}");
        }
        let top = &doc["paths"]["/v1/leaderboards/{game}/{mode}/{season}/{scope}/top"]["get"];
        let names: Vec<&str> = top["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "game",
                "mode",
                "season",
                "scope",
                "segment",
                "min_position",
                "x-standings-min-position"
            ],
            "other reads keep their path parameters, the segment of those that take one, and the position"
        );
        assert!(
            top["responses"]["503"]["description"]
                .as_str()
                .unwrap()
                .contains("POSITION_NOT_REACHED")
        );
        assert!(top["responses"]["101"].is_null());
    }
}
