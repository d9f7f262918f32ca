//! Where a request goes in a cluster, pure: from its method, path, query and (for the writes that
//! name their game in the body) its body, the game whose partition answers it; or that it is the
//! node's own (health, metrics, the cluster's table), content-addressed (snapshot parts, which
//! any partition may hold), or a batch whose events may belong to several partitions.

use axum::http::Method;
use serde::Deserialize;
use serde_json::value::RawValue;

/// What a request is for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A game's: its partition's owner answers.
    Game(String),
    /// The node's own: health, readiness, metrics, the cluster's table.
    Node,
    /// Served the same by any node (the API document, the viewer, token introspection, an
    /// unknown route, a body no route can read): the first partition this node owns answers.
    Any,
    /// A snapshot part, named by its hash: whichever partition holds it.
    Part,
    /// A batch of events, routed event by event.
    Batch,
}

/// Where the request goes, when the body is not needed to tell (`None`: read the body and ask
/// [`game_in_body`]).
pub(super) fn target(method: &Method, path: &str, query: Option<&str>) -> Option<Target> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let decoded = |i: usize| -> Option<String> {
        let raw = segments.get(i)?;
        percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    let game_at = |i: usize| Some(decoded(i).map_or(Target::Any, Target::Game));
    match segments.as_slice() {
        ["healthz"] | ["readyz"] | ["metrics"] | ["v1", "cluster"] => Some(Target::Node),
        ["v1", "leaderboards" | "boards" | "games" | "seasons", _, ..] => game_at(2),
        ["v1", "snapshots", "manifests" | "chunks", ..] => Some(Target::Part),
        ["v1", "snapshots", _, _, _, _, "head"] => game_at(2),
        ["v1", "score-events", "batch"] if method == Method::POST => Some(Target::Batch),
        ["v1", "score-events"] | ["v1", "moderation-actions"] if method == Method::POST => None,
        ["v1", "late-events", _, "decision"] if method == Method::POST => {
            // The body's game comes first; the query's when the body has none.
            None
        }
        ["v1", "late-events"] | ["v1", "audit"] => Some(query_game(query).map_or(Target::Any, Target::Game)),
        _ => Some(Target::Any),
    }
}

/// The `game` of a query string; `None` when it names none, or more than one, which any
/// engine refuses as the handler does (a `game` given twice is a 400 there).
pub(super) fn query_game(query: Option<&str>) -> Option<String> {
    let mut games = form_urlencoded::parse(query?.as_bytes()).filter(|(k, _)| k == "game");
    let game = games.next()?.1.into_owned();
    games.next().is_none().then_some(game)
}

/// The game a body names at its top level, if it is a JSON object with a string `game`.
pub(super) fn game_in_body(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        game: Option<&'a RawValue>,
    }
    let named: Named = serde_json::from_slice(body).ok()?;
    serde_json::from_str::<String>(named.game?.get()).ok()
}

/// A batch's events, each raw, with its game when it names one.
pub(super) struct Split<'a> {
    /// The events in the request's order.
    pub(super) events: Vec<(&'a RawValue, Option<String>)>,
}

/// Reads a batch body (`{"events": [...]}`) to split it; `None` when it is not one, and then a
/// single node's answer (a 400) is the answer.
pub(super) fn split_batch(body: &[u8]) -> Option<Split<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Batch<'a> {
        #[serde(borrow)]
        events: Vec<&'a RawValue>,
    }
    let batch: Batch = serde_json::from_slice(body).ok()?;
    Some(Split {
        events: batch
            .events
            .into_iter()
            .map(|raw| (raw, game_in_body(raw.get().as_bytes())))
            .collect(),
    })
}

/// A batch body of some of a batch's events.
pub(super) fn batch_body(events: &[&RawValue]) -> Vec<u8> {
    let mut body = Vec::with_capacity(events.iter().map(|e| e.get().len() + 1).sum::<usize>() + 16);
    body.extend_from_slice(b"{\"events\":[");
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(e.get().as_bytes());
    }
    body.extend_from_slice(b"]}");
    body
}

/// The per-event results of a batch's answer (`{"results": [...]}`), raw.
pub(super) fn batch_results(answer: &[u8]) -> Option<Vec<&RawValue>> {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        results: Vec<&'a RawValue>,
    }
    serde_json::from_slice::<Answer>(answer).ok().map(|a| a.results)
}

/// A batch's answer from results gathered in the request's order, printed as a single node
/// prints it.
pub(super) fn merged_answer(results: &[&RawValue]) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.iter().map(|r| r.get().len() + 1).sum::<usize>() + 16);
    out.extend_from_slice(b"{\"results\":[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r.get().as_bytes());
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_told_where_it_goes() {
        let get = Method::GET;
        let game = |g: &str| Some(Target::Game(g.into()));
        assert_eq!(
            target(&get, "/v1/leaderboards/arena/m/s/global/top", None),
            game("arena")
        );
        assert_eq!(
            target(&Method::PUT, "/v1/boards/a%20b/m/s/global", None),
            game("a b")
        );
        assert_eq!(target(&get, "/v1/games/g1/players/p/friends", None), game("g1"));
        assert_eq!(target(&get, "/v1/seasons/g1/s1/state", None), game("g1"));
        assert_eq!(target(&get, "/v1/snapshots/g1/m/s/global/head", None), game("g1"));
        assert_eq!(
            target(&get, "/v1/snapshots/manifests/abc", None),
            Some(Target::Part)
        );
        assert_eq!(
            target(&get, "/v1/snapshots/chunks", Some("h=1")),
            Some(Target::Part)
        );
        assert_eq!(
            target(&Method::POST, "/v1/score-events/batch", None),
            Some(Target::Batch)
        );
        assert_eq!(target(&Method::POST, "/v1/score-events", None), None);
        assert_eq!(target(&Method::POST, "/v1/moderation-actions", None), None);
        assert_eq!(target(&Method::POST, "/v1/late-events/e1/decision", None), None);
        assert_eq!(target(&get, "/v1/late-events", Some("game=g2")), game("g2"));
        assert_eq!(
            target(&get, "/v1/audit", Some("game=g6&game=g1")),
            Some(Target::Any)
        );
        assert_eq!(target(&get, "/v1/audit", None), Some(Target::Any));
        assert_eq!(target(&get, "/metrics", None), Some(Target::Node));
        assert_eq!(target(&get, "/v1/cluster", None), Some(Target::Node));
        assert_eq!(target(&get, "/openapi.json", None), Some(Target::Any));
        assert_eq!(target(&get, "/nowhere", None), Some(Target::Any));
    }

    #[test]
    fn a_batch_splits_and_its_answers_merge_in_order() {
        let body = br#"{"events":[{"game":"a","event_id":"1"},{"game":"b"},{"nogame":1},7]}"#;
        let split = split_batch(body).unwrap();
        let games: Vec<Option<&str>> = split.events.iter().map(|(_, g)| g.as_deref()).collect();
        assert_eq!(games, [Some("a"), Some("b"), None, None]);
        let sub = batch_body(&[split.events[0].0, split.events[3].0]);
        assert_eq!(sub, br#"{"events":[{"game":"a","event_id":"1"},7]}"#);
        let answer = br#"{"results":[{"event_id":"1","status":"ACCEPTED"},{"x":2}]}"#;
        let results = batch_results(answer).unwrap();
        assert_eq!(merged_answer(&results), answer);
        assert!(split_batch(b"{\"events\":[],\"more\":1}").is_none());
        assert_eq!(game_in_body(br#"{"game":"g\u0041"}"#).as_deref(), Some("gA"));
        assert_eq!(game_in_body(br#"{"game":7}"#), None);
    }
}
