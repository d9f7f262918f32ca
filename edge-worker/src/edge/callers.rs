//! Who the caller is, and whether the read contract lets it read: a player JWT verified here,
//! any other token introspected at the origin and remembered by its SHA-256 for as long as the
//! origin allows; the decision is the core's (`standings_core::contract::access`).

use http::header::CONTENT_TYPE;
use http::{HeaderMap, Method, StatusCode};
use sha2::{Digest as _, Sha256};
use standings_core::contract::access::{self, Denied};

use super::{Edge, Fallback, JSON, Spend, Stop, make_room};
use crate::auth::{self, Caller, Introspection, Presented};
use crate::platform::{Cache, Clock, Origin};
use crate::problem::{self, Problem};

impl From<Denied> for Stop {
    fn from(denied: Denied) -> Stop {
        match denied {
            Denied::Problem(p) => Stop::Problem(p),
            // The origin's words name the token, which introspection does not tell the edge.
            Denied::AskOrigin => Stop::Forward(Fallback::Auth),
        }
    }
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// The caller the request's token names: verified here for a player JWT, introspected at
    /// the origin otherwise (remembered by the token's SHA-256 for as long as the origin
    /// allows). `None` without a token.
    pub(super) async fn caller(
        &self,
        headers: &HeaderMap,
        spend: &mut Spend,
    ) -> Result<Option<Caller>, Stop> {
        let token = match auth::presented(headers)? {
            Presented::Nobody => return Ok(None),
            Presented::Bearer(token) => token,
        };
        if let Some(key) = self.config.jwt_secret.as_deref()
            && auth::is_jwt(Some(key), token)
        {
            let now_secs = self.now_ms().div_euclid(1000);
            return Ok(Some(auth::verify_jwt(
                key,
                token,
                now_secs,
                self.config.jwt_max_lifetime_seconds,
            )?));
        }
        if token.is_empty() {
            return Err(Problem::unauthenticated("the token is not known").into());
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = self.now_ms();
        if let Some((known, until)) = self.state.borrow().tokens.get(&key)
            && now < *until
        {
            return Ok(Some(known.caller()?));
        }
        spend.subrequests += 1;
        self.count(|s| s.origin_fetches.introspect += 1);
        let body = serde_json::to_vec(&serde_json::json!({ "token": token })).unwrap_or_default();
        let answer = match self.edge_request(Method::POST, "/v1/auth/introspect", body) {
            Ok(mut ask) => {
                ask.headers_mut().insert(CONTENT_TYPE, JSON);
                self.origin.send(ask).await
            }
            Err(unavailable) => Err(unavailable),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                return Err(problem::origin_unavailable(
                    "the origin is unreachable and the edge does not know this token; retry shortly, or read with a player JWT",
                )
                .into());
            }
        };
        let known: Introspection = match (answer.status(), serde_json::from_slice(answer.body())) {
            (StatusCode::OK, Ok(known)) => known,
            (status, _) => {
                return Err(problem::bad_origin_answer(format!(
                    "the origin answered {} to the edge's token introspection; EDGE_TOKEN must be an edge token of the origin",
                    status.as_u16()
                ))
                .into());
            }
        };
        let until = now.saturating_add(known.cache_seconds.max(0).saturating_mul(1000));
        let caller = known.caller();
        {
            let mut state = self.state.borrow_mut();
            make_room(&mut state.tokens, now, |(_, until)| *until);
            state.tokens.insert(key, (known, until));
        }
        Ok(Some(caller?))
    }

    /// The contract's reader rule for this request's caller and `game`.
    pub(super) async fn reader(
        &self,
        headers: &HeaderMap,
        game: &str,
        spend: &mut Spend,
    ) -> Result<(), Stop> {
        let caller = self.caller(headers, spend).await?;
        access::reader(caller.as_ref(), self.config.public_reads, game)?;
        trusted_go_to_the_origin(caller.as_ref())
    }

    /// The contract's friends-reader rule for this request's caller, `game` and `player`.
    pub(super) async fn friends_reader(
        &self,
        headers: &HeaderMap,
        game: &str,
        player: &str,
        spend: &mut Spend,
    ) -> Result<(), Stop> {
        let caller = self.caller(headers, spend).await?;
        access::friends_reader(caller.as_ref(), game, player)?;
        trusted_go_to_the_origin(caller.as_ref())
    }
}

/// The game's service, moderator and admin tokens see anonymous players' names, which snapshots
/// never carry: their reads are the origin's to answer, so the edge's answer is never another
/// than the origin's for the same caller. Players and the public are answered here.
fn trusted_go_to_the_origin(caller: Option<&Caller>) -> Result<(), Stop> {
    match access::audience(caller) {
        standings_core::Audience::Trusted => Err(Stop::Forward(Fallback::Trusted)),
        _ => Ok(()),
    }
}
