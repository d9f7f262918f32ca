//! The decisions of a request for a partition, without IO: serve it here, answer it from this
//! node's warm copy, send it to the owner, wait for the partition to land, or give up; and after a forward, whether to answer, look again
//! or give up. `app::to_partition` carries them out, as the core's `SnapshotReader` returns its
//! `Step` for the tiers to fetch.

use super::Peer;
use super::slot::SlotState;

/// What to do with a request for a partition, given what this node knows of it now.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step<E> {
    /// This node owns it and its lease is good now: its engine answers.
    Serve(E),
    /// Another node owns it (or none does now) and this node's warm copy answers the read.
    Copy,
    /// Another node owns it: send the request there.
    Forward(Peer),
    /// A peer sent it here and this node does not serve it: tell the peer so (it asks again
    /// once the leases say who does), rather than forwarding on.
    NotOwner,
    /// Nobody answers for it now: wait for its slot to change, until the deadline.
    Wait,
}

/// The step for a request, from the slot's state at `now` (the node's monotonic milliseconds),
/// whether a peer sent it, and whether this node's copy may answer it ([`copy_answers`]). O(1).
pub(super) fn next<E: Clone>(state: &SlotState<E>, now: i64, from_peer: bool, copy: bool) -> Step<E> {
    match state {
        SlotState::Owned(held, engine) if held.serving(now) => Step::Serve(engine.clone()),
        SlotState::Elsewhere(_) if copy && !from_peer => Step::Copy,
        SlotState::Elsewhere(Some(peer)) if !from_peer => Step::Forward(peer.clone()),
        _ if from_peer => Step::NotOwner,
        _ => Step::Wait,
    }
}

/// A warm copy of a partition, as a read finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CopyAt {
    /// How long ago (ms) the copy last held the whole log as its end was then.
    pub(super) age_ms: i64,
    /// The last log entry it applied.
    pub(super) applied: i64,
}

/// Whether this node's copy answers a read: with copies allowed to serve (`max_lag_ms` above 0),
/// one that followed its log within `max_lag_ms` and reached the position the read asks for
/// (`asked`, if any). Anything else goes to the owner, which answers as fresh as a read can be.
/// O(1).
pub(super) fn copy_answers(copy: CopyAt, max_lag_ms: u64, asked: Option<u64>) -> bool {
    // A copy synced after the caller read the clock is as fresh as can be.
    let fresh = copy.age_ms < 0 || u64::try_from(copy.age_ms).is_ok_and(|age| age <= max_lag_ms);
    let reached = asked.is_none_or(|seq| i64::try_from(seq).is_ok_and(|seq| seq <= copy.applied));
    max_lag_ms > 0 && fresh && reached
}

/// How a forward ended without an answer to pass on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unanswered {
    /// The node asked does not own the partition.
    NotOwner,
    /// Nothing reached the node: the request may go elsewhere.
    NotConnected,
    /// The node got the request and did not answer in time.
    Unreachable,
}

/// What follows a forward that brought no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterForward {
    /// Forget that owner and look again (within the deadline).
    LookAgain,
    /// Forget that owner and answer `PARTITION_MOVING`: a write may have been committed, so
    /// the client retries with the same ids and learns which (`DUPLICATE`).
    GiveUp,
}

/// What follows a forward that ended as `sent` without an answer, for a request that is `safe` (a read). O(1).
pub(super) fn after_forward(sent: Unanswered, safe: bool) -> AfterForward {
    match sent {
        Unanswered::Unreachable if !safe => AfterForward::GiveUp,
        Unanswered::NotOwner | Unanswered::NotConnected | Unanswered::Unreachable => AfterForward::LookAgain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::lease::Held;

    fn peer() -> Peer {
        Peer {
            node: "n2".into(),
            url: "http://127.0.0.1:2".into(),
        }
    }

    /// Every state, from a client and from a peer, at a time the lease serves and one past it.
    #[test]
    fn each_state_has_its_step() {
        let held = Held::renewed(1, 0, 10_000);
        let past = 1_000_000;
        let cases: [(SlotState<&str>, i64, bool, Step<&str>); 12] = [
            (SlotState::Owned(held, "e"), 1, false, Step::Serve("e")),
            (SlotState::Owned(held, "e"), 1, true, Step::Serve("e")),
            (SlotState::Owned(held, "e"), past, false, Step::Wait),
            (SlotState::Owned(held, "e"), past, true, Step::NotOwner),
            (
                SlotState::Elsewhere(Some(peer())),
                1,
                false,
                Step::Forward(peer()),
            ),
            (SlotState::Elsewhere(Some(peer())), 1, true, Step::NotOwner),
            (SlotState::Elsewhere(None), 1, false, Step::Wait),
            (SlotState::Elsewhere(None), 1, true, Step::NotOwner),
            (SlotState::Taking(held), 1, false, Step::Wait),
            (SlotState::Taking(held), 1, true, Step::NotOwner),
            (SlotState::Releasing(held, "e"), 1, false, Step::Wait),
            (SlotState::Releasing(held, "e"), 1, true, Step::NotOwner),
        ];
        for (state, now, from_peer, step) in cases {
            assert_eq!(
                next(&state, now, from_peer, false),
                step,
                "{state:?} at {now}, from a peer: {from_peer}"
            );
        }
    }

    /// A copy answers for a partition owned elsewhere (or by nobody now), never for one this
    /// node owns, is taking or releasing, and never a peer's request.
    #[test]
    fn a_copy_answers_only_for_a_partition_owned_elsewhere() {
        let held = Held::renewed(1, 0, 10_000);
        let cases: [(SlotState<&str>, bool, Step<&str>); 6] = [
            (SlotState::Elsewhere(Some(peer())), false, Step::Copy),
            (SlotState::Elsewhere(None), false, Step::Copy),
            (SlotState::Elsewhere(Some(peer())), true, Step::NotOwner),
            (SlotState::Owned(held, "e"), false, Step::Serve("e")),
            (SlotState::Taking(held), false, Step::Wait),
            (SlotState::Releasing(held, "e"), false, Step::Wait),
        ];
        for (state, from_peer, step) in cases {
            assert_eq!(
                next(&state, 1, from_peer, true),
                step,
                "{state:?}, from a peer: {from_peer}"
            );
        }
    }

    /// A copy answers a read while it is fresh enough and at or past the position asked for.
    #[test]
    fn a_copy_answers_fresh_enough_and_at_the_position() {
        let copy = CopyAt {
            age_ms: 300,
            applied: 40,
        };
        assert!(copy_answers(copy, 1_000, None));
        assert!(copy_answers(copy, 1_000, Some(40)));
        assert!(copy_answers(copy, 300, Some(0)));
        // Behind the position, too old, copies off.
        assert!(!copy_answers(copy, 1_000, Some(41)));
        assert!(!copy_answers(copy, 299, None));
        assert!(!copy_answers(copy, 0, None));
        assert!(!copy_answers(copy, 1_000, Some(u64::MAX)));
        let synced_since = CopyAt {
            age_ms: -5,
            applied: 40,
        };
        assert!(copy_answers(synced_since, 1_000, None));
    }

    /// Only a write the owner may have received gives up; everything else looks again.
    #[test]
    fn only_a_write_that_may_have_landed_gives_up() {
        for safe in [true, false] {
            assert_eq!(after_forward(Unanswered::NotOwner, safe), AfterForward::LookAgain);
            assert_eq!(
                after_forward(Unanswered::NotConnected, safe),
                AfterForward::LookAgain
            );
        }
        assert_eq!(
            after_forward(Unanswered::Unreachable, true),
            AfterForward::LookAgain
        );
        assert_eq!(
            after_forward(Unanswered::Unreachable, false),
            AfterForward::GiveUp
        );
    }
}
