//! Players' profiles as the log set them: per game and player, the profile their entries show
//! and whether a moderator locked the name. Derived from the log's profile actions (`PROFILE`,
//! `RENAME`, `CLEAR_NAME`, `LOCK_NAME`, `UNLOCK_NAME`, `ERASE`), so a rebuild reproduces it.
//!
//! Only players with a profile or a lock are held: a game whose players have none costs an empty
//! map, and looking a player up there is one atomic load. A profile is shared (an `Arc`) with
//! every board entry that shows it, so a name costs its bytes once per game.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use standings_core::Profile;

use crate::fast_hash::FastHash;
use crate::sync::RwLockUnpoisoned;

/// What the book holds of one player.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// The profile entries show; `None` when the player has none.
    pub profile: Option<Arc<Profile>>,
    /// Whether a moderator locked the name against the game's service.
    pub name_locked: bool,
}

impl Held {
    /// The display name, if any.
    pub fn display_name(&self) -> Option<&str> {
        self.profile.as_deref()?.display_name.as_deref()
    }

    /// The country, if any.
    pub fn country(&self) -> Option<&str> {
        self.profile.as_deref()?.country.as_deref()
    }

    /// Whether the player shows anonymously.
    pub fn anonymous(&self) -> bool {
        self.profile.as_deref().is_some_and(|p| p.anonymous)
    }
}

/// One held player, boxed so that the game's table holds a pointer per player: a table of a
/// million players has two million buckets, and a bucket of the id and `Held` inline is four
/// times the size.
#[derive(Debug)]
struct Named {
    player: Box<str>,
    held: Held,
}

/// Equal and hashed by the player id alone, as `str` is, so the table is looked up by `&str`.
impl PartialEq for Named {
    fn eq(&self, other: &Named) -> bool {
        self.player == other.player
    }
}

impl Eq for Named {}

impl Hash for Named {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.player.hash(state);
    }
}

impl Borrow<str> for Box<Named> {
    fn borrow(&self) -> &str {
        &self.player
    }
}

/// Every game's profiles.
#[derive(Default)]
pub struct ProfileBook {
    games: RwLock<HashMap<String, HashSet<Box<Named>, FastHash>, FastHash>>,
    /// Whether any player of any game has a profile: events of services that never set one skip
    /// the look-up.
    any: AtomicBool,
}

/// The profile a player's fields make, `None` when they say nothing.
pub fn profile_of(
    display_name: Option<&str>,
    country: Option<&str>,
    anonymous: bool,
) -> Option<Arc<Profile>> {
    let profile = Profile {
        display_name: display_name.map(Into::into),
        country: country.map(Into::into),
        anonymous,
    };
    (!profile.is_empty()).then(|| Arc::new(profile))
}

impl ProfileBook {
    /// What the book holds of a player. O(1) expected.
    pub fn get(&self, game: &str, player: &str) -> Held {
        if !self.any.load(Ordering::Acquire) {
            return Held::default();
        }
        self.games
            .read_unpoisoned()
            .get(game)
            .and_then(|players| players.get(player))
            .map(|named| named.held.clone())
            .unwrap_or_default()
    }

    /// The profile a player's entries show, if any: the look-up each applied event makes.
    /// O(1) expected; one atomic load when nobody has a profile.
    pub fn shown(&self, game: &str, player: &str) -> Option<Arc<Profile>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.games
            .read_unpoisoned()
            .get(game)?
            .get(player)?
            .held
            .profile
            .clone()
    }

    /// Sets a player's profile, keeping the lock. O(1) expected.
    pub fn set_profile(&self, game: &str, player: &str, profile: Option<Arc<Profile>>) {
        self.update(game, player, |held| held.profile = profile);
    }

    /// Locks or unlocks a player's name. O(1) expected.
    pub fn set_locked(&self, game: &str, player: &str, locked: bool) {
        self.update(game, player, |held| held.name_locked = locked);
    }

    /// A set hands out no mutable entries, so a change takes the player out and puts them back
    /// unless nothing is left to hold.
    fn update(&self, game: &str, player: &str, change: impl FnOnce(&mut Held)) {
        let mut games = self.games.write_unpoisoned();
        let players = games.entry(game.to_owned()).or_default();
        let mut named = players.take(player).unwrap_or_else(|| {
            Box::new(Named {
                player: player.into(),
                held: Held::default(),
            })
        });
        change(&mut named.held);
        if named.held != Held::default() {
            players.insert(named);
            self.any.store(true, Ordering::Release);
        } else if players.is_empty() {
            games.remove(game);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A player set back to nothing is no longer held, and a lock alone is kept.
    #[test]
    fn holds_only_players_with_something() {
        let book = ProfileBook::default();
        assert_eq!(book.shown("g", "p"), None);
        book.set_profile("g", "p", profile_of(Some("Ava"), Some("DE"), false));
        assert_eq!(book.get("g", "p").display_name(), Some("Ava"));
        assert_eq!(book.get("other", "p"), Held::default());
        book.set_locked("g", "p", true);
        book.set_profile("g", "p", None);
        assert!(book.get("g", "p").name_locked);
        book.set_locked("g", "p", false);
        assert!(book.games.read_unpoisoned().is_empty());
        assert_eq!(profile_of(None, None, false), None);
    }
}

/// One field of a profile as a request asks: kept as it is, cleared (`null`) or set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Patch<T> {
    /// Absent from the request.
    Keep,
    /// `null`.
    Clear,
    /// A new value, validated.
    Set(T),
}

impl<T: Clone> Patch<T> {
    fn over(&self, current: Option<T>) -> Option<T> {
        match self {
            Patch::Keep => current,
            Patch::Clear => None,
            Patch::Set(value) => Some(value.clone()),
        }
    }
}

/// A `PUT .../profile` as the writer decides it: on the profile the log holds when its turn
/// comes, so two changes of different fields never undo each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfilePatch {
    /// The player.
    pub player: String,
    /// The display name (validated, NFC).
    pub display_name: Patch<String>,
    /// The country (validated).
    pub country: Patch<String>,
    /// Whether the player shows anonymously; `None` keeps it.
    pub anonymous: Option<bool>,
    /// Whether the caller may change a name a moderator locked (moderators and admins).
    pub overrides_lock: bool,
}

impl ProfilePatch {
    /// The `PROFILE` action that carries the patch out on `held`; `Ok(None)` when the profile
    /// would stay as it is (nothing is logged, no version moves); refused when it changes a
    /// locked name and the caller may not. O(1).
    pub fn decide(
        &self,
        game: &str,
        held: &Held,
    ) -> Result<Option<crate::domain::Action>, crate::domain::ActionRefusal> {
        let display_name = self.display_name.over(held.display_name().map(str::to_owned));
        let country = self.country.over(held.country().map(str::to_owned));
        let anonymous = self.anonymous.unwrap_or(held.anonymous());
        if display_name.as_deref() != held.display_name() && held.name_locked && !self.overrides_lock {
            return Err(crate::domain::ActionRefusal::NameLocked {
                game: game.to_owned(),
                player: self.player.clone(),
            });
        }
        if profile_of(display_name.as_deref(), country.as_deref(), anonymous) == held.profile {
            return Ok(None);
        }
        Ok(Some(crate::domain::Action::Profile {
            target_player_id: self.player.clone(),
            display_name,
            country,
            anonymous,
        }))
    }
}

#[cfg(test)]
mod patch_tests {
    use super::*;

    fn patch(name: Patch<String>, overrides_lock: bool) -> ProfilePatch {
        ProfilePatch {
            player: "p".into(),
            display_name: name,
            country: Patch::Keep,
            anonymous: None,
            overrides_lock,
        }
    }

    /// The same profile twice is no change; a lock refuses the service but not a moderator,
    /// and keeps country changes open.
    #[test]
    fn decides_on_the_held_profile() {
        let held = Held {
            profile: profile_of(Some("Ava"), Some("DE"), false),
            name_locked: false,
        };
        assert_eq!(
            patch(Patch::Set("Ava".into()), false).decide("g", &held),
            Ok(None)
        );
        assert_eq!(patch(Patch::Keep, false).decide("g", &held), Ok(None));
        let Ok(Some(crate::domain::Action::Profile {
            display_name,
            country,
            ..
        })) = patch(Patch::Clear, false).decide("g", &held)
        else {
            panic!("a clear is a change");
        };
        assert_eq!((display_name, country), (None, Some("DE".into())));
        let locked = Held {
            name_locked: true,
            ..held
        };
        assert!(
            patch(Patch::Set("Bo".into()), false)
                .decide("g", &locked)
                .is_err()
        );
        assert!(
            patch(Patch::Set("Bo".into()), true)
                .decide("g", &locked)
                .unwrap()
                .is_some()
        );
        let country = ProfilePatch {
            country: Patch::Set("FR".into()),
            ..patch(Patch::Keep, false)
        };
        assert!(country.decide("g", &locked).unwrap().is_some());
    }
}
