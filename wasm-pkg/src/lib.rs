//! Standings for web front ends: the core compiled to WebAssembly behind wasm-bindgen.
//!
//! This crate is the thin Rust half of the `standings-wasm` npm package: the core's total order
//! for friend lists ([`order`]) and snapshot reads ([`snapshot`]), translated to JavaScript
//! types. Fetching, streams and the public API's shapes are the TypeScript half's
//! (`wasm-pkg/ts/`), which calls the functions below; they are not meant to be called directly.
//!
//! Values cross as `i64` (JavaScript `bigint`), so no score loses precision on the way.

pub mod live;
pub mod order;
pub mod snapshot;

use standings_core::contract::head::Head;
use standings_core::json::{parse_rfc3339, write_rfc3339};
use standings_core::{BoardId, ViewState};
use wasm_bindgen::prelude::*;

use crate::order::{OrderError, rank_order, rules_of, standings_of};
use crate::snapshot::{Answer, Period, SnapshotView};

/// -1, 0 or 1: how two standings compare in the total order of `mode` (-1: `a` ranks first);
/// both player ids are checked as the service checks them. O(length of the ids).
#[wasm_bindgen(js_name = compareStandings)]
#[allow(clippy::too_many_arguments)]
pub fn compare_standings(
    mode: &str,
    a_value: i64,
    a_achieved_at: i64,
    a_player: &str,
    b_value: i64,
    b_achieved_at: i64,
    b_player: &str,
) -> Result<i32, JsError> {
    let rules = rules_of(mode).map_err(js_error)?;
    let a = standings_core::Standing {
        value: a_value,
        achieved_at: a_achieved_at,
    };
    let b = standings_core::Standing {
        value: b_value,
        achieved_at: b_achieved_at,
    };
    order::compare(&rules, (&a, a_player), (&b, b_player))
        .map(|ordering| ordering as i32)
        .map_err(js_error)
}

/// The indices of the scored entries in rank order, as the caller listed them. The list crosses
/// whole, one row per entry: `scored[i]` is 0 for a player with no score (whose value and time
/// are not read, but whose id is checked like every other), `achieved_at` and `players` hold
/// one RFC 3339 time (empty for no score) and one id per entry, joined by `\n` (neither holds
/// one), so they cross into WebAssembly as two strings instead of two per entry, and the times
/// are read by the core's parser. O(k log k) for k entries.
#[wasm_bindgen(js_name = rankOrder)]
pub fn rank_order_js(
    mode: &str,
    scored: &[u8],
    values: &[i64],
    achieved_at: &str,
    players: &str,
) -> Result<Vec<u32>, JsError> {
    let rules = rules_of(mode).map_err(js_error)?;
    let split = |joined| split_lines(joined, scored.is_empty());
    let players = split(players);
    let standings = standings_of(scored, values, &split(achieved_at), players.len(), |at, text| {
        parse_rfc3339(text).ok_or_else(|| OrderError::BadTime {
            at,
            text: (*text).into(),
        })
    })
    .map_err(js_error)?;
    rank_order(&rules, &standings, &players).map_err(js_error)
}

/// [`rank_order_js`] with the times as ms since the epoch, for callers that hold numbers.
/// O(k log k).
#[wasm_bindgen(js_name = rankOrderMs)]
pub fn rank_order_ms(
    mode: &str,
    scored: &[u8],
    values: &[i64],
    achieved_at_ms: &[f64],
    players: &str,
) -> Result<Vec<u32>, JsError> {
    let rules = rules_of(mode).map_err(js_error)?;
    let players = split_lines(players, scored.is_empty());
    // Safe integers only reach here (the TypeScript checks), so the cast is exact.
    let standings = standings_of(scored, values, achieved_at_ms, players.len(), |_, &ms| {
        Ok(ms as i64)
    })
    .map_err(js_error)?;
    rank_order(&rules, &standings, &players).map_err(js_error)
}

/// An RFC 3339 time (with an offset) as ms since the epoch, read as the service reads it;
/// `undefined` when it is not one. O(1).
#[wasm_bindgen(js_name = parseTime)]
pub fn parse_time(text: &str) -> Option<f64> {
    parse_rfc3339(text).map(|ms| ms as f64)
}

/// Checks a player id as the service checks it: 1 to 128 bytes of UTF-8, no control
/// characters. O(length).
#[wasm_bindgen(js_name = checkPlayerId)]
pub fn check_player_id(player: &str) -> Result<(), JsError> {
    standings_core::check_id("player_id", player).map_err(|e| JsError::new(&e.to_string()))
}

/// A snapshot at one version, read part by part (see [`SnapshotView`]).
#[wasm_bindgen(js_name = SnapshotView)]
pub struct SnapshotHandle(SnapshotView);

#[wasm_bindgen(js_class = SnapshotView)]
impl SnapshotHandle {
    /// The snapshot of board `game/mode/season/scope` in a period instance, from its manifest's
    /// bytes, which must hash to `manifest_hash`. Times are ms since the epoch.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        game: &str,
        mode: &str,
        season: &str,
        scope: &str,
        period: String,
        period_key: String,
        period_start_ms: Option<f64>,
        period_end_ms: Option<f64>,
        manifest_hash: &str,
        manifest: &[u8],
        base: Option<Vec<u8>>,
        base_of_base: Option<Vec<u8>>,
    ) -> Result<SnapshotHandle, JsError> {
        let board = BoardId::new(game, mode, season, scope).map_err(|e| JsError::new(&e.to_string()))?;
        let period = Period {
            kind: period,
            key: period_key,
            start_ms: period_start_ms.map(|ms| ms as i64),
            end_ms: period_end_ms.map(|ms| ms as i64),
        };
        let bases: Vec<&[u8]> = base.iter().chain(&base_of_base).map(Vec::as_slice).collect();
        SnapshotView::new(board, period, manifest_hash, manifest, &bases)
            .map(SnapshotHandle)
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// The hash of the base that a head's manifest bytes (or a base's) stand on, when they are a
    /// patch (fetch it as a manifest; pass the root's base and, when that is a patch too, its
    /// base to the constructor); `undefined` for a manifest.
    #[wasm_bindgen(js_name = baseOf)]
    pub fn base_of(manifest: &[u8]) -> Option<String> {
        SnapshotView::base_of(manifest).map(|hash| hash.to_string())
    }

    /// The version the snapshot was taken at.
    #[wasm_bindgen(getter, js_name = boardVersion)]
    pub fn board_version(&self) -> f64 {
        self.0.board_version() as f64
    }

    /// Ranked players in the snapshot.
    #[wasm_bindgen(getter, js_name = totalPlayers)]
    pub fn total_players(&self) -> f64 {
        self.0.total_players() as f64
    }

    /// The top answer's JSON, or `undefined` when chunks must be fetched first ([`Self::needed`]).
    pub fn top(&mut self, limit: u32, cursor: Option<String>) -> Result<Option<String>, JsError> {
        let answer = self.0.top(limit as usize, cursor.as_deref());
        answer_of(answer)
    }

    /// The rank answer's JSON (`null` for no score), or `undefined` when chunks are needed.
    pub fn rank(&mut self, player: &str) -> Result<Option<String>, JsError> {
        let answer = self.0.rank(player);
        answer_of(answer)
    }

    /// The rank interval answer's JSON (`null` for no score), or `undefined` when parts are
    /// needed (the player's lookup chunk and the sketch, never a rank chunk).
    #[wasm_bindgen(js_name = rankInterval)]
    pub fn rank_interval(&mut self, player: &str) -> Result<Option<String>, JsError> {
        let answer = self.0.rank_interval(player);
        answer_of(answer)
    }

    /// The nearby answer's JSON (`null` for no score), or `undefined` when chunks are needed.
    pub fn nearby(&mut self, player: &str, radius: u32) -> Result<Option<String>, JsError> {
        let answer = self.0.nearby(player, u64::from(radius));
        answer_of(answer)
    }

    /// The segment top answer's JSON (`segment` as `country:DE`), or `undefined` when chunks
    /// must be fetched first.
    #[wasm_bindgen(js_name = segmentTop)]
    pub fn segment_top(
        &mut self,
        segment: &str,
        limit: u32,
        cursor: Option<String>,
    ) -> Result<Option<String>, JsError> {
        let answer = self.0.segment_top(segment, limit as usize, cursor.as_deref());
        answer_of(answer)
    }

    /// The segment rank answer's JSON (`null` when not in the segment), or `undefined` when
    /// chunks are needed.
    #[wasm_bindgen(js_name = segmentRank)]
    pub fn segment_rank(&mut self, segment: &str, player: &str) -> Result<Option<String>, JsError> {
        let answer = self.0.segment_rank(segment, player);
        answer_of(answer)
    }

    /// The segment nearby answer's JSON (`null` when not in the segment), or `undefined` when
    /// chunks are needed.
    #[wasm_bindgen(js_name = segmentNearby)]
    pub fn segment_nearby(
        &mut self,
        segment: &str,
        player: &str,
        radius: u32,
    ) -> Result<Option<String>, JsError> {
        let answer = self.0.segment_nearby(segment, player, u64::from(radius));
        answer_of(answer)
    }

    /// The hashes of the chunks the last query needs, as 64 hex digits.
    pub fn needed(&self) -> Vec<String> {
        self.0.needed().iter().map(ToString::to_string).collect()
    }

    /// Hands over a needed chunk; refused when its bytes do not hash to `hash` or do not decode.
    #[wasm_bindgen(js_name = addPart)]
    pub fn add_part(&mut self, hash: &str, bytes: &[u8]) -> Result<(), JsError> {
        self.0
            .add_part(hash, bytes)
            .map_err(|e| JsError::new(&e.to_string()))
    }
}

/// A snapshot head read with the contract's reader (`standings_core::contract::head`), as
/// the origin prints it; refused when the bytes are not one.
#[wasm_bindgen(js_name = HeadFields)]
pub struct HeadFields(Head);

/// Reads a head's bytes. O(length).
#[wasm_bindgen(js_name = parseHead)]
pub fn parse_head(bytes: &[u8]) -> Result<HeadFields, JsError> {
    Head::parse(bytes)
        .map(HeadFields)
        .ok_or_else(|| JsError::new("the answer is not a snapshot head"))
}

/// A time as the service prints it.
fn time_text(ms: i64) -> String {
    let mut out = Vec::with_capacity(24);
    write_rfc3339(&mut out, ms);
    String::from_utf8(out).unwrap_or_default()
}

#[wasm_bindgen(js_class = HeadFields)]
impl HeadFields {
    /// The period kind.
    #[wasm_bindgen(getter)]
    pub fn period(&self) -> String {
        self.0.period.clone()
    }

    /// The period instance's key.
    #[wasm_bindgen(getter, js_name = periodKey)]
    pub fn period_key(&self) -> String {
        self.0.period_key.clone()
    }

    /// Its start, as printed (`undefined` for all time).
    #[wasm_bindgen(getter, js_name = periodStart)]
    pub fn period_start(&self) -> Option<String> {
        self.0.period_start_ms.map(time_text)
    }

    /// Its end, as printed (`undefined` for all time).
    #[wasm_bindgen(getter, js_name = periodEnd)]
    pub fn period_end(&self) -> Option<String> {
        self.0.period_end_ms.map(time_text)
    }

    /// The version the manifest holds.
    #[wasm_bindgen(getter, js_name = boardVersion)]
    pub fn board_version(&self) -> f64 {
        self.0.board_version as f64
    }

    /// The manifest's hash.
    #[wasm_bindgen(getter)]
    pub fn manifest(&self) -> String {
        self.0.manifest.to_string()
    }

    /// When it was published, as printed.
    #[wasm_bindgen(getter, js_name = publishedAt)]
    pub fn published_at(&self) -> String {
        time_text(self.0.published_at_ms)
    }

    /// How often the origin republishes the instance.
    #[wasm_bindgen(getter, js_name = intervalMs)]
    pub fn interval_ms(&self) -> f64 {
        self.0.interval_ms as f64
    }
}

/// A live view followed with the core's `ViewState` (see [`live`]).
#[wasm_bindgen(js_name = LiveView)]
pub struct LiveView(ViewState);

#[wasm_bindgen(js_class = LiveView)]
impl LiveView {
    /// The view of a snapshot message: its instance, version and entries as columns (ids,
    /// times, display names, countries and metadata JSON texts joined by `\n`, an empty line
    /// for an extra that is not set).
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        period_key: String,
        board_version: f64,
        ranks: &[f64],
        players: &str,
        values: &[i64],
        achieved_at: &str,
        display_names: &str,
        countries: &str,
        metadata: &str,
        global_ranks: &[f64],
    ) -> Result<LiveView, JsError> {
        let entries = entries_js(
            ranks,
            players,
            values,
            achieved_at,
            [display_names, countries, metadata],
            global_ranks,
        )?;
        Ok(LiveView(ViewState {
            period_key,
            board_version: board_version as u64,
            entries,
        }))
    }

    /// Applies a delta message with the core's checks; refused (changing nothing) when it is
    /// of another instance, does not start at the version held, or does not fit the entries.
    /// The changed entries cross as the constructor's do.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        period_key: String,
        base_version: f64,
        board_version: f64,
        ranks: &[f64],
        players: &str,
        values: &[i64],
        achieved_at: &str,
        display_names: &str,
        countries: &str,
        metadata: &str,
        global_ranks: &[f64],
        left: &str,
        left_count: u32,
    ) -> Result<(), JsError> {
        let changed = entries_js(
            ranks,
            players,
            values,
            achieved_at,
            [display_names, countries, metadata],
            global_ranks,
        )?;
        let delta = live::delta_of(
            period_key,
            base_version as u64,
            board_version as u64,
            changed,
            &split_lines(left, left_count == 0),
        )
        .map_err(|e| JsError::new(&e.to_string()))?;
        self.0.apply(&delta).map_err(|e| JsError::new(&e.to_string()))
    }

    /// The version the view is at.
    #[wasm_bindgen(getter, js_name = boardVersion)]
    pub fn board_version(&self) -> f64 {
        self.0.board_version as f64
    }

    /// The ranks of the entries, in order.
    pub fn ranks(&self) -> Vec<f64> {
        live::columns(&self.0).0
    }

    /// The ids of the entries, joined by `\n`.
    pub fn players(&self) -> String {
        live::columns(&self.0).1
    }

    /// The values of the entries.
    pub fn values(&self) -> Vec<i64> {
        live::columns(&self.0).2
    }

    /// The times of the entries as the service prints them, joined by `\n`.
    #[wasm_bindgen(js_name = achievedAt)]
    pub fn achieved_at(&self) -> String {
        live::columns(&self.0).3
    }

    /// The display names of the entries, joined by `\n` (an empty line for none).
    #[wasm_bindgen(js_name = displayNames)]
    pub fn display_names(&self) -> String {
        live::extra_column(&self.0, live::Extra::DisplayName)
    }

    /// The countries of the entries, joined by `\n` (an empty line for none).
    pub fn countries(&self) -> String {
        live::extra_column(&self.0, live::Extra::Country)
    }

    /// The metadata of the entries as JSON texts, joined by `\n` (an empty line for none).
    pub fn metadata(&self) -> String {
        live::extra_column(&self.0, live::Extra::Metadata)
    }

    /// In a view within a segment, each entry's rank on the whole board; empty otherwise.
    #[wasm_bindgen(js_name = globalRanks)]
    pub fn global_ranks(&self) -> Vec<f64> {
        live::global_ranks(&self.0)
    }
}

/// Entries that crossed as columns, each `\n`-joined text split into one line per entry.
fn entries_js(
    ranks: &[f64],
    players: &str,
    values: &[i64],
    achieved_at: &str,
    [display_names, countries, metadata]: [&str; 3],
    global_ranks: &[f64],
) -> Result<Vec<standings_core::ViewEntry>, JsError> {
    let empty = ranks.is_empty();
    let (display_names, countries, metadata) = (
        split_lines(display_names, empty),
        split_lines(countries, empty),
        split_lines(metadata, empty),
    );
    live::entries_of(
        ranks,
        &split_lines(players, empty),
        values,
        &split_lines(achieved_at, empty),
        live::ExtraColumns {
            display_names: &display_names,
            countries: &countries,
            metadata: &metadata,
            global_ranks,
        },
    )
    .map_err(|e| JsError::new(&e.to_string()))
}

/// An error of the order's as JavaScript takes it.
fn js_error(error: OrderError) -> JsError {
    JsError::new(&error.to_string())
}

/// The lines of a `\n`-joined list; none for an empty list (whose joined text is empty too).
fn split_lines(joined: &str, empty: bool) -> Vec<&str> {
    if empty {
        Vec::new()
    } else {
        joined.split('\n').collect()
    }
}

/// An answer as JavaScript takes it: the JSON text, or nothing while chunks are needed.
fn answer_of(answer: Result<Answer, snapshot::SnapshotError>) -> Result<Option<String>, JsError> {
    match answer.map_err(|e| JsError::new(&e.to_string()))? {
        // The core's encoder writes UTF-8 JSON: ids are `&str` and escapes are ASCII.
        Answer::Json(json) => Ok(Some(String::from_utf8(json).unwrap_or_default())),
        Answer::Need(_) => Ok(None),
    }
}
