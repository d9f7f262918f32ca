//! Board definitions as the origin keeps them.

use std::collections::BTreeMap;

use standings_core::{
    Band, BoardId, BoardRules, COUNTRY, EventDimension, MAX_DIMENSION_TEXT, MAX_DIMENSION_VALUES,
    MAX_EVENT_DIMENSIONS, ScoreMode, SegmentSpec,
};

use super::periods::{Calendar, PeriodError};
use super::profiles::check_metadata_cap;

/// A board as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardDef {
    /// The board.
    pub id: BoardId,
    /// Its fixed rules.
    pub(crate) rules: BoardRules,
    /// Its period kinds (`all_time`, `daily`, `weekly`, `monthly`), in canonical order.
    pub(crate) periods: Vec<String>,
    /// How long after a period's end it still takes events.
    pub(crate) grace_seconds: i64,
    /// The IANA time zone its periods follow.
    pub(crate) timezone: String,
    /// The largest metadata its events may carry, 0 (none) to 256 bytes.
    pub(crate) metadata_max_bytes: i64,
    /// The score-range shards each instance is split into, 1 (whole) to
    /// [`standings_core::MAX_SHARDS`].
    pub(crate) shards: i64,
    /// The segments each instance ranks (`docs/segments.md`).
    pub(crate) segments: SegmentSpec,
    /// What its changes put in the game's feed (`docs/feed.md`).
    pub(crate) feed: FeedSpec,
}

/// What a board's changes put in the game's feed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FeedSpec {
    /// The bands whose entries and exits are recorded, as declared.
    pub(crate) bands: Vec<Band>,
    /// Whether a player passed by someone on their friend list is recorded.
    pub(crate) overtakes: bool,
}

impl FeedSpec {
    /// Whether the board records nothing. O(1).
    pub(crate) fn is_empty(&self) -> bool {
        self.bands.is_empty() && !self.overtakes
    }

    /// The spec as the API shows it and the column stores it (`{}` for none). O(bands).
    pub(crate) fn view(&self) -> serde_json::Value {
        let mut view = serde_json::Map::new();
        if !self.bands.is_empty() {
            view.insert("bands".into(), self.bands.iter().map(band_as_sent).collect());
        }
        if self.overtakes {
            view.insert("overtakes".into(), true.into());
        }
        view.into()
    }

    /// The spec from the definition's `"feed"` object (or its stored column): `bands`, each a
    /// top rank (`10`) or a share (`"1%"`, up to two decimals), at most [`MAX_BANDS`], distinct;
    /// `overtakes`, a boolean. O(bands).
    pub(crate) fn checked(sent: &serde_json::Value) -> Result<FeedSpec, String> {
        let Some(fields) = sent.as_object() else {
            return Err(format!(
                "feed is {sent}; expected an object such as {{\"bands\": [10, \"1%\"], \"overtakes\": true}}"
            ));
        };
        let mut spec = FeedSpec::default();
        for (name, value) in fields {
            match (name.as_str(), value) {
                ("overtakes", serde_json::Value::Bool(on)) => spec.overtakes = *on,
                ("bands", serde_json::Value::Array(bands)) => {
                    if bands.len() > MAX_BANDS {
                        return Err(format!(
                            "feed.bands has {} bands; at most {MAX_BANDS}",
                            bands.len()
                        ));
                    }
                    for band in bands {
                        let parsed = parse_band(band)?;
                        if spec.bands.contains(&parsed) {
                            return Err(format!("feed.bands lists {band} twice"));
                        }
                        spec.bands.push(parsed);
                    }
                }
                ("overtakes", other) => {
                    return Err(format!("feed.overtakes is {other}; expected true or false"));
                }
                ("bands", other) => {
                    return Err(format!(
                        "feed.bands is {other}; expected a list such as [10, \"1%\"]"
                    ));
                }
                (other, _) => {
                    return Err(format!(
                        "feed.{other} is not a field of feed; it takes bands and overtakes"
                    ));
                }
            }
        }
        Ok(spec)
    }
}

/// The most bands a board declares.
pub(crate) const MAX_BANDS: usize = 8;

/// A band's name in the feed's records: `top:10`, `top:1%`. O(1).
pub(crate) fn band_name(band: &Band) -> String {
    match band_as_sent(band) {
        serde_json::Value::String(share) => format!("top:{share}"),
        rank => format!("top:{rank}"),
    }
}

/// A band as a definition declares it: `10`, `"1%"`, `"0.5%"`. O(1).
fn band_as_sent(band: &Band) -> serde_json::Value {
    match *band {
        Band::Top(k) => k.into(),
        Band::Percent(bp) if bp % 100 == 0 => format!("{}%", bp / 100).into(),
        Band::Percent(bp) => format!(
            "{}%",
            format!("{}.{:02}", bp / 100, bp % 100).trim_end_matches('0')
        )
        .into(),
    }
}

/// One declared band: a rank from 1 to 1,000,000, or a share `"P%"` above 0 and at most 100,
/// with at most two decimals. O(1).
fn parse_band(band: &serde_json::Value) -> Result<Band, String> {
    let refused = || {
        format!(
            "feed.bands: {band} is not a band; expected a top rank from 1 to 1000000 or a share such as \"1%\" or \"0.5%\""
        )
    };
    if let Some(k) = band.as_u64() {
        return (1..=1_000_000)
            .contains(&k)
            .then_some(Band::Top(k))
            .ok_or_else(refused);
    }
    let text = band
        .as_str()
        .and_then(|t| t.strip_suffix('%'))
        .ok_or_else(refused)?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || fraction.len() > 2
        || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(refused());
    }
    let whole: u32 = whole.parse().map_err(|_| refused())?;
    let fraction: u32 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<2}").parse().map_err(|_| refused())?
    };
    let basis_points = whole
        .checked_mul(100)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(refused)?;
    (1..=10_000)
        .contains(&basis_points)
        .then_some(Band::Percent(basis_points))
        .ok_or_else(refused)
}

/// A board definition's fields as sent (`PUT /v1/boards/...`, an import's board line), before
/// they are checked.
pub(crate) struct Proposed<'a> {
    /// `highest`, `cumulative`, `fastest` or `latest`.
    pub score_mode: &'a str,
    /// The smallest value an event may carry.
    pub value_min: i64,
    /// The largest.
    pub value_max: i64,
    /// Period kinds, in any order.
    pub periods: &'a [String],
    /// The IANA time zone.
    pub timezone: &'a str,
    /// The grace after a period's end.
    pub grace_seconds: i64,
    /// The metadata cap.
    pub metadata_max_bytes: i64,
    /// Score-range shards.
    pub shards: i64,
    /// Segment dimensions: each name and where its value comes from, as sent.
    pub segments: &'a BTreeMap<String, serde_json::Value>,
    /// What its changes put in the feed, as sent (`null` or absent: nothing).
    pub feed: Option<&'a serde_json::Value>,
}

impl BoardDef {
    /// The definition of `id` from the fields sent, checked (the period names put in canonical
    /// order); every way a board is defined goes through here. The error is in the API's words.
    pub(crate) fn checked(id: BoardId, sent: Proposed<'_>) -> Result<BoardDef, String> {
        let score_mode = ScoreMode::parse(sent.score_mode).ok_or_else(|| {
            format!(
                "score_mode {:?} is not one of highest, cumulative, fastest, latest",
                sent.score_mode
            )
        })?;
        let rules = BoardRules::with_range(score_mode, sent.value_min, sent.value_max).ok_or_else(|| {
            format!(
                "value_min {} is greater than value_max {}",
                sent.value_min, sent.value_max
            )
        })?;
        let calendar =
            Calendar::new(sent.periods, sent.timezone, sent.grace_seconds).map_err(|e| e.to_string())?;
        check_metadata_cap(sent.metadata_max_bytes)?;
        if !(1..=standings_core::MAX_SHARDS as i64).contains(&sent.shards) {
            return Err(format!(
                "shards {} must be from 1 (a whole board) to {}",
                sent.shards,
                standings_core::MAX_SHARDS
            ));
        }
        Ok(BoardDef {
            id,
            rules,
            periods: calendar.kinds().iter().map(|k| k.as_str().to_string()).collect(),
            grace_seconds: sent.grace_seconds,
            timezone: sent.timezone.to_string(),
            metadata_max_bytes: sent.metadata_max_bytes,
            shards: sent.shards,
            segments: segment_spec(sent.segments)?,
            feed: sent.feed.map(FeedSpec::checked).transpose()?.unwrap_or_default(),
        })
    }

    /// The shards each instance is split into, as the core counts them.
    pub(crate) fn shard_count(&self) -> usize {
        usize::try_from(self.shards)
            .unwrap_or(1)
            .clamp(1, standings_core::MAX_SHARDS)
    }

    /// The segment dimensions as the API shows them: `{"country": "profile", "platform":
    /// ["ios", "android"]}`. O(dimensions and values).
    pub(crate) fn segments_view(&self) -> BTreeMap<String, serde_json::Value> {
        let mut view = BTreeMap::new();
        if self.segments.country {
            view.insert(COUNTRY.to_string(), serde_json::Value::from(PROFILE));
        }
        for dimension in &self.segments.events {
            let values: Vec<&str> = dimension.values.iter().map(|v| &**v).collect();
            view.insert(dimension.name.to_string(), serde_json::Value::from(values));
        }
        view
    }

    /// The segment dimensions as stored, comma-separated: `country`, and each event dimension
    /// with its values (`platform=ios|android|pc`). O(dimensions and values).
    pub(crate) fn segments_column(&self) -> String {
        let mut parts = Vec::new();
        if self.segments.country {
            parts.push(COUNTRY.to_string());
        }
        for dimension in &self.segments.events {
            let values: Vec<&str> = dimension.values.iter().map(|v| &**v).collect();
            parts.push(format!("{}={}", dimension.name, values.join("|")));
        }
        parts.join(",")
    }

    /// The segment dimensions from their stored column. O(length).
    pub(crate) fn segments_from_column(column: &str) -> Result<SegmentSpec, String> {
        let mut spec = SegmentSpec::default();
        for part in column.split(',').filter(|n| !n.is_empty()) {
            match part.split_once('=') {
                None if part == COUNTRY => spec.country = true,
                Some((name, values)) if check_dimension_name(name).is_ok() => {
                    let values: Vec<Box<str>> = values.split('|').map(Box::from).collect();
                    if values.iter().any(|v| check_dimension_value(name, v).is_err()) {
                        return Err(format!("a stored value of segment dimension {name:?} is invalid"));
                    }
                    spec.events.push(EventDimension {
                        name: name.into(),
                        values,
                    });
                }
                _ => return Err(format!("unknown stored segment dimension {part:?}")),
            }
        }
        Ok(spec)
    }

    /// The calendar of its periods. Errors only for a definition that was never checked (a
    /// corrupt row). O(periods).
    pub(crate) fn calendar(&self) -> Result<Calendar, PeriodError> {
        Calendar::new(&self.periods, &self.timezone, self.grace_seconds)
    }
}

/// Where the `country` dimension's value comes from: the player's profile.
const PROFILE: &str = "profile";

/// An event dimension's name: a lowercase letter, then up to 31 lowercase letters, digits or
/// `_`. O(length).
fn check_dimension_name(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let well_formed = name.len() <= MAX_DIMENSION_TEXT
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "segments.{name:?}: a dimension's name is a lowercase letter, then up to 31 lowercase \
             letters, digits or _"
        ))
    }
}

/// A value of event dimension `name`: 1 to 32 of `A-Z a-z 0-9 _ - .`. O(length).
fn check_dimension_value(name: &str, value: &str) -> Result<(), String> {
    let well_formed = !value.is_empty()
        && value.len() <= MAX_DIMENSION_TEXT
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "segments.{name}: {value:?} is not a valid value; a value is 1 to 32 of A-Z a-z 0-9 _ - ."
        ))
    }
}

/// The segment dimensions a definition declares, checked: `country` from `"profile"`, and up
/// to [`MAX_EVENT_DIMENSIONS`] event dimensions, each a list of 1 to [`MAX_DIMENSION_VALUES`]
/// distinct values. O(dimensions and values).
fn segment_spec(sent: &BTreeMap<String, serde_json::Value>) -> Result<SegmentSpec, String> {
    let mut spec = SegmentSpec::default();
    for (name, source) in sent {
        match (name.as_str(), source) {
            (COUNTRY, serde_json::Value::String(s)) if s == PROFILE => spec.country = true,
            (COUNTRY, other) => {
                return Err(format!(
                    "segments.country is {other}; the country dimension comes from the player's profile: \"profile\""
                ));
            }
            (name, serde_json::Value::Array(values)) => {
                check_dimension_name(name)?;
                if values.is_empty() || values.len() > MAX_DIMENSION_VALUES {
                    return Err(format!(
                        "segments.{name} lists {} values; an event dimension declares 1 to {MAX_DIMENSION_VALUES}",
                        values.len()
                    ));
                }
                let mut declared: Vec<Box<str>> = Vec::with_capacity(values.len());
                for value in values {
                    let Some(value) = value.as_str() else {
                        return Err(format!("segments.{name}: {value} is not a string"));
                    };
                    check_dimension_value(name, value)?;
                    if declared.iter().any(|v| &**v == value) {
                        return Err(format!("segments.{name} lists {value:?} twice"));
                    }
                    declared.push(value.into());
                }
                spec.events.push(EventDimension {
                    name: name.into(),
                    values: declared,
                });
            }
            (name, other) => {
                return Err(format!(
                    "segments.{name} is {other}; a dimension is \"country\": \"profile\" (from the player's \
                     profile) or an event dimension listing its values, as \"platform\": [\"ios\", \"android\", \"pc\"]"
                ));
            }
        }
    }
    if spec.events.len() > MAX_EVENT_DIMENSIONS {
        return Err(format!(
            "segments declares {} event dimensions; a board declares at most {MAX_EVENT_DIMENSIONS}",
            spec.events.len()
        ));
    }
    Ok(spec)
}

/// An event's `"segments"` (`{"platform": "ios"}`) checked against the definitions of the
/// boards it feeds, as the core holds it: `platform:ios` pairs sorted by dimension, joined by
/// `,` (`None` for none). Each dimension must be declared by one of the boards at least, and
/// its value be one that every board declaring it declares. O(dimensions x boards).
pub(crate) fn event_segments<'a>(
    sent: &BTreeMap<String, String>,
    boards: impl Iterator<Item = (&'a BoardId, &'a SegmentSpec)> + Clone,
) -> Result<Option<Box<str>>, String> {
    if sent.is_empty() {
        return Ok(None);
    }
    if sent.len() > MAX_EVENT_DIMENSIONS {
        return Err(format!(
            "segments carries {} dimensions; an event carries at most {MAX_EVENT_DIMENSIONS}",
            sent.len()
        ));
    }
    let mut pairs = Vec::with_capacity(sent.len());
    for (name, value) in sent {
        if name == COUNTRY {
            return Err(
                "segments.country: a player's country comes from their profile, not from an event \
                 (PUT /v1/games/{game}/players/{player_id}/profile)"
                    .into(),
            );
        }
        let mut declared_by = 0;
        for (board, spec) in boards.clone() {
            let Some(dimension) = spec.event_dimension(name) else {
                continue;
            };
            declared_by += 1;
            if !dimension.values.iter().any(|v| **v == **value) {
                let values: Vec<&str> = dimension.values.iter().map(|v| &**v).collect();
                return Err(format!(
                    "segments.{name} is {value:?}; board {board} declares {}",
                    values.join(", ")
                ));
            }
        }
        if declared_by == 0 {
            return Err(format!(
                "segments.{name}: none of the event's boards declares dimension {name:?}"
            ));
        }
        pairs.push(format!("{name}:{value}"));
    }
    Ok(Some(pairs.join(",").into()))
}
