//! The manifest and chunks a read needs: decoded in the isolate if held, else raw from the
//! Cache API, else from the origin (one by one, or in bundles when a step needs many), each
//! checked against its hash before it is decoded and held.

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::future::join_all;
use http::StatusCode;
use sha2::{Digest as _, Sha256};
use standings_core::SegmentKey;
use standings_core::contract::head::Head;
use standings_core::interval::RankSketch;
use standings_core::snapshot::read::{Part, SegmentCounts, SnapshotReader, Step};
use standings_core::{
    BoardDigest, ChunkHash, DecodeError, LookupChunk, MAX_PATCH_LEVELS, Manifest, ManifestPatch, RankChunk,
    Root,
};

use super::{Edge, FOREVER_SECONDS, Fallback, Spend, Stop};
use crate::decoded::{Decoded, QueryParts};
use crate::platform::{Cache, Clock, Origin};
use crate::problem::{self, Code, Problem};

/// The most chunks one bundle (`GET /v1/snapshots/chunks?hashes=`) may name at the origin.
const MAX_BUNDLE_CHUNKS: usize = 200;
/// The most chunks a step fetches one by one: a Worker keeps 6 connections open per request,
/// so more would wait for each other, and one bundle is faster.
const MAX_ONE_BY_ONE: usize = 6;

/// A head's snapshot as the isolate holds it: the manifest, and the patches over it (the
/// lowest first) when the head names one.
pub(super) struct Version {
    /// What the head names.
    root: ChunkHash,
    base: Rc<Manifest>,
    patches: Vec<Rc<ManifestPatch>>,
}

impl Version {
    /// The reader of this version. O(chunks + patches).
    pub(super) fn reader(&self) -> Result<SnapshotReader<'_>, Stop> {
        let patches: Vec<&ManifestPatch> = self.patches.iter().map(|p| &**p).collect();
        SnapshotReader::over(&self.base, &patches).map_err(|e| bad_part(&self.root, e))
    }
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// The counts of `segment` over the manifest of `version`, held with the decoded parts
    /// while they are used: O(chunks) once per manifest and segment, O(1) after.
    pub(super) fn segment_counts(
        &self,
        version: &Version,
        segment: &SegmentKey<'_>,
    ) -> Result<Rc<SegmentCounts>, Stop> {
        let mut name = Sha256::new();
        name.update(b"segment/");
        name.update(version.root.0);
        name.update(segment.dimension.as_bytes());
        name.update(b":");
        name.update(segment.value.as_bytes());
        let id = BoardDigest(name.finalize().into());
        if let Some(Decoded::Segment(counts)) = self.state.borrow_mut().decoded.get(&id) {
            return Ok(counts);
        }
        let counts =
            Rc::new(SegmentCounts::of(&version.base, segment).ok_or(Stop::Forward(Fallback::Segment))?);
        self.state
            .borrow_mut()
            .decoded
            .insert(&id, Decoded::Segment(counts.clone()));
        Ok(counts)
    }
}

/// Which snapshot path a part is fetched from.
#[derive(Clone, Copy, Debug)]
enum PartKind {
    Manifest,
    Chunk,
}

impl<O: Origin, C: Cache, K: Clock> Edge<O, C, K> {
    /// The bytes of a part: from the Cache API, else from the origin (then cached).
    async fn part_bytes(
        &self,
        kind: PartKind,
        hash: &ChunkHash,
        spend_origin: &RefCell<bool>,
    ) -> Result<Vec<u8>, Stop> {
        let key = format!("/part/{hash}");
        if let Some(bytes) = self.cache.get(&key).await {
            self.count(|s| s.cache.part_hits += 1);
            return Ok(bytes);
        }
        self.count(|s| {
            s.cache.part_misses += 1;
            match kind {
                PartKind::Manifest => s.origin_fetches.manifest += 1,
                PartKind::Chunk => s.origin_fetches.chunk += 1,
            }
        });
        *spend_origin.borrow_mut() = true;
        let path = match kind {
            PartKind::Manifest => format!("/v1/snapshots/manifests/{hash}"),
            PartKind::Chunk => format!("/v1/snapshots/chunks/{hash}"),
        };
        let mut fetched = self.origin_get(&path).await;
        if fetched.is_err() {
            // A part is immutable and its fetch idempotent: one retry rides out a dropped
            // connection, which would otherwise fail the whole read.
            self.count(|s| s.origin_fetches.unreachable += 1);
            fetched = self.origin_get(&path).await;
        }
        match fetched {
            Ok(answer) if answer.status() == StatusCode::OK => {
                self.defer_put(&key, answer.body(), FOREVER_SECONDS);
                Ok(answer.into_body())
            }
            Ok(answer) => Err(problem::origin_unavailable(format!(
                "the origin answered {} for part {hash} of this snapshot; retry shortly",
                answer.status().as_u16()
            ))
            .into()),
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                Err(problem::origin_unavailable(
                    "the origin is unreachable and the edge does not hold the part of the snapshot this read needs; retry shortly",
                )
                .into())
            }
        }
    }

    /// The head's snapshot, decoded: its manifest, or its patch and the manifest it patches
    /// (the base stays held across the versions patched over it, so a new version costs the
    /// patch).
    pub(super) async fn version(&self, head: &Head, spend: &mut Spend) -> Result<Version, Stop> {
        let mut patches = Vec::new();
        let mut hash = head.manifest;
        loop {
            match self.root(&hash, spend).await? {
                Decoded::Manifest(base) => {
                    patches.reverse();
                    return Ok(Version {
                        root: head.manifest,
                        base,
                        patches,
                    });
                }
                Decoded::Patch(patch) if patches.len() < MAX_PATCH_LEVELS => {
                    hash = patch.base;
                    patches.push(patch);
                }
                _ => {
                    return Err(bad_part(
                        &hash,
                        DecodeError::Inconsistent("a snapshot that stands on too many patches"),
                    ));
                }
            }
        }
    }

    /// A manifest or a patch by its hash, decoded ([`Decoded::Manifest`] or
    /// [`Decoded::Patch`]).
    async fn root(&self, hash: &ChunkHash, spend: &mut Spend) -> Result<Decoded, Stop> {
        let held = self.state.borrow_mut().decoded.get(hash);
        if let Some(held @ (Decoded::Manifest(_) | Decoded::Patch(_))) = held {
            self.count(|s| s.cache.decoded_hits += 1);
            return Ok(held);
        }
        spend.subrequests += 1;
        let fetched = RefCell::new(false);
        let bytes = self.part_bytes(PartKind::Manifest, hash, &fetched).await?;
        spend.fetched_part |= fetched.into_inner();
        if BoardDigest::of(&bytes) != *hash {
            return Err(bad_part(hash, DecodeError::HashMismatch));
        }
        let decoded = match Root::decode(&bytes).map_err(|e| bad_part(hash, e))? {
            Root::Manifest(manifest) => Decoded::Manifest(Rc::new(manifest)),
            Root::Patch(patch) => Decoded::Patch(Rc::new(patch)),
        };
        self.state.borrow_mut().decoded.insert(hash, decoded.clone());
        Ok(decoded)
    }

    /// Puts the parts a query needs into `parts`: from the isolate, else fetched all at once:
    /// up to 6 one by one through the Cache API while that fits `MAX_SUBREQUESTS`, more
    /// straight from the origin in bundles of up to 200. A read that would fetch more than
    /// `MAX_PARTS_PER_READ` parts, or need more subrequests even in bundles, goes to the
    /// origin instead.
    async fn fetch_parts(
        &self,
        reader: &SnapshotReader<'_>,
        need: Vec<Part>,
        parts: &mut QueryParts,
        spend: &mut Spend,
    ) -> Result<(), Stop> {
        let mut missing = Vec::new();
        for part in need {
            let hash = reader.part_hash(part).ok_or_else(|| {
                Problem::new(
                    Code::INTERNAL,
                    format!("the snapshot reader asked for {part:?}, which the manifest does not have"),
                )
            })?;
            let held = self.state.borrow_mut().decoded.get(&hash);
            match (part, held) {
                (Part::Rank(i), Some(Decoded::Rank(c))) => {
                    parts.rank.insert(i, c);
                }
                (Part::Lookup(p), Some(Decoded::Lookup(c))) => {
                    parts.lookup.insert(p, c);
                }
                (Part::Sketch, Some(Decoded::Sketch(s))) => {
                    parts.sketch = Some(s);
                }
                _ => {
                    missing.push((part, hash));
                    continue;
                }
            }
            self.count(|s| s.cache.decoded_hits += 1);
        }
        if missing.is_empty() {
            return Ok(());
        }
        if spend.parts + missing.len() > self.config.max_parts_per_read {
            return Err(Stop::Forward(Fallback::TooManyParts));
        }
        spend.parts += missing.len();
        let all = if missing.len() <= MAX_ONE_BY_ONE
            && spend.subrequests + missing.len() <= self.config.max_subrequests
        {
            spend.subrequests += missing.len();
            let fetched = RefCell::new(false);
            let all = join_all(
                missing
                    .iter()
                    .map(|(_, hash)| self.part_bytes(PartKind::Chunk, hash, &fetched)),
            )
            .await;
            spend.fetched_part |= fetched.into_inner();
            all.into_iter().collect::<Result<Vec<_>, _>>()?
        } else {
            let bundles = missing.len().div_ceil(MAX_BUNDLE_CHUNKS);
            if spend.subrequests + bundles > self.config.max_subrequests {
                return Err(Stop::Forward(Fallback::TooManyParts));
            }
            spend.subrequests += bundles;
            spend.fetched_part = true;
            let hashes: Vec<ChunkHash> = missing.iter().map(|(_, hash)| *hash).collect();
            let all = join_all(hashes.chunks(MAX_BUNDLE_CHUNKS).map(|some| self.bundle(some))).await;
            let mut parts = Vec::with_capacity(missing.len());
            for bundle in all {
                parts.extend(bundle?);
            }
            parts
        };
        for ((part, hash), bytes) in missing.into_iter().zip(all) {
            let decoded = match part {
                Part::Rank(i) => {
                    let chunk = Rc::new(RankChunk::decode(&bytes, &hash).map_err(|e| bad_part(&hash, e))?);
                    parts.rank.insert(i, chunk.clone());
                    Decoded::Rank(chunk)
                }
                Part::Lookup(p) => {
                    let chunk = Rc::new(LookupChunk::decode(&bytes, &hash).map_err(|e| bad_part(&hash, e))?);
                    parts.lookup.insert(p, chunk.clone());
                    Decoded::Lookup(chunk)
                }
                Part::Sketch => {
                    let sketch = Rc::new(RankSketch::decode(&bytes, &hash).map_err(|e| bad_part(&hash, e))?);
                    parts.sketch = Some(sketch.clone());
                    Decoded::Sketch(sketch)
                }
            };
            self.state.borrow_mut().decoded.insert(&hash, decoded);
        }
        Ok(())
    }

    /// The answer `body` makes from the parts it asks for: each time it needs parts, they are
    /// fetched ([`Edge::fetch_parts`]) and it is asked again, until it answers.
    pub(super) async fn answer_from_parts(
        &self,
        reader: &SnapshotReader<'_>,
        spend: &mut Spend,
        mut body: impl FnMut(&QueryParts) -> Result<Step<Vec<u8>>, Stop>,
    ) -> Result<Vec<u8>, Stop> {
        let mut parts = QueryParts::default();
        loop {
            match body(&parts)? {
                Step::Done(answer) => return Ok(answer),
                Step::Need(need) => self.fetch_parts(reader, need, &mut parts, spend).await?,
            }
        }
    }

    /// The chunks `hashes` from the origin in one request, in that order, each checked by its
    /// caller's decode (which verifies the hash). Not put in the Cache API: a bundle serves a
    /// read whose parts would not fit the subrequests of one part at a time, puts included.
    async fn bundle(&self, hashes: &[ChunkHash]) -> Result<Vec<Vec<u8>>, Stop> {
        self.count(|s| s.origin_fetches.bundle += 1);
        let names: Vec<String> = hashes.iter().map(ChunkHash::to_string).collect();
        let path = format!("/v1/snapshots/chunks?hashes={}", names.join(","));
        let answer = match self.origin_get(&path).await {
            Ok(answer) => answer,
            Err(_) => {
                self.count(|s| s.origin_fetches.unreachable += 1);
                return Err(problem::origin_unavailable(
                    "the origin is unreachable and the edge does not hold the parts of the snapshot this read needs; retry shortly",
                )
                .into());
            }
        };
        if answer.status() != StatusCode::OK {
            return Err(problem::origin_unavailable(format!(
                "the origin answered {} for a bundle of {} parts of this snapshot; retry shortly",
                answer.status().as_u16(),
                hashes.len()
            ))
            .into());
        }
        let mut rest = &answer.body()[..];
        let mut parts = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let Some((length, tail)) = rest.split_first_chunk::<4>() else {
                return Err(bad_part(hash, DecodeError::Malformed));
            };
            let length = u32::from_be_bytes(*length) as usize;
            if tail.len() < length {
                return Err(bad_part(hash, DecodeError::Malformed));
            }
            let (part, tail) = tail.split_at(length);
            parts.push(part.to_vec());
            rest = tail;
        }
        match hashes.last() {
            Some(last) if !rest.is_empty() => Err(bad_part(last, DecodeError::TrailingBytes)),
            _ => Ok(parts),
        }
    }
}

/// A part the origin sent that does not decode or match its hash.
fn bad_part(hash: &ChunkHash, e: DecodeError) -> Stop {
    problem::bad_origin_answer(format!("the origin's snapshot part {hash} cannot be used: {e}")).into()
}
