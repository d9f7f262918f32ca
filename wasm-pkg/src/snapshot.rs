//! A board's published snapshot read in the browser: the core's [`SnapshotReader`] over the
//! parts the caller fetched, answering `top`, `rank` and `nearby`, on the whole board or
//! within a segment, with the read API's JSON.
//!
//! No IO here, as in the edge worker: a query answers, or names the chunks it needs; the
//! JavaScript layer fetches them and hands each back through [`SnapshotView::add_part`], which
//! decodes it against the hash the manifest names (so a chunk that is not the manifest's is
//! refused, never read).

use std::collections::BTreeMap;

use standings_core::contract::{Problem, answer, query};
use standings_core::interval::RankSketch;
use standings_core::json::PeriodFields;
use standings_core::snapshot::read::{Part, Parts, SegmentCounts, SnapshotReader, Step};
use standings_core::{
    BoardDigest, BoardId, ChunkHash, Cursor, CursorBinding, DecodeError, LookupChunk, MAX_PATCH_LEVELS,
    Manifest, ManifestPatch, RankChunk, Root, SegmentKey,
};

/// The period instance a head names, printed in every answer.
#[derive(Clone, Debug)]
pub struct Period {
    /// The period kind (`all_time`, `daily`, ...).
    pub kind: String,
    /// The instance's key.
    pub key: String,
    /// Its first ms, when bounded.
    pub start_ms: Option<i64>,
    /// Its end (exclusive) in ms, when bounded.
    pub end_ms: Option<i64>,
}

/// Why a snapshot read failed.
#[derive(Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// A manifest or chunk that does not decode, or is not the one its hash names.
    BadPart {
        /// The part's hash, as named.
        hash: String,
        /// What is wrong with it.
        why: String,
    },
    /// A part nobody asked for: its hash is not among those the last query needed.
    UnexpectedPart(String),
    /// A request the origin and the edge refuse too (a limit, a radius, a player id, a
    /// cursor of another board), in the read contract's words.
    Refused(Problem),
    /// A read within a segment of a version published as a patch, which does not restate the
    /// chunks' segment members (a board that declares segments is published whole): the API
    /// answers it.
    SegmentOfPatch,
    /// A cursor of another version: the origin, which holds several, can still page it.
    StaleCursor {
        /// The version the cursor pages.
        cursor_version: u64,
        /// The snapshot's version.
        board_version: u64,
    },
}

impl core::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SnapshotError::BadPart { hash, why } => write!(f, "snapshot part {hash}: {why}"),
            SnapshotError::UnexpectedPart(hash) => {
                write!(f, "snapshot part {hash} was not asked for by the last query")
            }
            SnapshotError::Refused(problem) => f.write_str(&problem.detail),
            SnapshotError::SegmentOfPatch => f.write_str(
                "this version is published as a patch, which does not carry segment members: ask the API",
            ),
            SnapshotError::StaleCursor {
                cursor_version,
                board_version,
            } => write!(
                f,
                "the cursor pages version {cursor_version}; this snapshot holds version {board_version}: ask the API, or page again from the first page"
            ),
        }
    }
}

/// What a query gives: its JSON answer, or the hashes of the chunks to fetch first.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The answer, as the read API's JSON (`null` for a player with no score).
    Json(Vec<u8>),
    /// Fetch these chunks, [`SnapshotView::add_part`] each, and ask again.
    Need(Vec<ChunkHash>),
}

/// The decoded chunks held for one manifest.
#[derive(Default)]
struct Held {
    rank: BTreeMap<usize, RankChunk>,
    lookup: BTreeMap<usize, LookupChunk>,
    sketch: Option<RankSketch>,
}

impl Parts for Held {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(&i)
    }

    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(&partition)
    }

    fn sketch(&self) -> Option<&RankSketch> {
        self.sketch.as_ref()
    }
}

/// One board instance's snapshot at one version, and the chunks fetched for it so far.
pub struct SnapshotView {
    board: BoardId,
    period: Period,
    binding: CursorBinding,
    manifest: Manifest,
    /// The version as patches over `manifest` (the lowest first), when the head names one.
    patches: Vec<ManifestPatch>,
    held: Held,
    /// The parts the last query needed, by hash.
    wanted: BTreeMap<ChunkHash, Part>,
    /// The segments read so far, counted over the manifest's rank chunks.
    segments: BTreeMap<String, SegmentCounts>,
}

impl SnapshotView {
    /// A view of what a head names: the root `bytes`, which must hash to `manifest_hash` (the
    /// head's), and when they are a patch, the bytes of what it stands on (`bases`: its base,
    /// then that one's base while it is a patch, each hashing to what the one before names, as
    /// [`SnapshotView::base_of`] tells). O(bytes).
    pub fn new(
        board: BoardId,
        period: Period,
        manifest_hash: &str,
        bytes: &[u8],
        bases: &[&[u8]],
    ) -> Result<SnapshotView, SnapshotError> {
        let bad = |hash: &str, why: String| SnapshotError::BadPart {
            hash: hash.into(),
            why,
        };
        let mut expected = BoardDigest::parse_hex(manifest_hash)
            .ok_or_else(|| bad(manifest_hash, "not a 64-digit hex hash".into()))?;
        let mut patches = Vec::new();
        let mut bases = bases.iter();
        let mut bytes = bytes;
        let manifest = loop {
            let hash = expected.to_string();
            if BoardDigest::of(bytes) != expected {
                return Err(bad(&hash, DecodeError::HashMismatch.to_string()));
            }
            match Root::decode(bytes).map_err(|e| bad(&hash, e.to_string()))? {
                Root::Manifest(manifest) => break manifest,
                Root::Patch(patch) if patches.len() < MAX_PATCH_LEVELS => {
                    expected = patch.base;
                    bytes = bases
                        .next()
                        .ok_or_else(|| bad(&patch.base.to_string(), "a patch needs its base".into()))?;
                    patches.insert(0, patch);
                }
                Root::Patch(_) => {
                    return Err(bad(&hash, "a snapshot that stands on too many patches".into()));
                }
            }
        };
        let refs: Vec<&ManifestPatch> = patches.iter().collect();
        SnapshotReader::over(&manifest, &refs).map_err(|e| bad(manifest_hash, e.to_string()))?;
        Ok(SnapshotView {
            binding: CursorBinding::of(&board, &period.key),
            board,
            period,
            manifest,
            patches,
            held: Held::default(),
            wanted: BTreeMap::new(),
            segments: BTreeMap::new(),
        })
    }

    /// The hash of the base that a head's root `bytes` (or a base's) stand on, when they are a
    /// patch; `None` for a manifest (or bytes that decode as neither, which
    /// [`SnapshotView::new`] refuses).
    /// O(bytes).
    pub fn base_of(bytes: &[u8]) -> Option<ChunkHash> {
        match Root::decode(bytes) {
            Ok(Root::Patch(patch)) => Some(patch.base),
            _ => None,
        }
    }

    /// The reader of the version held: checked when the view was made.
    fn reader(&self) -> SnapshotReader<'_> {
        let refs: Vec<&ManifestPatch> = self.patches.iter().collect();
        SnapshotReader::over(&self.manifest, &refs).unwrap_or_else(|_| SnapshotReader::new(&self.manifest))
    }

    /// The version the snapshot was taken at. O(1).
    pub fn board_version(&self) -> u64 {
        self.patches
            .last()
            .map_or(self.manifest.board_version, |p| p.board_version)
    }

    /// Ranked players in the snapshot. O(1).
    pub fn total_players(&self) -> u64 {
        self.patches
            .last()
            .map_or(self.manifest.total_players, |p| p.total_players)
    }

    /// The hashes the last query needed and that are not held yet. O(needed).
    pub fn needed(&self) -> Vec<ChunkHash> {
        self.wanted.keys().copied().collect()
    }

    /// Decodes a chunk the last query needed, checking its hash. O(bytes).
    pub fn add_part(&mut self, hash: &str, bytes: &[u8]) -> Result<(), SnapshotError> {
        let key = BoardDigest::parse_hex(hash).ok_or_else(|| SnapshotError::UnexpectedPart(hash.into()))?;
        let part = *self
            .wanted
            .get(&key)
            .ok_or_else(|| SnapshotError::UnexpectedPart(hash.into()))?;
        let bad = |e: DecodeError| SnapshotError::BadPart {
            hash: hash.into(),
            why: e.to_string(),
        };
        match part {
            Part::Rank(i) => {
                let chunk = RankChunk::decode(bytes, &key).map_err(bad)?;
                self.held.rank.insert(i, chunk);
            }
            Part::Lookup(p) => {
                let chunk = LookupChunk::decode(bytes, &key).map_err(bad)?;
                self.held.lookup.insert(p, chunk);
            }
            Part::Sketch => self.held.sketch = Some(RankSketch::decode(bytes, &key).map_err(bad)?),
        }
        self.wanted.remove(&key);
        Ok(())
    }

    /// `GET .../top?limit=&cursor=` from the snapshot: at most 2 rounds of parts. O(log chunks
    /// + limit) once the parts are held.
    pub fn top(&mut self, limit: usize, cursor: Option<&str>) -> Result<Answer, SnapshotError> {
        let (limit, cursor) = self.page(limit, cursor)?;
        let reader = self.reader();
        let step = answer::top(
            &reader,
            &self.held,
            &self.fields(),
            self.binding,
            limit,
            cursor.as_ref(),
        )
        .map_err(|_| SnapshotError::StaleCursor {
            cursor_version: cursor.as_ref().map_or(0, |c| c.board_version),
            board_version: self.board_version(),
        })?;
        Ok(self.settle(step))
    }

    /// `GET .../players/{player}/rank` from the snapshot (`null` when the player has no
    /// score): at most 2 rounds. O(log chunks) once held.
    pub fn rank(&mut self, player: &str) -> Result<Answer, SnapshotError> {
        query::player_id(player).map_err(SnapshotError::Refused)?;
        let reader = self.reader();
        let step = answer::rank(&reader, &self.held, &self.fields(), player);
        Ok(self.settle(or_null(step)))
    }

    /// `GET .../players/{player}/rank?approximate=interval` from the snapshot (`null` when the
    /// player has no score): one round, the lookup chunk and the sketch. O(log bounds) once
    /// held.
    pub fn rank_interval(&mut self, player: &str) -> Result<Answer, SnapshotError> {
        query::player_id(player).map_err(SnapshotError::Refused)?;
        let reader = self.reader();
        let step = answer::rank_interval(&reader, &self.held, &self.fields(), player);
        Ok(self.settle(or_null(step)))
    }

    /// `GET .../players/{player}/nearby?radius=` from the snapshot (`null` when the player
    /// has no score): at most 3 rounds. O(log chunks + radius) once held.
    pub fn nearby(&mut self, player: &str, radius: u64) -> Result<Answer, SnapshotError> {
        query::player_id(player).map_err(SnapshotError::Refused)?;
        let radius = query::radius(Some(&radius.to_string())).map_err(SnapshotError::Refused)?;
        let reader = self.reader();
        let step = answer::nearby(&reader, &self.held, &self.fields(), player, radius);
        Ok(self.settle(or_null(step)))
    }

    /// `GET .../top?segment=&limit=&cursor=` from the snapshot: the segment's members ranked
    /// within it, each with its board-wide rank. At most 2 rounds.
    pub fn segment_top(
        &mut self,
        segment: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<Answer, SnapshotError> {
        let (limit, cursor) = self.page(limit, cursor)?;
        let segment = self.segment(segment)?;
        let key = segment.key();
        let name = self.counted(&key)?;
        let reader = self.reader();
        let within = reader
            .within(&self.segments[&name])
            .ok_or(SnapshotError::SegmentOfPatch)?;
        let step = answer::segment_top(
            &within,
            &self.held,
            &self.fields(),
            &key,
            self.binding,
            limit,
            cursor.as_ref(),
        )
        .map_err(|_| SnapshotError::StaleCursor {
            cursor_version: cursor.as_ref().map_or(0, |c| c.board_version),
            board_version: reader.board_version(),
        })?;
        Ok(self.settle(step))
    }

    /// `GET .../players/{player}/rank?segment=` from the snapshot (`null` when the player has
    /// no score in the segment): at most 2 rounds.
    pub fn segment_rank(&mut self, segment: &str, player: &str) -> Result<Answer, SnapshotError> {
        query::player_id(player).map_err(SnapshotError::Refused)?;
        let segment = self.segment(segment)?;
        let key = segment.key();
        let name = self.counted(&key)?;
        let reader = self.reader();
        let within = reader
            .within(&self.segments[&name])
            .ok_or(SnapshotError::SegmentOfPatch)?;
        let step = answer::segment_rank(&within, &self.held, &self.fields(), &key, player);
        Ok(self.settle(or_null(step)))
    }

    /// `GET .../players/{player}/nearby?segment=&radius=` from the snapshot (`null` when the
    /// player has no score in the segment): at most 3 rounds.
    pub fn segment_nearby(
        &mut self,
        segment: &str,
        player: &str,
        radius: u64,
    ) -> Result<Answer, SnapshotError> {
        query::player_id(player).map_err(SnapshotError::Refused)?;
        let radius = query::radius(Some(&radius.to_string())).map_err(SnapshotError::Refused)?;
        let segment = self.segment(segment)?;
        let key = segment.key();
        let name = self.counted(&key)?;
        let reader = self.reader();
        let within = reader
            .within(&self.segments[&name])
            .ok_or(SnapshotError::SegmentOfPatch)?;
        let version = reader.board_version();
        let step = answer::segment_nearby(&within, &self.held, &self.fields(), &key, player, radius, version);
        Ok(self.settle(or_null(step)))
    }

    /// A segment as written (`country:DE`), checked as the API checks it against the
    /// dimensions the snapshot's board declares.
    fn segment(&self, raw: &str) -> Result<query::SegmentParam, SnapshotError> {
        if !self.patches.is_empty() {
            return Err(SnapshotError::SegmentOfPatch);
        }
        query::check_segment(raw, &self.manifest.segments.spec(), &self.board).map_err(SnapshotError::Refused)
    }

    /// A page's `limit` and `cursor`, checked as the API checks them.
    fn page(&self, limit: usize, cursor: Option<&str>) -> Result<(usize, Option<Cursor>), SnapshotError> {
        let limit = query::limit(Some(&limit.to_string())).map_err(SnapshotError::Refused)?;
        let cursor = cursor
            .map(|text| query::cursor(text, self.binding, &self.board, &self.period.key))
            .transpose()
            .map_err(SnapshotError::Refused)?
            .map(|(_, cursor)| cursor);
        Ok((limit, cursor))
    }

    /// The name under which the counts of `segment` are kept, counting them on first use: once
    /// per view (one manifest) and segment.
    fn counted(&mut self, segment: &SegmentKey<'_>) -> Result<String, SnapshotError> {
        let name = format!("{}:{}", segment.dimension, segment.value);
        if !self.segments.contains_key(&name) {
            let counts = SegmentCounts::of(&self.manifest, segment).ok_or(SnapshotError::SegmentOfPatch)?;
            self.segments.insert(name.clone(), counts);
        }
        Ok(name)
    }

    /// The period fields of every answer.
    fn fields(&self) -> PeriodFields<'_> {
        PeriodFields {
            kind: &self.period.kind,
            key: &self.period.key,
            start_ms: self.period.start_ms,
            end_ms: self.period.end_ms,
        }
    }

    /// The answer, or the hashes of the parts it needs, remembered for [`Self::add_part`].
    fn settle(&mut self, step: Step<Vec<u8>>) -> Answer {
        match step {
            Step::Done(json) => Answer::Json(json),
            Step::Need(parts) => {
                let hashes: Vec<(Option<ChunkHash>, Part)> = {
                    let reader = self.reader();
                    parts
                        .into_iter()
                        .map(|part| (reader.part_hash(part), part))
                        .collect()
                };
                self.wanted.clear();
                for (hash, part) in hashes {
                    // The reader asks only for places its manifest has.
                    if let Some(hash) = hash {
                        self.wanted.insert(hash, part);
                    }
                }
                Answer::Need(self.wanted.keys().copied().collect())
            }
        }
    }
}

/// A player's answer, or `null` for a player with no score.
fn or_null(step: Step<Option<Vec<u8>>>) -> Step<Vec<u8>> {
    match step {
        Step::Done(json) => Step::Done(json.unwrap_or_else(|| b"null".to_vec())),
        Step::Need(need) => Step::Need(need),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use standings_core::json::{
        write_interval_answer, write_nearby_answer, write_rank_answer, write_top_answer,
    };
    use standings_core::{Board, BoardRules, ChunkingOptions, Profile, ScoreEvent, ScoreMode, Snapshot};

    /// 500 players; every third with a display name (some not ASCII) and every fifth a
    /// country, every seventh event with metadata.
    fn board() -> Board {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for i in 0..500i64 {
            let metadata = (i % 7 == 0).then(|| format!(r#"{{"lap": {i}, "car":"R\u00e9"}}"#).into());
            let event = ScoreEvent::new(&format!("e{i}"), &format!("p-{i:03}"), (i * 37) % 101, i)
                .unwrap()
                .with_metadata(metadata);
            board.apply(&event).unwrap();
            let profile = Profile {
                display_name: (i % 3 == 0).then(|| format!("Zoë \"{i}\" 🚀").into()),
                country: (i % 5 == 0).then(|| "DE".into()),
                anonymous: false,
            };
            if !profile.is_empty() {
                let player = standings_core::PlayerId::new(&format!("p-{i:03}")).unwrap();
                board.set_profile(&player, Some(std::sync::Arc::new(profile)));
            }
        }
        board
    }

    /// The encoded part of `snapshot` whose hash is `hash`.
    fn part<'s>(snapshot: &'s Snapshot, hash: &ChunkHash) -> &'s [u8] {
        let m = &snapshot.manifest;
        let rank = m.rank_chunks.iter().position(|c| c.hash == *hash);
        let lookup = m.lookup_chunks.iter().position(|c| c.hash == *hash);
        match (rank, lookup) {
            (Some(i), _) => &snapshot.rank_chunks[i],
            (None, Some(p)) => &snapshot.lookup_chunks[p],
            (None, None) if m.sketch == *hash => &snapshot.sketch,
            (None, None) => panic!("no part {hash}"),
        }
    }

    /// Small chunks, so that reads span several.
    fn small() -> ChunkingOptions {
        ChunkingOptions {
            min_entries: 8,
            boundary_modulus: 8,
            max_entries: 32,
            lookup_target: 16,
        }
    }

    /// Runs a query, feeding it the parts it names from `snapshot`, until it answers.
    fn answer(
        view: &mut SnapshotView,
        snapshot: &Snapshot,
        mut query: impl FnMut(&mut SnapshotView) -> Result<Answer, SnapshotError>,
    ) -> Vec<u8> {
        for _ in 0..4 {
            match query(view).unwrap() {
                Answer::Json(json) => return json,
                Answer::Need(hashes) => {
                    for hash in hashes {
                        view.add_part(&hash.to_string(), part(snapshot, &hash)).unwrap();
                    }
                }
            }
        }
        panic!("no answer in 4 rounds");
    }

    /// A board of 500 players, its snapshot in small chunks, its id and the all-time period.
    fn setup() -> (Board, Snapshot, BoardId, Period) {
        let board = board();
        let snapshot = Snapshot::build_with(&board, small());
        let id = BoardId::new("g", "solo", "s1", "global").unwrap();
        let period = Period {
            kind: "all_time".into(),
            key: "all_time".into(),
            start_ms: None,
            end_ms: None,
        };
        (board, snapshot, id, period)
    }

    /// Top pages (with a cursor), ranks and windows from the parts equal the board's own
    /// answers, names, countries and metadata included.
    #[test]
    fn reads_equal_the_boards() {
        let (board, snapshot, id, period) = setup();
        assert!(board.players_with_extras() > 150);
        let fields = PeriodFields {
            kind: "all_time",
            key: "all_time",
            start_ms: None,
            end_ms: None,
        };
        let manifest = &snapshot.manifest_bytes;
        let mut view = SnapshotView::new(
            id.clone(),
            period,
            &BoardDigest::of(manifest).to_string(),
            manifest,
            &[],
        )
        .unwrap();
        let binding = CursorBinding::of(&id, "all_time");

        // The board's page of 7 after `cursor`: its JSON, and its next cursor as printed.
        let expected_top = |cursor: Option<&standings_core::Cursor>| {
            let page = board.top(7, cursor).unwrap();
            let next = page
                .next_cursor
                .as_ref()
                .map(|c| standings_core::contract::query::cursor_text(c, binding));
            let mut expected = Vec::new();
            write_top_answer(&mut expected, &fields, &page, next.as_deref());
            (expected, page.next_cursor, next)
        };
        let first = answer(&mut view, &snapshot, |v| v.top(7, None));
        let (expected, cursor, next) = expected_top(None);
        assert_eq!(first, expected);
        let second = answer(&mut view, &snapshot, |v| v.top(7, next.as_deref()));
        assert_eq!(second, expected_top(cursor.as_ref()).0);

        for player in ["p-000", "p-250", "p-499"] {
            let rank = answer(&mut view, &snapshot, |v| v.rank(player));
            let mut expected = Vec::new();
            write_rank_answer(&mut expected, &fields, &board.player_rank(player).unwrap());
            assert_eq!(rank, expected, "{player}");
            if player == "p-000" {
                let text = String::from_utf8(rank.clone()).unwrap();
                assert!(
                    text.contains(r#","display_name":"Zoë \"0\" 🚀","country":"DE","metadata":{"lap": 0, "car":"R\u00e9"}"#),
                    "{text}"
                );
            }
            let window = answer(&mut view, &snapshot, |v| v.nearby(player, 4));
            let mut expected = Vec::new();
            let entries = board.nearby(player, 4).unwrap();
            write_nearby_answer(&mut expected, &fields, board.version(), entries.iter().copied());
            assert_eq!(window, expected, "{player}");
            let interval = answer(&mut view, &snapshot, |v| v.rank_interval(player));
            let mut expected = Vec::new();
            write_interval_answer(&mut expected, &fields, &board.rank_interval(player).unwrap());
            assert_eq!(interval, expected, "{player}");
        }
        assert_eq!(answer(&mut view, &snapshot, |v| v.rank("nobody")), b"null");
        assert_eq!(
            answer(&mut view, &snapshot, |v| v.rank_interval("nobody")),
            b"null"
        );
    }

    /// A chunk with the wrong bytes, one nobody asked for, a bad manifest hash, a foreign
    /// cursor and out-of-range limits are refused.
    #[test]
    fn bad_parts_and_requests_are_refused() {
        let (_, snapshot, id, period) = setup();
        let manifest = &snapshot.manifest_bytes;
        let wrong_hash = BoardDigest::of(b"other").to_string();
        assert!(matches!(
            SnapshotView::new(id.clone(), period.clone(), &wrong_hash, manifest, &[]),
            Err(SnapshotError::BadPart { .. })
        ));
        let mut view =
            SnapshotView::new(id, period, &BoardDigest::of(manifest).to_string(), manifest, &[]).unwrap();
        let Answer::Need(hashes) = view.top(3, None).unwrap() else {
            panic!("a fresh view holds no chunk");
        };
        assert!(matches!(
            view.add_part(&hashes[0].to_string(), b"not the chunk"),
            Err(SnapshotError::BadPart { .. })
        ));
        assert!(matches!(
            view.add_part(&wrong_hash, b"x"),
            Err(SnapshotError::UnexpectedPart(_))
        ));
        let refused = |result: Result<Answer, SnapshotError>| match result {
            Err(SnapshotError::Refused(problem)) => (problem.code, problem.detail),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(view.top(0, None)),
            (
                "INVALID_REQUEST",
                "limit=\"0\" is not valid; expected 1 to 1000".into()
            )
        );
        assert_eq!(
            refused(view.top(3, Some("!!"))),
            ("INVALID_CURSOR", "the cursor is not one this service made".into())
        );
        assert_eq!(
            refused(view.nearby("p-001", 101)),
            (
                "INVALID_REQUEST",
                "radius=\"101\" is not valid; expected 0 to 100".into()
            )
        );
        assert_eq!(refused(view.rank("a\u{7}")).0, "INVALID_REQUEST");
    }

    /// A version published as patches over a manifest (two levels) reads as the board at that
    /// version; the view refuses a patch without its bases.
    #[test]
    fn a_patched_version_reads_as_the_board() {
        let (mut board, _, id, period) = setup();
        let fields = PeriodFields {
            kind: "all_time",
            key: "all_time",
            start_ms: None,
            end_ms: None,
        };
        let mut publisher = standings_core::Publisher::patching(small(), 4_096);
        let first = publisher.publish(&board);
        let mut held: std::collections::HashMap<ChunkHash, Vec<u8>> =
            first.new_parts.iter().cloned().collect();
        held.insert(first.manifest_hash, first.manifest_bytes.clone());
        let mut roots = Vec::new();
        for round in 0..2 {
            for i in 0..6 {
                let event = ScoreEvent::new(
                    &format!("m{round}-{i}"),
                    &format!("p-{:03}", i * 41 + round),
                    500 + i,
                    9,
                )
                .unwrap();
                board.apply(&event).unwrap();
            }
            let publication = publisher.publish(&board);
            held.insert(publication.manifest_hash, publication.manifest_bytes.clone());
            held.extend(publication.new_parts.iter().cloned());
            roots.push(publication);
        }
        let top = roots.last().unwrap();
        assert_eq!(
            top.patches.len(),
            2,
            "the second version stands on the first's patch"
        );
        let bases = [&held[&top.patches[1].base][..], &held[&top.patches[0].base][..]];
        let hash = top.manifest_hash.to_string();
        assert!(matches!(
            SnapshotView::new(
                id.clone(),
                period.clone(),
                &hash,
                &top.manifest_bytes,
                &bases[..1]
            ),
            Err(SnapshotError::BadPart { .. })
        ));
        assert_eq!(
            SnapshotView::base_of(&top.manifest_bytes),
            Some(top.patches[1].base)
        );
        let mut view = SnapshotView::new(id, period, &hash, &top.manifest_bytes, &bases).unwrap();
        assert_eq!(view.board_version(), board.version());
        let answered =
            |view: &mut SnapshotView, query: &dyn Fn(&mut SnapshotView) -> Result<Answer, SnapshotError>| {
                for _ in 0..4 {
                    match query(view).unwrap() {
                        Answer::Json(json) => return json,
                        Answer::Need(hashes) => {
                            for hash in hashes {
                                view.add_part(&hash.to_string(), &held[&hash]).unwrap();
                            }
                        }
                    }
                }
                panic!("no answer in 4 rounds");
            };
        for player in ["p-000", "p-042", "p-250", "p-499"] {
            let mut expected = Vec::new();
            write_rank_answer(&mut expected, &fields, &board.player_rank(player).unwrap());
            assert_eq!(answered(&mut view, &|v| v.rank(player)), expected, "{player}");
        }
        let page = board.top(20, None).unwrap();
        let mut expected = Vec::new();
        let binding = CursorBinding::of(&BoardId::new("g", "solo", "s1", "global").unwrap(), "all_time");
        let next = page
            .next_cursor
            .as_ref()
            .map(|c| standings_core::contract::query::cursor_text(c, binding));
        write_top_answer(&mut expected, &fields, &page, next.as_deref());
        assert_eq!(answered(&mut view, &|v| v.top(20, None)), expected);
    }

    /// The read contract's table of bad parameters, through the package's reads: the words
    /// the origin and the edge answer with (`limit`, `radius` and cursors; `include_self` is
    /// the edge's and the origin's friends-of, which the package does not read).
    #[test]
    fn the_contracts_bad_parameters_are_refused_in_its_words() {
        let (_, snapshot, id, period) = setup();
        let manifest = &snapshot.manifest_bytes;
        let mut view =
            SnapshotView::new(id, period, &BoardDigest::of(manifest).to_string(), manifest, &[]).unwrap();
        for (read, query, _, code, detail) in standings_core::contract::query::BAD_PARAMETERS {
            let query = standings_core::contract::query::Query(Some(query));
            let refused = match *read {
                "top" => match (query.get("limit"), query.get("cursor")) {
                    (Some(limit), _) => match limit.parse::<usize>() {
                        Ok(limit) => view.top(limit, None),
                        // The package takes a number; the text's refusal is the contract's own.
                        Err(_) => continue,
                    },
                    (None, Some(cursor)) => view.top(10, Some(&cursor)),
                    (None, None) => panic!("{query:?}"),
                },
                "nearby" => match query.get("radius").unwrap().parse::<u64>() {
                    Ok(radius) => view.nearby("p-001", radius),
                    Err(_) => continue,
                },
                _ => continue,
            };
            match refused {
                Err(SnapshotError::Refused(problem)) => {
                    assert_eq!((problem.code, problem.detail.as_str()), (*code, *detail));
                }
                other => panic!("{read} {query:?}: {other:?}"),
            }
        }
    }
}
