//! A version published as what changed since an earlier manifest, its base.
//!
//! A full manifest names every chunk, and a version that moves a few players rewrites the chunks
//! they left and joined: about 2 MB at 1M players for 100 moves. A [`ManifestPatch`] names its
//! base manifest instead and carries only the changed players' entries, with where they sit
//! among the base's ranks, so a reader answers every query at the patch's version from the
//! base's parts and the patch alone, with no more parts than the base would need. The base and
//! its chunks stay as they are, so a reader that holds them decoded fetches only the patch.
//!
//! Positions are base ranks: `removed` names the base entries that are gone or changed (by base
//! rank, ascending) and `inserted` the entries that are new or changed, in rank order, each
//! with the number of base entries ranked before it. So an unchanged base entry at base rank
//! `b` ranks `b - (removed before b) + (inserted before b)`, and inserted entry `j` ranks
//! `base_before - (removed through base_before) + j + 1`. The value ranks need the values the
//! version added and took away (`values_appeared`, `values_gone`) besides the removed values.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::{Manifest, SnapshotEntry, TAG_MANIFEST, decode_part, encode_part};
use crate::digest::ChunkHash;
use crate::error::DecodeError;
use crate::event::check_id;
use crate::rules::BoardRules;

pub(crate) const TAG_PATCH: u8 = b'P';

/// A version as the changes since a base manifest (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestPatch {
    /// The hash of the base's bytes: a manifest, or a patch over one.
    pub base: ChunkHash,
    /// The base's version.
    pub base_version: u64,
    /// The version this patch brings the base to.
    pub board_version: u64,
    /// Ranked players at `board_version`.
    pub total_players: u64,
    /// The SHA-256 of the encoded rank sketch of `board_version`.
    pub sketch: ChunkHash,
    /// The base entries that are gone or changed, by base rank, ascending.
    pub removed: Vec<Removed>,
    /// The entries that are new or changed, in rank order.
    pub inserted: Vec<Inserted>,
    /// The players ranked in the base and unranked now, sorted by id bytes.
    pub unranked: Vec<String>,
    /// Values some entry holds now and none held in the base, best first.
    pub values_appeared: Vec<i64>,
    /// Values some base entry held and none holds now, best first.
    pub values_gone: Vec<i64>,
}

/// A base entry the patch takes away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// Its rank in the base.
    pub rank: u64,
    /// Its value.
    pub value: i64,
}

/// An entry the patch puts in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inserted {
    /// Base entries (removed ones included) ranked before it.
    pub base_before: u64,
    /// The entry.
    pub entry: SnapshotEntry,
}

/// The most patches a version stands on: a patch over a manifest, or a patch over such a patch.
/// Two levels keep a version's new bytes small while the lower patch grows, and bound a
/// reader's work and fetches.
pub const MAX_PATCH_LEVELS: usize = 2;

/// What a head names: a whole manifest, or a patch over one.
#[derive(Clone, Debug, PartialEq)]
pub enum Root {
    /// A manifest that names every part.
    Manifest(Manifest),
    /// Changes over the manifest, or the patch over a manifest, it names as its base.
    Patch(ManifestPatch),
}

impl Root {
    /// Decodes untrusted bytes a head names, whichever kind they are. Never panics. O(bytes).
    pub fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        match bytes.get(2) {
            Some(&TAG_PATCH) => ManifestPatch::decode(bytes).map(Root::Patch),
            Some(&TAG_MANIFEST) => Manifest::decode(bytes).map(Root::Manifest),
            _ => Manifest::decode(bytes).map(Root::Manifest),
        }
    }
}

impl ManifestPatch {
    /// The encoded patch. O(its entries).
    pub fn encode(&self) -> Vec<u8> {
        let guess = 96 + self.removed.len() * 12 + self.inserted.len() * 48 + self.unranked.len() * 24;
        encode_part(TAG_PATCH, self, guess)
    }

    /// Decodes untrusted patch bytes and checks what can be checked without the base: order,
    /// ids, extras. Never panics. O(bytes).
    pub fn decode(bytes: &[u8]) -> Result<ManifestPatch, DecodeError> {
        let patch: ManifestPatch = decode_part(TAG_PATCH, bytes)?;
        if patch.board_version < patch.base_version {
            return Err(DecodeError::Inconsistent("a patch older than its base"));
        }
        if patch.removed.first().is_some_and(|r| r.rank == 0)
            || patch.removed.windows(2).any(|w| w[0].rank >= w[1].rank)
        {
            return Err(DecodeError::Inconsistent("removed ranks out of order"));
        }
        if patch
            .inserted
            .windows(2)
            .any(|w| w[0].base_before > w[1].base_before)
        {
            return Err(DecodeError::Inconsistent("inserted entries out of place"));
        }
        if patch
            .unranked
            .windows(2)
            .any(|w| w[0].as_bytes() >= w[1].as_bytes())
        {
            return Err(DecodeError::Inconsistent("unranked players out of order"));
        }
        for player in &patch.unranked {
            check_id("player_id", player).map_err(|_| DecodeError::Inconsistent("a bad player id"))?;
        }
        for inserted in &patch.inserted {
            check_id("player_id", &inserted.entry.player)
                .map_err(|_| DecodeError::Inconsistent("a bad player id"))?;
            inserted.entry.check_extras()?;
        }
        Ok(patch)
    }

    /// Checks the patch against the view it is over, of `base_version` and `base_total`
    /// players under `rules` (its base manifest's, or the patch below it): versions, counts,
    /// and the order of entries and values. A patch that passes never makes a reader panic.
    /// O(patch).
    pub fn check_over(
        &self,
        rules: &BoardRules,
        base_version: u64,
        base_total: u64,
    ) -> Result<(), DecodeError> {
        if self.base_version != base_version {
            return Err(DecodeError::Inconsistent("a patch over another version"));
        }
        let out_of_base = |at: u64| at > base_total;
        if self.removed.last().is_some_and(|r| out_of_base(r.rank))
            || self.inserted.last().is_some_and(|i| out_of_base(i.base_before))
        {
            return Err(DecodeError::Inconsistent("a patch position past its base"));
        }
        let total = base_total - self.removed.len() as u64 + self.inserted.len() as u64;
        if total != self.total_players {
            return Err(DecodeError::Inconsistent("patch counts do not add up"));
        }
        let key_order = |a: &SnapshotEntry, b: &SnapshotEntry| {
            rules.compare((&a.standing(), &a.player), (&b.standing(), &b.player))
        };
        if self
            .inserted
            .windows(2)
            .any(|w| key_order(&w[0].entry, &w[1].entry) != Ordering::Less)
        {
            return Err(DecodeError::Inconsistent("inserted entries out of rank order"));
        }
        let mode = rules.score_mode;
        let strictly_best_first = |values: &[i64]| values.windows(2).all(|w| mode.better_value(w[0], w[1]));
        if !strictly_best_first(&self.values_appeared) || !strictly_best_first(&self.values_gone) {
            return Err(DecodeError::Inconsistent("patch values out of order"));
        }
        if self
            .removed
            .windows(2)
            .any(|w| mode.better_value(w[1].value, w[0].value))
        {
            return Err(DecodeError::Inconsistent("removed values out of order"));
        }
        Ok(())
    }
}
