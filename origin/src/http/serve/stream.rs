//! A live subscription's Server-Sent Events answer, written outside hyper.
//!
//! hyper keeps two 8 KiB buffers per connection for its whole life (a read buffer and a write
//! buffer that cannot be made smaller), which is most of what an idle SSE subscriber would
//! cost. A connection whose first request is a `GET` of a route the router marks for it
//! ([`StreamRoutes`]) and that does not ask to upgrade is therefore served here instead: its
//! head is read and parsed with `httparse` (the parser hyper itself uses), the request goes
//! through the same router as every other, and the answer's head and body are written straight
//! to the socket, the body's shared bytes uncopied. The connection closes when the answer
//! ends, so the body needs no framing (it ends at the close, as HTTP/1.1 allows for an answer
//! without a length), and a request pipelined behind the subscription could never be answered:
//! its bytes are read and dropped, which is also how the client's close is noticed. Anything
//! else, a WebSocket upgrade or a request with a body included, goes to hyper with the bytes
//! already read put back in front of the stream.
//!
//! The decision is made on the request line, read until its path is whole (within the header
//! deadline), so a subscription whose first segment is cut short is still served here.

use std::convert::Infallible;
use std::io::{self, IoSlice};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri, Version, header};
use axum::response::Response;
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use super::ledger::RequestLog;
use super::{Limits, Streaming};
use crate::metrics::Metrics;

/// The longest head read here; a longer one is handed to hyper, which refuses it properly.
const MAX_HEAD: usize = 16 * 1024;

/// The most headers a subscription request may carry.
const MAX_HEADERS: usize = 64;

/// The routes whose `GET`s are served here, on a connection of their own: paths in axum's route
/// syntax (`/v1/leaderboards/{game}/.../subscribe`), matched by `matchit` as axum's router
/// matches them. The router names them where it defines the routes (`http::stream_routes`), so
/// the choice of a connection's server is the router's, made before hyper sees the connection.
#[derive(Clone, Debug, Default)]
pub struct StreamRoutes(matchit::Router<()>);

impl StreamRoutes {
    /// A table of `paths`. Panics on a path that is not a valid route, or a repeated one, as
    /// axum's `Router::route` does.
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> StreamRoutes {
        let mut table = matchit::Router::new();
        for path in paths {
            if let Err(e) = table.insert(path, ()) {
                panic!("{path:?} cannot be a streamed route: {e}");
            }
        }
        StreamRoutes(table)
    }

    /// Whether the bytes at the start of a connection begin a `GET` of one of these routes;
    /// `None` when they end before the request target's path does. O(path length).
    pub(super) fn takes(&self, first: &[u8]) -> Option<bool> {
        let Some(rest) = first.strip_prefix(b"GET ") else {
            // Fewer bytes than "GET " that agree with it so far: undecided; anything else is not.
            return if b"GET ".starts_with(first) {
                None
            } else {
                Some(false)
            };
        };
        let end = rest.iter().position(|&b| b == b'?' || b == b' ')?;
        // The path as the router sees it (`Uri::path`), of an absolute-form target too.
        Some(Uri::try_from(&rest[..end]).is_ok_and(|target| self.0.at(target.path()).is_ok()))
    }
}

/// What reading the start of a connection found.
pub(super) enum Head {
    /// A complete head of a `GET` of a streamed route, without a body, that does not ask to
    /// upgrade: served here.
    Stream(Box<Request>),
    /// Anything else: for hyper, with the bytes read so far.
    Hyper(Bytes),
}

/// Reads the start of a new connection until its request line tells whether it is a `GET` of
/// one of `streamed`'s routes, and when it is, its whole head: `None` when the connection closed, failed or
/// passed `deadline` (the connection's header deadline, counted as a timed-out connection)
/// first, or the service stopped before its first byte came (an idle connection closes at a
/// stop). One read usually decides; what was read goes to hyper with a connection that is not
/// a streamed route.
pub(super) async fn read_head(
    stream: &mut TcpStream,
    streamed: &StreamRoutes,
    deadline: Instant,
    metrics: &Metrics,
    stopped: &mut watch::Receiver<Option<Instant>>,
) -> Option<Head> {
    let mut head = Vec::with_capacity(1024);
    loop {
        let first = head.is_empty();
        let read = tokio::time::timeout_at(deadline, stream.read_buf(&mut head));
        let read = tokio::select! {
            read = read => read,
            _ = stopped.wait_for(Option::is_some), if first => return None,
        };
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => return None,
            Err(_) => {
                metrics.connections_timed_out.add(1);
                return None;
            }
            Ok(Ok(_)) => {}
        }
        match streamed.takes(&head) {
            Some(false) => return Some(Head::Hyper(Bytes::from(head))),
            None if head.len() < MAX_HEAD => continue,
            None => return Some(Head::Hyper(Bytes::from(head))),
            Some(true) => {}
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                return Some(match to_request(&parsed) {
                    Some(request) => Head::Stream(Box::new(request)),
                    None => Head::Hyper(Bytes::from(head)),
                });
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => continue,
            _ => return Some(Head::Hyper(Bytes::from(head))),
        }
    }
}

/// The request of a parsed head, when it is one served here: a `GET` without a body that asks
/// for no upgrade. Bytes after its head are a request pipelined behind it, never answered.
fn to_request(parsed: &httparse::Request<'_, '_>) -> Option<Request> {
    let method = Method::from_bytes(parsed.method?.as_bytes()).ok()?;
    if method != Method::GET {
        return None;
    }
    let uri: Uri = parsed.path?.parse().ok()?;
    let mut request = Request::new(Body::empty());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = match parsed.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    for header in parsed.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(header.value).ok()?;
        request.headers_mut().append(name, value);
    }
    let headers = request.headers();
    let asks_upgrade = headers.contains_key(header::UPGRADE);
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0");
    (!asks_upgrade && !has_body).then_some(request)
}

/// Answers a subscription read here: the router's answer, its head written by hand, then its
/// body frame by frame until it ends, the client goes away, a write waits longer than
/// `idle_timeout` for a client that does not read, or the stop's deadline passes (the hub sent
/// `going_away` before the stop, and a client that has not taken it by then is not waited for).
pub(super) async fn serve<S>(
    mut stream: TcpStream,
    app: S,
    request: Request,
    limits: Limits,
    metrics: &Metrics,
    mut stopped: watch::Receiver<Option<Instant>>,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send,
{
    let logged = RequestLog::begin(&request);
    let Ok(response) = app.oneshot(request).await;
    if let Some(logged) = logged {
        logged.end(&response);
    }
    let streaming = response.extensions().get::<Streaming>().is_some();
    let (parts, body) = response.into_parts();
    let mut out = head_bytes(&parts);
    if !streaming {
        // A refusal: a small body, written whole with its length.
        let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
            return;
        };
        out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(&body);
        let _ = write_within(&mut stream, &[IoSlice::new(&out)], limits, metrics, &mut stopped).await;
        let _ = stream.shutdown().await;
        return;
    }
    out.extend_from_slice(b"\r\n");
    if write_within(&mut stream, &[IoSlice::new(&out)], limits, metrics, &mut stopped)
        .await
        .is_err()
    {
        return;
    }
    drop(out);
    let mut body = body;
    let (mut reader, mut writer) = stream.split();
    loop {
        let stop_by = *stopped.borrow();
        let frame = tokio::select! {
            frame = body.frame() => frame,
            // The client sends nothing the stream reads (a request pipelined behind it is
            // dropped); a read that ends is the client gone.
            () = read_discard(&mut reader) => return,
            _ = stopped.changed(), if stop_by.is_none() => continue,
            () = tokio::time::sleep_until(stop_by.unwrap_or_else(Instant::now)), if stop_by.is_some() => return,
        };
        let Some(Ok(frame)) = frame else { break };
        let Ok(first) = frame.into_data() else { continue };
        // The frames already waiting go out in the same write (an event is three frames).
        let mut frames = vec![first];
        let mut ended = false;
        while frames.len() < 16 {
            match futures_util::FutureExt::now_or_never(body.frame()) {
                Some(Some(Ok(next))) => frames.extend(next.into_data().ok()),
                Some(_) => {
                    ended = true;
                    break;
                }
                None => break,
            }
        }
        let slices: Vec<IoSlice<'_>> = frames.iter().map(|f| IoSlice::new(f)).collect();
        if write_within(&mut writer, &slices, limits, metrics, &mut stopped)
            .await
            .is_err()
        {
            return;
        }
        if ended {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

/// The status line and headers of an answer, without the blank line that ends them: the
/// router's headers, and `connection: close`, as the connection ends with the answer.
fn head_bytes(parts: &axum::http::response::Parts) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    status_line(&mut out, parts.status);
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH || name == header::CONNECTION {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    // A streamed body has no length and no chunking: it is everything until the close.
    out.extend_from_slice(b"connection: close\r\n");
    out
}

/// The status line of an answer written here: HTTP/1.1, as hyper answers, the code and its
/// canonical reason (none for a code without one).
fn status_line(out: &mut Vec<u8>, status: StatusCode) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Reads and drops what the client sends; returns when the client closed or the read failed.
async fn read_discard<R: AsyncRead + Unpin>(reader: &mut R) {
    let mut sink = [0u8; 256];
    loop {
        match reader.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Writes every slice, giving up (and counting a timed-out connection) when one write waits
/// longer than `idle_timeout` for the client to take bytes, or past the stop's deadline.
async fn write_within<W: AsyncWrite + Unpin>(
    writer: &mut W,
    slices: &[IoSlice<'_>],
    limits: Limits,
    metrics: &Metrics,
    stopped: &mut watch::Receiver<Option<Instant>>,
) -> io::Result<()> {
    let mut owned: Vec<IoSlice<'_>> = slices.to_vec();
    let mut rest = &mut owned[..];
    while !rest.is_empty() {
        let mut until = Instant::now() + limits.idle_timeout;
        let wrote = loop {
            if let Some(stop_by) = *stopped.borrow() {
                until = until.min(stop_by);
            }
            tokio::select! {
                wrote = tokio::time::timeout_at(until, writer.write_vectored(rest)) => break wrote,
                // A stop while the write waits moves its deadline; the write starts over.
                _ = stopped.changed(), if stopped.borrow().is_none() => {}
            }
        };
        let n = match wrote {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                metrics.connections_timed_out.add(1);
                return Err(io::ErrorKind::TimedOut.into());
            }
        };
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a `GET` of a route the router streams is taken, decided on the request line's
    /// first bytes; a line cut before its path ends is left undecided (and so to hyper).
    #[test]
    fn subscribe_lines_are_told_from_the_first_bytes() {
        let streamed = crate::http::stream_routes();
        let taken = [
            &b"GET /v1/leaderboards/g/m/s/global/subscribe?view=top:10 HTTP/1.1\r\n"[..],
            b"GET /v1/leaderboards/g/m/s/global/subscribe HTTP/1.1\r\n",
            b"GET http://origin/v1/leaderboards/g/m/s/global/subscribe HTTP/1.1\r\n",
        ];
        for line in taken {
            assert_eq!(
                streamed.takes(line),
                Some(true),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let left = [
            &b"GET /v1/leaderboards/g/m/s/global/top?limit=10 HTTP/1.1\r\n"[..],
            b"POST /v1/leaderboards/g/m/s/global/subscribe HTTP/1.1\r\n",
            b"GET /v1/subscribe/top HTTP/1.1\r\n",
            b"GET /healthz?x=/subscribe HTTP/1.1\r\n",
            b"GET /v1/leaderboards/g/m/global/subscribe HTTP/1.1\r\n",
            b"GET /v1/leaderboards/g/m/s/global/subscribe/ HTTP/1.1\r\n",
            b"PUT ",
            b"\x16\x03\x01",
        ];
        for line in left {
            assert_eq!(
                streamed.takes(line),
                Some(false),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        for cut in [
            &b""[..],
            b"G",
            b"GET",
            b"GET /v1/leaderboards/g/m/s/global/subscr",
        ] {
            assert_eq!(streamed.takes(cut), None, "{}", String::from_utf8_lossy(cut));
        }
    }

    /// A status line is the code and its canonical reason, as hyper writes it.
    #[test]
    fn a_status_line_has_the_canonical_reason() {
        let line = |status| {
            let mut out = Vec::new();
            status_line(&mut out, status);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(StatusCode::OK), "HTTP/1.1 200 OK\r\n");
        assert_eq!(
            line(StatusCode::TOO_MANY_REQUESTS),
            "HTTP/1.1 429 Too Many Requests\r\n"
        );
    }
}
