//! Actions and finalized results, as logged.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use standings_core::BoardId;

use crate::domain::seasons::SeasonState;

/// One action of the log: a season transition, a moderation action or a late decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionRow {
    /// Commit order, shared with the event log.
    pub(crate) seq: i64,
    /// The game it concerns.
    pub(crate) game: String,
    /// What to do, as a rebuild performs it; an error when the log holds an action this version
    /// cannot read (it breaks the boards of its game rather than the whole log).
    pub(crate) action: Result<Action, UnreadableAction>,
    /// The client's moderation id, for idempotent retries.
    pub(crate) action_id: Option<String>,
    /// The request as the client sent it (kept for the audit log and idempotent retries).
    pub(crate) request: serde_json::Value,
    /// What it changed, once recorded (`None` until the action was performed).
    pub(crate) result: Option<ActionResult>,
    /// The token that asked for it.
    pub(crate) actor: String,
    /// Why.
    pub(crate) reason: String,
    /// When (ms).
    pub(crate) created_at: i64,
}

/// One finalized result of a board: the ranked entries at one correction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultRow {
    /// The board.
    pub board: BoardId,
    /// 0 for the original, then 1, 2, ... for each correction.
    pub correction: i64,
    /// The board version the result was taken at.
    pub(crate) board_version: i64,
    /// The board digest.
    pub digest: String,
    /// When it was taken (ms).
    pub(crate) finalized_at: i64,
    /// The action that produced it.
    pub(crate) action_seq: i64,
    /// The ranked entries.
    pub(crate) entries: Vec<RankedEntry>,
}

impl ActionRow {
    /// The kind's name in the log: `SEASON_STATE`, `INVALIDATE`, `RESTORE`, `DISQUALIFY`,
    /// `REINSTATE` or `LATE_DECISION`.
    pub(crate) fn kind(&self) -> &str {
        match &self.action {
            Ok(action) => action.kind(),
            Err(unreadable) => &unreadable.kind,
        }
    }
}

/// A logged action that cannot be read as an [`Action`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("action {seq} cannot be read: {why}")]
pub struct UnreadableAction {
    /// Its `seq`.
    pub(crate) seq: i64,
    /// The kind the log names.
    pub(crate) kind: String,
    /// What is wrong with it.
    pub(crate) why: String,
}

/// One ranked entry of a result, or of a closed period's snapshot. The fields are declared in
/// the order of their names, which is the order the stored text and the answers have them. The
/// extras are those the entry showed when it was taken (a trusted caller's view, with the
/// anonymous flag); an answer to anyone else hides an anonymous player's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankedEntry {
    /// When the player's standing was achieved (ms; RFC 3339 in JSON).
    #[serde(with = "rfc3339")]
    pub(crate) achieved_at: i64,
    /// Whether the player showed anonymously.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) anonymous: bool,
    /// The player's country, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) country: Option<String>,
    /// The player's display name, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) display_name: Option<String>,
    /// The metadata of the event behind the entry (a JSON object, kept as its text).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "raw_object")]
    pub(crate) metadata: Option<String>,
    /// The player.
    pub(crate) player_id: String,
    /// 1-based rank.
    pub(crate) rank: u64,
    /// The event dimension values of the event behind the entry (`platform:ios`; an object in
    /// JSON), which place it in segments.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "segment_pairs")]
    pub(crate) segments: Option<String>,
    /// The aggregate value.
    pub(crate) value: i64,
}

impl RankedEntry {
    /// The entry as `audience` sees it: an anonymous player's extras hidden from the public.
    /// O(1).
    pub(crate) fn for_audience(
        &self,
        audience: standings_core::Audience,
    ) -> std::borrow::Cow<'_, RankedEntry> {
        if audience == standings_core::Audience::Trusted || !self.anonymous {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(RankedEntry {
            anonymous: false,
            country: None,
            display_name: None,
            metadata: None,
            ..self.clone()
        })
    }

    /// The extras the entry held, for a board restored from it; `None` when none. The event
    /// behind the metadata is not kept, so it is named by no id. O(their length).
    pub(crate) fn extras(&self) -> Option<standings_core::Extras> {
        use std::sync::Arc;
        let profile = (self.display_name.is_some() || self.country.is_some() || self.anonymous).then(|| {
            Arc::new(standings_core::Profile {
                display_name: self.display_name.as_deref().map(Into::into),
                country: self.country.as_deref().map(Into::into),
                anonymous: self.anonymous,
            })
        });
        let metadata = (self.metadata.is_some() || self.segments.is_some()).then(|| {
            Arc::new(standings_core::profile::Metadata {
                event_id: "".into(),
                json: self.metadata.as_deref().unwrap_or_default().into(),
                segments: self.segments.as_deref().map(Into::into),
            })
        });
        (profile.is_some() || metadata.is_some()).then_some(standings_core::Extras { profile, metadata })
    }

    /// Whether the entry shows anything besides its standing. O(1).
    pub(crate) fn has_extras(&self) -> bool {
        self.anonymous || self.country.is_some() || self.display_name.is_some() || self.metadata.is_some()
    }

    /// The entry without any extras: what an erasure leaves of it. O(1).
    pub(crate) fn erase(&mut self) {
        self.anonymous = false;
        self.country = None;
        self.display_name = None;
        self.metadata = None;
    }
}

/// A JSON object kept as its text, written and read as the object itself.
mod raw_object {
    use serde::Deserialize as _;
    use serde_json::value::RawValue;

    pub(super) fn serialize<S: serde::Serializer>(
        text: &Option<String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match text {
            Some(text) => {
                let raw = RawValue::from_string(text.clone()).map_err(serde::ser::Error::custom)?;
                serializer.serialize_some(&raw)
            }
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        let raw = Option::<Box<RawValue>>::deserialize(deserializer)?;
        Ok(raw.map(|r| r.get().to_owned()))
    }
}

/// Event dimension values kept as the core's `platform:ios,region:eu` text, written and read as
/// the object `{"platform": "ios", "region": "eu"}`.
mod segment_pairs {
    use serde::Deserialize as _;
    use serde::ser::SerializeMap as _;

    pub(super) fn serialize<S: serde::Serializer>(
        text: &Option<String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let Some(text) = text else {
            return serializer.serialize_none();
        };
        let mut map = serializer.serialize_map(None)?;
        for pair in text.split(',') {
            let (name, value) = pair.split_once(':').unwrap_or((pair, ""));
            map.serialize_entry(name, value)?;
        }
        map.end()
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        let pairs = Option::<std::collections::BTreeMap<String, String>>::deserialize(deserializer)?;
        Ok(pairs.filter(|p| !p.is_empty()).map(|pairs| {
            let pairs: Vec<String> = pairs
                .iter()
                .map(|(name, value)| format!("{name}:{value}"))
                .collect();
            pairs.join(",")
        }))
    }
}

/// A time in ms written as RFC 3339 text.
mod rfc3339 {
    pub(super) fn serialize<S: serde::Serializer>(ms: &i64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::clock::format_rfc3339(*ms))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        crate::clock::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// What an action changed: the instances it recomputed and the result snapshots it stored.
/// Fields in name order, as recorded and answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    /// Every instance it changed.
    pub(crate) boards: Vec<Change>,
    /// The result snapshots (finalization or corrections) it produced.
    pub(crate) results: Vec<Correction>,
}

/// What an action changed on one instance. Fields in name order, as recorded and answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The instance's version after.
    pub(crate) board_version: u64,
    /// The board.
    pub(crate) game: String,
    /// The board.
    pub(crate) mode: String,
    /// The period instance.
    pub(crate) period_key: String,
    /// The player whose aggregate was recomputed.
    pub(crate) player_id: String,
    /// Their rank after, or `None` when unranked.
    pub(crate) rank: Option<u64>,
    /// The board.
    pub(crate) scope: String,
    /// The board.
    pub(crate) season: String,
}

/// A result snapshot an action produced, as its answer names it. Fields in name order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Correction {
    /// The board version the result was taken at.
    pub(crate) board_version: i64,
    /// 0 for the original, then 1, 2, ...
    pub(crate) correction: i64,
    /// The board digest.
    pub(crate) digest: String,
    /// The board.
    pub(crate) game: String,
    /// The board.
    pub(crate) mode: String,
    /// The board.
    pub(crate) scope: String,
    /// The board.
    pub(crate) season: String,
}

impl Correction {
    /// How an answer names a stored result.
    pub(crate) fn of(result: &ResultRow) -> Correction {
        Correction {
            board_version: result.board_version,
            correction: result.correction,
            digest: result.digest.clone(),
            game: result.board.game.clone(),
            mode: result.board.mode.clone(),
            scope: result.board.scope.clone(),
            season: result.board.season.clone(),
        }
    }
}

/// An action request as the log stores it (`ActionRow::body`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// A season transition.
    SeasonState {
        /// The season.
        season: String,
        /// The state it moves to.
        to: SeasonState,
        /// The reward bands declared as it is finalized (empty otherwise, and in logs
        /// written before they existed).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rewards: Vec<super::rewards::RewardBand>,
    },
    /// Invalidate one event on every board it fed.
    Invalidate {
        /// The event.
        target_event_id: String,
    },
    /// Restore an invalidated event.
    Restore {
        /// The event.
        target_event_id: String,
    },
    /// Remove a player from a board.
    Disqualify {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Let a player back onto a board with their valid history.
    Reinstate {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Decide a late event.
    LateDecision {
        /// The event.
        event_id: String,
        /// Apply it (true) or reject it (false).
        apply: bool,
    },
    /// A player's whole profile after the game's service (or a moderator) changed it.
    Profile {
        /// The player.
        target_player_id: String,
        /// The display name (NFC, validated); `None` when unset or erased.
        display_name: Option<String>,
        /// The ISO 3166-1 alpha-2 country.
        country: Option<String>,
        /// Whether the player shows anonymously.
        anonymous: bool,
    },
    /// A moderator replaces a player's name.
    Rename {
        /// The player.
        target_player_id: String,
        /// The new name; `None` once an erasure rewrote the action.
        display_name: Option<String>,
    },
    /// A moderator removes a player's name.
    ClearName {
        /// The player.
        target_player_id: String,
    },
    /// A moderator stops the game's service from changing the player's name.
    LockName {
        /// The player.
        target_player_id: String,
    },
    /// A moderator lets the game's service change the player's name again.
    UnlockName {
        /// The player.
        target_player_id: String,
    },
    /// An admin erases the player's name, country and entry metadata everywhere.
    Erase {
        /// The player.
        target_player_id: String,
    },
    /// A period instance of a board with a feed closed: the writer logs it once its close
    /// time passed, so the feed's `period_closed` record has a place in the log's order.
    PeriodClose {
        /// The board.
        board: BoardId,
        /// The period's kind.
        period: String,
        /// The period instance.
        period_key: String,
    },
}

impl Action {
    /// The kind's name in the log.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Action::SeasonState { .. } => "SEASON_STATE",
            Action::Invalidate { .. } => "INVALIDATE",
            Action::Restore { .. } => "RESTORE",
            Action::Disqualify { .. } => "DISQUALIFY",
            Action::Reinstate { .. } => "REINSTATE",
            Action::LateDecision { .. } => "LATE_DECISION",
            Action::Profile { .. } => "PROFILE",
            Action::Rename { .. } => "RENAME",
            Action::ClearName { .. } => "CLEAR_NAME",
            Action::LockName { .. } => "LOCK_NAME",
            Action::UnlockName { .. } => "UNLOCK_NAME",
            Action::Erase { .. } => "ERASE",
            Action::PeriodClose { .. } => "PERIOD_CLOSE",
        }
    }

    /// The player whose profile the action changes, for the actions that change one.
    pub(crate) fn profile_target(&self) -> Option<&str> {
        match self {
            Action::Profile { target_player_id, .. }
            | Action::Rename { target_player_id, .. }
            | Action::ClearName { target_player_id }
            | Action::LockName { target_player_id }
            | Action::UnlockName { target_player_id }
            | Action::Erase { target_player_id } => Some(target_player_id),
            _ => None,
        }
    }
}

/// What an erasure leaves of a request a `PROFILE` or `RENAME` of the player was sent with: its
/// kind and target, and that it was erased.
pub(crate) fn erased_request(action_type: &str, target_player_id: &str) -> Value {
    serde_json::json!({"action_type": action_type, "target_player_id": target_player_id, "erased": true})
}

/// Whether `sent`, resent under a moderation id, is the request stored under it. An erased one
/// ([`erased_request`]) agrees with any request of its kind for its player, so a retry across an
/// erasure is still answered `replayed` and learns nothing of what was erased. O(request size).
pub(crate) fn same_request(stored: &Value, sent: &Value) -> bool {
    if stored.get("erased") == Some(&Value::Bool(true)) {
        let field = |v: &Value, name: &str| v.get(name).cloned();
        return field(stored, "action_type") == field(sent, "action_type")
            && field(stored, "target_player_id") == field(sent, "target_player_id");
    }
    stored == sent
}

#[cfg(test)]
mod request_tests {
    use serde_json::json;

    use super::*;

    /// A request agrees with itself; after an erasure, with any request of its kind and player;
    /// never with another kind, another player, or a request that differs before an erasure.
    #[test]
    fn a_retry_across_an_erasure_is_the_same_request() {
        let rename = json!({"action_type": "RENAME", "target_player_id": "p-ava", "display_name": "Zed", "reason": "r"});
        assert!(same_request(&rename, &rename));
        let mut other = rename.clone();
        other["display_name"] = json!("Ann");
        assert!(!same_request(&rename, &other));
        let erased = erased_request("RENAME", "p-ava");
        assert!(same_request(&erased, &rename));
        assert!(same_request(&erased, &other));
        assert!(!same_request(
            &erased,
            &json!({"action_type": "RENAME", "target_player_id": "p-ben"})
        ));
        assert!(!same_request(
            &erased,
            &json!({"action_type": "CLEAR_NAME", "target_player_id": "p-ava"})
        ));
    }
}
