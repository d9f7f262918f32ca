//! What the edge needs from the platform, as plain data and three small traits, so that the
//! logic runs and is tested natively: the origin fetch ([`Origin`]), the data centre's cache
//! ([`Cache`]) and the clock ([`Clock`]). The Cloudflare layer (`wasm.rs`) implements them with
//! `fetch`, the Cache API and `Date.now()`; the tests with in-memory fakes.
//!
//! The traits use `async fn` without `Send`: a Worker isolate is single-threaded, and its
//! JavaScript futures cannot be sent anyway.

/// An HTTP request as the edge sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, ... (upper case, as sent).
    pub method: String,
    /// The path, percent-encoded as sent (`/v1/leaderboards/...`).
    pub path: String,
    /// The query string without the `?`, if any.
    pub query: Option<String>,
    /// The headers, names in any case.
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first value of the header `name` (ASCII case-insensitive). O(headers).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// An HTTP answer: from the origin, or the edge's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case for the edge's own answers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of the header `name` (ASCII case-insensitive). O(headers).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// The first value of `name` among `headers`, compared ASCII case-insensitively.
pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A request to the origin, with its full URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OriginRequest {
    /// The method.
    pub method: String,
    /// `ORIGIN_URL` + path + query.
    pub url: String,
    /// The headers to send.
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

/// The origin could not be reached (connection refused, DNS, timeout): no HTTP answer at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// The origin, over HTTP.
#[allow(
    async_fn_in_trait,
    reason = "a Worker isolate is single-threaded; nothing is Send"
)]
pub trait Origin {
    /// Sends `request` and reads the whole answer, or says the origin is unreachable.
    async fn send(&self, request: OriginRequest) -> Result<HttpResponse, Unavailable>;
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
