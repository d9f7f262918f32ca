//! The one HTTP/1.1 client of the harnesses and of the origin's process tests.
//!
//! Why a small client of our own rather than a kept one such as hyper-util's: the load generator
//! measures the service from one thread that shares the machine with it, so its client must cost
//! as little as possible per request. [`HttpConn`] writes a request in one syscall, reads the
//! answer into a buffer it reuses and allocates nothing once warm; a client library would add its
//! pool, tasks and allocations to every measured request. The other users take the same client
//! rather than a second one: [`Client`] is an [`HttpConn`] that reconnects, keeps a deadline and
//! returns owned answers with their headers (the edge's answers are told apart by them). Heads are
//! parsed by `httparse`, the parser hyper itself uses.
//!
//! It lives in `standings-tests`, which depends only on `standings-core`, so that the origin's
//! tests take it as a dev-dependency without a cycle.
//!
//! One request at a time per connection (no pipelining); bodies framed by Content-Length, chunked
//! (de-chunked in place) or by the end of the connection.

use std::ops::Range;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most headers an answer may have.
const MAX_HEADERS: usize = 64;

/// One keep-alive connection.
pub struct HttpConn {
    stream: TcpStream,
    /// The `Host` line, written into every request.
    host: Vec<u8>,
    /// The connection's `Authorization` line, written by [`HttpConn::send`].
    authorization: Vec<u8>,
    request: Vec<u8>,
    /// Whether the request begun with [`HttpConn::start`] sends body headers even when its
    /// body is empty (every method but `GET` and `HEAD`).
    body_method: bool,
    /// Whether the request begun is a `HEAD`, whose answer has no body.
    head_method: bool,
    response: Vec<u8>,
    filled: usize,
    /// False once an answer said the connection closes after it.
    reusable: bool,
}

/// An answer: its status, and where its head and body lie in the connection's buffer (valid
/// until the next request).
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    head: Range<usize>,
    body: Range<usize>,
}

/// Why one exchange failed: the connection was closed before any byte of the answer (worth one
/// retry on a fresh connection when it was reused), or anything else.
enum Exchange {
    Closed,
    Failed(String),
}

impl From<Exchange> for String {
    fn from(failure: Exchange) -> String {
        match failure {
            Exchange::Closed => "the service closed the connection".into(),
            Exchange::Failed(why) => why,
        }
    }
}

impl HttpConn {
    /// Connects to `addr` and sends `token` as the bearer with every request.
    pub async fn connect(addr: &str, token: &str) -> Result<HttpConn, String> {
        Self::open(addr, Some(token)).await
    }

    /// Connects to `addr`; `token`, if any, is the bearer of every request sent with
    /// [`HttpConn::send`].
    pub async fn open(addr: &str, token: Option<&str>) -> Result<HttpConn, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to the service at {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(HttpConn {
            stream,
            host: format!("Host: {addr}\r\n").into_bytes(),
            authorization: token.map(bearer).unwrap_or_default(),
            request: Vec::with_capacity(4096),
            body_method: false,
            head_method: false,
            response: vec![0; 64 * 1024],
            filled: 0,
            reusable: true,
        })
    }

    /// Starts a request line in the request buffer; the caller appends the path's bytes to the
    /// buffer returned and then calls [`HttpConn::send`].
    pub fn start(&mut self, method: &str) -> &mut Vec<u8> {
        self.body_method = !matches!(method, "GET" | "HEAD");
        self.head_method = method == "HEAD";
        self.request.clear();
        self.request.extend_from_slice(method.as_bytes());
        self.request.push(b' ');
        &mut self.request
    }

    /// Finishes the request begun with [`HttpConn::start`] (`body` may be empty), sends it with
    /// the connection's bearer and reads the whole answer. O(request + answer), no allocation
    /// once the buffers have grown to the largest answer.
    pub async fn send(&mut self, body: &[u8]) -> Result<Answer, String> {
        self.request.extend_from_slice(b" HTTP/1.1\r\n");
        self.request.extend_from_slice(&self.host);
        self.request.extend_from_slice(&self.authorization);
        Ok(self.exchange(body).await?)
    }

    /// `GET path` (the whole path, query included).
    pub async fn get(&mut self, path: &str) -> Result<Answer, String> {
        self.start("GET").extend_from_slice(path.as_bytes());
        self.send(&[]).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, body: &[u8]) -> Result<Answer, String> {
        self.start("POST").extend_from_slice(path.as_bytes());
        self.send(body).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&mut self, path: &str, body: &[u8]) -> Result<Answer, String> {
        self.start("PUT").extend_from_slice(path.as_bytes());
        self.send(body).await
    }

    /// The body of an answer.
    pub fn body(&self, answer: &Answer) -> &[u8] {
        &self.response[answer.body.clone()]
    }

    /// The body of an answer as lossy text, cut at 500 bytes, for error messages.
    pub fn body_text(&self, answer: &Answer) -> String {
        let body = self.body(answer);
        String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned()
    }

    /// The headers of an answer in the order sent: names as sent, values as bytes. O(head).
    pub fn headers(&self, answer: &Answer) -> Vec<(&str, &[u8])> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut headers);
        // The head parsed once already, when the answer was read.
        let _ = parsed.parse(&self.response[answer.head.clone()]);
        parsed.headers.iter().map(|h| (h.name, h.value)).collect()
    }

    /// Whether the server lets this connection carry another request.
    pub fn reusable(&self) -> bool {
        self.reusable
    }

    /// Adds the body headers and the body, sends the request and reads the answer.
    async fn exchange(&mut self, body: &[u8]) -> Result<Answer, Exchange> {
        if !body.is_empty() || self.body_method {
            self.request
                .extend_from_slice(b"Content-Type: application/json\r\nContent-Length: ");
            crate::workload::push_int(&mut self.request, body.len() as i64);
            self.request.extend_from_slice(b"\r\n");
        }
        self.request.extend_from_slice(b"\r\n");
        let closed = |_| Exchange::Closed;
        if body.len() > 16 * 1024 {
            self.stream.write_all(&self.request).await.map_err(closed)?;
            self.stream.write_all(body).await.map_err(closed)?;
        } else {
            // Small bodies go out with their headers in one write (one syscall, one segment).
            self.request.extend_from_slice(body);
            self.stream.write_all(&self.request).await.map_err(closed)?;
        }
        self.read_answer().await
    }

    /// Reads more bytes after `filled`, growing the buffer when it is full; 0 at the end of the
    /// stream.
    async fn fill(&mut self) -> Result<usize, Exchange> {
        if self.filled == self.response.len() {
            let grown = self.response.len() * 2;
            self.response.resize(grown, 0);
        }
        let n = self
            .stream
            .read(&mut self.response[self.filled..])
            .await
            .map_err(|e| Exchange::Failed(format!("cannot read an answer: {e}")))?;
        self.filled += n;
        Ok(n)
    }

    /// Reads [`HttpConn::fill`] and refuses the end of the stream, saying `inside` what.
    async fn fill_inside(&mut self, inside: &str) -> Result<(), Exchange> {
        if self.fill().await? == 0 {
            return Err(Exchange::Failed(format!("the connection closed inside {inside}")));
        }
        Ok(())
    }

    async fn read_answer(&mut self) -> Result<Answer, Exchange> {
        // The previous answer was consumed whole (no pipelining), so the buffer starts empty.
        self.filled = 0;
        let (status, head_end, framing) = loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Response::new(&mut headers);
            let head = &self.response[..self.filled];
            match parsed.parse(head) {
                Ok(httparse::Status::Complete(head_end)) => {
                    let status = parsed.code.unwrap_or_default();
                    let framing = Framing::of(status, self.head_method, parsed.headers)?;
                    self.reusable = !parsed.headers.iter().any(|h| {
                        h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close")
                    });
                    break (status, head_end, framing);
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => {
                    return Err(Exchange::Failed(format!(
                        "a malformed answer ({e}): {:?}",
                        String::from_utf8_lossy(&head[..head.len().min(200)])
                    )));
                }
            }
            if self.fill().await? == 0 {
                return Err(if self.filled == 0 {
                    Exchange::Closed
                } else {
                    Exchange::Failed("the connection closed inside an answer's head".into())
                });
            }
        };
        let (body, end) = match framing {
            Framing::Empty => (head_end..head_end, head_end),
            Framing::Length(length) => {
                let end = head_end + length;
                if end > self.response.len() {
                    self.response.resize(end.next_power_of_two(), 0);
                }
                while self.filled < end {
                    self.fill_inside("a body").await?;
                }
                (head_end..end, end)
            }
            Framing::Chunked => self.dechunk(head_end).await?,
            Framing::ToClose => {
                while self.fill().await? > 0 {}
                self.reusable = false;
                (head_end..self.filled, self.filled)
            }
        };
        if self.filled != end {
            return Err(Exchange::Failed(
                "the service sent bytes past the end of an answer".into(),
            ));
        }
        Ok(Answer {
            status,
            head: 0..head_end,
            body,
        })
    }

    /// Reads a chunked body that starts at `at` and moves its chunks together in place; returns
    /// where the body lies and where the answer ends.
    async fn dechunk(&mut self, mut at: usize) -> Result<(Range<usize>, usize), Exchange> {
        let start = at;
        let mut out = at;
        loop {
            let line_end = loop {
                if let Some(end) = find(&self.response[at..self.filled], b"\r\n") {
                    break at + end;
                }
                self.fill_inside("a chunk").await?;
            };
            let size_line = String::from_utf8_lossy(&self.response[at..line_end]);
            let size_text = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| Exchange::Failed(format!("a malformed chunk size {size_line:?}")))?;
            at = line_end + 2;
            // The chunk and its CRLF; the last chunk (size 0) is followed by an empty trailer.
            while self.filled < at + size + 2 {
                self.fill_inside("a chunk").await?;
            }
            self.response.copy_within(at..at + size, out);
            out += size;
            at += size + 2;
            if size == 0 {
                return Ok((start..out, at));
            }
        }
    }
}

/// How an answer's body is framed.
enum Framing {
    /// No body: a 1xx, 204 or 304 answer, or one to `HEAD`.
    Empty,
    Length(usize),
    Chunked,
    /// The body runs to the end of the connection.
    ToClose,
}

impl Framing {
    fn of(status: u16, head_method: bool, headers: &[httparse::Header<'_>]) -> Result<Framing, Exchange> {
        if head_method || status < 200 || status == 204 || status == 304 {
            return Ok(Framing::Empty);
        }
        let value = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        if value("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().ends_with(b"chunked")) {
            return Ok(Framing::Chunked);
        }
        match value("content-length") {
            Some(length) => std::str::from_utf8(length)
                .ok()
                .and_then(|l| l.trim().parse().ok())
                .map(Framing::Length)
                .ok_or_else(|| Exchange::Failed("a malformed Content-Length".into())),
            None => Ok(Framing::ToClose),
        }
    }
}

/// The `Authorization` line of a bearer token.
fn bearer(token: &str) -> Vec<u8> {
    format!("Authorization: Bearer {token}\r\n").into_bytes()
}

/// How long one request of a [`Client`] may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One answer, whole: status, headers (names lowercased) and body.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The headers in the order sent, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first header called `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as lossy text, cut at 600 bytes, for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body[..self.body.len().min(600)]).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("the answer ({}) is not JSON: {e}: {}", self.status, self.text()))
    }
}

/// An [`HttpConn`] to one address that connects on the first request, reconnects when the
/// server closed the connection, gives each request a deadline and a bearer of its own, and
/// returns owned answers with their headers. Each answer costs a few allocations (headers,
/// body), which is noise beside what its users measure.
pub struct Client {
    addr: String,
    conn: Option<HttpConn>,
}

impl Client {
    /// A client of `addr` (`127.0.0.1:PORT`); it connects on the first request.
    pub fn new(addr: &str) -> Client {
        Client {
            addr: addr.to_string(),
            conn: None,
        }
    }

    /// The address this client talks to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `GET path` with `token` as the bearer, if any.
    pub async fn get(&mut self, path: &str, token: Option<&str>) -> Result<Reply, String> {
        self.request("GET", path, token, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Reply, String> {
        self.request("POST", path, token, Some(body)).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&mut self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Reply, String> {
        self.request("PUT", path, token, Some(body)).await
    }

    /// Sends one request and reads its whole answer, within a deadline. A connection that was
    /// reused and turns out closed before any byte of the answer came is opened again once, so
    /// an idle connection the server dropped is not an error.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<Reply, String> {
        let body = body.unwrap_or_default();
        let attempt = async {
            let reused = self.conn.is_some();
            match self.exchange(method, path, token, body).await {
                Err(Exchange::Closed) if reused => self.exchange(method, path, token, body).await,
                outcome => outcome,
            }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, attempt).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => {
                self.conn = None;
                let why = match failure {
                    Exchange::Closed => format!("{} closed the connection", self.addr),
                    Exchange::Failed(why) => why,
                };
                Err(format!("{method} {path}: {why}"))
            }
            Err(_) => {
                self.conn = None;
                Err(format!(
                    "{method} {path} to {} got no answer within {REQUEST_TIMEOUT:?}",
                    self.addr
                ))
            }
        }
    }

    async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &[u8],
    ) -> Result<Reply, Exchange> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self
                .conn
                .insert(HttpConn::open(&self.addr, None).await.map_err(Exchange::Failed)?),
        };
        conn.start(method).extend_from_slice(path.as_bytes());
        conn.request.extend_from_slice(b" HTTP/1.1\r\n");
        conn.request.extend_from_slice(&conn.host);
        if let Some(token) = token {
            conn.request.extend_from_slice(&bearer(token));
        }
        let answer = match conn.exchange(body).await {
            Ok(answer) => answer,
            Err(failure) => {
                self.conn = None;
                return Err(failure);
            }
        };
        let reply = Reply {
            status: answer.status,
            headers: conn
                .headers(&answer)
                .into_iter()
                .map(|(name, value)| {
                    (
                        name.to_ascii_lowercase(),
                        String::from_utf8_lossy(value).trim().to_string(),
                    )
                })
                .collect(),
            body: conn.body(&answer).to_vec(),
        };
        if !conn.reusable() {
            self.conn = None;
        }
        Ok(reply)
    }
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// How many times `needle` occurs in `haystack`, not overlapping.
pub fn count(haystack: &[u8], needle: &[u8]) -> usize {
    let mut found = 0;
    let mut rest = haystack;
    while let Some(at) = find(rest, needle) {
        found += 1;
        rest = &rest[at + needle.len()..];
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One keep-alive connection carries a Content-Length answer and then a chunked one (split
    /// across writes), headers kept with lowercase names; a connection the server closed after
    /// an answer is opened again for the next request.
    #[tokio::test]
    async fn the_client_reads_both_framings_and_reconnects() {
        async fn read_request(stream: &mut TcpStream) -> String {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                stream.read_exact(&mut byte).await.unwrap();
                head.push(byte[0]);
            }
            String::from_utf8(head).unwrap()
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.unwrap();
            let request = read_request(&mut first).await;
            assert!(request.starts_with("GET /a HTTP/1.1\r\n"), "{request}");
            assert!(request.contains("Authorization: Bearer t\r\n"), "{request}");
            first
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Standings-Cache: HIT\r\n\r\nhello")
                .await
                .unwrap();
            read_request(&mut first).await;
            first
                .write_all(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab")
                .await
                .unwrap();
            first.write_all(b"c\r\n2\r\nde\r\n0\r\n\r\n").await.unwrap();
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            read_request(&mut second).await;
            second
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await
                .unwrap();
        });
        let mut client = Client::new(&addr);
        let a = client.get("/a", Some("t")).await.unwrap();
        assert_eq!(
            (a.status, a.body.as_slice(), a.header("x-standings-cache")),
            (200, &b"hello"[..], Some("HIT"))
        );
        let b = client.get("/b", None).await.unwrap();
        assert_eq!((b.status, b.body.as_slice()), (404, &b"abcde"[..]));
        let c = client.get("/c", None).await.unwrap();
        assert_eq!((c.status, c.body.as_slice()), (200, &b"ok"[..]));
        server.await.unwrap();
    }

    /// The load generator's connection sends its bearer and a small body in one request, reads
    /// answers back to back on one keep-alive connection, and reads a body that runs to the
    /// end of the connection, after which it is not reused.
    #[tokio::test]
    async fn the_connection_keeps_alive_and_reads_to_the_close() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let n = stream.read(&mut request).await.unwrap();
            let request = String::from_utf8_lossy(&request[..n]).into_owned();
            assert!(request.starts_with("POST /e HTTP/1.1\r\n"), "{request}");
            assert!(request.contains("Authorization: Bearer k\r\n"), "{request}");
            assert!(request.ends_with("Content-Length: 2\r\n\r\n{}"), "{request}");
            stream
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 4\r\n\r\nokay")
                .await
                .unwrap();
            let n = stream.read(&mut [0u8; 4096]).await.unwrap();
            assert!(n > 0);
            stream
                .write_all(b"HTTP/1.1 200 OK\r\n\r\nto the end")
                .await
                .unwrap();
        });
        let mut conn = HttpConn::connect(&addr, "k").await.unwrap();
        let answer = conn.post("/e", b"{}").await.unwrap();
        assert_eq!((answer.status, conn.body(&answer)), (202, &b"okay"[..]));
        assert!(conn.reusable());
        let answer = conn.get("/f").await.unwrap();
        assert_eq!((answer.status, conn.body(&answer)), (200, &b"to the end"[..]));
        assert!(!conn.reusable());
        server.await.unwrap();
    }
}
