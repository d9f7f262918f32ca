//! The serve loop over real sockets: threads, stops, deadlines, and streams through hyper and
//! outside it.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use axum::routing::get;
use http_body_util::BodyExt as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use super::accept::notice_vanished_peers;
use super::connection::answer;
use super::deadline::{IDLE, Phase, STREAMING};
use super::*;
use crate::metrics::Metrics;

/// The routes these tests serve outside hyper, as the router names the subscription route.
fn test_streamed() -> StreamRoutes {
    StreamRoutes::new(["/b/subscribe", "/no/subscribe", "/left/subscribe", "/p/subscribe"])
}

/// Sends `GET path` on a keep-alive connection and returns the status line and the body.
async fn get_on(stream: &mut TcpStream, path: &str) -> (String, String) {
    let request = format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed mid-answer");
        buf.extend_from_slice(&chunk[..n]);
    }
    let status = head.lines().next().unwrap().to_owned();
    (
        status,
        String::from_utf8(buf[head_end..head_end + length].to_vec()).unwrap(),
    )
}

/// Starts [`serve`] on a free port; returns its address, the stop trigger and its task.
async fn start(
    app: Router,
    count: usize,
) -> (
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    start_with(app, count, TEST_LIMITS).await
}

/// [`start`] with the given limits.
async fn start_with(
    app: Router,
    count: usize,
    limits: Limits,
) -> (
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    start_counted(app, count, limits, Arc::new(Metrics::default())).await
}

/// [`start_with`], counting connections in `metrics`.
async fn start_counted(
    app: Router,
    count: usize,
    limits: Limits,
    metrics: Arc<Metrics>,
) -> (
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let threads = Threads { count, pin: false };
    let task = tokio::spawn(serve(
        listener,
        app,
        test_streamed(),
        threads,
        limits,
        metrics,
        async move {
            let _ = stopped.await;
            Instant::now() + TEST_STOP_GRACE
        },
    ));
    (addr, stop, task)
}

/// Stops a [`start`]ed serve loop and waits (10 s at most) for it to return.
async fn stop_and_join(stop: oneshot::Sender<()>, task: tokio::task::JoinHandle<io::Result<()>>) {
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
}

/// How long a stop gives streams in these tests.
const TEST_STOP_GRACE: Duration = Duration::from_secs(2);

const TEST_LIMITS: Limits = Limits {
    header_read_timeout: Duration::from_secs(10),
    idle_timeout: Duration::from_secs(60),
    max_connections: 100,
};

fn thread_name() -> String {
    thread::current().name().unwrap_or("unnamed").to_owned()
}

/// Connections go round-robin to the threads, and each stays on its thread.
#[tokio::test]
async fn connections_take_turns_on_the_threads_and_stay_on_theirs() {
    let app = Router::new().route("/who", get(|| async { thread_name() }));
    let (addr, stop, task) = start(app, 3).await;
    let mut streams = Vec::new();
    let mut first = Vec::new();
    for _ in 0..6 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let (status, who) = get_on(&mut stream, "/who").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        first.push(who);
        streams.push(stream);
    }
    let expected: Vec<String> = (0..6).map(|i| format!("standings-http-{}", i % 3)).collect();
    assert_eq!(first, expected);
    for (stream, who) in streams.iter_mut().zip(&first) {
        for _ in 0..3 {
            assert_eq!(&get_on(stream, "/who").await.1, who);
        }
    }
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns once idle connections are closed")
        .unwrap()
        .unwrap();
}

/// A stop lets the request being answered finish, closes idle keep-alive connections at
/// once, refuses new ones, and returns only when every connection is closed.
#[tokio::test]
async fn a_stop_finishes_the_request_in_flight_then_returns() {
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (s, r) = (started.clone(), release.clone());
    let app = Router::new().route(
        "/slow",
        get(move || {
            let (s, r) = (s.clone(), r.clone());
            async move {
                s.notify_one();
                r.notified().await;
                "finished"
            }
        }),
    );
    let (addr, stop, task) = start(app, 2).await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut busy = TcpStream::connect(addr).await.unwrap();
    let answer = tokio::spawn(async move { get_on(&mut busy, "/slow").await });
    started.notified().await;

    stop.send(()).unwrap();
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut byte)).await;
    assert_eq!(closed.expect("the idle connection is closed").unwrap(), 0);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no new connections after a stop"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!task.is_finished(), "serve waits for the request in flight");

    release.notify_one();
    let (status, body) = answer.await.unwrap();
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "finished"));
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns once the last connection is closed")
        .unwrap()
        .unwrap();
}

/// A connection that never finishes its header does not hold up a stop past its header
/// deadline: hyper alone would wait for the request it has begun to read.
#[tokio::test]
async fn a_stop_is_not_held_up_by_a_header_that_never_ends() {
    let app = Router::new().route("/who", get(|| async { thread_name() }));
    let limits = Limits {
        header_read_timeout: Duration::from_secs(1),
        ..TEST_LIMITS
    };
    let (addr, stop, task) = start_with(app, 1, limits).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /who HTTP/1.1\r\nhost: te").await.unwrap();
    // Answered first, so the slow connection is surely being read when the stop comes.
    let mut other = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut other, "/who").await.0, "HTTP/1.1 200 OK");
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns once the slow header's deadline has passed")
        .unwrap()
        .unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(
        slow.read(&mut byte).await.unwrap_or(0),
        0,
        "the slow connection is closed"
    );
}

/// A route at `path` whose answer is marked [`Streaming`]: its body sends `first`, then
/// `second` when `more` is notified, then ends.
fn streaming_route(path: &str, more: Arc<Notify>) -> Router {
    Router::new().route(
        path,
        get(move || {
            let more = more.clone();
            async move {
                let parts = futures_util::stream::unfold(0, move |sent| {
                    let more = more.clone();
                    async move {
                        match sent {
                            0 => Some((Ok::<_, Infallible>("first\n"), 1)),
                            1 => {
                                more.notified().await;
                                Some((Ok("second\n"), 2))
                            }
                            _ => None,
                        }
                    }
                });
                let mut response = Response::new(Body::from_stream(parts));
                response.extensions_mut().insert(Streaming);
                response
            }
        }),
    )
}

/// Reads from `stream` until what it has read holds `text`; fails if the connection
/// closes first, or after a 10 s guard.
async fn read_until(stream: &mut TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    let reading = async {
        while !String::from_utf8_lossy(&seen).contains(text) {
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "the connection closed before {text:?}: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), reading)
        .await
        .expect("the text comes within the guard");
    String::from_utf8(seen).unwrap()
}

/// A streaming answer's connection has no deadline while the body is open, and turns idle
/// when it ends; any other answer's connection turns idle when its head is ready.
#[tokio::test]
async fn a_streaming_answer_holds_off_the_idle_deadline_until_its_body_ends() {
    let more = Arc::new(Notify::new());
    let app = streaming_route("/stream", more.clone()).route("/plain", get(|| async { "plain" }));
    let phase = Arc::new(Phase::new(TEST_LIMITS));
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();

    let plain = answer(app.clone(), phase.clone(), get("/plain")).await.unwrap();
    assert_eq!(phase.state(), IDLE);
    assert!(plain.extensions().get::<Streaming>().is_none());

    let streamed = answer(app, phase.clone(), get("/stream")).await.unwrap();
    assert_eq!(phase.state(), STREAMING, "the head is out, the body is not");
    assert_eq!(phase.deadline(), None);
    let mut body = streamed.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"first\n");
    assert_eq!(phase.state(), STREAMING);
    more.notify_one();
    let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&second[..], b"second\n");
    assert!(body.frame().await.is_none(), "the body ended");
    drop(body);
    assert_eq!(phase.state(), IDLE);
    assert!(phase.deadline().is_some());
}

/// Over a real connection, an open stream outlives `idle_timeout`: a keep-alive connection
/// whose answer came after the stream's head is closed for idleness first, and the stream
/// still delivers after that.
#[tokio::test]
async fn an_open_stream_outlives_the_idle_timeout() {
    let more = Arc::new(Notify::new());
    let app = streaming_route("/stream", more.clone()).route("/who", get(|| async { thread_name() }));
    let limits = Limits {
        idle_timeout: Duration::from_millis(100),
        ..TEST_LIMITS
    };
    let (addr, stop, task) = start_with(app, 1, limits).await;
    let mut streaming = TcpStream::connect(addr).await.unwrap();
    streaming
        .write_all(b"GET /stream HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    read_until(&mut streaming, "first").await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut idle, "/who").await.0, "HTTP/1.1 200 OK");
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut byte)).await;
    assert_eq!(closed.expect("the idle connection is closed").unwrap_or(0), 0);
    more.notify_one();
    read_until(&mut streaming, "second").await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns once the stream has ended")
        .unwrap()
        .unwrap();
}

/// Tells a test when it is dropped: a body holding one is dropped when its connection goes.
struct Dropped(Option<oneshot::Sender<()>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.take().map(|tell| tell.send(()));
    }
}

/// A client that stops reading a stream is dropped `idle_timeout` after a write first had
/// to wait, so the end of its stream, which could never be written, does not hold the
/// connection (or a stop) for ever; through hyper, and on the subscription path outside it.
#[tokio::test]
async fn a_client_that_stops_reading_a_stream_is_dropped() {
    for path in ["/flood", "/b/subscribe"] {
        a_client_that_stops_reading_is_dropped_at(path).await;
    }
}

async fn a_client_that_stops_reading_is_dropped_at(path: &str) {
    let (tell, dropped) = oneshot::channel();
    let guard = Arc::new(std::sync::Mutex::new(Some(Dropped(Some(tell)))));
    let app = Router::new().route(
        path,
        get(move || {
            let guard = guard.lock().unwrap().take();
            async move {
                // Endless, and as fast as the socket takes it.
                let parts = futures_util::stream::repeat_with(move || {
                    let _ = &guard;
                    Ok::<_, Infallible>(axum::body::Bytes::from(vec![b'x'; 64 * 1024]))
                });
                let mut response = Response::new(Body::from_stream(parts));
                response.extensions_mut().insert(Streaming);
                response
            }
        }),
    );
    let limits = Limits {
        idle_timeout: Duration::from_millis(100),
        ..TEST_LIMITS
    };
    let metrics = Arc::new(Metrics::default());
    let (addr, stop, task) = start_counted(app, 1, limits, metrics.clone()).await;
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), dropped)
        .await
        .expect("the stalled connection is dropped")
        .unwrap();
    assert_eq!(metrics.connections_timed_out.get(), 1);
    stop_and_join(stop, task).await;
}

/// An endless stream as fast as the socket takes it, at `path`.
fn flood(path: &str) -> Router {
    Router::new().route(
        path,
        get(|| async {
            let parts = futures_util::stream::repeat_with(|| {
                Ok::<_, Infallible>(axum::body::Bytes::from(vec![b'x'; 64 * 1024]))
            });
            let mut response = Response::new(Body::from_stream(parts));
            response.extensions_mut().insert(Streaming);
            response
        }),
    )
}

/// A stop ends a stream whose client does not read by the stop's deadline (issue 28: it
/// waited `idle_timeout`, 45 s by default, past Docker's and Kubernetes' grace), through
/// hyper and on the subscription path outside it; the idle deadline here is a minute.
#[tokio::test]
async fn a_stop_drops_a_stalled_stream_at_its_deadline() {
    for path in ["/flood", "/b/subscribe"] {
        let limits = Limits {
            idle_timeout: Duration::from_secs(60),
            ..TEST_LIMITS
        };
        let (addr, stop, task) = start_with(flood(path), 1, limits).await;
        let mut stalled = TcpStream::connect(addr).await.unwrap();
        stalled
            .write_all(format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").as_bytes())
            .await
            .unwrap();
        read_until(&mut stalled, "xxxx").await;
        // Long enough for the socket buffers to fill and the server's write to wait.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let began = Instant::now();
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("serve returns by the stop's deadline, not the idle timeout")
            .unwrap()
            .unwrap();
        assert!(began.elapsed() < Duration::from_secs(20), "{path}");
        drop(stalled);
    }
}

/// Accepted sockets give up on a vanished peer within the idle timeout: data unacknowledged
/// that long fails the socket, and an idle one is probed.
#[tokio::test]
async fn accepted_sockets_notice_a_vanished_peer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _client = TcpStream::connect(addr).await.unwrap();
    let (accepted, _) = listener.accept().await.unwrap();
    notice_vanished_peers(&accepted, Duration::from_secs(45));
    let socket = socket2::SockRef::from(&accepted);
    assert!(socket.keepalive().unwrap());
    assert_eq!(socket.tcp_keepalive_time().unwrap(), Duration::from_secs(15));
    #[cfg(target_os = "linux")]
    assert_eq!(socket.tcp_user_timeout().unwrap(), Some(Duration::from_secs(45)));
}

/// A subscription (`GET .../subscribe`, no upgrade) is served outside hyper: its head says
/// the connection closes with the answer and has no length, its frames arrive as the body
/// yields them, and the connection closes when the body ends.
#[tokio::test]
async fn a_subscription_is_streamed_outside_hyper_and_closes_with_its_end() {
    let more = Arc::new(Notify::new());
    let (addr, stop, task) = start(streaming_route("/b/subscribe", more.clone()), 1).await;
    let mut client = TcpStream::connect(addr).await.unwrap();
    client
        .write_all(b"GET /b/subscribe?view=top:1 HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    let seen = read_until(&mut client, "first").await;
    let (head, body) = seen.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nconnection: close"), "{head}");
    assert!(
        !head.contains("content-length") && !head.contains("transfer-encoding"),
        "{head}"
    );
    assert_eq!(body, "first\n");
    more.notify_one();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut rest)).await;
    closed.expect("the connection closes when the body ends").unwrap();
    assert_eq!(rest, b"second\n");
    stop_and_join(stop, task).await;
}

/// A route at `path` whose [`Streaming`] answer sends `hello` and then stays open, and a
/// receiver told when that body is dropped (with its connection).
fn hello_until_dropped(path: &str) -> (Router, oneshot::Receiver<()>) {
    let (tell, dropped) = oneshot::channel();
    let guard = Arc::new(std::sync::Mutex::new(Some(Dropped(Some(tell)))));
    let route = Router::new().route(
        path,
        get(move || {
            let guard = guard.lock().unwrap().take();
            async move {
                use futures_util::StreamExt as _;
                let parts = futures_util::stream::once(async { Ok::<_, Infallible>("hello\n") })
                    .chain(futures_util::stream::pending())
                    .map(move |frame| {
                        let _ = &guard;
                        frame
                    });
                let mut response = Response::new(Body::from_stream(parts));
                response.extensions_mut().insert(Streaming);
                response
            }
        }),
    );
    (route, dropped)
}

/// On the subscription path, a refusal is written whole with its length, and a client that
/// goes away mid-stream drops the answer's body at once (so its subscription leaves).
#[tokio::test]
async fn a_subscription_refused_or_left_is_closed() {
    let (route, dropped) = hello_until_dropped("/left/subscribe");
    let app = route.route(
        "/no/subscribe",
        get(|| async { (axum::http::StatusCode::BAD_REQUEST, "no such view") }),
    );
    let (addr, stop, task) = start(app, 1).await;
    let mut refused = TcpStream::connect(addr).await.unwrap();
    let (status, body) = get_on(&mut refused, "/no/subscribe").await;
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 400 Bad Request", "no such view")
    );
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(10), refused.read(&mut byte)).await;
    assert_eq!(closed.expect("closed after the refusal").unwrap_or(0), 0);

    let mut leaving = TcpStream::connect(addr).await.unwrap();
    leaving
        .write_all(b"GET /left/subscribe HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    read_until(&mut leaving, "hello").await;
    drop(leaving);
    tokio::time::timeout(Duration::from_secs(10), dropped)
        .await
        .expect("the body goes with the client")
        .unwrap();
    stop_and_join(stop, task).await;
}

/// A subscription with a request pipelined behind it (never answerable, as the stream ends
/// only with the connection) is still served outside hyper, and its client's close is
/// noticed at once rather than at a later failed write.
#[tokio::test]
async fn a_subscription_with_a_request_pipelined_behind_it_notices_its_client_leave() {
    let (app, dropped) = hello_until_dropped("/p/subscribe");
    let (addr, stop, task) = start(app, 1).await;
    let mut client = TcpStream::connect(addr).await.unwrap();
    client
        .write_all(
            b"GET /p/subscribe HTTP/1.1\r\nhost: test\r\n\r\nGET /healthz HTTP/1.1\r\nhost: test\r\n\r\n",
        )
        .await
        .unwrap();
    let seen = read_until(&mut client, "hello").await;
    assert!(seen.contains("connection: close"), "served outside hyper: {seen}");
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), dropped)
        .await
        .expect("the body goes with the client")
        .unwrap();
    stop_and_join(stop, task).await;
}

/// A request to a subscription path that is not served outside hyper (here a `GET` with a
/// body) reaches hyper with every byte already read put back: it is answered, and the
/// connection stays open for the next request.
#[tokio::test]
async fn a_subscription_path_with_a_body_is_handed_to_hyper_whole() {
    let app = Router::new().route("/p/subscribe", get(|body: String| async move { body }));
    let (addr, stop, task) = start(app, 1).await;
    let mut client = TcpStream::connect(addr).await.unwrap();
    client
        .write_all(b"GET /p/subscribe HTTP/1.1\r\nhost: test\r\ncontent-length: 5\r\n\r\nhello")
        .await
        .unwrap();
    let seen = read_until(&mut client, "hello").await;
    assert!(seen.starts_with("HTTP/1.1 200 OK\r\n"), "{seen}");
    assert!(seen.contains("content-length: 5"), "{seen}");
    let (status, _) = get_on(&mut client, "/p/subscribe").await;
    assert_eq!(
        status, "HTTP/1.1 200 OK",
        "the connection was kept alive by hyper"
    );
    stop_and_join(stop, task).await;
}

/// A WebSocket upgrade goes through the serve loop; the upgraded socket counts as an open
/// connection until it closes; and a stop returns with one still open, closing it.
#[tokio::test]
async fn a_websocket_upgrade_is_served_and_does_not_hold_up_a_stop() {
    use axum::extract::ws::{Message, WebSocketUpgrade};
    use futures_util::StreamExt as _;

    let app = Router::new().route(
        "/ws",
        get(|upgrade: WebSocketUpgrade| async move {
            upgrade.on_upgrade(|mut socket| async move {
                let _ = socket.send(Message::Text("hello".into())).await;
                // Stays open until the client or the stop closes it.
                while let Some(Ok(_)) = socket.recv().await {}
            })
        }),
    );
    let metrics = Arc::new(Metrics::default());
    let (addr, stop, task) = start_counted(app, 1, TEST_LIMITS, metrics.clone()).await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut socket, answer) = tokio_tungstenite::client_async(format!("ws://{addr}/ws"), stream)
        .await
        .unwrap();
    assert_eq!(answer.status(), 101);
    let hello = socket.next().await.unwrap().unwrap();
    assert_eq!(hello.into_text().unwrap().as_str(), "hello");
    assert_eq!(metrics.connections_open.load(Ordering::Relaxed), 1);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("serve returns with a WebSocket open")
        .unwrap()
        .unwrap();
    let after = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("the socket is closed once serve returns");
    assert!(!matches!(after, Some(Ok(_))), "{after:?}");
    assert_eq!(metrics.connections_open.load(Ordering::Relaxed), 0);
}
