//! The edge's error answers. A refusal is the read contract's [`Problem`] (RFC 9457
//! `application/problem+json`, printed by the core as the origin prints it), so a client cannot
//! tell which tier refused it; what is the edge's own is here: the three codes only the edge
//! answers, and the answer that carries a problem.

use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
pub use standings_core::contract::{Code, Problem};

use crate::platform::Response;

/// 503 `ORIGIN_UNAVAILABLE`: the origin cannot be reached and the edge holds nothing that
/// answers the request.
pub const ORIGIN_UNAVAILABLE: Code = Code::new(503, "ORIGIN_UNAVAILABLE");
/// 502 `BAD_ORIGIN_ANSWER`: the origin answered something the edge cannot use (a part that does
/// not match its hash, a head that is not a head).
pub const BAD_ORIGIN_ANSWER: Code = Code::new(502, "BAD_ORIGIN_ANSWER");
/// 500 `EDGE_MISCONFIGURED`: a worker var cannot be read.
pub const EDGE_MISCONFIGURED: Code = Code::new(500, "EDGE_MISCONFIGURED");

/// The origin cannot be reached ([`ORIGIN_UNAVAILABLE`]).
pub fn origin_unavailable(detail: impl Into<String>) -> Problem {
    Problem::new(ORIGIN_UNAVAILABLE, detail)
}

/// The origin answered something the edge cannot use ([`BAD_ORIGIN_ANSWER`]).
pub fn bad_origin_answer(detail: impl Into<String>) -> Problem {
    Problem::new(BAD_ORIGIN_ANSWER, detail)
}

/// A worker var cannot be read ([`EDGE_MISCONFIGURED`]).
pub fn misconfigured(detail: impl Into<String>) -> Problem {
    Problem::new(EDGE_MISCONFIGURED, detail)
}

/// The answer carrying `problem`: its status, `content-type: application/problem+json` and the
/// document. O(length of the detail).
pub fn response(problem: &Problem) -> Response {
    let mut answer = Response::new(problem.body());
    *answer.status_mut() = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    answer
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
                Problem::new(Code::PAYLOAD_TOO_LARGE, "at most 1000"),
                "Payload Too Large",
            ),
            (origin_unavailable("down\n"), "Service Unavailable"),
        ] {
            let origin = OriginProblem {
                kind: "about:blank",
                title,
                status: problem.status,
                code: problem.code,
                detail: &problem.detail,
            };
            assert_eq!(problem.body(), serde_json::to_vec(&origin).unwrap());
            let answer = response(&problem);
            assert_eq!(answer.status(), problem.status);
            assert_eq!(answer.body(), &problem.body());
        }
    }
}
