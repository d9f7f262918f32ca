//! A partition's slot on this node as a state machine, without IO: what each event does to it
//! (a lease taken, renewed, the engine up, an owner learned or forgotten, a hand-over begun and
//! done, the lease dropped), and whether anything changed. `Node::update` applies a transition
//! under the slot's lock and wakes the requests waiting on a moving partition only when it did.

use super::Peer;
use super::lease::Held;

/// A partition as this node sees it; `E` is its engine (generic so the machine is tested with
/// a stand-in).
#[derive(Clone, Debug, PartialEq)]
pub enum SlotState<E> {
    /// Another node owns it (`None`: none known now).
    Elsewhere(Option<Peer>),
    /// This node took its lease and is bringing its engine up: requests wait.
    Taking(Held),
    /// This node owns it and its engine answers.
    Owned(Held, E),
    /// This node is handing it over: requests wait for the next owner.
    Releasing(Held, E),
}

impl<E> SlotState<E> {
    /// The lease this node holds on it, if any.
    pub(super) fn held(&self) -> Option<Held> {
        match self {
            SlotState::Elsewhere(_) => None,
            SlotState::Taking(h) | SlotState::Owned(h, _) | SlotState::Releasing(h, _) => Some(*h),
        }
    }
}

/// What happens to a slot.
#[derive(Clone, Debug)]
pub(super) enum Transition<E> {
    /// This node took the lease: it brings the engine up.
    Taken(Held),
    /// The lease was renewed at its epoch (another epoch's renewal changes nothing).
    Renewed(Held),
    /// The engine came up under the lease at `epoch`.
    Up { epoch: i64, engine: E },
    /// The lease table names this owner (or none) for a partition held elsewhere.
    Learned(Option<Peer>),
    /// The owner named `node` did not answer for it: forget it until the table says again.
    Forgot(String),
    /// The hand-over of the lease at `epoch` began.
    Releasing { epoch: i64 },
    /// The lease at `epoch` was given back.
    Released { epoch: i64 },
    /// The lease is gone (lost, or the engine could not come up): nothing is held here.
    Dropped,
}

/// The slot after `transition`, or `None` when it changes nothing. O(1).
pub(super) fn next<E: Clone>(state: &SlotState<E>, transition: Transition<E>) -> Option<SlotState<E>> {
    use SlotState::*;
    match (state, transition) {
        (Elsewhere(_), Transition::Taken(held)) => Some(Taking(held)),
        (Taking(h), Transition::Renewed(r)) if h.epoch == r.epoch && *h != r => Some(Taking(r)),
        (Owned(h, e), Transition::Renewed(r)) if h.epoch == r.epoch && *h != r => Some(Owned(r, e.clone())),
        (Releasing(h, e), Transition::Renewed(r)) if h.epoch == r.epoch && *h != r => {
            Some(Releasing(r, e.clone()))
        }
        (Taking(h), Transition::Up { epoch, engine }) if h.epoch == epoch => Some(Owned(*h, engine)),
        (Elsewhere(known), Transition::Learned(owner)) if *known != owner => Some(Elsewhere(owner)),
        (Elsewhere(Some(peer)), Transition::Forgot(node)) if peer.node == node => Some(Elsewhere(None)),
        (Owned(h, e), Transition::Releasing { epoch }) if h.epoch == epoch => Some(Releasing(*h, e.clone())),
        (Releasing(h, _), Transition::Released { epoch }) if h.epoch == epoch => Some(Elsewhere(None)),
        (Elsewhere(None), Transition::Dropped) => None,
        (_, Transition::Dropped) => Some(Elsewhere(None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type State = SlotState<&'static str>;
    type Move = Transition<&'static str>;

    fn held(epoch: i64, until: i64) -> Held {
        Held::renewed(epoch, until, 3_000)
    }

    fn peer(node: &str) -> Option<Peer> {
        Some(Peer {
            node: node.into(),
            url: format!("http://{node}"),
        })
    }

    /// Each transition from each state: what it leads to, or that it changes nothing (a
    /// renewal, an engine or a release of another epoch; an owner learned again; forgetting
    /// another owner; dropping nothing).
    #[test]
    fn every_transition_says_whether_it_changed_the_slot() {
        let (h3, h3_later, h4) = (held(3, 0), held(3, 1_000), held(4, 0));
        let cases: Vec<(State, Move, Option<State>)> = vec![
            (State::Elsewhere(None), Move::Taken(h3), Some(State::Taking(h3))),
            (
                State::Taking(h3),
                Move::Renewed(h3_later),
                Some(State::Taking(h3_later)),
            ),
            (State::Taking(h3), Move::Renewed(h3), None),
            (State::Taking(h3), Move::Renewed(h4), None),
            (
                State::Owned(h3, "e"),
                Move::Renewed(h3_later),
                Some(State::Owned(h3_later, "e")),
            ),
            (State::Owned(h3, "e"), Move::Renewed(h4), None),
            (
                State::Releasing(h3, "e"),
                Move::Renewed(h3_later),
                Some(State::Releasing(h3_later, "e")),
            ),
            (
                State::Taking(h3),
                Move::Up {
                    epoch: 3,
                    engine: "e",
                },
                Some(State::Owned(h3, "e")),
            ),
            (
                State::Taking(h4),
                Move::Up {
                    epoch: 3,
                    engine: "e",
                },
                None,
            ),
            (
                State::Elsewhere(None),
                Move::Up {
                    epoch: 3,
                    engine: "e",
                },
                None,
            ),
            (
                State::Elsewhere(None),
                Move::Learned(peer("b")),
                Some(State::Elsewhere(peer("b"))),
            ),
            (State::Elsewhere(peer("b")), Move::Learned(peer("b")), None),
            (
                State::Elsewhere(peer("b")),
                Move::Learned(peer("c")),
                Some(State::Elsewhere(peer("c"))),
            ),
            (State::Owned(h3, "e"), Move::Learned(peer("b")), None),
            (
                State::Elsewhere(peer("b")),
                Move::Forgot("b".into()),
                Some(State::Elsewhere(None)),
            ),
            (State::Elsewhere(peer("c")), Move::Forgot("b".into()), None),
            (
                State::Owned(h3, "e"),
                Move::Releasing { epoch: 3 },
                Some(State::Releasing(h3, "e")),
            ),
            (State::Owned(h4, "e"), Move::Releasing { epoch: 3 }, None),
            (
                State::Releasing(h3, "e"),
                Move::Released { epoch: 3 },
                Some(State::Elsewhere(None)),
            ),
            (State::Releasing(h4, "e"), Move::Released { epoch: 3 }, None),
            (State::Owned(h3, "e"), Move::Dropped, Some(State::Elsewhere(None))),
            (State::Taking(h3), Move::Dropped, Some(State::Elsewhere(None))),
            (
                State::Elsewhere(peer("b")),
                Move::Dropped,
                Some(State::Elsewhere(None)),
            ),
            (State::Elsewhere(None), Move::Dropped, None),
            (State::Owned(h3, "e"), Move::Taken(h4), None),
        ];
        for (i, (from, transition, to)) in cases.into_iter().enumerate() {
            assert_eq!(
                next(&from, transition.clone()),
                to,
                "case {i}: {from:?} + {transition:?}"
            );
        }
    }
}
