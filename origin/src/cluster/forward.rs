//! Forwarding a request to the node that owns its partition, and the headers the nodes use
//! between them. The owner's answer comes back as it was sent (status, headers, body, streamed),
//! so a client cannot tell a forwarded answer from the owner's but by `x-standings-served-by`,
//! which the owner sets on its own answers too.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, header};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::http::serve::Streaming;

/// The node that answered.
pub(super) const SERVED_BY: HeaderName = HeaderName::from_static("x-standings-served-by");
/// On a request between nodes: the node that forwarded it.
pub(super) const FORWARDED_BY: HeaderName = HeaderName::from_static("x-standings-forwarded-by");
/// On a request between nodes: the cluster's secret, which makes the two headers around it
/// trusted.
pub(super) const CLUSTER_SECRET: HeaderName = HeaderName::from_static("x-standings-cluster-secret");
/// On a request between nodes: the client's address, for the per-address limits.
pub(super) const CLIENT_ADDR: HeaderName = HeaderName::from_static("x-standings-client-addr");
/// On an answer between nodes: the node asked does not own the partition (any more).
pub(super) const NOT_OWNER: HeaderName = HeaderName::from_static("x-standings-not-owner");

/// Why a request could not be forwarded, with the client's error beneath.
#[derive(Debug, thiserror::Error)]
pub(super) enum ForwardError {
    /// The request could not be made (a peer's address that is not a URL).
    #[error("cannot forward to {url}")]
    Request {
        /// The URL it was to go to.
        url: String,
        /// Why it could not be made.
        #[source]
        source: axum::http::Error,
    },
    /// The connection failed or broke.
    #[error("{url}")]
    Client {
        /// The peer.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// No answer within the wait.
    #[error("{url} did not answer within {ANSWER_TIMEOUT:?}")]
    Timeout {
        /// The peer.
        url: String,
    },
    /// The peer does not own the partition.
    #[error("{url} does not own the partition")]
    NotOwner {
        /// The peer.
        url: String,
    },
}

/// How long a peer may take to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a forwarded request waits for the head of the owner's answer; a paused or
/// partitioned owner is not waited for longer (the client hears 503 and retries, with the same
/// event ids for a write).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that describe one connection, not the request or the answer.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    header::HOST,
];

/// What became of a forwarded request.
pub(super) enum Forwarded {
    /// The owner's answer.
    Answer(Response<Body>),
    /// The node asked does not own the partition: ask again once the leases say who does.
    NotOwner,
    /// The node could not be connected to: nothing was sent, so the request may go elsewhere.
    NotSent(ForwardError),
    /// The node was sent the request and did not answer (in time): a write may have been
    /// carried out (why).
    Unreachable(ForwardError),
}

/// The HTTP client the nodes forward through.
pub(super) struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    node: HeaderValue,
    secret: HeaderValue,
}

impl Forwarder {
    /// A client for node `node`, showing `secret`.
    pub(super) fn new(node: &str, secret: &str) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        Forwarder {
            client: Client::builder(TokioExecutor::new()).build(connector),
            node: HeaderValue::from_str(node).unwrap_or(HeaderValue::from_static("unknown")),
            secret: HeaderValue::from_str(secret).unwrap_or(HeaderValue::from_static("")),
        }
    }

    /// Sends `method path?query` with `headers` and `body` to the node at `base_url`.
    pub(super) async fn send(
        &self,
        base_url: &str,
        parts: &axum::http::request::Parts,
        body: Bytes,
        client: Option<SocketAddr>,
    ) -> Forwarded {
        let request = match self.outbound(base_url, parts, client, false, body) {
            Ok(request) => request,
            Err(why) => return Forwarded::Unreachable(why),
        };
        let answer = match tokio::time::timeout(ANSWER_TIMEOUT, self.client.request(request)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(source)) => {
                let connect = source.is_connect();
                let why = ForwardError::Client {
                    url: base_url.to_string(),
                    source,
                };
                return if connect {
                    Forwarded::NotSent(why)
                } else {
                    Forwarded::Unreachable(why)
                };
            }
            Err(_) => {
                return Forwarded::Unreachable(ForwardError::Timeout {
                    url: base_url.to_string(),
                });
            }
        };
        if answer.headers().contains_key(NOT_OWNER) {
            return Forwarded::NotOwner;
        }
        let (parts, incoming) = answer.into_parts();
        let mut response = Response::new(Body::new(incoming));
        *response.status_mut() = parts.status;
        copy_end_to_end(&parts.headers, response.headers_mut());
        let streams = parts
            .headers
            .get(header::CONTENT_TYPE)
            .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        if streams {
            response.extensions_mut().insert(Streaming);
        }
        Forwarded::Answer(response)
    }
}

impl Forwarder {
    /// Asks the node at `base_url` to upgrade the connection of a WebSocket request; with its
    /// `101`, the owner's side of the connection once switched.
    pub(super) async fn upgrade(
        &self,
        base_url: &str,
        parts: &axum::http::request::Parts,
        client: Option<SocketAddr>,
    ) -> Result<(Response<Body>, Option<hyper::upgrade::OnUpgrade>), ForwardError> {
        let request = self.outbound(base_url, parts, client, true, Bytes::new())?;
        let url = || base_url.to_string();
        let mut answer = tokio::time::timeout(ANSWER_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| ForwardError::Timeout { url: url() })?
            .map_err(|source| ForwardError::Client { url: url(), source })?;
        if answer.headers().contains_key(NOT_OWNER) {
            return Err(ForwardError::NotOwner { url: url() });
        }
        let switched = (answer.status() == axum::http::StatusCode::SWITCHING_PROTOCOLS)
            .then(|| hyper::upgrade::on(&mut answer));
        let (parts, incoming) = answer.into_parts();
        let mut response = Response::new(Body::new(incoming));
        *response.status_mut() = parts.status;
        for (name, value) in &parts.headers {
            if name != header::TRANSFER_ENCODING && name != header::CONTENT_LENGTH {
                response.headers_mut().append(name.clone(), value.clone());
            }
        }
        Ok((response, switched))
    }
}

impl Forwarder {
    /// The request to send the node at `base_url` for the client's `parts`: the same method,
    /// path and query, the message's own headers (with `Upgrade` and `Connection` when it asks
    /// for a WebSocket), this node's name and the cluster's secret, and the client's address.
    fn outbound(
        &self,
        base_url: &str,
        parts: &axum::http::request::Parts,
        client: Option<SocketAddr>,
        upgrade: bool,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, ForwardError> {
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let uri = format!("{}{path}", base_url.trim_end_matches('/'));
        let mut request = Request::builder().method(parts.method.clone()).uri(&uri);
        let Some(headers) = request.headers_mut() else {
            // The builder keeps its first error; `body` below returns it.
            return request
                .body(Full::new(body))
                .map_err(|source| ForwardError::Request { url: uri, source });
        };
        copy_end_to_end(&parts.headers, headers);
        if upgrade {
            for name in [header::UPGRADE, header::CONNECTION] {
                if let Some(v) = parts.headers.get(&name) {
                    headers.insert(name, v.clone());
                }
            }
        }
        headers.insert(FORWARDED_BY, self.node.clone());
        headers.insert(CLUSTER_SECRET, self.secret.clone());
        if let Some(addr) = client.and_then(|a| HeaderValue::from_str(&a.to_string()).ok()) {
            headers.insert(CLIENT_ADDR, addr);
        }
        request
            .body(Full::new(body))
            .map_err(|source| ForwardError::Request { url: uri, source })
    }
}

/// Copies the headers that belong to the message, not to its connection.
fn copy_end_to_end(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !HOP_BY_HOP.contains(name) && name != header::CONTENT_LENGTH && name != "keep-alive" {
            to.append(name.clone(), value.clone());
        }
    }
}

/// Whether a request comes from another node of the cluster: it shows the cluster's secret
/// (compared in constant time).
pub(super) fn from_a_peer(headers: &HeaderMap, secret: &str) -> bool {
    let Some(shown) = headers.get(CLUSTER_SECRET) else {
        return false;
    };
    let (a, b) = (shown.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}
