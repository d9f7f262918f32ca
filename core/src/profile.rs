//! What an entry shows besides its standing: the player's profile (display name, country, and
//! whether they appear anonymously) and the metadata of the event behind their aggregate.
//!
//! The core holds these as the origin validated them; it only decides which event's metadata an
//! entry shows ([`counts_for_metadata`]) and keeps it deterministic: the same events in any
//! order leave the same metadata, as they leave the same standing.
//!
//! Versions never depend on what a name or a metadata object says, only on whether the
//! profile was set or which event is behind the entry. That keeps a rebuild's `board_version`
//! equal to the live one after an erasure rewrote the text (see `docs/players.md`).

use alloc::boxed::Box;
use alloc::sync::Arc;

use crate::event::ScoreEvent;
use crate::rules::{BoardRules, ScoreMode, Standing};

/// The longest display name the core holds, in bytes (the origin allows 32 graphemes in at most
/// this many).
pub const MAX_DISPLAY_NAME_BYTES: usize = 128;

/// The largest entry metadata, in bytes of JSON text as sent.
pub const MAX_METADATA_BYTES: usize = 256;

/// The longest event dimension values an event carries, in bytes of `platform:ios` text (four
/// dimensions of 32-byte names and values fit).
pub const MAX_EVENT_SEGMENTS_BYTES: usize = 512;

/// A player's profile as boards show it. Shared by every board of the game through an [`Arc`],
/// so a name costs its bytes once per game, not once per board.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Profile {
    /// The display name, NFC, validated by the origin.
    pub display_name: Option<Box<str>>,
    /// An ISO 3166-1 alpha-2 code.
    pub country: Option<Box<str>>,
    /// Shown with no name, country or metadata to anyone but the game's own trusted callers.
    pub anonymous: bool,
}

impl Profile {
    /// Whether the profile says nothing (no name, no country, not anonymous). O(1).
    pub fn is_empty(&self) -> bool {
        self.display_name.is_none() && self.country.is_none() && !self.anonymous
    }
}

/// The metadata of the event behind an aggregate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Metadata {
    /// The event it came with; ties between events are broken on it.
    pub event_id: Box<str>,
    /// The JSON object as sent, or empty once erased (or when the event sent none).
    pub json: Box<str>,
    /// The event's dimension values (`platform:ios`), which place the entry in segments.
    pub segments: Option<Box<str>>,
}

impl Metadata {
    /// The value this event gave `dimension`, if any. O(length).
    pub fn segment_value(&self, dimension: &str) -> Option<&str> {
        segment_value(self.segments.as_deref()?, dimension)
    }
}

/// The value of `dimension` in an event's `platform:ios,region:eu` pairs. O(length).
pub fn segment_value<'a>(segments: &'a str, dimension: &str) -> Option<&'a str> {
    segments.split(',').find_map(|pair| {
        let (name, value) = pair.split_once(':')?;
        (name == dimension).then_some(value)
    })
}

/// What one ranked member shows besides its standing. Empty for most players, and then not held
/// at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extras {
    /// The player's profile, shared with the game's other boards.
    pub profile: Option<Arc<Profile>>,
    /// The metadata of the event behind the aggregate.
    pub metadata: Option<Arc<Metadata>>,
}

impl Extras {
    /// Whether there is nothing to hold. O(1).
    pub fn is_empty(&self) -> bool {
        self.profile.is_none() && self.metadata.is_none()
    }

    /// The entry's fields, borrowed, as a trusted caller sees them. O(1).
    pub fn info(&self) -> EntryInfo<'_> {
        let profile = self.profile.as_deref();
        EntryInfo {
            display_name: profile.and_then(|p| p.display_name.as_deref()),
            country: profile.and_then(|p| p.country.as_deref()),
            metadata: self
                .metadata
                .as_deref()
                .map(|m| &*m.json)
                .filter(|json| !json.is_empty()),
            segments: self.metadata.as_deref().and_then(|m| m.segments.as_deref()),
            anonymous: profile.is_some_and(|p| p.anonymous),
        }
    }

    /// What an erasure leaves: no profile, and the metadata's text emptied while the event
    /// behind it stays the same event, so later choices between events and the versions they
    /// count do not change. O(1).
    pub(crate) fn erased(&self) -> Extras {
        Extras {
            profile: None,
            metadata: self.metadata.as_ref().map(|m| {
                Arc::new(Metadata {
                    event_id: m.event_id.clone(),
                    json: "".into(),
                    segments: m.segments.clone(),
                })
            }),
        }
    }

    /// The id of the event behind the metadata, which is what versions compare. O(1).
    pub(crate) fn metadata_event(&self) -> Option<&str> {
        self.metadata.as_deref().map(|m| &*m.event_id)
    }
}

/// Who reads an entry: the game's own trusted callers see an anonymous player's name; everyone
/// else, every snapshot part and every live message sees the public form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// The game's service, moderator and admin tokens.
    Trusted,
    /// Players, anonymous readers, snapshots, live subscribers.
    Public,
}

/// An entry's fields besides its standing, borrowed. All `None` (and `anonymous` false) for a
/// player with no profile and no metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EntryInfo<'a> {
    /// The display name.
    pub display_name: Option<&'a str>,
    /// The ISO 3166-1 alpha-2 country.
    pub country: Option<&'a str>,
    /// The metadata JSON object, as sent.
    pub metadata: Option<&'a str>,
    /// The event dimension values of the event behind the standing (`platform:ios`), on a
    /// board that declares event dimensions. Never printed; it places the entry in segments,
    /// so every audience has it (it reveals nothing an anonymous player hides).
    pub segments: Option<&'a str>,
    /// Whether the player shows anonymously; only a trusted audience is told.
    pub anonymous: bool,
}

impl<'a> EntryInfo<'a> {
    /// No fields at all.
    pub const NONE: EntryInfo<'static> = EntryInfo {
        display_name: None,
        country: None,
        metadata: None,
        segments: None,
        anonymous: false,
    };

    /// What `audience` is shown: an anonymous player's fields are hidden from the public, and
    /// the public is not told that the player is anonymous. O(1).
    pub fn for_audience(self, audience: Audience) -> EntryInfo<'a> {
        match audience {
            Audience::Trusted => self,
            Audience::Public if self.anonymous => EntryInfo {
                segments: self.segments,
                ..EntryInfo::NONE
            },
            Audience::Public => self,
        }
    }

    /// Whether there is nothing to show. O(1).
    pub fn is_empty(&self) -> bool {
        *self == EntryInfo::NONE
    }
}

/// Whether `event` becomes the event behind the aggregate, whose metadata the entry shows. The
/// preference is a total order over a player's events, so the choice is the same in any order:
/// - `highest` and `fastest`: the best value, then the earliest time; among events tied on both,
///   one with metadata or dimension values over one with neither, then the lowest event id.
/// - `latest`: the latest time, then the greatest event id (the aggregate's own rule, so
///   `replaces` says it).
/// - `cumulative`: the most recent event counted, by time; among events at the same time, one
///   with metadata or dimension values over one with neither, then the greatest event id.
///
/// `current` is the aggregate before, `replaces` whether the fold took the event's standing,
/// `held` the metadata behind the aggregate now. O(length of the ids).
fn counts_for_metadata(
    rules: &BoardRules,
    current: Option<Standing>,
    replaces: bool,
    held: Option<&Metadata>,
    event: &ScoreEvent,
) -> bool {
    let Some(current) = current else {
        return true;
    };
    let preferred_in_tie = |lower_wins: bool| {
        event.has_extras()
            && held.is_none_or(|m| {
                let ours = event.event_id.as_str().as_bytes();
                if lower_wins {
                    ours < m.event_id.as_bytes()
                } else {
                    ours > m.event_id.as_bytes()
                }
            })
    };
    match rules.score_mode {
        ScoreMode::Highest | ScoreMode::Fastest => {
            replaces
                || (event.value == current.value
                    && event.achieved_at == current.achieved_at
                    && preferred_in_tie(true))
        }
        ScoreMode::Latest => replaces,
        ScoreMode::Cumulative => {
            event.achieved_at > current.achieved_at
                || (event.achieved_at == current.achieved_at && preferred_in_tie(false))
        }
    }
}

/// What one event does to one member: the fold and the metadata decision together, shared by
/// [`crate::Board::apply_as`] and [`crate::Replay::push_as`] so that a replay counts exactly the
/// changes the live board makes.
pub(crate) struct Step {
    /// The aggregate after (the one before when the fold kept it).
    pub(crate) after: Option<Standing>,
    /// What the member holds besides its standing after.
    pub(crate) extras: Extras,
    /// Whether the fold took the event's standing (a `latest` board then keeps its id).
    pub(crate) replaced: bool,
    /// Whether anything a query sees changed: the standing, or the event behind the metadata.
    pub(crate) changed: bool,
}

/// Folds `event` into a member at `current` (`current_id` the event behind a `latest`
/// aggregate) holding `held`; `profile` is the player's profile in the game, taken when the
/// event ranks them. `None` when the event changes nothing at all. O(length of the ids).
pub(crate) fn step(
    rules: &BoardRules,
    current: Option<Standing>,
    current_id: Option<&str>,
    held: Option<&Extras>,
    event: &ScoreEvent,
    profile: Option<&Arc<Profile>>,
) -> Result<Option<Step>, crate::error::ApplyError> {
    let folded = rules.fold(current, current_id, event)?;
    let counts = counts_for_metadata(
        rules,
        current,
        folded.is_some(),
        held.and_then(|e| e.metadata.as_deref()),
        event,
    );
    if folded.is_none() && !counts {
        return Ok(None);
    }
    let mut extras = held.cloned().unwrap_or_default();
    if current.is_none() {
        // A profile that says nothing is held as none, as `set_profile` holds it (a checkpoint
        // has no way to write one).
        extras.profile = profile.filter(|p| !p.is_empty()).cloned();
    }
    if counts {
        extras.metadata = metadata_of(event);
    }
    let after = folded.or(current);
    // A `latest` event with the same time and value but a greater id takes over the aggregate
    // without changing anything a query can see, unless it brings other metadata.
    let changed = current != after || held.and_then(Extras::metadata_event) != extras.metadata_event();
    Ok(Some(Step {
        after,
        extras,
        replaced: folded.is_some(),
        changed,
    }))
}

/// The metadata an event leaves behind the aggregate when it counts. O(length).
pub(crate) fn metadata_of(event: &ScoreEvent) -> Option<Arc<Metadata>> {
    event.has_extras().then(|| {
        Arc::new(Metadata {
            event_id: event.event_id.as_str().into(),
            json: event.metadata.as_deref().unwrap_or_default().into(),
            segments: event.segments.clone(),
        })
    })
}

/// A recomputed aggregate with the id of the event behind it, and that event's metadata.
pub(crate) type Recomputed<'e> = (Option<(Standing, &'e str)>, Option<Arc<Metadata>>);

/// A player's aggregate over a set of events ([`BoardRules::recompute`]) and the metadata of
/// the event behind it, chosen by the same preference as [`counts_for_metadata`]. O(k).
pub(crate) fn recompute_with_metadata<'e>(
    rules: &BoardRules,
    events: impl IntoIterator<Item = &'e ScoreEvent>,
) -> Result<Recomputed<'e>, crate::error::ApplyError> {
    let events: alloc::vec::Vec<&'e ScoreEvent> = events.into_iter().collect();
    let aggregate = rules.recompute(events.iter().copied())?;
    let mut best: Option<&ScoreEvent> = None;
    for &event in &events {
        if best.is_none_or(|b| preferred(rules.score_mode, event, b)) {
            best = Some(event);
        }
    }
    Ok((aggregate, aggregate.and(best).and_then(metadata_of)))
}

/// Whether `a` is preferred over `b` as the event behind an aggregate (see
/// [`counts_for_metadata`]). O(length of the ids).
fn preferred(mode: ScoreMode, a: &ScoreEvent, b: &ScoreEvent) -> bool {
    let a_id = a.event_id.as_str().as_bytes();
    let b_id = b.event_id.as_str().as_bytes();
    let by_metadata = |lower_wins: bool| {
        a.has_extras() && (!b.has_extras() || if lower_wins { a_id < b_id } else { a_id > b_id })
    };
    let same = a.value == b.value && a.achieved_at == b.achieved_at;
    match mode {
        ScoreMode::Highest => {
            a.value > b.value
                || (a.value == b.value && a.achieved_at < b.achieved_at)
                || (same && by_metadata(true))
        }
        ScoreMode::Fastest => {
            a.value < b.value
                || (a.value == b.value && a.achieved_at < b.achieved_at)
                || (same && by_metadata(true))
        }
        ScoreMode::Latest => a.achieved_at > b.achieved_at || (a.achieved_at == b.achieved_at && a_id > b_id),
        ScoreMode::Cumulative => {
            a.achieved_at > b.achieved_at || (a.achieved_at == b.achieved_at && by_metadata(false))
        }
    }
}
