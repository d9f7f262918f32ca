//! Every refusal's code: its HTTP status and its wire name, written once. The origin's error,
//! its OpenAPI document and the edge's answers all name a [`Code`], so a status cannot drift
//! from its name between them.

/// A problem's code: the status it is answered with and the stable name clients match on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code {
    /// The HTTP status.
    pub status: u16,
    /// The stable machine-readable name.
    pub name: &'static str,
}

impl Code {
    /// A code of `status` named `name`: for the rules a layer names itself (a display name's,
    /// an event's metadata's); the shared ones are the constants below. O(1).
    pub const fn new(status: u16, name: &'static str) -> Code {
        Code { status, name }
    }
}

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $status:literal;)*) => {
        impl Code {
            $($(#[$doc])* pub const $name: Code = Code::new($status, stringify!($name));)*
        }
        /// Every shared code, for the tests that check each is documented.
        pub const ALL: &[Code] = &[$(Code::$name),*];
    };
}

codes! {
    /// A query parameter or path segment is malformed.
    INVALID_REQUEST = 400;
    /// The body is not JSON.
    INVALID_JSON = 400;
    /// A cursor this service did not make for this board instance.
    INVALID_CURSOR = 400;
    /// No credentials, or credentials that match nothing.
    UNAUTHENTICATED = 401;
    /// The credentials do not allow this.
    FORBIDDEN = 403;
    /// The board does not exist.
    UNKNOWN_BOARD = 404;
    /// The player has no score on the board.
    PLAYER_NOT_RANKED = 404;
    /// No such route or resource.
    NOT_FOUND = 404;
    /// No such event.
    UNKNOWN_EVENT = 404;
    /// The season's results are not published.
    RESULTS_NOT_PUBLISHED = 404;
    /// No snapshot part has this hash, or its retention is over.
    SNAPSHOT_PART_NOT_FOUND = 404;
    /// The game has no webhook endpoint of that id.
    UNKNOWN_WEBHOOK = 404;
    /// The route exists, not with this method.
    METHOD_NOT_ALLOWED = 405;
    /// The same event id was already used with a different payload.
    EVENT_ID_CONFLICT = 409;
    /// The board exists with other rules; rules are fixed.
    BOARD_RULES_CONFLICT = 409;
    /// The event was invalidated by a moderator.
    EVENT_INVALIDATED = 409;
    /// The season takes no events now.
    SEASON_NOT_ACTIVE = 409;
    /// The player is disqualified from the board.
    PLAYER_DISQUALIFIED = 409;
    /// The season cannot move to that state now.
    INVALID_TRANSITION = 409;
    /// The moderation id was already used for another action.
    MODERATION_ID_CONFLICT = 409;
    /// The event is not waiting for a late decision.
    NOT_LATE = 409;
    /// A moderator locked the player's name.
    NAME_LOCKED = 409;
    /// The season is archived; nothing about it changes any more.
    SEASON_ARCHIVED = 409;
    /// The cursor's version is no longer held.
    STALE_CURSOR = 410;
    /// The feed no longer keeps records that old.
    FEED_SEQ_EXPIRED = 410;
    /// The body or batch is too large.
    PAYLOAD_TOO_LARGE = 413;
    /// An event is malformed.
    INVALID_EVENT = 422;
    /// A board definition is malformed.
    INVALID_BOARD = 422;
    /// A value is outside the board's range, or would overflow a total.
    VALUE_OUT_OF_RANGE = 422;
    /// The token's rate limit is exhausted.
    RATE_LIMITED = 429;
    /// The token, the board or the address has as many live subscriptions as allowed.
    TOO_MANY_SUBSCRIPTIONS = 429;
    /// A bug or a failing dependency; the detail is logged, never answered.
    INTERNAL = 500;
    /// The service has as many live subscribers as it serves in all.
    SUBSCRIBERS_FULL = 503;
    /// The live windows are busy; a subscription that adds a view is refused for now.
    LIVE_BUSY = 503;
    /// As many board instances are followed for the edge as allowed.
    SNAPSHOT_INSTANCES_FULL = 503;
    /// The service is starting up or shutting down.
    UNAVAILABLE = 503;
    /// The database cannot be reached or cannot serve now; a retry is safe.
    DATABASE_UNAVAILABLE = 503;
    /// The board could not be rebuilt from the log at start; other boards are served.
    BOARD_BROKEN = 503;
    /// In a cluster, the game's partition is moving between nodes; a retry is safe.
    PARTITION_MOVING = 503;
    /// A read's `min_position` was not reached within the wait; a retry is safe.
    POSITION_NOT_REACHED = 503;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each constant's name is its wire name, and no name is given twice.
    #[test]
    fn each_code_is_named_once() {
        assert_eq!(Code::PARTITION_MOVING, Code::new(503, "PARTITION_MOVING"));
        let mut names: alloc::vec::Vec<&str> = ALL.iter().map(|code| code.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }
}
