//! Cursors: a position in a board's total order at the version it was made, bound to one board
//! instance, and their wire form. Opaque to clients; decoded from untrusted bytes without
//! panicking.

use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::codec::decode_exact;
use crate::error::DecodeError;
use crate::rules::{BoardId, Standing};

/// A position in a board's total order, and the version it was made at. Opaque to clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The version whose order the cursor pages through.
    pub board_version: u64,
    /// The value of the last entry returned.
    pub value: i64,
    /// The time of the last entry returned.
    pub achieved_at: i64,
    /// The player of the last entry returned.
    pub player: String,
}

/// Which board instance a cursor belongs to: the first 8 bytes of a SHA-256 over the board id
/// and the key of the period instance. The core has no notion of periods, so the driver names
/// the instance; it is the same on every tier that holds the same board id and period key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CursorBinding([u8; 8]);

impl Cursor {
    /// The standing of the last entry returned. O(1).
    pub fn standing(&self) -> Standing {
        Standing {
            value: self.value,
            achieved_at: self.achieved_at,
        }
    }
}

impl CursorBinding {
    /// The binding of the instance `period_key` (e.g. `all_time`, `2026-10-13`) of `board`.
    /// O(length of the ids).
    pub fn of(board: &BoardId, period_key: &str) -> CursorBinding {
        let mut hasher = Sha256::new();
        hasher.update(b"standings-cursor-binding-v1\0");
        // Ids hold no NUL (no control characters), so NUL-separated parts cannot run together.
        for part in [
            board.game.as_str(),
            &board.mode,
            &board.season,
            &board.scope,
            period_key,
        ] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        let digest: [u8; 32] = hasher.finalize().into();
        let mut binding = [0; 8];
        binding.copy_from_slice(&digest[..8]);
        CursorBinding(binding)
    }
}

/// The format tag that starts an encoded cursor. Format 1 carried no binding and is refused.
const CURSOR_FORMAT: u8 = 2;

impl Cursor {
    /// Encodes the cursor for the board instance `binding`: a format tag, the binding, then
    /// postcard.
    pub fn encode(&self, binding: CursorBinding) -> Vec<u8> {
        let mut out = alloc::vec![CURSOR_FORMAT];
        out.extend_from_slice(&binding.0);
        // Serializing plain integers and a string into a Vec cannot fail.
        if let Ok(body) = postcard::to_allocvec(self) {
            out.extend_from_slice(&body);
        }
        out
    }

    /// Decodes untrusted cursor bytes sent to the board instance `binding`; a cursor made for
    /// another board or period is [`DecodeError::OtherBoard`]. Never panics.
    pub fn decode(bytes: &[u8], binding: CursorBinding) -> Result<Cursor, DecodeError> {
        match bytes.split_first() {
            Some((&CURSOR_FORMAT, rest)) => {
                let (made_for, body) = rest.split_at_checked(8).ok_or(DecodeError::Malformed)?;
                if made_for != binding.0 {
                    return Err(DecodeError::OtherBoard);
                }
                decode_exact(body)
            }
            Some((&other, _)) => Err(DecodeError::UnsupportedFormat {
                found: Some(u16::from(other)),
            }),
            None => Err(DecodeError::UnsupportedFormat { found: None }),
        }
    }
}
