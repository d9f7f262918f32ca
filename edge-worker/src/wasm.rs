//! The Cloudflare layer: workers-rs types mapped onto the edge's traits, and nothing more. The
//! `fetch` event hands each request (an `http::Request`, workers-rs's `http` feature) to the
//! isolate's one [`Edge`]; forwards are sent with the origin's answer streamed back, so a
//! forwarded live subscription keeps streaming.

use std::cell::OnceCell;
use std::future::Future;
use std::rc::Rc;

use futures_util::{FutureExt as _, StreamExt as _};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use worker::{Cache as CfCache, Context, Date, Env, Fetch, Headers, HttpRequest, RequestInit, event};

use crate::config::Config;
use crate::edge::{Edge, Outcome};
use crate::live::key::LiveRoute;
use crate::live::key::{HOLDER_HEADER, SINCE_HEADER, UPSTREAM_HEADER};
use crate::platform::{Cache, Clock, Origin, Request, Response, Unavailable};
use crate::problem;
use crate::workers_types::{to_headers, to_response};

/// `fetch` to the origin.
struct WorkerOrigin;

/// The data centre's default cache, keyed by URLs under the host the worker first served.
struct WorkerCache {
    base: String,
}

/// `Date.now()`, which in a Worker advances with I/O.
struct WorkerClock;

type WorkerEdge = Edge<WorkerOrigin, WorkerCache, WorkerClock>;

thread_local! {
    /// The isolate's edge, made on its first request: its caches live as long as the isolate.
    static EDGE: OnceCell<Rc<WorkerEdge>> = const { OnceCell::new() };
}

/// A request of the edge's as the platform sends it, its body whole (an `http` body would
/// reach `fetch` as a stream, sent chunked).
fn to_request(request: &Request) -> worker::Result<worker::Request> {
    let mut init = RequestInit::new();
    init.with_method(worker::Method::from(request.method().to_string()))
        .with_headers(to_headers(request.headers())?);
    if !request.body().is_empty() {
        init.with_body(Some(
            worker::js_sys::Uint8Array::from(request.body().as_slice()).into(),
        ));
    }
    worker::Request::new_with_init(&request.uri().to_string(), &init)
}

/// The origin's answer read whole (the body in one `arrayBuffer`, not chunk by chunk).
async fn read_response(mut response: worker::Response) -> worker::Result<Response> {
    let mut headers = HeaderMap::new();
    for (name, value) in response.headers().entries() {
        // The platform's names and values are valid HTTP; one that were not could not be sent
        // on by the edge either.
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            headers.append(name, value);
        }
    }
    let mut answer = Response::new(response.bytes().await?);
    *answer.status_mut() = http::StatusCode::from_u16(response.status_code())
        .map_err(|e| worker::Error::RustError(e.to_string()))?;
    *answer.headers_mut() = headers;
    Ok(answer)
}

impl Origin for WorkerOrigin {
    async fn send(&self, request: Request) -> Result<Response, Unavailable> {
        let request = to_request(&request).map_err(|e| Unavailable(e.to_string()))?;
        let response = Fetch::Request(request)
            .send()
            .await
            .map_err(|e| Unavailable(e.to_string()))?;
        read_response(response)
            .await
            .map_err(|e| Unavailable(e.to_string()))
    }
}

impl Cache for WorkerCache {
    async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let url = format!("{}{key}", self.base);
        let mut found = CfCache::default().get(url.as_str(), false).await.ok()??;
        found.bytes().await.ok()
    }

    fn put(&self, key: &str, bytes: &[u8], max_age_seconds: u64) -> impl Future<Output = ()> + 'static {
        let url = format!("{}{key}", self.base);
        let bytes = bytes.to_vec();
        // Every JavaScript object is made when the future first runs, in the request context
        // that runs it (the one whose waitUntil holds it).
        async move {
            let Ok(response) = worker::Response::from_bytes(bytes) else {
                return;
            };
            let headers = Headers::new();
            let cache_control = format!("public, max-age={max_age_seconds}");
            if headers.set("cache-control", &cache_control).is_err()
                || headers.set("content-type", "application/octet-stream").is_err()
            {
                return;
            }
            // The cache is an optimisation: a failed put costs a later miss, nothing else.
            let _ = CfCache::default()
                .put(url.as_str(), response.with_headers(headers))
                .await;
        }
    }
}

impl Clock for WorkerClock {
    fn now_ms(&self) -> i64 {
        i64::try_from(Date::now().as_millis()).unwrap_or(i64::MAX)
    }
}

/// A var or a secret as text, `None` when unset.
fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .map(|v| v.to_string())
        .or_else(|_| env.secret(name).map(|s| s.to_string()))
        .ok()
}

fn edge_of(env: &Env, uri: &http::Uri) -> Result<Rc<WorkerEdge>, problem::Problem> {
    if let Some(edge) = EDGE.with(|e| e.get().cloned()) {
        return Ok(edge);
    }
    let config =
        Config::from_vars(|name| var(env, name)).map_err(|e| problem::misconfigured(e.to_string()))?;
    let base = match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}/__standings-edge"),
        _ => "https://standings-edge.invalid".into(),
    };
    let edge = Rc::new(Edge::new(WorkerOrigin, WorkerCache { base }, WorkerClock, config));
    Ok(EDGE.with(|e| e.get_or_init(|| edge).clone()))
}

/// Hands a subscription to its board view's live object; `None` without the `LIVE` binding.
async fn live(env: &Env, route: &LiveRoute) -> Option<worker::Response> {
    let namespace = env.durable_object("LIVE").ok()?;
    let answer = async {
        let stub = namespace.id_from_name(&route.object)?.get_stub()?;
        let headers = Headers::new();
        headers.set("upgrade", "websocket")?;
        headers.set(UPSTREAM_HEADER, &route.upstream)?;
        headers.set(HOLDER_HEADER, &route.holder)?;
        if let Some(since) = &route.since {
            headers.set(SINCE_HEADER, &since.to_string())?;
        }
        let mut init = RequestInit::new();
        init.with_headers(headers);
        stub.fetch_with_request(worker::Request::new_with_init(
            "https://live.standings.invalid/",
            &init,
        )?)
        .await
    };
    answer
        .await
        .or_else(|e| {
            to_response(problem::response(&problem::origin_unavailable(format!(
                "the board's live object could not be reached ({e}); retry shortly"
            ))))
        })
        .ok()
}

#[event(fetch)]
async fn fetch(request: HttpRequest, env: Env, ctx: Context) -> worker::Result<worker::Response> {
    let edge = match edge_of(&env, request.uri()) {
        Ok(edge) => edge,
        Err(refused) => return to_response(problem::response(&refused)),
    };
    let (parts, mut stream) = request.into_parts();
    let mut body = Vec::new();
    if parts.method != Method::GET && parts.method != Method::HEAD {
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
        }
    }
    let outcome = edge.handle(Request::from_parts(parts, body)).await;
    // The Cache API puts of this read (and of any other read of the isolate that ended
    // meanwhile) run after the answer, held by this request.
    let deferred = edge.take_deferred();
    if !deferred.is_empty() {
        ctx.wait_until(futures_util::future::join_all(deferred).map(|_| ()));
    }
    match outcome {
        Outcome::Answer(answer) => to_response(answer),
        Outcome::Forward(forward) => {
            let sent = match to_request(&forward) {
                Ok(sent) => Fetch::Request(sent).send().await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(response) => Ok(response),
                Err(_) => to_response(edge.unreachable()),
            }
        }
        Outcome::Live { route, fallback } => match live(&env, &route).await {
            Some(answer) => Ok(answer),
            // Without the LIVE binding (an older wrangler.toml) the origin takes it.
            None => match edge.forwarded(fallback) {
                Ok(forward) => match to_request(&forward) {
                    Ok(sent) => match Fetch::Request(sent).send().await {
                        Ok(response) => Ok(response),
                        Err(_) => to_response(edge.unreachable()),
                    },
                    Err(_) => to_response(edge.unreachable()),
                },
                Err(answer) => to_response(*answer),
            },
        },
        Outcome::ForwardRead { request, fallback } => match WorkerOrigin.send(request).await {
            Ok(answer) => to_response(edge.forwarded_read(fallback, answer)),
            Err(_) => to_response(edge.unreachable()),
        },
    }
}
