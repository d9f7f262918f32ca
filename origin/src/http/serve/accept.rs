//! Accepting: one acceptor hands each connection, round-robin, to one of the connection
//! threads, each running a single-threaded runtime, pinned to a CPU of its own when there is one
//! per thread. Accepted sockets get their options here, and are counted open until they close.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::Service;

use super::connection::connection;
use super::ledger::OpenConnection;
use super::{Limits, StreamRoutes};
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

/// The CPU each of `threads` connection threads is pinned to, from the CPUs this process may
/// run on (`cpus`): one each when there are exactly as many, none otherwise. Two of them sharing
/// a CPU would take turns in time slices of milliseconds, each holding its connections' answers
/// for a whole slice, which shows in the tail latency; fewer threads
/// than CPUs leave the choice to the kernel.
fn placement<C: Copy>(threads: usize, pin: bool, cpus: &[C]) -> Vec<Option<C>> {
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
/// [`Limits`], a `GET` of one of `streamed`'s routes on a connection of its own outside hyper
/// (see `stream`), until `shutdown` resolves; then stops accepting, lets every connection finish the
/// request it is answering (idle keep-alive connections close at once), ends every streaming
/// answer by the instant `shutdown` resolved to, and returns when all of them are closed.
/// Open, refused and timed-out connections are counted in `metrics`.
pub async fn serve<S>(
    listener: TcpListener,
    app: S,
    streamed: StreamRoutes,
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
    let streamed = Arc::new(streamed);
    let count = threads.resolved();
    let mut workers = Vec::with_capacity(count);
    let mut finished = Vec::with_capacity(count);
    for (i, cpu) in placement(count, threads.pin, &cpus()).into_iter().enumerate() {
        let (hand_over, incoming) = mpsc::unbounded_channel();
        let (done, done_rx) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (app, streamed) = (app.clone(), streamed.clone());
        let (stopped, metrics) = (stopped.clone(), metrics.clone());
        thread::Builder::new()
            .name(format!("standings-http-{i}"))
            .spawn(move || {
                if let Some(cpu) = cpu
                    && !pin_current(cpu)
                {
                    tracing::warn!("could not pin connection thread {i} to a CPU; it runs unpinned");
                }
                runtime.block_on(connections(incoming, app, streamed, limits, metrics, stopped));
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
pub(super) fn notice_vanished_peers(stream: &TcpStream, idle_timeout: Duration) {
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

/// One connection thread: serves each connection handed to it, until the acceptor is gone and
/// every connection has closed.
async fn connections<S>(
    mut incoming: mpsc::UnboundedReceiver<(std::net::TcpStream, OpenConnection)>,
    app: S,
    streamed: Arc<StreamRoutes>,
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
                        let (app, streamed) = (app.clone(), streamed.clone());
                        let (stopped, metrics) = (stopped.clone(), metrics.clone());
                        open.spawn(connection(stream, counted, app, streamed, limits, metrics, stopped));
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

/// Errors of one connection attempt, not of the listener.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_pinned_only_with_one_cpu_each() {
        assert_eq!(placement(2, true, &[4, 7]), vec![Some(4), Some(7)]);
        assert_eq!(placement(2, false, &[4, 7]), vec![None, None]);
        assert_eq!(placement(3, true, &[4, 7]), vec![None, None, None]);
        assert_eq!(placement(1, true, &[4, 7]), vec![None]);
        assert_eq!(placement(2, true, &[] as &[u8]), vec![None, None]);
    }
}
