//! The read contract the three tiers share: the origin answers reads, the edge worker answers
//! them from snapshots, and the browser package from the same snapshots, and all three must
//! answer alike, byte for byte. What they must agree on lives here, once: the limits and the
//! parsing of read parameters with their error words ([`query`]), the problem document of every
//! refusal ([`Problem`]), the snapshot head's wire format ([`head`]), who may read what
//! ([`access`]), and the answers a snapshot gives ([`answer`]). Each tier calls these; none
//! keeps a copy.
//!
//! Like the rest of the core this is pure: it reads no clock and does no IO; the tiers hand it
//! the query string, the head's bytes or the caller they authenticated.

pub mod access;
pub mod answer;
pub mod code;
pub mod head;
pub mod position;
pub mod query;

use alloc::string::String;
use alloc::vec::Vec;

use crate::json::{write_str, write_u64};

pub use code::Code;

/// The most entries one top page, one `rank-players` call or one friends-of may hold.
pub const MAX_LIMIT: usize = 1_000;
/// The page size of a top read without `limit`.
pub const DEFAULT_LIMIT: usize = 10;
/// The widest `nearby` radius.
pub const MAX_RADIUS: u64 = 100;
/// The radius of a `nearby` read without `radius`.
pub const DEFAULT_RADIUS: u64 = 5;
/// The largest request body the origin and the edge take (a full batch of 1,000 events fits).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// An RFC 9457 problem document: every refusal of every tier, printed by [`Problem::write`], so
/// a client cannot tell which tier refused it. `type` is always `about:blank` (the `code` names
/// the problem) and `title` is the status's reason phrase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status.
    pub status: u16,
    /// The stable machine-readable code.
    pub code: &'static str,
    /// What went wrong, for a person.
    pub detail: String,
}

impl Problem {
    /// A problem of `code`. O(1).
    pub fn new(code: Code, detail: impl Into<String>) -> Problem {
        Problem {
            status: code.status,
            code: code.name,
            detail: detail.into(),
        }
    }

    /// The problem's code. O(1).
    pub fn code(&self) -> Code {
        Code::new(self.status, self.code)
    }

    /// 400 `INVALID_REQUEST`: a malformed query parameter or path segment.
    pub fn invalid_request(detail: impl Into<String>) -> Problem {
        Problem::new(Code::INVALID_REQUEST, detail)
    }

    /// 400 `INVALID_CURSOR`: a cursor this service did not make for this board instance.
    pub fn invalid_cursor(detail: impl Into<String>) -> Problem {
        Problem::new(Code::INVALID_CURSOR, detail)
    }

    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(detail: impl Into<String>) -> Problem {
        Problem::new(Code::UNAUTHENTICATED, detail)
    }

    /// 403 `FORBIDDEN`.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(Code::FORBIDDEN, detail)
    }

    /// 404 `PLAYER_NOT_RANKED`.
    pub fn player_not_ranked(detail: impl Into<String>) -> Problem {
        Problem::new(Code::PLAYER_NOT_RANKED, detail)
    }

    /// 413 `PAYLOAD_TOO_LARGE`.
    pub fn payload_too_large(detail: impl Into<String>) -> Problem {
        Problem::new(Code::PAYLOAD_TOO_LARGE, detail)
    }

    /// The reason phrase of the status, as the `http` crate names it. O(1).
    pub fn title(&self) -> &'static str {
        reason_phrase(self.status)
    }

    /// Appends the document: `type`, `title`, `status`, `code`, `detail`, in that order.
    /// O(length of the detail).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":\"about:blank\",\"title\":");
        write_str(out, self.title());
        out.extend_from_slice(b",\"status\":");
        write_u64(out, u64::from(self.status));
        out.extend_from_slice(b",\"code\":");
        write_str(out, self.code);
        out.extend_from_slice(b",\"detail\":");
        write_str(out, &self.detail);
        out.push(b'}');
    }

    /// The document's bytes. O(length of the detail).
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96 + self.detail.len());
        self.write(&mut out);
        out
    }
}

impl core::fmt::Display for Problem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl core::error::Error for Problem {}

/// The reason phrase of a status the tiers answer with, as the `http` crate names it (the
/// problem's `title`). O(1).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document prints its five fields in the contract's order, the detail escaped.
    #[test]
    fn a_problem_prints_its_fields_in_order() {
        let problem = Problem::invalid_request("limit=\"0\" is not valid; expected 1 to 1000");
        assert_eq!(
            problem.body(),
            br#"{"type":"about:blank","title":"Bad Request","status":400,"code":"INVALID_REQUEST","detail":"limit=\"0\" is not valid; expected 1 to 1000"}"#
        );
        assert_eq!(
            alloc::format!("{problem}"),
            "INVALID_REQUEST: limit=\"0\" is not valid; expected 1 to 1000"
        );
        assert_eq!(reason_phrase(503), "Service Unavailable");
        assert_eq!(reason_phrase(599), "Error");
    }
}
