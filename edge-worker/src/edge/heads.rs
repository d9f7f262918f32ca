//! The board instance's head: held while fresh, refreshed by one read per lifetime, kept in the
//! Cache API for when the origin is down, and for a read that names an `at`, asked for in the
//! one canonical form of the instance that holds it.

use std::rc::Rc;

use http::StatusCode;
use http::header::{CACHE_CONTROL, RETRY_AFTER};
use serde::Deserialize;
use standings_core::contract::head::Head;
use standings_core::contract::query::Query;
use standings_core::json::{RFC3339_RANGE_MS, parse_rfc3339, write_rfc3339};

use super::{DEFAULT_HEAD_LIFETIME_MS, Edge, FOREVER_SECONDS, Fallback, Spend, Stop, make_room};
use crate::instances::Range;
use crate::platform::{Cache, Clock, Origin, Response, Unavailable, pass_through};
use crate::problem::{self, Code};
use crate::route::BoardPath;

/// How long other reads wait on one read's head refresh before asking the origin themselves.
const REFRESH_TIMEOUT_MS: i64 = 5_000;
/// How long a head refused `SNAPSHOT_INSTANCES_FULL` is not asked for again when the origin
/// names no `Retry-After`: meanwhile its reads go to the origin's read API straight away.
const DEFAULT_RETRY_AFTER_SECONDS: u64 = 10;
/// The longest such wait the edge takes from a `Retry-After`.
const MAX_RETRY_AFTER_SECONDS: u64 = 60;

/// A head as one read uses it.
#[derive(Clone, Debug)]
pub(super) struct HeadRead {
    pub(super) head: Rc<Head>,
    /// The origin could not be asked for a newer one.
    pub(super) stale: bool,
}

/// A head held in the isolate.
#[derive(Debug)]
pub(super) struct HeldHead {
    head: Rc<Head>,
    /// Until when it is used without asking the origin again.
    until_ms: i64,
    /// Held past its lifetime because the origin was unreachable.
    stale: bool,
    /// When a read of this isolate started asking the origin for a newer head, if one is
    /// asking: meanwhile the other reads answer from this one rather than ask too.
    refreshing_since: Option<i64>,
}

/// How a read names its instance's head, from its `period` and `at`.
#[derive(Debug)]
enum Asked {
    /// No `at`: the current instance, asked for and held under the path without `at`.
    Current,
    /// An `at` in a range learned here: that instance, asked for and held in its canonical
    /// form ([`instance_head_path`]).
    Placed {
        /// The `at` as the reader sent it.
        raw: String,
        at_ms: i64,
        range: Range,
    },
    /// An `at` the edge cannot place: not RFC 3339 as the core reads it, outside the times the
    /// origin reads, or in no range learned here. Sent as it came, for the origin to resolve or
    /// refuse in its words; its answer names the range, and is held in the canonical form.
    Unplaced {
        /// The `at` as the reader sent it.
        raw: String,
    },
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// The board instance's head: held if fresh, else asked of the origin; when the origin
    /// cannot answer, the last one held here or in the Cache API, marked stale; when it follows
    /// as many instances as it may, the read goes to its read API.
    ///
    /// A read's `at` names its instance. Placed in a range learned from an earlier head, it
    /// asks for that instance in one canonical form, so any number of `at`s of one day cost one
    /// held head, one Cache API entry and one instance followed at the origin. One the edge
    /// cannot place is sent as it came, once, and the answer teaches its range. O(log
    /// instances) when held, plus the fetch (and the manifest's) when not.
    pub(super) async fn head(
        &self,
        board: &BoardPath,
        query: Query<'_>,
        spend: &mut Spend,
    ) -> Result<HeadRead, Stop> {
        let current = head_path(board, query.get("period").as_deref());
        let asked = match query.get("at") {
            None => Asked::Current,
            Some(raw) => {
                // A time the core reads but the origin does not (past the range of its
                // timestamps) stays the origin's to refuse.
                let at_ms = parse_rfc3339(&raw).filter(|at| RFC3339_RANGE_MS.contains(at));
                let placed = at_ms.and_then(|at| self.state.borrow_mut().instances.place(&current, at));
                let raw = raw.into_owned();
                match (at_ms, placed) {
                    (Some(at_ms), Some(range)) => Asked::Placed { raw, at_ms, range },
                    _ => Asked::Unplaced { raw },
                }
            }
        };
        let misplaced = || problem::bad_origin_answer("the origin's head is not of the instance asked for");
        if let Some(read) = self.head_as(&current, &asked, spend).await? {
            return Ok(read);
        }
        // The origin resolved the canonical `at` to an instance that does not hold the
        // reader's (the range learned for it is forgotten now): ask with the reader's own,
        // which the origin resolves itself. Only a placed `at` is answered `None`.
        let Asked::Placed { raw, .. } = asked else {
            return Err(misplaced().into());
        };
        self.head_as(&current, &Asked::Unplaced { raw }, spend)
            .await?
            .ok_or_else(|| misplaced().into())
    }

    /// [`Edge::head`] asked one way, `current` being the head path of the board and period
    /// without `at`. `None` only for a placed `at` that the instance the origin answered does
    /// not hold.
    async fn head_as(
        &self,
        current: &str,
        asked: &Asked,
        spend: &mut Spend,
    ) -> Result<Option<HeadRead>, Stop> {
        // Where the head is held: known before asking, but for an unplaced `at`, whose
        // instance only the answer names.
        let (held_at, path) = match asked {
            Asked::Current => (Some(current.to_string()), current.to_string()),
            Asked::Placed { range, .. } => {
                let path = instance_head_path(current, range);
                (Some(path.clone()), path)
            }
            Asked::Unplaced { raw } => (None, with_at(current, raw)),
        };
        let now = self.now_ms();
        if let Some(key) = &held_at {
            let mut state = self.state.borrow_mut();
            if let Some(held) = state.heads.get(key) {
                // One read refreshes an expired head; the reads that arrive while it asks
                // answer from the head held (one origin round trip older), so a busy isolate
                // asks once per lifetime. A refresh that never finished (its request was
                // dropped) is taken over after REFRESH_TIMEOUT_MS.
                let refreshing = held
                    .refreshing_since
                    .is_some_and(|since| now.saturating_sub(since) < REFRESH_TIMEOUT_MS);
                if now < held.until_ms || refreshing {
                    return Ok(Some(HeadRead {
                        head: held.head.clone(),
                        stale: held.stale,
                    }));
                }
            }
            if state.refusals.get(key).is_some_and(|until| now < *until) {
                return Err(Stop::Forward(Fallback::InstancesFull));
            }
            if let Some(held) = state.heads.get_mut(key) {
                held.refreshing_since = Some(now);
            }
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.head += 1);
        let answer = self.origin_get(&path).await;
        match answer {
            Ok(answer) if answer.status() == StatusCode::OK => {
                let head = Rc::new(Head::parse(answer.body()).ok_or_else(|| {
                    problem::bad_origin_answer(format!("the origin's head at {path} is not a head"))
                })?);
                let range = Range::of(&head);
                self.learn(current, range);
                if let Asked::Placed { at_ms, .. } = asked
                    && !range.holds(*at_ms)
                {
                    return Ok(None);
                }
                let key = match asked {
                    Asked::Current => current.to_string(),
                    Asked::Placed { .. } | Asked::Unplaced { .. } => instance_head_path(current, &range),
                };
                let lifetime_ms = answer
                    .headers()
                    .get(CACHE_CONTROL)
                    .and_then(|v| v.to_str().ok())
                    .and_then(max_age_seconds)
                    .map_or(DEFAULT_HEAD_LIFETIME_MS, |s| {
                        i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX)
                    });
                // The new head reaches the isolate's other reads only with its manifest
                // decoded: meanwhile they answer from the head held, rather than each fetch and
                // decode the same manifest (the largest part, hundreds of KB on a large board).
                if let Err(stop) = self.version(&head, spend).await {
                    if let Some(held) = self.state.borrow_mut().heads.get_mut(&key) {
                        held.refreshing_since = None;
                    }
                    return Err(stop);
                }
                {
                    let mut state = self.state.borrow_mut();
                    state.head_lifetime_ms = lifetime_ms;
                    state.refusals.remove(&key);
                    make_room(&mut state.heads, now, |h| h.until_ms);
                    state.heads.insert(
                        key.clone(),
                        HeldHead {
                            head: head.clone(),
                            until_ms: now.saturating_add(lifetime_ms),
                            stale: false,
                            refreshing_since: None,
                        },
                    );
                }
                self.defer_put(&format!("/head{key}"), answer.body(), FOREVER_SECONDS);
                Ok(Some(HeadRead { head, stale: false }))
            }
            Ok(answer) if answer.status().as_u16() < 500 => {
                // The origin no longer serves this instance (or this caller): nothing held for
                // it answers any more.
                if let Some(key) = &held_at {
                    self.state.borrow_mut().heads.remove(key);
                }
                Err(Stop::Origin(Box::new(pass_through(answer))))
            }
            Ok(answer) if let Some(wait_ms) = instances_full(&answer) => {
                // The instance is there, but the origin will not follow it now: its read API
                // answers, and for a head the edge can name it is not asked again meanwhile.
                if let Some(key) = held_at {
                    let mut state = self.state.borrow_mut();
                    if let Some(held) = state.heads.get_mut(&key) {
                        held.refreshing_since = None;
                    }
                    make_room(&mut state.refusals, now, |until| *until);
                    state.refusals.insert(key, now.saturating_add(wait_ms));
                }
                Err(Stop::Forward(Fallback::InstancesFull))
            }
            failed => {
                if failed.is_err() {
                    self.count(|s| s.origin_fetches.unreachable += 1);
                }
                // An unplaced `at` names no head held here or in the Cache API.
                let Some(key) = held_at else {
                    return Err(no_head(failed));
                };
                let held = self.state.borrow().heads.get(&key).map(|h| h.head.clone());
                let head = match held {
                    Some(head) => Some(head),
                    None => self
                        .cache
                        .get(&format!("/head{key}"))
                        .await
                        .and_then(|b| Head::parse(&b))
                        .map(Rc::new),
                };
                let Some(head) = head else {
                    return Err(no_head(failed));
                };
                // Wait one head lifetime before asking again, so a down origin is not asked
                // on every read.
                let mut state = self.state.borrow_mut();
                let until_ms = now.saturating_add(state.head_lifetime_ms);
                make_room(&mut state.heads, now, |h| h.until_ms);
                state.heads.insert(
                    key,
                    HeldHead {
                        head: head.clone(),
                        until_ms,
                        stale: true,
                        refreshing_since: None,
                    },
                );
                Ok(Some(HeadRead { head, stale: true }))
            }
        }
    }

    /// Learns the range of a head of the period whose current head path is `current`, and
    /// lets go of the heads held for the ranges that went (replaced, or out of room), so the
    /// held heads stay as bounded as the ranges. O(log instances) per range.
    fn learn(&self, current: &str, range: Range) {
        let mut state = self.state.borrow_mut();
        for (period, gone) in state.instances.learn(current, range) {
            // An unbounded instance's head is the current one, which stays useful.
            if gone.start_ms.is_some() {
                state.heads.remove(&instance_head_path(&period, &gone));
            }
        }
    }
}

/// Why a read has no head when the origin did not give one and none is held: its error answer
/// passed on, or unreachable.
fn no_head(failed: Result<Response, Unavailable>) -> Stop {
    match failed {
        Ok(answer) => Stop::Origin(Box::new(pass_through(answer))),
        Err(_) => problem::origin_unavailable(
            "the origin is unreachable and the edge holds no snapshot of this board; retry shortly",
        )
        .into(),
    }
}

/// The origin's head path of `board` for the reader's `period` (the current instance): the
/// key its instances are learned under. O(length).
fn head_path(board: &BoardPath, period: Option<&str>) -> String {
    let mut path = format!("/v1/snapshots/{}/head", board.raw);
    if let Some(period) = period {
        path.push('?');
        path.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .append_pair("period", period)
                .finish(),
        );
    }
    path
}

/// `current` (a [`head_path`]) with `at` added, encoded. O(length).
fn with_at(current: &str, at: &str) -> String {
    let at = form_urlencoded::Serializer::new(String::new())
        .append_pair("at", at)
        .finish();
    let separator = if current.contains('?') { '&' } else { '?' };
    format!("{current}{separator}{at}")
}

/// The one head path of the instance `range` of the period whose current head path is
/// `current`: `at=` the instance's start as the core prints times, so every `at` inside it
/// names this path; `current` itself for an unbounded instance (all time), whose head is the
/// same at any `at`. O(length).
fn instance_head_path(current: &str, range: &Range) -> String {
    let Some(start_ms) = range.start_ms else {
        return current.to_string();
    };
    let mut at = Vec::with_capacity(24);
    write_rfc3339(&mut at, start_ms);
    with_at(current, &String::from_utf8_lossy(&at))
}

/// How long not to ask again for a head the origin refused `503 SNAPSHOT_INSTANCES_FULL`: its
/// `Retry-After` in seconds, within [`MAX_RETRY_AFTER_SECONDS`]; `None` for any other answer.
/// O(answer length).
fn instances_full(answer: &Response) -> Option<i64> {
    #[derive(Deserialize)]
    struct Coded {
        code: String,
    }
    if answer.status() != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let problem: Coded = serde_json::from_slice(answer.body()).ok()?;
    if problem.code != Code::SNAPSHOT_INSTANCES_FULL.name {
        return None;
    }
    let seconds = answer
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_RETRY_AFTER_SECONDS)
        .min(MAX_RETRY_AFTER_SECONDS);
    Some(i64::try_from(seconds * 1000).unwrap_or(i64::MAX))
}

/// The `max-age` of a `Cache-Control` value, in seconds. O(length).
fn max_age_seconds(cache_control: &str) -> Option<u64> {
    cache_control
        .split(',')
        .filter_map(|d| d.trim().strip_prefix("max-age="))
        .find_map(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head's lifetime is the `max-age` of its `Cache-Control`, when it names one.
    #[test]
    fn max_age_is_read() {
        assert_eq!(max_age_seconds("public, max-age=1"), Some(1));
        assert_eq!(max_age_seconds("no-store"), None);
    }
}
