//! The Cloudflare layer: workers-rs types mapped onto the edge's traits, and nothing more. The
//! `fetch` event hands each request to the isolate's one [`Edge`]; forwards are sent with the
//! caller's request streamed back, so a forwarded live subscription keeps streaming.

use std::cell::OnceCell;
use std::future::Future;
use std::rc::Rc;

use futures_util::FutureExt as _;
use worker::{
    Cache as CfCache, Context, Date, Env, Fetch, Headers, Method, Request, RequestInit, Response, event,
};

use crate::config::Config;
use crate::edge::{Edge, Outcome};
use crate::platform::{Cache, Clock, HttpRequest, HttpResponse, Origin, OriginRequest, Unavailable};
use crate::problem::Problem;

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

fn to_request(request: &OriginRequest) -> worker::Result<Request> {
    let headers = Headers::new();
    for (name, value) in &request.headers {
        headers.append(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(request.method.clone()))
        .with_headers(headers);
    if !request.body.is_empty() {
        init.with_body(Some(js_sys_bytes(&request.body)));
    }
    Request::new_with_init(&request.url, &init)
}

fn js_sys_bytes(bytes: &[u8]) -> worker::wasm_bindgen::JsValue {
    worker::js_sys::Uint8Array::from(bytes).into()
}

async fn read_response(mut response: Response) -> worker::Result<HttpResponse> {
    let headers = response.headers().entries().collect();
    Ok(HttpResponse {
        status: response.status_code(),
        headers,
        body: response.bytes().await?,
    })
}

fn to_response(answer: HttpResponse) -> worker::Result<Response> {
    let headers = Headers::new();
    for (name, value) in &answer.headers {
        headers.append(name, value)?;
    }
    Ok(Response::from_bytes(answer.body)?
        .with_status(answer.status)
        .with_headers(headers))
}

impl Origin for WorkerOrigin {
    async fn send(&self, request: OriginRequest) -> Result<HttpResponse, Unavailable> {
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
            let Ok(response) = Response::from_bytes(bytes) else {
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

fn edge_of(env: &Env, request: &Request) -> Result<Rc<WorkerEdge>, Problem> {
    if let Some(edge) = EDGE.with(|e| e.get().cloned()) {
        return Ok(edge);
    }
    let config =
        Config::from_vars(|name| var(env, name)).map_err(|e| Problem::misconfigured(e.to_string()))?;
    let base = request
        .url()
        .map(|u| format!("{}/__standings-edge", u.origin().ascii_serialization()))
        .unwrap_or_else(|_| "https://standings-edge.invalid".into());
    let edge = Rc::new(Edge::new(WorkerOrigin, WorkerCache { base }, WorkerClock, config));
    Ok(EDGE.with(|e| e.get_or_init(|| edge).clone()))
}

#[event(fetch)]
async fn fetch(mut request: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    let edge = match edge_of(&env, &request) {
        Ok(edge) => edge,
        Err(problem) => return to_response(problem.response()),
    };
    let url = request.url()?;
    let method = String::from(request.method());
    let body = if method == "GET" || method == "HEAD" {
        Vec::new()
    } else {
        request.bytes().await?
    };
    let described = HttpRequest {
        method,
        path: url.path().to_string(),
        query: url.query().map(str::to_string),
        headers: request.headers().entries().collect(),
        body,
    };
    let outcome = edge.handle(described).await;
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
        Outcome::ForwardRead { request, fallback } => match WorkerOrigin.send(request).await {
            Ok(answer) => to_response(edge.forwarded_read(fallback, answer)),
            Err(_) => to_response(edge.unreachable()),
        },
    }
}
