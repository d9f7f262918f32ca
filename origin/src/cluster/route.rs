//! Where a request goes in a cluster, pure: from its method, path, query and (for the writes that
//! name their game in the body) its body, the game whose partition answers it; or that it is the
//! node's own (health, metrics, the cluster's table), content-addressed (snapshot parts, which
//! any partition may hold), or a batch whose events may belong to several partitions. Which of
//! these an operation is, the operations' table says (`http::api::OPERATIONS`, the same table
//! that writes the API document and drives the access tests), so a route added there is routed
//! here with nothing else to change.

use axum::http::Method;
use serde::Deserialize;

use crate::http::api::{CLUSTER_OPERATIONS, OPERATIONS, Partition};
use serde_json::value::RawValue;

/// What a request is for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Destination {
    /// A game's: its partition's owner answers.
    Game(String),
    /// A read of a game's boards: its partition's owner answers, or this node's warm copy of it.
    Read(String),
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
/// [`game_in_body`]), from the operations' table (`http::ops`): the operation matched by
/// method and path says where its partition comes from. A path or method no operation has is
/// any engine's to refuse. O(path length).
pub(super) fn target(method: &Method, path: &str, query: Option<&str>) -> Option<Destination> {
    let table = table();
    let Ok(matched) = table.at(path) else {
        return Some(Destination::Any);
    };
    let Some((_, partition)) = matched
        .value
        .iter()
        .find(|(m, _)| m.eq_ignore_ascii_case(method.as_str()))
    else {
        return Some(Destination::Any);
    };
    let game = |to: fn(String) -> Destination| {
        matched
            .params
            .get("game")
            .and_then(|raw| percent_encoding::percent_decode_str(raw).decode_utf8().ok())
            .map_or(Destination::Any, |game| to(game.into_owned()))
    };
    match partition {
        Partition::PathGame => Some(game(Destination::Game)),
        Partition::PathGameRead => Some(game(Destination::Read)),
        Partition::QueryGame => Some(query_game(query).map_or(Destination::Any, Destination::Game)),
        Partition::BodyGame => None,
        Partition::Batch => Some(Destination::Batch),
        Partition::Part => Some(Destination::Part),
        Partition::Node => Some(Destination::Node),
        Partition::Any => Some(Destination::Any),
    }
}

/// The operations (the single node's and the cluster's own) by path, each path with its
/// methods; built once.
fn table() -> &'static matchit::Router<Vec<(&'static str, Partition)>> {
    static TABLE: std::sync::OnceLock<matchit::Router<Vec<(&'static str, Partition)>>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_path: Vec<(&'static str, Vec<(&'static str, Partition)>)> = Vec::new();
        for op in OPERATIONS.iter().chain(CLUSTER_OPERATIONS) {
            match by_path.iter_mut().find(|(path, _)| *path == op.path) {
                Some((_, methods)) => methods.push((op.method, op.partition)),
                None => by_path.push((op.path, vec![(op.method, op.partition)])),
            }
        }
        let mut router = matchit::Router::new();
        for (path, methods) in by_path {
            // The table's paths are the router's, so they insert; a test walks every one.
            let _ = router.insert(path, methods);
        }
        router
    })
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

/// The games a batch body's events name (`None` for an event naming none), in one pass over the
/// body: most batches are one game's, and are sent on whole. `None` when the body is not a
/// batch whose events are all objects; [`split_batch`] then reads it.
pub(super) fn batch_games(body: &[u8]) -> Option<Vec<Option<String>>> {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        game: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Batch<'a> {
        #[serde(borrow)]
        events: Vec<Named<'a>>,
    }
    let batch: Batch = serde_json::from_slice(body).ok()?;
    Some(
        batch
            .events
            .into_iter()
            .map(|named| serde_json::from_str::<String>(named.game?.get()).ok())
            .collect(),
    )
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
pub(super) fn batch_results(answer: &[u8]) -> Option<BatchPart<'_>> {
    serde_json::from_slice::<BatchPart>(answer).ok()
}

/// What a partition answered for its part of a batch: the results, and the position of the
/// game it wrote to (`position`) or of each (`positions`).
#[derive(Deserialize)]
pub(super) struct BatchPart<'a> {
    #[serde(borrow)]
    pub(super) results: Vec<&'a RawValue>,
    #[serde(default)]
    pub(super) position: Option<String>,
    #[serde(default)]
    pub(super) positions: std::collections::BTreeMap<String, String>,
}

/// A batch's answer from results gathered in the request's order and the positions of the
/// games written to, printed as a single node prints it (`position` for one game, `positions`
/// for several).
pub(super) fn merged_answer(
    results: &[&RawValue],
    positions: &std::collections::BTreeMap<String, String>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.iter().map(|r| r.get().len() + 1).sum::<usize>() + 16);
    out.extend_from_slice(b"{\"results\":[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r.get().as_bytes());
    }
    out.push(b']');
    match positions.len() {
        0 => {}
        1 => {
            out.extend_from_slice(b",\"position\":");
            let (_, token) = positions.iter().next().expect("one");
            out.extend_from_slice(&serde_json::to_vec(token).unwrap_or_default());
        }
        _ => {
            out.extend_from_slice(b",\"positions\":");
            out.extend_from_slice(&serde_json::to_vec(positions).unwrap_or_default());
        }
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of the table, with its path filled in and `game=q` in the query, goes
    /// where its row says: to the path's game, the query's, the body's, split as a batch, to
    /// the part's holder, the node itself, or any engine; and each row's kind fits its path.
    #[test]
    fn every_operation_is_routed_where_the_table_says() {
        let mut seen = 0;
        for op in OPERATIONS.iter().chain(CLUSTER_OPERATIONS) {
            let path = op
                .path
                .replace("{game}", "a%20b")
                .replace('{', "x")
                .replace('}', "");
            let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
            let routed = target(&method, &path, Some("game=q"));
            let expected = match op.partition {
                Partition::PathGame => Some(Destination::Game("a b".into())),
                Partition::PathGameRead => Some(Destination::Read("a b".into())),
                Partition::QueryGame => Some(Destination::Game("q".into())),
                Partition::BodyGame => None,
                Partition::Batch => Some(Destination::Batch),
                Partition::Part => Some(Destination::Part),
                Partition::Node => Some(Destination::Node),
                Partition::Any => Some(Destination::Any),
            };
            assert_eq!(routed, expected, "{} {}", op.method, op.path);
            assert_eq!(
                matches!(op.partition, Partition::PathGame | Partition::PathGameRead),
                op.path.contains("{game}"),
                "{} {}: a path naming the game routes by it",
                op.method,
                op.path
            );
            seen += 1;
        }
        assert!(seen >= 30, "{seen} operations");
        let get = Method::GET;
        // A query's game given twice, none, an unknown path or method: any engine refuses.
        assert_eq!(
            target(&get, "/v1/audit", Some("game=g6&game=g1")),
            Some(Destination::Any)
        );
        assert_eq!(target(&get, "/v1/audit", None), Some(Destination::Any));
        assert_eq!(target(&get, "/nowhere", None), Some(Destination::Any));
        assert_eq!(
            target(&Method::DELETE, "/v1/score-events", None),
            Some(Destination::Any)
        );
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
        let part = batch_results(answer).unwrap();
        assert_eq!(merged_answer(&part.results, &part.positions), answer);
        let one = br#"{"results":[{"x":1}],"position":"p1-0000000a-3"}"#;
        let part = batch_results(one).unwrap();
        assert_eq!(part.position.as_deref(), Some("p1-0000000a-3"));
        let both = [
            ("a".to_string(), "p1-0000000a-3".to_string()),
            ("b".into(), "p1-0000000b-9".into()),
        ]
        .into();
        assert_eq!(
            merged_answer(&part.results, &both),
            br#"{"results":[{"x":1}],"positions":{"a":"p1-0000000a-3","b":"p1-0000000b-9"}}"#
        );
        assert!(split_batch(b"{\"events\":[],\"more\":1}").is_none());
        // The one-pass reading names the same games, and gives up where an event is no object.
        let one = br#"{"events":[{"game":"a","event_id":"1"},{"game":"b"},{"nogame":1},{"game":7}]}"#;
        let games = batch_games(one).unwrap();
        let split: Vec<Option<String>> = split_batch(one)
            .unwrap()
            .events
            .into_iter()
            .map(|(_, g)| g)
            .collect();
        assert_eq!(games, split);
        assert_eq!(batch_games(body), None);
        assert_eq!(batch_games(b"{\"events\":[],\"more\":1}"), None);
        assert_eq!(game_in_body(br#"{"game":"g\u0041"}"#).as_deref(), Some("gA"));
        assert_eq!(game_in_body(br#"{"game":7}"#), None);
    }
}
