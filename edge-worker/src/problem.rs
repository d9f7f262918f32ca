//! The edge's error answers: RFC 9457 `application/problem+json`, byte for byte as the origin's
//! `Problem` prints (`type`, `title`, `status`, `code`, `detail`, in that order), so a client
//! cannot tell which tier refused it.

use standings_core::json::{write_str, write_u64};

use crate::platform::HttpResponse;

/// An error the edge answers itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status.
    pub status: u16,
    /// The stable machine-readable code (the origin's codes, plus `ORIGIN_UNAVAILABLE`).
    pub code: &'static str,
    /// What went wrong, for a person.
    pub detail: String,
}

impl Problem {
    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(detail: impl Into<String>) -> Problem {
        Problem::new(401, "UNAUTHENTICATED", detail)
    }

    /// 403 `FORBIDDEN`.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(403, "FORBIDDEN", detail)
    }

    /// 400 `INVALID_REQUEST`.
    pub fn invalid_request(detail: impl Into<String>) -> Problem {
        Problem::new(400, "INVALID_REQUEST", detail)
    }

    /// 400 `INVALID_CURSOR`.
    pub fn invalid_cursor(detail: impl Into<String>) -> Problem {
        Problem::new(400, "INVALID_CURSOR", detail)
    }

    /// 404 `PLAYER_NOT_RANKED`.
    pub fn player_not_ranked(detail: impl Into<String>) -> Problem {
        Problem::new(404, "PLAYER_NOT_RANKED", detail)
    }

    /// 503 `ORIGIN_UNAVAILABLE`: the origin cannot be reached and the edge holds nothing that
    /// answers the request.
    pub fn origin_unavailable(detail: impl Into<String>) -> Problem {
        Problem::new(503, "ORIGIN_UNAVAILABLE", detail)
    }

    /// 502 `BAD_ORIGIN_ANSWER`: the origin answered something the edge cannot use (a part
    /// that does not match its hash, a head that is not a head).
    pub fn bad_origin_answer(detail: impl Into<String>) -> Problem {
        Problem::new(502, "BAD_ORIGIN_ANSWER", detail)
    }

    /// 500 `EDGE_MISCONFIGURED`: a worker var cannot be read.
    pub fn misconfigured(detail: impl Into<String>) -> Problem {
        Problem::new(500, "EDGE_MISCONFIGURED", detail)
    }

    /// Any other problem.
    pub fn new(status: u16, code: &'static str, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            code,
            detail: detail.into(),
        }
    }

    /// The problem document's bytes. O(length of the detail).
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96 + self.detail.len());
        out.extend_from_slice(b"{\"type\":\"about:blank\",\"title\":");
        write_str(&mut out, reason(self.status));
        out.extend_from_slice(b",\"status\":");
        write_u64(&mut out, u64::from(self.status));
        out.extend_from_slice(b",\"code\":");
        write_str(&mut out, self.code);
        out.extend_from_slice(b",\"detail\":");
        write_str(&mut out, &self.detail);
        out.push(b'}');
        out
    }

    /// The answer carrying this problem.
    pub fn response(&self) -> HttpResponse {
        HttpResponse {
            status: self.status,
            headers: vec![("content-type".into(), "application/problem+json".into())],
            body: self.body(),
        }
    }
}

/// The reason phrase of the statuses the edge answers, as the `http` crate names them (the
/// origin's `title`).
fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        410 => "Gone",
        413 => "Payload Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The origin's `Problem`, field for field.
    #[derive(serde::Serialize)]
    struct OriginProblem<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        title: &'a str,
        status: u16,
        code: &'a str,
        detail: &'a str,
    }

    /// The document prints as serde_json prints the origin's `Problem`: field order, titles,
    /// escaping.
    #[test]
    fn prints_as_the_origins_problem() {
        for (problem, title) in [
            (
                Problem::forbidden("token \"jwt:ava\" may not read game \"g\""),
                "Forbidden",
            ),
            (Problem::unauthenticated("reads need a token"), "Unauthorized"),
            (
                Problem::new(413, "PAYLOAD_TOO_LARGE", "at most 1000"),
                "Payload Too Large",
            ),
            (Problem::origin_unavailable("down\n"), "Service Unavailable"),
        ] {
            let origin = OriginProblem {
                kind: "about:blank",
                title,
                status: problem.status,
                code: problem.code,
                detail: &problem.detail,
            };
            assert_eq!(problem.body(), serde_json::to_vec(&origin).unwrap());
        }
    }
}
