//! Which of its own paths a request names, matched as the origin's router matches them (path
//! segments percent-decoded); anything else is the origin's to answer.

use crate::platform::HttpRequest;

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
    /// `GET /edge/stats`.
    Stats,
}

impl Route {
    /// The route `request` names, or `None` for the origin's paths (writes, other reads, any
    /// path or method the edge does not serve). O(path length).
    pub fn of(request: &HttpRequest) -> Option<Route> {
        let get = request.method == "GET";
        if request.path == "/edge/stats" {
            return get.then_some(Route::Stats);
        }
        let segments: Vec<&str> = request.path.strip_prefix('/')?.split('/').collect();
        match segments.as_slice() {
            ["v1", "games", game, "boards"] if get => Some(Route::Boards(decode(game)?)),
            ["v1", "leaderboards", g, m, s, c, rest @ ..] => {
                let board = BoardPath {
                    raw: format!("{g}/{m}/{s}/{c}"),
                    parts: [decode(g)?, decode(m)?, decode(s)?, decode(c)?],
                };
                match (request.method.as_str(), rest) {
                    ("GET", ["top"]) => Some(Route::Top(board)),
                    ("GET", ["players", p, "rank"]) => Some(Route::Rank(board, decode(p)?)),
                    ("GET", ["players", p, "nearby"]) => Some(Route::Nearby(board, decode(p)?)),
                    ("GET", ["friends-of", p]) => Some(Route::FriendsOf(board, decode(p)?)),
                    ("POST", ["rank-players"]) => Some(Route::RankPlayers(board)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// A path segment percent-decoded as the origin's router decodes it; `None` for an empty
/// segment or one that is not UTF-8 once decoded (the origin's router answers those).
fn decode(segment: &str) -> Option<String> {
    if segment.is_empty() {
        return None;
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|&b| hex(b)),
                bytes.get(i + 2).and_then(|&b| hex(b)),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str) -> Option<Route> {
        Route::of(&HttpRequest {
            method: method.into(),
            path: path.into(),
            ..HttpRequest::default()
        })
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
}
