//! What a connection and a request leave behind: the count of open connections, and the debug
//! line of a request. Shared by the acceptor, the connection and its deadlines.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::response::Response;

use crate::metrics::Metrics;

/// One open connection in `connections_open`, until it is dropped.
pub(super) struct OpenConnection(Arc<Metrics>);

impl OpenConnection {
    pub(super) fn new(metrics: Arc<Metrics>) -> OpenConnection {
        metrics.connections_open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
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
