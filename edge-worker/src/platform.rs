//! What the edge needs from the platform: requests and answers as the `http` crate types them
//! (bodies read whole), and three small traits, so that the logic runs and is tested natively:
//! the origin fetch ([`Origin`]), the data centre's cache ([`Cache`]) and the clock ([`Clock`]).
//! The Cloudflare layer (`wasm.rs`) implements them with `fetch`, the Cache API and
//! `Date.now()`, and gets the caller's request from workers-rs as an `http::Request`; the tests
//! implement them with in-memory fakes.
//!
//! The traits use `async fn` without `Send`: a Worker isolate is single-threaded, and its
//! JavaScript futures cannot be sent anyway.

/// A request as the edge sees it (the caller's, its URI as sent, percent-encoded) or sends it
/// (to the origin, its URI `ORIGIN_URL` + path + query); the body is empty for `GET`.
pub type Request = http::Request<Vec<u8>>;

/// An answer: from the origin, or the edge's own (header names in lower case, as the `http`
/// crate keeps them).
pub type Response = http::Response<Vec<u8>>;

/// The origin's answer as the edge passes it on: status, body and the headers that describe
/// the content, not the hop.
pub fn pass_through(mut answer: Response) -> Response {
    let headers = answer.headers_mut();
    for hop in [
        http::header::CONTENT_LENGTH,
        http::header::TRANSFER_ENCODING,
        http::header::CONNECTION,
        http::HeaderName::from_static("keep-alive"),
        http::header::CONTENT_ENCODING,
    ] {
        headers.remove(hop);
    }
    answer
}

/// The origin could not be reached (connection refused, DNS, timeout), or its request could not
/// be made: no HTTP answer at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// The origin, over HTTP.
#[allow(
    async_fn_in_trait,
    reason = "a Worker isolate is single-threaded; nothing is Send"
)]
pub trait Origin {
    /// Sends `request` and reads the whole answer, or says the origin is unreachable.
    async fn send(&self, request: Request) -> Result<Response, Unavailable>;
}

/// The data centre's cache (the Cache API): bytes by key, shared by every isolate there, and
/// free to drop anything at any time, so nothing may depend on it for correctness.
#[allow(
    async_fn_in_trait,
    reason = "a Worker isolate is single-threaded; nothing is Send"
)]
pub trait Cache {
    /// The bytes stored under `key` (a path such as `/part/<hash>`), if the cache still holds
    /// them.
    async fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Stores `bytes` under `key` for at most `max_age_seconds` when the future it returns
    /// runs. Nothing happens before: the edge collects these and the driver runs them after
    /// the answer ([`crate::Edge::take_deferred`]), so no read waits for a put. Failures are
    /// ignored: the cache is an optimisation.
    fn put(&self, key: &str, bytes: &[u8], max_age_seconds: u64) -> impl Future<Output = ()> + 'static;
}

/// The platform's clock.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}
