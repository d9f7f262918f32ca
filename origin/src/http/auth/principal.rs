//! Who a caller is: the [`Principal`] a token names, as the read-access rules of the contract
//! and the intake see it, and the [`Caller`] a request's token gives, which borrows a static
//! token's principal rather than copying it on the read path.

use standings_core::contract::access::Subject;

use super::PlayerClaims;
use crate::config::Role;

/// An authenticated caller.
#[derive(Clone, Debug)]
pub(crate) struct Principal {
    /// The token's name (recorded as the source of events), or `jwt:<player>`.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The games it may touch (`*` for all).
    pub games: Vec<String>,
    /// The player it reads as, for player tokens.
    pub player_id: Option<String>,
}

impl Principal {
    /// Whether the caller may touch `game`.
    pub(crate) fn allows_game(&self, game: &str) -> bool {
        self.games.iter().any(|g| g == "*" || g == game)
    }
}

/// A caller as the read-access rules of the contract see it.
impl Subject for Principal {
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn role(&self) -> Role {
        self.role
    }

    fn allows_game(&self, game: &str) -> bool {
        Principal::allows_game(self, game)
    }

    fn player_id(&self) -> Option<&str> {
        self.player_id.as_deref()
    }
}

/// A caller submits events as its token's name, to the games it may touch.
impl crate::intake::Submitter for Principal {
    fn name(&self) -> &str {
        &self.name
    }

    fn may_write(&self, game: &str) -> bool {
        self.allows_game(game)
    }
}

/// The caller named by a request's token: a static token's principal, borrowed, or the one a
/// player JWT makes.
pub(super) enum Caller<'a> {
    /// A static token of the config.
    Token(&'a Principal),
    /// A verified player JWT.
    Player(Principal),
}

impl Caller<'_> {
    pub(super) fn into_principal(self) -> Principal {
        match self {
            Caller::Token(principal) => principal.clone(),
            Caller::Player(principal) => principal,
        }
    }

    /// Whom a live subscription of this caller counts against.
    pub(super) fn holder(&self) -> String {
        match self {
            Caller::Token(principal) => format!("token:{}", principal.name),
            Caller::Player(principal) => {
                format!("player:{}", principal.player_id.as_deref().unwrap_or_default())
            }
        }
    }
}

impl std::ops::Deref for Caller<'_> {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        match self {
            Caller::Token(principal) => principal,
            Caller::Player(principal) => principal,
        }
    }
}

impl From<PlayerClaims> for Principal {
    fn from(claims: PlayerClaims) -> Principal {
        Principal {
            name: format!("jwt:{}", claims.player),
            role: Role::Player,
            games: claims.games,
            player_id: Some(claims.player),
        }
    }
}
