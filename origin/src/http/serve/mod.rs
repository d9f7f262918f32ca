//! Serving HTTP: one acceptor hands each connection, round-robin, to one of N connection
//! threads, each running a single-threaded runtime; a connection lives on its thread until it
//! closes. Each thread is pinned to a CPU of its own when there is one per thread. Everything
//! else (the writer, the evictor, `writer::rest`) stays on the main, multi-threaded runtime.
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
//!
//! The parts, one job each: `accept` takes connections and hands them to the connection
//! threads; `connection` serves one connection, with hyper or, for a route of the
//! [`StreamRoutes`] the router names, with `stream`, which writes a live subscription's answer
//! outside hyper; `deadline` says what a connection waits for and until when; [`Limits`] are
//! the timeouts and the connection cap.

mod accept;
mod connection;
mod deadline;
mod ledger;
mod limits;
mod stream;
#[cfg(test)]
mod tests;

pub use self::accept::{Threads, serve};
pub use self::limits::Limits;
pub use self::stream::StreamRoutes;

/// The address a request's connection comes from, in its extensions (for the per-address
/// limit of live subscribers without a token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// A response extension: the answer's body streams for as long as it likes (a live
/// subscription over SSE), so its connection has no deadline until the body ends. Without it,
/// the idle deadline would start when the head is ready and cut the stream.
#[derive(Clone, Copy, Debug)]
pub struct Streaming;
