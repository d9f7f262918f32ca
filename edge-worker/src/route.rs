//! Which of its own endpoints a request names: a table of method, path and endpoint, matched by
//! `matchit` (the router axum uses, in its route syntax) on the path as sent, each parameter
//! then percent-decoded as axum's `Path` decodes it. Anything the table does not name is the
//! origin's to answer, refusals of malformed paths included.

use http::Method;
use matchit::{Params, Router};
use percent_encoding::percent_decode_str;

/// The four parts of a board in a path, as sent and decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardPath {
    /// `game/mode/season/scope` as sent (still percent-encoded), for the origin's URLs.
    pub raw: String,
    /// The decoded game, mode, season and scope.
    pub parts: [String; 4],
}

impl BoardPath {
    /// The game.
    pub fn game(&self) -> &str {
        &self.parts[0]
    }
}

/// A request the edge answers itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET .../top`.
    Top(BoardPath),
    /// `GET .../players/{player}/rank`.
    Rank(BoardPath, String),
    /// `GET .../players/{player}/nearby`.
    Nearby(BoardPath, String),
    /// `GET .../friends-of/{player}`.
    FriendsOf(BoardPath, String),
    /// `POST .../rank-players`.
    RankPlayers(BoardPath),
    /// `GET /v1/games/{game}/boards`.
    Boards(String),
    /// `GET .../subscribe`, a live subscription.
    Subscribe(BoardPath),
    /// `GET /edge/stats`.
    Stats,
}

/// The endpoints, without their parameters: what the table maps a path to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Top,
    Rank,
    Nearby,
    FriendsOf,
    RankPlayers,
    Boards,
    Subscribe,
    Stats,
}

/// Every endpoint the edge serves: its method, its path in the origin's route syntax, and what
/// it is.
const TABLE: [(Method, &str, Endpoint); 8] = [
    (
        Method::GET,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/top",
        Endpoint::Top,
    ),
    (
        Method::GET,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/players/{player}/rank",
        Endpoint::Rank,
    ),
    (
        Method::GET,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/players/{player}/nearby",
        Endpoint::Nearby,
    ),
    (
        Method::GET,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/friends-of/{player}",
        Endpoint::FriendsOf,
    ),
    (
        Method::POST,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/rank-players",
        Endpoint::RankPlayers,
    ),
    (Method::GET, "/v1/games/{game}/boards", Endpoint::Boards),
    (
        Method::GET,
        "/v1/leaderboards/{game}/{mode}/{season}/{scope}/subscribe",
        Endpoint::Subscribe,
    ),
    (Method::GET, "/edge/stats", Endpoint::Stats),
];

/// The table, compiled once per isolate.
#[derive(Clone, Debug)]
pub struct Routes {
    router: Router<(Method, Endpoint)>,
}

impl Default for Routes {
    fn default() -> Routes {
        let mut router = Router::new();
        for (method, path, endpoint) in TABLE {
            // The table is fixed and its paths do not conflict (every test builds it).
            if let Err(conflict) = router.insert(path, (method, endpoint)) {
                unreachable!("the edge's route table conflicts: {conflict}");
            }
        }
        Routes { router }
    }
}

impl Routes {
    /// The route `method` and `path` (as sent, percent-encoded) name, or `None` for the
    /// origin's: writes, other reads, any path or method the edge does not serve, and an empty
    /// parameter or one that is not UTF-8 once decoded (the origin refuses those in its
    /// words). O(path length).
    pub fn route(&self, method: &Method, path: &str) -> Option<Route> {
        let matched = self.router.at(path).ok()?;
        let (allowed, endpoint) = matched.value;
        if allowed != method {
            return None;
        }
        let params = &matched.params;
        let board = || -> Option<BoardPath> {
            let raw = ["game", "mode", "season", "scope"].map(|name| params.get(name).unwrap_or_default());
            Some(BoardPath {
                raw: raw.join("/"),
                parts: [decode(raw[0])?, decode(raw[1])?, decode(raw[2])?, decode(raw[3])?],
            })
        };
        let player = || param(params, "player");
        Some(match endpoint {
            Endpoint::Top => Route::Top(board()?),
            Endpoint::Rank => Route::Rank(board()?, player()?),
            Endpoint::Nearby => Route::Nearby(board()?, player()?),
            Endpoint::FriendsOf => Route::FriendsOf(board()?, player()?),
            Endpoint::RankPlayers => Route::RankPlayers(board()?),
            Endpoint::Boards => Route::Boards(param(params, "game")?),
            Endpoint::Subscribe => Route::Subscribe(board()?),
            Endpoint::Stats => Route::Stats,
        })
    }
}

/// The parameter `name`, decoded.
fn param(params: &Params<'_, '_>, name: &str) -> Option<String> {
    decode(params.get(name)?)
}

/// A path segment percent-decoded; `None` when it is empty (the router matches an empty
/// parameter, which no board or player is named) or not UTF-8 once decoded.
fn decode(segment: &str) -> Option<String> {
    if segment.is_empty() {
        return None;
    }
    percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(|decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str) -> Option<Route> {
        Routes::default().route(&Method::from_bytes(method.as_bytes()).unwrap(), path)
    }

    /// Each read path and method is matched, decoded; other methods and paths are not.
    #[test]
    fn paths_match_the_origins_routes() {
        let board = BoardPath {
            raw: "g/m/s/region%3Aeu".into(),
            parts: ["g".into(), "m".into(), "s".into(), "region:eu".into()],
        };
        let base = "/v1/leaderboards/g/m/s/region%3Aeu";
        assert_eq!(
            route("GET", &format!("{base}/top")),
            Some(Route::Top(board.clone()))
        );
        assert_eq!(
            route("GET", &format!("{base}/players/p%20q/rank")),
            Some(Route::Rank(board.clone(), "p q".into()))
        );
        assert_eq!(
            route("GET", &format!("{base}/players/p/nearby")),
            Some(Route::Nearby(board.clone(), "p".into()))
        );
        assert_eq!(
            route("GET", &format!("{base}/friends-of/p")),
            Some(Route::FriendsOf(board.clone(), "p".into()))
        );
        assert_eq!(
            route("POST", &format!("{base}/rank-players")),
            Some(Route::RankPlayers(board))
        );
        assert_eq!(
            route("GET", "/v1/games/g/boards"),
            Some(Route::Boards("g".into()))
        );
        assert_eq!(route("GET", "/edge/stats"), Some(Route::Stats));
        for (method, path) in [
            ("POST", format!("{base}/top")),
            ("GET", format!("{base}/rank-players")),
            ("GET", format!("{base}/digest")),
            ("GET", format!("{base}/top/")),
            ("GET", "/v1/leaderboards/g/m/s/results".to_string()),
            ("GET", "/v1/leaderboards//m/s/c/top".to_string()),
            ("GET", format!("{base}/players/%ff/rank")),
            ("PUT", "/v1/boards/g/m/s/c".to_string()),
            ("POST", "/edge/stats".to_string()),
            ("GET", "/healthz".to_string()),
        ] {
            assert_eq!(route(method, &path), None, "{method} {path}");
        }
    }

    /// A `%` that starts no escape is kept as it is, as axum's `Path` keeps it.
    #[test]
    fn a_stray_percent_is_kept() {
        assert_eq!(
            route("GET", "/v1/leaderboards/g/m/s/c/players/50%25%/rank"),
            Some(Route::Rank(
                BoardPath {
                    raw: "g/m/s/c".into(),
                    parts: ["g".into(), "m".into(), "s".into(), "c".into()],
                },
                "50%%".into()
            ))
        );
    }
}
