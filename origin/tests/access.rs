//! The access matrix: every documented operation, called by every kind of caller on its own game
//! and on another, answers the status the API promises, through the real router on SQLite and
//! PostgreSQL. The rows come from the operation table, and [`spec`] must name every operation,
//! so no route can be added without saying who may call it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::Clock;
use standings_origin::config::{Role, TokenConfig};
use standings_origin::http::api::{OPERATIONS, Operation};
use standings_origin::http::auth::sign_jwt;

on_both_databases!(every_operation_answers_every_caller_as_promised);

/// The game every matrix token belongs to.
const OWN: &str = "arena-clash";
/// A game none of them may touch; its boards exist, so a leak would answer 200, not 404.
const OTHER: &str = "other-game";
/// The player the player tokens read as, and another one.
const SELF_PLAYER: &str = "p-ava";
const OTHER_PLAYER: &str = "p-ben";
/// A season every board of both games has, published in the set-up so its results answer.
const PUBLISHED: &str = "SP";

const ARENA_PLAYER: &str = "matrix-player-secret-000000000";
const ARENA_SERVICE: &str = "matrix-service-secret-00000000";
const ARENA_MODERATOR: &str = "matrix-moderator-secret-000000";
const ARENA_ADMIN: &str = "matrix-admin-secret-0000000000";
const ARENA_EDGE: &str = "matrix-edge-secret-00000000000";

/// Who may call an operation, as the API promises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Anyone, with any Authorization header or none.
    Open,
    /// Any valid token of the game.
    Read,
    /// A player token for its own player; a service, moderator, admin or edge token of the game
    /// for anyone.
    ReadOwn,
    /// A service, moderator or admin token of the game.
    Write,
    /// A moderator or admin token of the game.
    Moderate,
    /// An admin token of the game.
    Administer,
    /// An edge or admin token; the game is the one of the token asked about, and a caller of
    /// another game hears that token is not active rather than 403.
    Introspect,
    /// An edge or admin token of the game (for a part, of the game that published it); a
    /// player is refused, as a snapshot holds every player's score (anyone with public_reads,
    /// which the matrix does not turn on).
    Snapshot,
}

impl Access {
    /// The operation table's name for it, checked against the table's `security`.
    fn documented_as(self) -> &'static str {
        match self {
            Access::Open => "none",
            Access::Read => "read",
            Access::ReadOwn => "read-own",
            Access::Write => "service",
            Access::Moderate => "moderator",
            Access::Administer => "admin",
            Access::Introspect => "edge",
            Access::Snapshot => "snapshot",
        }
    }
}

/// What one row sends: the operation's path filled for a game and a player, and a body.
struct Fill<'a> {
    template: &'a str,
    game: &'a str,
    player: &'a str,
    /// Unique to the request, for ids and seasons that must be new.
    n: u64,
    /// A published manifest and one of its chunks, per game (see [`publish_snapshots`]).
    snapshots: &'a [SnapshotParts],
}

/// The hashes of a snapshot one game published, which only that game's callers may fetch.
struct SnapshotParts {
    game: &'static str,
    manifest: String,
    chunk: String,
}

impl Fill<'_> {
    /// The path with `season` for `{season}`.
    fn path_in(&self, season: &str) -> String {
        self.template
            .replace("{game}", self.game)
            .replace("{mode}", "solo")
            .replace("{season}", season)
            .replace("{scope}", "global")
            .replace("{player_id}", self.player)
            .replace("{event_id}", &format!("no-such-event-{}", self.n))
    }

    fn path(&self) -> String {
        self.path_in("S7")
    }

    /// The path of a part this row's game published: its manifest or its first rank chunk.
    fn part_path(&self) -> String {
        let parts = self
            .snapshots
            .iter()
            .find(|p| p.game == self.game)
            .expect("every game published a snapshot in the set-up");
        let hash = if self.template.contains("/manifests/") {
            &parts.manifest
        } else {
            &parts.chunk
        };
        self.template.replace("{hash}", hash)
    }

    /// A bundle of the chunk this row's game published (a hash may be named once).
    fn bundle_path(&self) -> String {
        let parts = self
            .snapshots
            .iter()
            .find(|p| p.game == self.game)
            .expect("every game published a snapshot in the set-up");
        format!("{}?hashes={}", self.template, parts.chunk)
    }

    /// An event that raises its player's best (the set-up's are 100), so that one accepted
    /// where it should not be shows on the board.
    fn event(&self) -> Value {
        let mut e = event(
            &format!("matrix-{}", self.n),
            self.player,
            1_000 + self.n as i64,
            "2026-10-13T10:00:00Z",
        );
        e["game"] = json!(self.game);
        e
    }
}

/// What a row must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Promise {
    /// This status.
    Status(u16),
    /// This status with this problem code.
    Refused(u16, &'static str),
    /// 200, with the batch's one event answered with this status and, if named, this code.
    BatchEvent(&'static str, Option<&'static str>),
    /// 200, answering that the token asked about is active (or not).
    Introspected(bool),
}

impl Promise {
    /// Whether `status` and `body` keep the promise.
    fn kept_by(self, status: StatusCode, body: &Value) -> bool {
        match self {
            Promise::Status(want) => status.as_u16() == want,
            Promise::Refused(want, code) => status.as_u16() == want && body["code"] == code,
            Promise::BatchEvent(event_status, code) => {
                let answer = &body["results"][0];
                status == StatusCode::OK
                    && answer["status"] == event_status
                    && code.is_none_or(|code| answer["code"] == code)
            }
            Promise::Introspected(active) => status == StatusCode::OK && body["active"] == active,
        }
    }
}

/// One operation's rows: who may call it, what an authorised call answers, and the request.
struct Spec {
    access: Access,
    /// What an authorised call answers. Each request is valid, so this is the operation's
    /// success, except where a success would need state the matrix does not build (said there).
    authorised: Promise,
    /// A batch answers per event: a writer's event for a game it may not touch is refused in
    /// the answer, not by the status.
    per_event: bool,
    request: fn(&Fill<'_>) -> (String, Option<Value>),
}

/// The promise for one operation of the table. An operation not named here fails the test:
/// adding a route means saying here who may call it.
fn spec(op: &Operation) -> Spec {
    use Access::*;
    fn spec(access: Access, authorised: u16, request: fn(&Fill<'_>) -> (String, Option<Value>)) -> Spec {
        Spec {
            access,
            authorised: Promise::Status(authorised),
            per_event: false,
            request,
        }
    }
    let board = "/v1/leaderboards/{game}/{mode}/{season}/{scope}";
    match (op.method, op.path.strip_prefix(board).unwrap_or(op.path)) {
        ("put", "/v1/boards/{game}/{mode}/{season}/{scope}") => {
            spec(Administer, 200, |f| (f.path(), Some(board_definition())))
        }
        ("post", "/v1/score-events") => spec(Write, 202, |f| (f.path(), Some(f.event()))),
        ("post", "/v1/score-events/batch") => Spec {
            authorised: Promise::BatchEvent("ACCEPTED", None),
            per_event: true,
            ..spec(Write, 200, |f| (f.path(), Some(json!({ "events": [f.event()] }))))
        },
        ("put", "/v1/games/{game}/players/{player_id}/friends") => {
            spec(Write, 200, |f| (f.path(), Some(json!({"friends": ["p-chloe"]}))))
        }
        ("get", "/top") | ("get", "/digest") | ("get", "/v1/games/{game}/boards") => {
            spec(Read, 200, |f| (f.path(), None))
        }
        ("get", "/players/{player_id}/rank") | ("get", "/players/{player_id}/nearby") => {
            spec(Read, 200, |f| (f.path(), None))
        }
        ("get", "/friends-of/{player_id}") => spec(ReadOwn, 200, |f| (f.path(), None)),
        ("post", "/rank-players") => spec(Read, 200, |f| {
            (f.path(), Some(json!({"player_ids": [SELF_PLAYER, OTHER_PLAYER]})))
        }),
        // A season of its own per request, so that each authorised move is the first step.
        ("put", "/v1/seasons/{game}/{season}/state") => spec(Administer, 200, |f| {
            (
                f.path_in(&format!("fresh-{}", f.n)),
                Some(json!({"state": "frozen"})),
            )
        }),
        ("get", "/v1/seasons/{game}/{season}/state") => spec(Read, 200, |f| (f.path(), None)),
        ("post", "/v1/moderation-actions") => spec(Moderate, 201, |f| {
            let body = json!({
                "moderation_id": format!("matrix-{}", f.n), "action_type": "DISQUALIFY",
                "reason": "access matrix", "game": f.game, "mode": "solo", "season": "S7",
                "scope": "global", "target_player_id": format!("p-nobody-{}", f.n),
            });
            (f.path(), Some(body))
        }),
        ("get", "/v1/late-events") | ("get", "/v1/audit") => {
            spec(Moderate, 200, |f| (format!("{}?game={}", f.path(), f.game), None))
        }
        // A decision needs a late event; the matrix names one that does not exist, so an
        // authorised call is 404 UNKNOWN_EVENT, answered only after the caller is checked.
        ("post", "/v1/late-events/{event_id}/decision") => Spec {
            authorised: Promise::Refused(404, "UNKNOWN_EVENT"),
            ..spec(Moderate, 404, |f| {
                let body = json!({"decision": "reject", "reason": "access matrix", "game": f.game});
                (f.path(), Some(body))
            })
        },
        // An authorised subscription would stream for ever, so the matrix asks for a view that
        // is out of range: auth is checked before the view, so every authorised caller gets 400
        // and every refused one its 401 or 403.
        ("get", "/subscribe") => Spec {
            authorised: Promise::Refused(400, "INVALID_REQUEST"),
            ..spec(Read, 400, |f| (format!("{}?view=top:0", f.path()), None))
        },
        ("get", "/v1/leaderboards/{game}/{mode}/{season}/results") => {
            spec(Read, 200, |f| (f.path_in(PUBLISHED), None))
        }
        // The token asked about is a player JWT of the row's game: a caller of arena-clash
        // hears it is active on arena-clash and not active on other-game.
        ("post", "/v1/auth/introspect") => Spec {
            authorised: Promise::Introspected(true),
            ..spec(Introspect, 200, |f| {
                (
                    f.path(),
                    Some(json!({"token": player_jwt(SELF_PLAYER, &[f.game])})),
                )
            })
        },
        ("get", "/v1/snapshots/{game}/{mode}/{season}/{scope}/head") => {
            spec(Snapshot, 200, |f| (f.path(), None))
        }
        ("get", "/v1/snapshots/manifests/{hash}") | ("get", "/v1/snapshots/chunks/{hash}") => {
            spec(Snapshot, 200, |f| (f.part_path(), None))
        }
        ("get", "/v1/snapshots/chunks") => spec(Snapshot, 200, |f| (f.bundle_path(), None)),
        ("get", "/v1/games/{game}/players/{player_id}/friends") => spec(ReadOwn, 200, |f| (f.path(), None)),
        ("get", "/v1/games/{game}/feed") => spec(Write, 200, |f| (f.path(), None)),
        // An endpoint of its own per request, so that each authorised call defines one.
        ("put", "/v1/games/{game}/webhooks/{endpoint_id}") => spec(Administer, 201, |f| {
            (
                f.path().replace("{endpoint_id}", &format!("matrix-{}", f.n)),
                Some(json!({"url": "http://127.0.0.1:9/matrix", "kinds": ["overtaken"],
                            "secret": "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})),
            )
        }),
        // No such endpoint: an authorised call is 404 UNKNOWN_WEBHOOK, answered only after the
        // caller is checked.
        ("get", "/v1/games/{game}/webhooks/{endpoint_id}")
        | ("delete", "/v1/games/{game}/webhooks/{endpoint_id}")
        | ("post", "/v1/games/{game}/webhooks/{endpoint_id}/resume") => Spec {
            authorised: Promise::Refused(404, "UNKNOWN_WEBHOOK"),
            ..spec(Administer, 0, |f| {
                (f.path().replace("{endpoint_id}", "no-such-endpoint"), None)
            })
        },
        // A name of its own per request, so that a profile written where it should not be
        // would show as a change.
        ("put", "/v1/games/{game}/players/{player_id}/profile") => spec(Write, 200, |f| {
            (
                f.path(),
                Some(json!({"display_name": format!("Matrix {}", f.n), "country": "DE"})),
            )
        }),
        ("get", "/v1/games/{game}/players/{player_id}/profile") => spec(ReadOwn, 200, |f| (f.path(), None)),
        ("post", "/v1/games/{game}/players/{player_id}/erase") => spec(Administer, 200, |f| {
            (f.path(), Some(json!({"reason": "access matrix"})))
        }),
        ("get", "/healthz") | ("get", "/readyz") | ("get", "/metrics") | ("get", "/openapi.json") => {
            spec(Open, 200, |f| (f.path(), None))
        }
        (method, path) => panic!(
            "{method} {path} has no rows in the access matrix: say in `spec` (origin/tests/access.rs) who may call it"
        ),
    }
}

fn board_definition() -> Value {
    json!({"score_mode": "highest", "value_min": -1_000_000_000, "value_max": 1_000_000_000})
}

/// What a player JWT is like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jwt {
    /// Signed, `exp` in ten minutes, `games: ["arena-clash"]`.
    Valid,
    /// Signed with another key.
    Forged,
    /// `alg: none`, no signature.
    AlgNone,
    /// `exp` in the past.
    Expired,
    /// `nbf` in the future.
    FutureNbf,
    /// No `exp`.
    NoExp,
    /// Valid, for another game only.
    WrongGame,
}

/// One kind of caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    NoToken,
    BadToken,
    /// The static player token of arena-clash, asking about itself or about another player.
    Player {
        about_self: bool,
    },
    Service,
    Moderator,
    Admin,
    /// The edge token of arena-clash: reads as no player, writes nothing, introspects.
    Edge,
    /// A player JWT asking about p-ava (its own player) or p-ben.
    PlayerJwt {
        kind: Jwt,
        about_self: bool,
    },
}

const CALLERS: &[Caller] = &[
    Caller::NoToken,
    Caller::BadToken,
    Caller::Player { about_self: true },
    Caller::Player { about_self: false },
    Caller::Service,
    Caller::Moderator,
    Caller::Admin,
    Caller::Edge,
    Caller::PlayerJwt {
        kind: Jwt::Valid,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::Valid,
        about_self: false,
    },
    Caller::PlayerJwt {
        kind: Jwt::Forged,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::AlgNone,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::Expired,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::FutureNbf,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::NoExp,
        about_self: true,
    },
    Caller::PlayerJwt {
        kind: Jwt::WrongGame,
        about_self: true,
    },
];

impl Caller {
    /// The player the request is about: the caller's own for a player asking about itself,
    /// another one otherwise (which a service, moderator or admin may ask about).
    fn subject(self) -> &'static str {
        match self {
            Caller::Player { about_self: true } | Caller::PlayerJwt { about_self: true, .. } => SELF_PLAYER,
            _ => OTHER_PLAYER,
        }
    }

    /// The bearer token it sends, if any.
    fn token(self) -> Option<String> {
        let now = standings_origin::clock::now_ms() / 1000;
        let claims = |extra: Value| {
            let mut claims = json!({"sub": SELF_PLAYER, "exp": now + 600, "games": [OWN]});
            for (key, value) in extra.as_object().unwrap() {
                claims[key] = value.clone();
            }
            claims
        };
        let key = JWT_SECRET.as_bytes();
        Some(match self {
            Caller::NoToken => return None,
            Caller::BadToken => "not-a-token-anyone-was-given-000".into(),
            Caller::Player { .. } => ARENA_PLAYER.into(),
            Caller::Service => ARENA_SERVICE.into(),
            Caller::Moderator => ARENA_MODERATOR.into(),
            Caller::Admin => ARENA_ADMIN.into(),
            Caller::Edge => ARENA_EDGE.into(),
            Caller::PlayerJwt { kind, .. } => match kind {
                Jwt::Valid => sign_jwt(key, &claims(json!({}))),
                Jwt::Forged => sign_jwt(b"another-key-another-key-another-key!", &claims(json!({}))),
                Jwt::AlgNone => format!(
                    "{}.{}.",
                    URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
                    URL_SAFE_NO_PAD.encode(claims(json!({})).to_string())
                ),
                Jwt::Expired => sign_jwt(key, &claims(json!({"exp": now - 1}))),
                Jwt::FutureNbf => sign_jwt(key, &claims(json!({"nbf": now + 300}))),
                Jwt::NoExp => {
                    let mut no_exp = claims(json!({}));
                    no_exp.as_object_mut().unwrap().remove("exp");
                    sign_jwt(key, &no_exp)
                }
                Jwt::WrongGame => sign_jwt(key, &claims(json!({"games": ["third-game"]}))),
            },
        })
    }
}

/// What an operation promises to `caller` on `game`.
fn expected(spec: &Spec, caller: Caller, game: &str) -> Promise {
    const UNAUTHENTICATED: Promise = Promise::Refused(401, "UNAUTHENTICATED");
    const FORBIDDEN: Promise = Promise::Refused(403, "FORBIDDEN");
    if spec.access == Access::Open {
        return spec.authorised;
    }
    let (role, games) = match caller {
        Caller::NoToken | Caller::BadToken => return UNAUTHENTICATED,
        Caller::PlayerJwt { kind, .. } => match kind {
            Jwt::Forged | Jwt::AlgNone | Jwt::Expired | Jwt::FutureNbf | Jwt::NoExp => {
                return UNAUTHENTICATED;
            }
            Jwt::Valid => (Role::Player, OWN),
            Jwt::WrongGame => (Role::Player, "third-game"),
        },
        Caller::Player { .. } => (Role::Player, OWN),
        Caller::Service => (Role::Service, OWN),
        Caller::Moderator => (Role::Moderator, OWN),
        Caller::Admin => (Role::Admin, OWN),
        Caller::Edge => (Role::Edge, OWN),
    };
    let role_may = match spec.access {
        Access::Open | Access::Read | Access::ReadOwn => true,
        Access::Write => matches!(role, Role::Service | Role::Moderator | Role::Admin),
        Access::Moderate => matches!(role, Role::Moderator | Role::Admin),
        Access::Administer => role == Role::Admin,
        Access::Introspect | Access::Snapshot => matches!(role, Role::Edge | Role::Admin),
    };
    let asks_for_another = role == Role::Player && caller.subject() != SELF_PLAYER;
    if !role_may || (spec.access == Access::ReadOwn && asks_for_another) {
        return FORBIDDEN;
    }
    if spec.access == Access::Introspect {
        return Promise::Introspected(games == game);
    }
    if games != game {
        return if spec.per_event {
            Promise::BatchEvent("REJECTED", Some("FORBIDDEN"))
        } else {
            FORBIDDEN
        };
    }
    spec.authorised
}

/// The matrix's tokens, all of arena-clash, besides the harness's own.
fn matrix_config(url: &str) -> standings_origin::config::Config {
    let mut config = config(url);
    for (name, secret, role, player) in [
        ("matrix-player", ARENA_PLAYER, Role::Player, Some(SELF_PLAYER)),
        ("matrix-service", ARENA_SERVICE, Role::Service, None),
        ("matrix-moderator", ARENA_MODERATOR, Role::Moderator, None),
        ("matrix-admin", ARENA_ADMIN, Role::Admin, None),
        ("matrix-edge", ARENA_EDGE, Role::Edge, None),
    ] {
        config.tokens.push(TokenConfig {
            name: name.into(),
            secret: secret.into(),
            role,
            games: vec![OWN.into()],
            player_id: player.map(str::to_string),
            rate_limit_per_second: None,
        });
    }
    config
}

/// Both games get the boards of S7 with Ava and Ben on them, and a published season.
async fn set_up(service: &TestService) {
    for game in [OWN, OTHER] {
        for season in ["S7", PUBLISHED] {
            let (status, body) = service
                .call(
                    Method::PUT,
                    &format!("/v1/boards/{game}/solo/{season}/global"),
                    Some(ADMIN),
                    Some(&board_definition()),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
        for (i, player) in [SELF_PLAYER, OTHER_PLAYER].iter().enumerate() {
            let mut e = event(&format!("setup-{i}"), player, 100, "2026-10-13T10:00:00Z");
            e["game"] = json!(game);
            let (status, body) = service
                .call(Method::POST, "/v1/score-events", Some(ADMIN), Some(&e))
                .await;
            assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        }
        for state in ["frozen", "finalized", "published"] {
            let (status, body) = service
                .call(
                    Method::PUT,
                    &format!("/v1/seasons/{game}/{PUBLISHED}/state"),
                    Some(ADMIN),
                    Some(&json!({ "state": state })),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
}

/// Every operation x 16 callers (no token, a bad token, the static player token asking about
/// itself and about another player, service, moderator, admin, edge, and player JWTs: valid about
/// itself and another, forged, `alg: none`, expired, not valid yet, without `exp`, for another
/// game) x {own game, other game} answers the promised status; a refusal carries its code.
/// Each operation's documented `security` is the access the matrix expects.
async fn every_operation_answers_every_caller_as_promised(db: Db) {
    let db = TestDb::new(db).await;
    let config = matrix_config(&db.url);
    let service = TestService::start_with_config(db, &config, Clock::System).await;
    set_up(&service).await;
    let snapshots = publish_snapshots(&service).await;
    let untouched = other_game_state(&service).await;
    let counter = AtomicU64::new(0);
    let mut mismatches = Vec::new();
    let mut rows = 0;
    for op in OPERATIONS {
        let spec = spec(op);
        if op.security != spec.access.documented_as() {
            mismatches.push(format!(
                "{} {}: documented as {:?}, the matrix expects {:?}",
                op.method,
                op.path,
                op.security,
                spec.access.documented_as()
            ));
        }
        let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        for &caller in CALLERS {
            for game in [OWN, OTHER] {
                rows += 1;
                let fill = Fill {
                    template: op.path,
                    game,
                    player: caller.subject(),
                    n: counter.fetch_add(1, Ordering::Relaxed),
                    snapshots: &snapshots,
                };
                let (uri, body) = (spec.request)(&fill);
                let token = caller.token();
                let (status, answer) = service
                    .call(method.clone(), &uri, token.as_deref(), body.as_ref())
                    .await;
                let want = expected(&spec, caller, game);
                if !want.kept_by(status, &answer) {
                    let got = answer
                        .get("code")
                        .or(answer.get("results"))
                        .unwrap_or(&Value::Null);
                    mismatches.push(format!(
                        "{method} {uri} as {caller:?} on {game}: expected {want:?}, got {} {got}",
                        status.as_u16()
                    ));
                }
            }
        }
    }
    assert_eq!(rows, OPERATIONS.len() * CALLERS.len() * 2);
    assert!(
        mismatches.is_empty(),
        "{} of {rows} rows differ from the promise:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(
        other_game_state(&service).await,
        untouched,
        "no matrix token may touch other-game, so nothing there changed"
    );
}

/// Each game gets a board of its own mode that no matrix request changes, with a score unlike
/// the other game's, so that their snapshots share no part; its head is asked for (as the
/// all-games admin) and its manifest and first rank chunk named for the part rows.
async fn publish_snapshots(service: &TestService) -> Vec<SnapshotParts> {
    let mut published = Vec::new();
    for (value, game) in [OWN, OTHER].into_iter().enumerate() {
        let board = format!("{game}/snapshot/S7/global");
        let (status, body) = service
            .call(
                Method::PUT,
                &format!("/v1/boards/{board}"),
                Some(ADMIN),
                Some(&board_definition()),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let mut e = event(
            &format!("snapshot-{game}"),
            SELF_PLAYER,
            10 + value as i64,
            "2026-10-13T10:00:00Z",
        );
        e["game"] = json!(game);
        e["mode"] = json!("snapshot");
        let (status, body) = service
            .call(Method::POST, "/v1/score-events", Some(ADMIN), Some(&e))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let head = format!("/v1/snapshots/{board}/head");
        let (status, body) = service.call(Method::GET, &head, Some(ADMIN), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let manifest = body["manifest"].as_str().unwrap().to_string();
        let (status, _, bytes) = service
            .get_raw(&format!("/v1/snapshots/manifests/{manifest}"), Some(ADMIN), &[])
            .await;
        assert_eq!(status, StatusCode::OK);
        let decoded = standings_core::Manifest::decode(&bytes).unwrap();
        published.push(SnapshotParts {
            game,
            manifest,
            chunk: decoded.rank_chunks[0].hash.to_string(),
        });
    }
    published
}

/// What the matrix could change in other-game: its board (every matrix event would raise its
/// player's best), its friend lists and its log of actions (season moves, moderation), as the
/// all-games admin reads them.
async fn other_game_state(service: &TestService) -> Vec<Value> {
    let board = format!("/v1/leaderboards/{OTHER}/solo/S7/global");
    let mut state = Vec::new();
    for path in [
        format!("{board}/digest"),
        format!("{board}/friends-of/{SELF_PLAYER}"),
        format!("{board}/friends-of/{OTHER_PLAYER}"),
        format!("/v1/audit?game={OTHER}"),
    ] {
        let (status, body) = service.call(Method::GET, &path, Some(ADMIN), None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        state.push(body);
    }
    state
}
