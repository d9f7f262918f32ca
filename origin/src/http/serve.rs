//! Serving HTTP: one acceptor hands each connection, round-robin, to one of N connection
//! threads, each running a single-threaded runtime; a connection lives on its thread until it
//! closes. Each thread is pinned to a CPU of its own when there is one per thread. Everything
//! else (the writer, the evictor, `rest.rs`) stays on the main, multi-threaded runtime.
//!
//! Why not `axum::serve` on the multi-threaded runtime: a read is a few microseconds of work,
//! and on a work-stealing runtime the workers spend much of it waking and stealing from each
//! other, so a request costs more CPU on two workers than on one (`BENCHMARKS.md` has the
//! figures).
//! Connections are assigned by count, not by load: every connection of a client sees the same
//! answers from the same shared state, so nothing but balance depends on the thread.
//!
//! Each connection has a deadline while it owes the service bytes ([`Limits`]): a new
//! connection, or a request whose first byte came, must finish its header within
//! `header_read_timeout`; a keep-alive connection must begin its next request within
//! `idle_timeout` of the end of the last answer. While a request is being answered there is
//! none. hyper's own `header_read_timeout` is not used: it starts when hyper begins to wait for
//! a head, which on a keep-alive connection is the end of the last answer, so it would close
//! idle connections at the header deadline. At most `max_connections` are open at once (by
//! default the descriptor limit less the descriptors open at start and a reserve); a connection
//! beyond it is closed as it arrives, so that the open ones keep their descriptors and no
//! accept fails for want of one.
//!
//! A live subscription's answer streams for as long as the client stays: its handler marks the
//! response [`Streaming`], and the connection has no deadline until that body ends, unless the
//! client stops reading it (a write waits `idle_timeout`). A WebSocket
//! upgrade leaves the connection's task; the upgraded socket is still counted as open until it
//! closes, as it still holds a descriptor.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use crate::config::Config;
use crate::metrics::Metrics;

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

/// How long a connection may keep the service waiting, and how many may be open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// From a new connection, or a request's first byte, to the end of the request's header.
    pub header_read_timeout: Duration,
    /// From the end of an answer to the first byte of the next request on the connection.
    pub idle_timeout: Duration,
    /// The most connections open at once; one more is closed as it arrives.
    pub max_connections: usize,
}

/// Descriptors kept back beyond those open at start: the database pool reopening a broken
/// connection, SQLite's temporary files, the listener's next `accept` before a refusal closes
/// it, and whatever else the process opens while it runs.
pub const DESCRIPTOR_RESERVE: usize = 64;

/// The cap used when the descriptor limit cannot be read.
pub const FALLBACK_MAX_CONNECTIONS: usize = 1_000;

impl Limits {
    /// The connection limits `config` sets, with the cap derived now ([`Limits::derived_cap`])
    /// when it sets none.
    pub fn of(config: &Config) -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(config.header_read_timeout_seconds),
            idle_timeout: Duration::from_secs(config.idle_timeout_seconds),
            max_connections: match config.max_connections {
                0 => Limits::derived_cap(),
                n => n,
            },
        }
    }

    /// The connection cap for a process allowed `limit` descriptors of which `open` are in use
    /// (the store's connections among them): what is left after [`DESCRIPTOR_RESERVE`], and at
    /// least one.
    pub fn cap_for(limit: usize, open: usize) -> usize {
        limit
            .saturating_sub(open)
            .saturating_sub(DESCRIPTOR_RESERVE)
            .max(1)
    }

    /// The cap for this process now: [`Limits::cap_for`] its soft `RLIMIT_NOFILE` and the
    /// descriptors it has open, both read from `/proc` (no `unsafe` and no extra crate for one
    /// number at start); [`FALLBACK_MAX_CONNECTIONS`] where they cannot be read.
    pub fn derived_cap() -> usize {
        let limit = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| open_files_limit(&text));
        let open = std::fs::read_dir("/proc/self/fd").map(|dir| dir.count()).ok();
        match (limit, open) {
            (Some(limit), Some(open)) => Limits::cap_for(limit, open),
            _ => FALLBACK_MAX_CONNECTIONS,
        }
    }
}

/// The soft limit on open files in the text of `/proc/self/limits`; `unlimited` is taken as a
/// million.
pub fn open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(1_000_000);
    }
    soft.parse().ok()
}

/// The CPU each of `threads` connection threads is pinned to, from the CPUs this process may
/// run on (`cpus`): one each when there are exactly as many, none otherwise. Two of them sharing
/// a CPU would take turns in time slices of milliseconds, each holding its connections' answers
/// for a whole slice, which shows in the tail latency; fewer threads
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

/// Serves `app` on `listener` with [`Threads`] connection threads and the connection
/// [`Limits`] until `shutdown` resolves; then stops accepting, lets every connection finish the
/// request it is answering (idle keep-alive connections close at once), ends every streaming
/// answer by the instant `shutdown` resolved to, and returns when all of them are closed.
/// Open, refused and timed-out connections are counted in `metrics`.
pub async fn serve<S>(
    listener: TcpListener,
    app: S,
    threads: Threads,
    limits: Limits,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = Instant>,
) -> io::Result<()>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let (stop, stopped) = watch::channel(None::<Instant>);
    let count = threads.resolved();
    let mut workers = Vec::with_capacity(count);
    let mut finished = Vec::with_capacity(count);
    for (i, cpu) in placement(count, threads.pin, &cpus()).into_iter().enumerate() {
        let (hand_over, incoming) = mpsc::unbounded_channel();
        let (done, done_rx) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (app, stopped, metrics) = (app.clone(), stopped.clone(), metrics.clone());
        thread::Builder::new()
            .name(format!("standings-http-{i}"))
            .spawn(move || {
                if let Some(cpu) = cpu
                    && !pin_current(cpu)
                {
                    tracing::warn!("could not pin connection thread {i} to a CPU; it runs unpinned");
                }
                runtime.block_on(connections(incoming, app, limits, metrics, stopped));
                // The runtime goes before the signal, so nothing of this thread outlives `serve`.
                drop(runtime);
                let _ = done.send(());
            })?;
        workers.push(hand_over);
        finished.push(done_rx);
    }
    let mut shutdown = std::pin::pin!(shutdown);
    let mut next = 0;
    let streams_end = loop {
        let accepted = tokio::select! {
            streams_end = &mut shutdown => break streams_end,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _))
                if metrics.connections_open.load(Ordering::Relaxed) >= limits.max_connections as u64 =>
            {
                // Closed at once: holding it would take a descriptor the open ones may need.
                drop(stream);
                metrics.connections_refused.add(1);
                continue;
            }
            Ok((stream, _)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors, most likely: wait for connections to close.
                tracing::warn!("accepting a connection failed: {e}; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Answers are written whole; Nagle's algorithm would only hold back the last segment
        // of a large one.
        let _ = stream.set_nodelay(true);
        notice_vanished_peers(&stream, limits.idle_timeout);
        // Counted from here until the connection thread is done with it (or drops it).
        let open = OpenConnection::new(metrics.clone());
        // Leaving this runtime's reactor; the connection thread registers it with its own.
        match stream.into_std() {
            Ok(stream) => {
                // A thread that ended (it cannot, but for a panic) drops its connections.
                let _ = workers[next].send((stream, open));
                next = (next + 1) % workers.len();
            }
            Err(e) => tracing::warn!("cannot hand a connection over: {e}"),
        }
    };
    drop(listener);
    let _ = stop.send(Some(streams_end));
    drop(workers);
    for done in finished {
        let _ = done.await;
    }
    Ok(())
}

/// Makes the kernel give up on a peer that vanished (its packets dropped, as when a phone leaves
/// coverage) within about `idle_timeout`: data left unacknowledged that long fails the socket
/// (`TCP_USER_TIMEOUT`), and an idle connection is probed from a third of it on. Without this,
/// writes to such a peer fit the send buffer until the kernel retries for about 15 minutes,
/// and a live subscriber holds its place and its buffer all that time. Best effort: a socket
/// that refuses an option keeps the kernel's defaults.
fn notice_vanished_peers(stream: &TcpStream, idle_timeout: Duration) {
    let socket = socket2::SockRef::from(stream);
    let probe_after = (idle_timeout / 3).max(Duration::from_secs(1));
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(probe_after)
        .with_interval(probe_after / 3 + Duration::from_millis(1))
        .with_retries(3);
    let _ = socket.set_tcp_keepalive(&keepalive);
    #[cfg(target_os = "linux")]
    let _ = socket.set_tcp_user_timeout(Some(idle_timeout));
}

/// The address a request's connection comes from, in its extensions (for the per-address
/// limit of live subscribers without a token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// One open connection in `connections_open`, until it is dropped.
struct OpenConnection(Arc<Metrics>);

impl OpenConnection {
    fn new(metrics: Arc<Metrics>) -> OpenConnection {
        metrics.connections_open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection thread: serves each connection handed to it, until the acceptor is gone and
/// every connection has closed.
async fn connections<S>(
    mut incoming: mpsc::UnboundedReceiver<(std::net::TcpStream, OpenConnection)>,
    app: S,
    limits: Limits,
    metrics: Arc<Metrics>,
    stopped: watch::Receiver<Option<Instant>>,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let mut open = JoinSet::new();
    loop {
        tokio::select! {
            handed = incoming.recv() => match handed {
                Some((stream, counted)) => match TcpStream::from_std(stream) {
                    Ok(stream) => {
                        let (app, stopped, metrics) = (app.clone(), stopped.clone(), metrics.clone());
                        open.spawn(connection(stream, counted, app, limits, metrics, stopped));
                    }
                    Err(e) => tracing::warn!("cannot take a connection over: {e}"),
                },
                None => break,
            },
            // Reaps closed connections so the set holds only open ones.
            Some(_) = open.join_next(), if !open.is_empty() => {}
        }
    }
    while open.join_next().await.is_some() {}
}

/// Serves one connection with HTTP/1.1 keep-alive until it closes, or its [`Phase`]'s
/// deadline passes (then it is dropped, which closes the socket); on shutdown, finishes the
/// request in flight and closes, still within the deadline, and a streaming answer by the
/// stop's deadline. The service marks when a request
/// begins and ends; the stream marks a request's first byte. An upgraded connection (a
/// WebSocket) leaves this task with its stream, which keeps it `counted`.
async fn connection<S>(
    mut stream: TcpStream,
    counted: OpenConnection,
    app: S,
    limits: Limits,
    metrics: Arc<Metrics>,
    mut stopped: watch::Receiver<Option<Instant>>,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let phase = Arc::new(Phase::new(limits));
    let peer = stream.peer_addr().ok().map(PeerAddr);
    let header_deadline = Instant::now() + limits.header_read_timeout;
    let read_back = match super::stream::read_head(&mut stream, header_deadline, &metrics, &mut stopped).await
    {
        None => {
            // Closed, failed, silent or too slow before the request line was whole.
            return;
        }
        Some(super::stream::Head::Stream(mut request)) => {
            if let Some(peer) = peer {
                request.extensions_mut().insert(peer);
            }
            super::stream::serve(stream, app, *request, limits, &metrics, stopped).await;
            drop(counted);
            return;
        }
        Some(super::stream::Head::Hyper(read)) => read,
    };
    let stream = FirstByte {
        io: stream,
        read_back,
        phase: phase.clone(),
        _counted: counted,
    };
    let marks = phase.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut request = request.map(Body::new);
        if let Some(peer) = peer {
            request.extensions_mut().insert(peer);
        }
        answer(app.clone(), marks.clone(), request)
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let mut stop = std::pin::pin!(stopped.wait_for(Option::is_some));
    let mut timer_at = phase.deadline().unwrap_or_else(Instant::now);
    let mut timer = std::pin::pin!(tokio::time::sleep_until(timer_at));
    // The deadline is read after each poll of the connection: the phase changes only while
    // hyper runs (the service's marks, the stream's first byte), so it is never stale here.
    // It still holds after a stop, so that a slow client cannot hold the stop up either.
    let mut stopping: Option<Instant> = None;
    let timed_out = std::future::poll_fn(|cx| {
        if stopping.is_none()
            && let Poll::Ready(Ok(stop_by)) = stop.as_mut().poll(cx)
        {
            conn.as_mut().graceful_shutdown();
            stopping = Some(stop_by.unwrap_or_else(Instant::now));
        }
        // A client that goes away mid-request is not the service's error.
        if conn.as_mut().poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        // A streaming answer ends by the stop's deadline; a request being answered finishes.
        let stream_stop = stopping.filter(|_| phase.is_streaming());
        let Some(deadline) = min_deadline(phase.deadline(), stream_stop) else {
            return Poll::Pending;
        };
        if deadline != timer_at {
            timer.as_mut().reset(deadline);
            timer_at = deadline;
        }
        timer.as_mut().poll(cx).map(|()| true)
    })
    .await;
    if timed_out {
        metrics.connections_timed_out.add(1);
    }
}

/// The earlier of two optional deadlines.
fn min_deadline(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Answers one request, marking the connection's [`Phase`]: [`ANSWERING`] from now, [`IDLE`]
/// once the answer is ready, or for a [`Streaming`] answer, [`STREAMING`] until its body has
/// ended.
fn answer<S>(
    app: S,
    phase: Arc<Phase>,
    request: Request,
) -> impl Future<Output = Result<Response, Infallible>> + Send + 'static
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send,
{
    phase.enter(ANSWERING);
    let logged = RequestLog::begin(&request);
    let answer = app.oneshot(request);
    async move {
        let Ok(mut response) = answer.await;
        if let Some(logged) = logged {
            logged.end(&response);
        }
        if response.extensions_mut().remove::<Streaming>().is_some() {
            phase.enter(STREAMING);
            response = response.map(|body| Body::new(StreamingBody { body, phase }));
        } else {
            phase.enter(IDLE);
        }
        Ok(response)
    }
}

/// A response extension: the answer's body streams for as long as it likes (a live
/// subscription over SSE), so its connection has no deadline until the body ends. Without it,
/// the idle deadline would start when the head is ready and cut the stream.
#[derive(Clone, Copy, Debug)]
pub struct Streaming;

/// A [`Streaming`] answer's body, which moves its connection's [`Phase`] to [`IDLE`] when it is
/// dropped: hyper drops it once it has ended, or when the connection goes.
struct StreamingBody {
    body: Body,
    phase: Arc<Phase>,
}

impl hyper::body::Body for StreamingBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for StreamingBody {
    fn drop(&mut self) {
        self.phase.enter(IDLE);
    }
}

/// What the debug line of one request says: its method and path, never its query string
/// (which may carry a token) nor its headers. Only taken when debug events are on, so that at
/// the default level a request costs one cached level check.
pub(super) struct RequestLog {
    method: hyper::Method,
    path: String,
    started: std::time::Instant,
}

impl RequestLog {
    pub(super) fn begin<B>(request: &hyper::Request<B>) -> Option<RequestLog> {
        tracing::enabled!(tracing::Level::DEBUG).then(|| RequestLog {
            method: request.method().clone(),
            path: request.uri().path().to_string(),
            started: std::time::Instant::now(),
        })
    }

    pub(super) fn end(self, response: &Response) {
        tracing::debug!(
            method = %self.method,
            path = %self.path,
            status = response.status().as_u16(),
            latency_us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "request"
        );
    }
}

/// A connection waiting for a request's header: a new one, or one whose next request began.
const HEADER: u8 = 0;
/// A request is being answered: no deadline.
const ANSWERING: u8 = 1;
/// The last answer is done and the next request has not begun.
const IDLE: u8 = 2;
/// A [`Streaming`] answer's body is being written, and the client takes what is written: no
/// deadline.
const STREAMING: u8 = 3;
/// A [`Streaming`] answer's write waits for a client that does not read.
const STALLED: u8 = 4;

/// What a connection is waiting for, and since when: its deadline is `header_read_timeout`
/// after the start of a [`HEADER`] phase, `idle_timeout` after the start of an [`IDLE`] or a
/// [`STALLED`] one, none while [`ANSWERING`] or [`STREAMING`]. A stream may be quiet for as
/// long as it likes, but a client that stops reading it is dropped, as the end of its stream
/// (a `resync`, a stop's `going_away`) could never be written and would hold the connection,
/// and a stop, for ever. Shared by the connection's service, its stream and its task, all
/// on one thread; the atomics are only there to make it `Sync`. Cost per request: three
/// relaxed stores and three clock reads, and a timer reset.
struct Phase {
    limits: Limits,
    epoch: Instant,
    state: AtomicU8,
    /// When the phase began, in nanoseconds after `epoch`.
    since: AtomicU64,
}

impl Phase {
    fn new(limits: Limits) -> Phase {
        Phase {
            limits,
            epoch: Instant::now(),
            state: AtomicU8::new(HEADER),
            since: AtomicU64::new(0),
        }
    }

    fn enter(&self, state: u8) {
        let since = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.since.store(since, Ordering::Relaxed);
        self.state.store(state, Ordering::Relaxed);
    }

    fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }

    /// Whether a streaming answer's body is being written (taken or not).
    fn is_streaming(&self) -> bool {
        matches!(self.state(), STREAMING | STALLED)
    }

    /// Marks whether a write of a streaming answer had to wait: [`STREAMING`] turns
    /// [`STALLED`] when one does, and back when one goes through. Other phases stay.
    fn wrote<T>(&self, written: &Poll<T>) {
        match (self.state(), written.is_pending()) {
            (STREAMING, true) => self.enter(STALLED),
            (STALLED, false) => self.enter(STREAMING),
            _ => {}
        }
    }

    fn deadline(&self) -> Option<Instant> {
        let timeout = match self.state() {
            HEADER => self.limits.header_read_timeout,
            IDLE | STALLED => self.limits.idle_timeout,
            _ => return None,
        };
        Some(self.epoch + Duration::from_nanos(self.since.load(Ordering::Relaxed)) + timeout)
    }
}

/// A connection's stream, which moves its [`Phase`] from [`IDLE`] to [`HEADER`] when a read
/// brings the next request's first byte, and between [`STREAMING`] and [`STALLED`] as writes
/// wait or go through. Otherwise reads and writes pass straight through. It
/// holds the connection's place in `connections_open` for as long as the socket is open, past
/// an upgrade too.
struct FirstByte<T> {
    io: T,
    /// Bytes already read from `io` (a subscription's head handed back to hyper), read first.
    read_back: axum::body::Bytes,
    phase: Arc<Phase>,
    _counted: OpenConnection,
}

impl<T: AsyncRead + Unpin> AsyncRead for FirstByte<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.read_back.is_empty() {
            let n = this.read_back.len().min(buf.remaining());
            buf.put_slice(&this.read_back.split_to(n));
            if this.read_back.is_empty() {
                // Let the head's memory go with the last of its bytes.
                this.read_back = axum::body::Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before && this.phase.state() == IDLE {
            this.phase.enter(HEADER);
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FirstByte<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        this.phase.wrote(&written);
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.phase.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
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
    use http_body_util::BodyExt as _;
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
        let task = tokio::spawn(serve(listener, app, threads, limits, metrics, async move {
            let _ = stopped.await;
            Instant::now() + TEST_STOP_GRACE
        }));
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

    /// On the subscription path, a refusal is written whole with its length, and a client that
    /// goes away mid-stream drops the answer's body at once (so its subscription leaves).
    #[tokio::test]
    async fn a_subscription_refused_or_left_is_closed() {
        let (tell, dropped) = oneshot::channel();
        let guard = Arc::new(std::sync::Mutex::new(Some(Dropped(Some(tell)))));
        let app = Router::new()
            .route(
                "/no/subscribe",
                get(|| async { (axum::http::StatusCode::BAD_REQUEST, "no such view") }),
            )
            .route(
                "/left/subscribe",
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
        let (tell, dropped) = oneshot::channel();
        let guard = Arc::new(std::sync::Mutex::new(Some(Dropped(Some(tell)))));
        let app = Router::new().route(
            "/p/subscribe",
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

    /// The cap is the descriptor limit less those open and the reserve, and the soft limit is
    /// read from `/proc/self/limits` as Linux writes it.
    #[test]
    fn the_connection_cap_leaves_descriptors_in_reserve() {
        assert_eq!(Limits::cap_for(1024, 40), 1024 - 40 - DESCRIPTOR_RESERVE);
        assert_eq!(Limits::cap_for(80, 40), 1);
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             63494                63494                processes \n\
                    Max open files            1024                 524288               files     \n";
        assert_eq!(open_files_limit(text), Some(1024));
        let unlimited = "Max open files            unlimited            unlimited            files     \n";
        assert_eq!(open_files_limit(unlimited), Some(1_000_000));
        assert_eq!(open_files_limit("Max processes 5 5 processes\n"), None);
        assert!(Limits::derived_cap() >= 1);
    }

    /// A config's limits: its timeouts, and its cap, derived from the descriptor limit when it
    /// sets none.
    #[test]
    fn a_configs_limits_are_its_timeouts_and_its_cap() {
        let parse = |text: &str| {
            let text = format!("database = \"sqlite://./s.db\"\n{text}");
            Config::parse(&text, std::path::Path::new("standings.toml")).unwrap()
        };
        let limits = Limits::of(&parse(""));
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.idle_timeout, Duration::from_secs(60));
        assert!(limits.max_connections >= 1);
        let limits = Limits::of(&parse(
            "header_read_timeout_seconds = 1\nidle_timeout_seconds = 2\nmax_connections = 50\n",
        ));
        assert_eq!(
            (
                limits.header_read_timeout.as_secs(),
                limits.idle_timeout.as_secs(),
                limits.max_connections
            ),
            (1, 2, 50)
        );
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
