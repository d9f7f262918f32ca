//! One connection: its first request line decides, by the router's [`StreamRoutes`], whether
//! hyper serves it with keep-alive or `stream` writes a live subscription's answer outside
//! hyper; hyper's connection is driven here against the deadlines of its [`Phase`].

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use super::deadline::{ANSWERING, FirstByte, IDLE, Phase, STREAMING, StreamingBody, min_deadline};
use super::ledger::{OpenConnection, RequestLog};
use super::stream::{self, Head};
use super::{Limits, PeerAddr, StreamRoutes, Streaming};
use crate::metrics::Metrics;

/// Serves one connection. A `GET` of one of `streamed`'s routes, seen on the first request
/// line, is answered by `stream` and the connection closes with it. Anything else is served by
/// hyper with HTTP/1.1 keep-alive until it closes, or its [`Phase`]'s deadline passes (then it
/// is dropped, which closes the socket); on shutdown, it finishes the request in flight and
/// closes, still within the deadline, and a streaming answer by the stop's deadline. The
/// service marks when a request begins and ends; the stream marks a request's first byte. An
/// upgraded connection (a WebSocket) leaves this task with its stream, which keeps it
/// `counted`.
pub(super) async fn connection<S>(
    mut stream: TcpStream,
    counted: OpenConnection,
    app: S,
    streamed: Arc<StreamRoutes>,
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
    let read_back =
        match stream::read_head(&mut stream, &streamed, header_deadline, &metrics, &mut stopped).await {
            None => {
                // Closed, failed, silent or too slow before the request line was whole.
                return;
            }
            Some(Head::Stream(mut request)) => {
                if let Some(peer) = peer {
                    request.extensions_mut().insert(peer);
                }
                stream::serve(stream, app, *request, limits, &metrics, stopped).await;
                drop(counted);
                return;
            }
            Some(Head::Hyper(read)) => read,
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

/// Answers one request, marking the connection's [`Phase`]: [`ANSWERING`] from now, [`IDLE`]
/// once the answer is ready, or for a [`Streaming`] answer, [`STREAMING`] until its body has
/// ended.
pub(super) fn answer<S>(
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
