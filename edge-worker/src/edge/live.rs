//! A live subscription: to the board view's live object when the edge can read the request and
//! the caller may read the board, else to the origin, which answers it in its own words.

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue};
use sha2::{Digest as _, Sha256};

use super::{Edge, Spend, Stop};
use crate::auth::{self, Caller, Presented};
use crate::live::key;
use crate::platform::{Cache, Clock, Origin, Request, Response};
use crate::problem;
use crate::route::BoardPath;

use super::dispatch::Outcome;

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// Where a subscription goes: [`Outcome::Live`] for a WebSocket one the edge can read from
    /// a caller the read contract lets read the board as the public or a player does; the
    /// caller's refusal answered here, as for reads; anything else forwarded. O(query length),
    /// plus the caller's check (a JWT verified, or a token introspected once).
    pub(super) async fn subscribe(&self, request: Request, board: &BoardPath) -> Outcome {
        let Some(route) = key::route(
            &board.raw,
            request.uri().query(),
            request.headers(),
            !request.body().is_empty(),
        ) else {
            return self.forward(request);
        };
        let headers = match &route.access_token {
            None => request.headers().clone(),
            // A static token in a URL is refused by the origin, in words naming it.
            Some(token) if !auth::is_jwt(self.config.jwt_secret.as_deref(), token.trim()) => {
                return self.forward(request);
            }
            Some(token) => {
                let mut headers = request.headers().clone();
                match HeaderValue::try_from(format!("Bearer {}", token.trim())) {
                    Ok(bearer) => headers.insert(AUTHORIZATION, bearer),
                    Err(_) => return self.forward(request),
                };
                headers
            }
        };
        let mut spend = Spend::default();
        match self.reader(&headers, board.game(), &mut spend).await {
            Ok(()) => {
                let mut route = route;
                route.holder = self.holder(&headers, &mut spend).await;
                self.count(|s| s.requests.live += 1);
                Outcome::Live {
                    route,
                    fallback: request,
                }
            }
            Err(Stop::Problem(refused)) => Outcome::Answer(problem::response(&refused)),
            Err(Stop::Origin(answer)) => Outcome::Answer(*answer),
            Err(Stop::Forward(_)) => self.forward(request),
        }
    }

    /// Who holds a subscription the reader rule let through (see `LiveRoute::holder`): the
    /// caller is known by then (a JWT verified, a token remembered), so this asks nothing
    /// again of the origin. O(token length).
    async fn holder(&self, headers: &HeaderMap, spend: &mut Spend) -> String {
        let token = match auth::presented(headers) {
            Ok(Presented::Bearer(token)) => token.to_string(),
            _ => {
                let address = headers
                    .get("cf-connecting-ip")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("unknown");
                return format!("address:{address}");
            }
        };
        match self.caller(headers, spend).await {
            Ok(Some(Caller { name: Some(name), .. })) => format!("player:{name}"),
            _ => {
                let digest = Sha256::digest(token.as_bytes());
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("token:{hex}")
            }
        }
    }

    /// The request forwarded as it came, streamed back. Counted.
    pub(super) fn forward(&self, request: Request) -> Outcome {
        match self.forwarded(request) {
            Ok(forward) => Outcome::Forward(forward),
            Err(answer) => Outcome::Answer(*answer),
        }
    }

    /// The request as the origin gets it, or the answer when it cannot be sent. Counted as a
    /// forward; what the drivers send for [`Outcome::Live`]'s fallback.
    pub fn forwarded(&self, request: Request) -> Result<Request, Box<Response>> {
        self.count(|s| s.requests.forwarded += 1);
        self.forward_request(request)
            .map_err(|_| Box::new(self.unreachable()))
    }
}
