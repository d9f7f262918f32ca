//! The origin's friend lists and board lists, fetched with the edge token and held for a head
//! lifetime; when the origin is unreachable, the last one held, marked stale.

use std::collections::HashMap;
use std::rc::Rc;

use http::StatusCode;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::{Edge, Held, Spend, Stop, make_room};
use crate::platform::{Cache, Clock, Origin, Response, Unavailable, pass_through};
use crate::problem;
use crate::stats::Stats;

/// What a path segment keeps as it is: ASCII letters, digits and `-._~` (RFC 3986's
/// unreserved characters); everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The origin's friend list answer.
#[derive(Deserialize)]
struct FriendsAnswer {
    friends: Vec<String>,
}

/// A list as a read uses it.
pub(super) struct List<T> {
    pub(super) value: T,
    /// Held here, not fetched for this read.
    pub(super) hit: bool,
    /// Held past its lifetime because the origin was unreachable.
    pub(super) stale: bool,
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// A player's friend list from the origin, held for a head lifetime; when the origin is
    /// unreachable, the last one held, marked stale.
    pub(super) async fn friends(
        &self,
        game: &str,
        player: &str,
        spend: &mut Spend,
    ) -> Result<List<Rc<Vec<String>>>, Stop> {
        let path = format!(
            "/v1/games/{}/players/{}/friends",
            utf8_percent_encode(game, SEGMENT),
            utf8_percent_encode(player, SEGMENT)
        );
        let unreachable =
            "the origin is unreachable and the edge does not hold this player's friend list; retry shortly";
        self.held_list(
            |state| &mut state.friends,
            path,
            spend,
            |s| s.origin_fetches.friends += 1,
            |path, answer| {
                let list: FriendsAnswer = serde_json::from_slice(answer.body()).map_err(|_| {
                    problem::bad_origin_answer(format!(
                        "the origin's friend list at {path} is not a friend list"
                    ))
                })?;
                Ok(Rc::new(list.friends))
            },
            unreachable,
        )
        .await
    }

    /// The origin's list of `game`'s boards, its JSON as the origin wrote it, held for a head
    /// lifetime.
    pub(super) async fn boards(&self, game: &str, spend: &mut Spend) -> Result<List<Rc<Vec<u8>>>, Stop> {
        let path = format!("/v1/games/{}/boards", utf8_percent_encode(game, SEGMENT));
        let unreachable =
            "the origin is unreachable and the edge does not hold this game's boards; retry shortly";
        self.held_list(
            |state| &mut state.boards,
            path,
            spend,
            |s| s.origin_fetches.boards += 1,
            |_, answer| Ok(Rc::new(answer.body().clone())),
            unreachable,
        )
        .await
    }

    /// The list at the origin's `path`, held in the map `held` picks: held if fresh; else
    /// fetched, read with `read` and held for a head lifetime; an error answer of the origin
    /// passed on; when the origin fails, the one held kept another lifetime, marked stale.
    /// O(1) when held, plus the fetch and `read` when not.
    async fn held_list<T: Clone>(
        &self,
        held: impl Fn(&mut super::State) -> &mut HashMap<String, Held<T>>,
        path: String,
        spend: &mut Spend,
        count: impl FnOnce(&mut Stats),
        read: impl FnOnce(&str, &Response) -> Result<T, Stop>,
        unreachable: &'static str,
    ) -> Result<List<T>, Stop> {
        let now = self.now_ms();
        if let Some(list) = held(&mut self.state.borrow_mut()).get(&path)
            && now < list.until_ms
        {
            return Ok(List {
                value: list.value.clone(),
                hit: true,
                stale: list.stale,
            });
        }
        spend.subrequests += 1;
        self.count(count);
        let fetched: Result<Response, Unavailable> = self.origin_get(&path).await;
        let lifetime = self.state.borrow().head_lifetime_ms;
        match fetched {
            Ok(answer) if answer.status() == StatusCode::OK => {
                let value = read(&path, &answer)?;
                let mut state = self.state.borrow_mut();
                let map = held(&mut state);
                make_room(map, now, |h| h.until_ms);
                map.insert(
                    path,
                    Held {
                        value: value.clone(),
                        until_ms: now.saturating_add(lifetime),
                        stale: false,
                    },
                );
                Ok(List {
                    value,
                    hit: false,
                    stale: false,
                })
            }
            Ok(answer) if answer.status().as_u16() < 500 => Err(Stop::Origin(Box::new(pass_through(answer)))),
            failed => {
                if failed.is_err() {
                    self.count(|s| s.origin_fetches.unreachable += 1);
                }
                let kept = {
                    let mut state = self.state.borrow_mut();
                    held(&mut state).get_mut(&path).map(|list| {
                        list.until_ms = now.saturating_add(lifetime);
                        list.stale = true;
                        list.value.clone()
                    })
                };
                match (kept, failed) {
                    (Some(value), _) => Ok(List {
                        value,
                        hit: true,
                        stale: true,
                    }),
                    (None, Ok(answer)) => Err(Stop::Origin(Box::new(pass_through(answer)))),
                    (None, Err(_)) => Err(problem::origin_unavailable(unreachable).into()),
                }
            }
        }
    }
}
