//! Content hashes: the board digest and chunk hashes (SHA-256), and the stable 64-bit hash
//! (FNV-1a) that partitions players and places chunk boundaries.

use core::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::rules::ScoreMode;

/// A SHA-256 digest: of a whole board's ranked entries, or of one snapshot chunk.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BoardDigest(pub [u8; 32]);

/// A chunk's content hash: the SHA-256 of its encoded bytes.
pub type ChunkHash = BoardDigest;

impl BoardDigest {
    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> BoardDigest {
        BoardDigest(Sha256::digest(bytes).into())
    }

    /// A digest printed as 64 lowercase hex digits (its `Display`); `None` for anything else.
    /// O(1).
    pub fn parse_hex(hex: &str) -> Option<BoardDigest> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let digit = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(BoardDigest(out))
    }
}

impl fmt::Display for BoardDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BoardDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BoardDigest({self})")
    }
}

/// Feeds ranked entries, in rank order, into a board digest.
pub(crate) struct DigestWriter(Sha256);

impl DigestWriter {
    pub(crate) fn new(mode: ScoreMode) -> DigestWriter {
        let mut hasher = Sha256::new();
        hasher.update(b"standings-board-digest-v1\0");
        hasher.update(mode.as_str().as_bytes());
        hasher.update([0]);
        DigestWriter(hasher)
    }

    /// One entry: a length-prefixed player id, then value and time, little-endian.
    pub(crate) fn entry(&mut self, player: &str, value: i64, achieved_at: i64) {
        self.0.update((player.len() as u32).to_le_bytes());
        self.0.update(player.as_bytes());
        self.0.update(value.to_le_bytes());
        self.0.update(achieved_at.to_le_bytes());
    }

    pub(crate) fn finish(self) -> BoardDigest {
        BoardDigest(self.0.finalize().into())
    }
}

/// FNV-1a, 64 bits, fed in pieces: stable across platforms and versions, which the snapshot
/// format (players' partitions, chunk boundaries), a cluster's partitions and the origin's stored
/// player keys rely on. Not for adversarial inputs. The one implementation of the hash.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Fnv1a {
    /// The hash of nothing yet. O(1).
    pub const fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes`. O(bytes).
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash of everything fed. O(1).
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a::new()
    }
}

/// [`Fnv1a`] of `bytes`. O(bytes).
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = Fnv1a::new();
    hash.write(bytes);
    hash.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    /// Pinned values (FNV-1a's published offset basis for the empty input): snapshots, cluster
    /// partitions and stored keys depend on them, so any change to the hash fails here.
    #[test]
    fn fnv1a_is_pinned() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"arena-clash"), 0x56ff_06e1_cac7_8ae0);
        assert_eq!(fnv1a("Zoë".as_bytes()), 0x17a3_b76d_1a6f_5cbc);
        let mut pieces = Fnv1a::new();
        pieces.write(b"arena-");
        pieces.write(b"clash");
        assert_eq!(pieces.finish(), fnv1a(b"arena-clash"));
    }

    /// A digest's hex reads back as itself; other lengths, upper case and non-hex do not.
    #[test]
    fn hex_round_trips() {
        let digest = BoardDigest::of(b"standings");
        assert_eq!(BoardDigest::parse_hex(&digest.to_string()), Some(digest));
        let upper = digest.to_string().to_uppercase();
        for bad in ["", "00", &upper, &"g".repeat(64), &"0".repeat(65)] {
            assert_eq!(BoardDigest::parse_hex(bad), None, "{bad}");
        }
    }
}
