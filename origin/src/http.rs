//! Serving HTTP: one acceptor hands each connection, round-robin, to one of N connection
//! threads, each running a single-threaded runtime; a connection lives on its thread until it
//! closes. Each thread is pinned to a CPU of its own when there is one per thread. Everything
//! else (the writer, the evictor, `rest.rs`) stays on the main, multi-threaded runtime.
//!
//! Why not `axum::serve` on the multi-threaded runtime: a read is a few microseconds of work,
//! and on a work-stealing runtime with two workers the workers spent much of their time waking
//! and stealing from each other (about one `futex` call for every two requests). Measured with
//! the load generator at 1M members on this project's 2-core machine, a rank request cost the
//! service 16.9 us of CPU on two workers against 11.5 us on one; see `BENCHMARKS.md`.
//! Connections are assigned by count, not by load: every connection of a client sees the same
//! answers from the same shared state, so nothing but balance depends on the thread.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::thread;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tower::{Service, ServiceExt};

/// How many connection threads to run, and where.
#[derive(Clone, Copy, Debug)]
pub struct Threads {
    /// How many; 0 is one per CPU this process may use.
    pub count: usize,
    /// Pin each thread to a CPU of its own, when there is exactly one such CPU per thread.
    pub pin: bool,
}

impl Threads {
    /// The thread count to run: `count`, or one per CPU this process may use.
    pub fn resolved(self) -> usize {
        match self.count {
            0 => thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

/// The CPU each of `threads` connection threads is pinned to, from the CPUs this process may
/// run on (`cpus`): one each when there are exactly as many, none otherwise. Two of them sharing
/// a CPU would take turns in time slices of milliseconds, each holding its connections' answers
/// for a whole slice (a p99 of 4.4 ms instead of 1.3 ms in the load generator); fewer threads
/// than CPUs leave the choice to the kernel.
pub fn placement<C: Copy>(threads: usize, pin: bool, cpus: &[C]) -> Vec<Option<C>> {
    if pin && cpus.len() == threads {
        cpus.iter().copied().map(Some).collect()
    } else {
        vec![None; threads]
    }
}

/// The CPUs this process may run on, as [`placement`] takes them.
#[cfg(target_os = "linux")]
fn cpus() -> Vec<core_affinity::CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

/// Pins the calling thread; false when the kernel refused.
#[cfg(target_os = "linux")]
fn pin_current(cpu: core_affinity::CoreId) -> bool {
    core_affinity::set_for_current(cpu)
}

/// No pinning off Linux.
#[cfg(not(target_os = "linux"))]
fn cpus() -> Vec<()> {
    Vec::new()
}

#[cfg(not(target_os = "linux"))]
fn pin_current(_: ()) -> bool {
    false
}

/// Serves `app` on `listener` with [`Threads`] connection threads until `shutdown` resolves;
/// then stops accepting, lets every connection finish the request it is answering (idle
/// keep-alive connections close at once), and returns when all of them are closed.
pub async fn serve<S>(
    listener: TcpListener,
    app: S,
    threads: Threads,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let (stop, stopped) = watch::channel(false);
    let count = threads.resolved();
    let mut workers = Vec::with_capacity(count);
    let mut finished = Vec::with_capacity(count);
    for (i, cpu) in placement(count, threads.pin, &cpus()).into_iter().enumerate() {
        let (hand_over, incoming) = mpsc::unbounded_channel();
        let (done, done_rx) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (app, stopped) = (app.clone(), stopped.clone());
        thread::Builder::new()
            .name(format!("standings-http-{i}"))
            .spawn(move || {
                if let Some(cpu) = cpu
                    && !pin_current(cpu)
                {
                    eprintln!("standings: could not pin connection thread {i} to a CPU; it runs unpinned");
                }
                runtime.block_on(connections(incoming, app, stopped));
                // The runtime goes before the signal, so nothing of this thread outlives `serve`.
                drop(runtime);
                let _ = done.send(());
            })?;
        workers.push(hand_over);
        finished.push(done_rx);
    }
    let mut shutdown = std::pin::pin!(shutdown);
    let mut next = 0;
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors, most likely: wait for connections to close.
                eprintln!("standings: accepting a connection failed: {e}; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Answers are written whole; Nagle's algorithm would only hold back the last segment
        // of a large one.
        let _ = stream.set_nodelay(true);
        // Leaving this runtime's reactor; the connection thread registers it with its own.
        match stream.into_std() {
            Ok(stream) => {
                // A thread that ended (it cannot, but for a panic) drops its connections.
                let _ = workers[next].send(stream);
                next = (next + 1) % workers.len();
            }
            Err(e) => eprintln!("standings: cannot hand a connection over: {e}"),
        }
    }
    drop(listener);
    let _ = stop.send(true);
    drop(workers);
    for done in finished {
        let _ = done.await;
    }
    Ok(())
}

/// One connection thread: serves each connection handed to it, until the acceptor is gone and
/// every connection has closed.
async fn connections<S>(
    mut incoming: mpsc::UnboundedReceiver<std::net::TcpStream>,
    app: S,
    stopped: watch::Receiver<bool>,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let mut open = JoinSet::new();
    loop {
        tokio::select! {
            handed = incoming.recv() => match handed {
                Some(stream) => match TcpStream::from_std(stream) {
                    Ok(stream) => {
                        open.spawn(connection(stream, app.clone(), stopped.clone()));
                    }
                    Err(e) => eprintln!("standings: cannot take a connection over: {e}"),
                },
                None => break,
            },
            // Reaps closed connections so the set holds only open ones.
            Some(_) = open.join_next(), if !open.is_empty() => {}
        }
    }
    while open.join_next().await.is_some() {}
}

/// Serves one connection with HTTP/1.1 keep-alive; on shutdown, finishes the request in flight
/// and closes.
async fn connection<S>(stream: TcpStream, app: S, mut stopped: watch::Receiver<bool>)
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        app.clone().oneshot(request.map(Body::new) as Request)
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        // A client that goes away mid-request is not the service's error.
        _ = conn.as_mut() => return,
        _ = stopped.wait_for(|stop| *stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

/// Errors of one connection attempt, not of the listener.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

    use super::*;

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
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let threads = Threads { count, pin: false };
        let task = tokio::spawn(serve(listener, app, threads, async move {
            let _ = stopped.await;
        }));
        (addr, stop, task)
    }

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

    #[test]
    fn threads_are_pinned_only_with_one_cpu_each() {
        assert_eq!(placement(2, true, &[4, 7]), vec![Some(4), Some(7)]);
        assert_eq!(placement(2, false, &[4, 7]), vec![None, None]);
        assert_eq!(placement(3, true, &[4, 7]), vec![None, None, None]);
        assert_eq!(placement(1, true, &[4, 7]), vec![None]);
        assert_eq!(placement(2, true, &[] as &[u8]), vec![None, None]);
    }
}
