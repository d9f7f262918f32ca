//! What a connection waits for, and until when: its [`Phase`], moved by the service (a request
//! begins, its answer is ready, a streaming body ends) and by the stream ([`FirstByte`]: the next
//! request's first byte, a write that waits for a client that does not read).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::Limits;
use super::ledger::OpenConnection;

/// The earlier of two optional deadlines.
pub(super) fn min_deadline(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A [`Streaming`](super::Streaming) answer's body, which moves its connection's [`Phase`] to [`IDLE`] when it is
/// dropped: hyper drops it once it has ended, or when the connection goes.
pub(super) struct StreamingBody {
    pub(super) body: Body,
    pub(super) phase: Arc<Phase>,
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

/// A connection waiting for a request's header: a new one, or one whose next request began.
const HEADER: u8 = 0;
/// A request is being answered: no deadline.
pub(super) const ANSWERING: u8 = 1;
/// The last answer is done and the next request has not begun.
pub(super) const IDLE: u8 = 2;
/// A [`Streaming`](super::Streaming) answer's body is being written, and the client takes what is written: no
/// deadline.
pub(super) const STREAMING: u8 = 3;
/// A [`Streaming`](super::Streaming) answer's write waits for a client that does not read.
const STALLED: u8 = 4;

/// What a connection is waiting for, and since when: its deadline is `header_read_timeout`
/// after the start of a [`HEADER`] phase, `idle_timeout` after the start of an [`IDLE`] or a
/// [`STALLED`] one, none while [`ANSWERING`] or [`STREAMING`]. A stream may be quiet for as
/// long as it likes, but a client that stops reading it is dropped, as the end of its stream
/// (a `resync`, a stop's `going_away`) could never be written and would hold the connection,
/// and a stop, for ever. Shared by the connection's service, its stream and its task, all
/// on one thread; the atomics are only there to make it `Sync`. Cost per request: three
/// relaxed stores and three clock reads, and a timer reset.
pub(super) struct Phase {
    limits: Limits,
    epoch: Instant,
    state: AtomicU8,
    /// When the phase began, in nanoseconds after `epoch`.
    since: AtomicU64,
}

impl Phase {
    pub(super) fn new(limits: Limits) -> Phase {
        Phase {
            limits,
            epoch: Instant::now(),
            state: AtomicU8::new(HEADER),
            since: AtomicU64::new(0),
        }
    }

    pub(super) fn enter(&self, state: u8) {
        let since = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.since.store(since, Ordering::Relaxed);
        self.state.store(state, Ordering::Relaxed);
    }

    pub(super) fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }

    /// Whether a streaming answer's body is being written (taken or not).
    pub(super) fn is_streaming(&self) -> bool {
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

    pub(super) fn deadline(&self) -> Option<Instant> {
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
pub(super) struct FirstByte<T> {
    pub(super) io: T,
    /// Bytes already read from `io` (a subscription's head handed back to hyper), read first.
    pub(super) read_back: axum::body::Bytes,
    pub(super) phase: Arc<Phase>,
    pub(super) _counted: OpenConnection,
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
