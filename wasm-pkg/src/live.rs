//! A live view in the browser, followed with the core's [`ViewState`]: a delta is applied with
//! [`ViewState::apply`], its checks included (of another period instance, not starting at the
//! version held, or not fitting the entries held, it is refused and changes nothing), so the
//! browser's view follows exactly the rule the origin's own tests hold it to.
//!
//! Entries cross as columns (ranks, ids and times joined by `\n`, which no id holds, values
//! as `i64`s), as friend lists do, and times as RFC 3339 text read and printed by the core, so
//! an entry reads back with the server's very bytes. What an entry shows besides its standing
//! crosses as three more `\n`-joined columns, an empty line for a field that is not set: the
//! display names and countries (neither holds a line break: the service refuses control
//! characters in a name), and the metadata objects as JSON texts, which the TypeScript writes
//! on one line. They are the server's, in public form (live views are public), and are held and
//! handed back as they came.

use standings_core::json::{parse_rfc3339, write_rfc3339};
use standings_core::{PlayerId, ViewDelta, ViewEntry, ViewState};

/// An entry's extras as columns: display names, countries and metadata JSON texts, one line
/// each per entry (empty when not set).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtraColumns<'a> {
    /// The display names.
    pub display_names: &'a [&'a str],
    /// The countries.
    pub countries: &'a [&'a str],
    /// The metadata objects, as JSON text.
    pub metadata: &'a [&'a str],
    /// In a view within a segment, each entry's rank on the whole board (`rank` is within the
    /// segment).
    pub global_ranks: &'a [f64],
}

/// Entries given as columns that do not make entries: the columns differ in length, or an id
/// or a time is not one the service prints.
#[derive(Debug, PartialEq, Eq)]
pub struct BadEntries(pub String);

impl core::fmt::Display for BadEntries {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The columns of a view's entries, one row per entry; `extras` may be empty columns (no entry
/// shows anything) or hold one line per entry. O(entries).
pub fn entries_of(
    ranks: &[f64],
    players: &[&str],
    values: &[i64],
    achieved_at: &[&str],
    extras: ExtraColumns<'_>,
) -> Result<Vec<ViewEntry>, BadEntries> {
    if players.len() != ranks.len() || values.len() != ranks.len() || achieved_at.len() != ranks.len() {
        return Err(BadEntries(format!(
            "{} ranks, {} players, {} values and {} times: one of each per entry",
            ranks.len(),
            players.len(),
            values.len(),
            achieved_at.len()
        )));
    }
    let extra_column = |name: &str, column: &[&str]| {
        if column.is_empty() || column.len() == ranks.len() {
            Ok(())
        } else {
            Err(BadEntries(format!(
                "{} ranks and {} {name}: one per entry, or none at all",
                ranks.len(),
                column.len()
            )))
        }
    };
    extra_column("display names", extras.display_names)?;
    extra_column("countries", extras.countries)?;
    extra_column("metadata objects", extras.metadata)?;
    if !(extras.global_ranks.is_empty() || extras.global_ranks.len() == ranks.len()) {
        return Err(BadEntries(format!(
            "{} ranks and {} global ranks: one per entry, or none at all",
            ranks.len(),
            extras.global_ranks.len()
        )));
    }
    let is_rank = |rank: f64| rank >= 1.0 && rank.fract() == 0.0 && rank <= 9_007_199_254_740_991.0;
    // An empty line is a field that is not set.
    let field = |column: &[&str], i: usize| {
        column
            .get(i)
            .filter(|text| !text.is_empty())
            .map(|text| String::from(*text))
    };
    (0..ranks.len())
        .map(|i| {
            let rank = ranks[i];
            // Printed without the float's text: formatting floats would cost the module more
            // than all of this.
            if !is_rank(rank) {
                return Err(BadEntries(format!("entries[{i}].rank is not a rank")));
            }
            let global_rank = match extras.global_ranks.get(i) {
                Some(&global) if is_rank(global) => Some(global as u64),
                Some(_) => return Err(BadEntries(format!("entries[{i}].global_rank is not a rank"))),
                None => None,
            };
            Ok(ViewEntry {
                rank: rank as u64,
                player_id: PlayerId::new(players[i])
                    .map_err(|e| BadEntries(format!("entries[{i}].player_id: {e}")))?,
                value: values[i],
                achieved_at: parse_rfc3339(achieved_at[i])
                    .ok_or_else(|| BadEntries(format!("entries[{i}].achieved_at is not an RFC 3339 time")))?,
                display_name: field(extras.display_names, i),
                country: field(extras.countries, i),
                metadata: field(extras.metadata, i),
                global_rank,
            })
        })
        .collect()
}

/// The view's entries as columns: ranks, ids and times joined by `\n`, values. O(entries).
pub fn columns(state: &ViewState) -> (Vec<f64>, String, Vec<i64>, String) {
    let mut times = String::new();
    for (i, entry) in state.entries.iter().enumerate() {
        if i > 0 {
            times.push('\n');
        }
        let mut text = Vec::with_capacity(24);
        write_rfc3339(&mut text, entry.achieved_at);
        times.push_str(core::str::from_utf8(&text).unwrap_or_default());
    }
    (
        state.entries.iter().map(|e| e.rank as f64).collect(),
        joined(state, |e| Some(e.player_id.as_str())),
        state.entries.iter().map(|e| e.value).collect(),
        times,
    )
}

/// Which of an entry's extras a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// The display name.
    DisplayName,
    /// The country.
    Country,
    /// The metadata object's JSON text.
    Metadata,
}

/// One of the entries' extras as a column joined by `\n`, an empty line for an entry without
/// it. O(entries).
pub fn extra_column(state: &ViewState, extra: Extra) -> String {
    joined(state, |e| match extra {
        Extra::DisplayName => e.display_name.as_deref(),
        Extra::Country => e.country.as_deref(),
        Extra::Metadata => e.metadata.as_deref(),
    })
}

/// Each entry's rank on the whole board, in a view within a segment; none otherwise.
/// O(entries).
pub fn global_ranks(state: &ViewState) -> Vec<f64> {
    if state.entries.iter().all(|e| e.global_rank.is_none()) {
        return Vec::new();
    }
    state
        .entries
        .iter()
        .map(|e| e.global_rank.unwrap_or_default() as f64)
        .collect()
}

/// A text of each entry joined by `\n` (an empty line for none). O(entries).
fn joined<'a>(state: &'a ViewState, text: impl Fn(&'a ViewEntry) -> Option<&'a str>) -> String {
    let mut out = String::new();
    for (i, entry) in state.entries.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(text(entry).unwrap_or_default());
    }
    out
}

/// A delta of the instance `period_key`, its changed entries as columns and the players who
/// left. O(entries).
pub fn delta_of(
    period_key: String,
    base_version: u64,
    board_version: u64,
    changed: Vec<ViewEntry>,
    left: &[&str],
) -> Result<ViewDelta, BadEntries> {
    let left = left
        .iter()
        .enumerate()
        .map(|(i, p)| PlayerId::new(p).map_err(|e| BadEntries(format!("left[{i}]: {e}"))))
        .collect::<Result<_, _>>()?;
    Ok(ViewDelta {
        period_key,
        base_version,
        board_version,
        changed,
        left,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use standings_core::{Board, BoardRules, Profile, ScoreEvent, ScoreMode, View, ViewDeltaError};

    use super::*;

    /// `text` split into its lines, owned; none for an empty column of no entries.
    fn lines(text: &str, entries: usize) -> Vec<String> {
        if entries == 0 {
            return Vec::new();
        }
        text.split('\n').map(str::to_owned).collect()
    }

    fn refs(column: &[String]) -> Vec<&str> {
        column.iter().map(String::as_str).collect()
    }

    /// A state's entries through the columns and back, as `LiveView` takes them.
    fn crossed(state: &ViewState) -> Vec<ViewEntry> {
        let n = state.entries.len();
        let (ranks, players, values, times) = columns(state);
        let (players, times) = (lines(&players, n), lines(&times, n));
        let names = lines(&extra_column(state, Extra::DisplayName), n);
        let countries = lines(&extra_column(state, Extra::Country), n);
        let metadata = lines(&extra_column(state, Extra::Metadata), n);
        let (players, times) = (refs(&players), refs(&times));
        let (names, countries, metadata) = (refs(&names), refs(&countries), refs(&metadata));
        let global = global_ranks(state);
        let extras = ExtraColumns {
            display_names: &names,
            countries: &countries,
            metadata: &metadata,
            global_ranks: &global,
        };
        entries_of(&ranks, &players, &values, &times, extras).unwrap()
    }

    fn profile(name: &str, country: Option<&str>, anonymous: bool) -> Option<Arc<Profile>> {
        Some(Arc::new(Profile {
            display_name: Some(name.into()),
            country: country.map(Into::into),
            anonymous,
        }))
    }

    /// A view read from a board crosses as columns and back to the same state, names, countries
    /// and metadata included (an anonymous player's in public form: none), and a delta built
    /// from columns applies with the core's checks; a rename is one delta that carries the new
    /// name.
    #[test]
    fn a_view_crosses_as_columns_and_follows_deltas() {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for (i, value) in [30, 20, 10].into_iter().enumerate() {
            let event = ScoreEvent::new(&format!("e{i}"), &format!("p{i}"), value, 1_000 * i as i64)
                .unwrap()
                .with_metadata((i == 1).then(|| r#"{"car": "R8", "laps":[1,2]}"#.into()));
            board.apply(&event).unwrap();
        }
        board.set_profile(
            &PlayerId::new("p0").unwrap(),
            profile("Zoë 🚀", Some("DE"), false),
        );
        board.set_profile(&PlayerId::new("p2").unwrap(), profile("Hidden", Some("FR"), true));
        let view: View = "top:3".parse().unwrap();
        let base = ViewState::read(&board, &view, "all_time");
        assert_eq!(base.entries[0].display_name.as_deref(), Some("Zoë 🚀"));
        assert_eq!(
            base.entries[1].metadata.as_deref(),
            Some(r#"{"car": "R8", "laps":[1,2]}"#)
        );
        assert_eq!(
            base.entries[2].display_name, None,
            "an anonymous player's name is not public"
        );
        let mut held = ViewState {
            period_key: "all_time".into(),
            board_version: base.board_version,
            entries: crossed(&base),
        };
        assert_eq!(held, base);
        board
            .apply(&ScoreEvent::new("e9", "p9", 25, 9_000).unwrap())
            .unwrap();
        board.set_profile(&PlayerId::new("p0").unwrap(), profile("Zoë 2", None, false));
        let next = ViewState::read(&board, &view, "all_time");
        let delta = ViewDelta::between(&base, &next).unwrap();
        let left: Vec<&str> = delta.left.iter().map(PlayerId::as_str).collect();
        let changed = ViewState {
            period_key: delta.period_key.clone(),
            board_version: delta.board_version,
            entries: delta.changed.clone(),
        };
        let crossed = delta_of(
            delta.period_key.clone(),
            delta.base_version,
            delta.board_version,
            crossed(&changed),
            &left,
        )
        .unwrap();
        held.apply(&crossed).unwrap();
        assert_eq!(held, next);
        assert_eq!(held.entries[0].display_name.as_deref(), Some("Zoë 2"));
        assert_eq!(held.entries[0].country, None);
        let other_day = delta_of(
            "2026-10-13".into(),
            next.board_version,
            next.board_version + 1,
            vec![],
            &[],
        )
        .unwrap();
        assert_eq!(held.apply(&other_day), Err(ViewDeltaError::OtherInstance));
        let none = ExtraColumns::default();
        let time = "2026-01-01T00:00:00Z";
        assert!(entries_of(&[0.0], &["p"], &[1], &[time], none).is_err());
        assert!(entries_of(&[1.0], &[""], &[1], &[time], none).is_err());
        assert!(entries_of(&[1.0], &["p"], &[1], &["yesterday"], none).is_err());
        assert!(entries_of(&[1.0, 2.0], &["p"], &[1], &[time], none).is_err());
        let two_names = ExtraColumns {
            display_names: &["a", "b"],
            ..none
        };
        assert!(entries_of(&[1.0], &["p"], &[1], &[time], two_names).is_err());
        let global = |ranks| ExtraColumns {
            global_ranks: ranks,
            ..none
        };
        assert!(entries_of(&[1.0], &["p"], &[1], &[time], global(&[0.0])).is_err());
        assert!(entries_of(&[1.0], &["p"], &[1], &[time], global(&[3.0, 4.0])).is_err());
        let within = entries_of(&[1.0], &["p"], &[1], &[time], global(&[3.0])).unwrap();
        assert_eq!(within[0].global_rank, Some(3));
    }
}
