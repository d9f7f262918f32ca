//! The edge's `http` answers and headers as workers-rs takes them, for the worker's `fetch`
//! event and the live object alike.

use http::HeaderMap;
use worker::Headers;

use crate::platform::Response;

/// Headers as the platform takes them. Every value came from a platform string (the caller's
/// or the origin's headers) or is the edge's own ASCII, so each reads back as that string.
pub(crate) fn to_headers(map: &HeaderMap) -> worker::Result<Headers> {
    let headers = Headers::new();
    for (name, value) in map {
        headers.append(name.as_str(), &String::from_utf8_lossy(value.as_bytes()))?;
    }
    Ok(headers)
}

/// An answer of the edge's as the platform sends it.
pub(crate) fn to_response(answer: Response) -> worker::Result<worker::Response> {
    let headers = to_headers(answer.headers())?;
    let status = answer.status().as_u16();
    Ok(worker::Response::from_bytes(answer.into_body())?
        .with_status(status)
        .with_headers(headers))
}
