//! Who may read what, decided once for the origin and the edge: the roles of tokens, and the
//! read-access rules over a caller either tier authenticated (the origin from its tokens and
//! JWTs, the edge from a JWT it verified or the origin's introspection), with the same 401/403
//! words. A caller is anything that answers [`Subject`], so neither tier copies its caller into
//! another type per request.

use alloc::format;

use serde::{Deserialize, Serialize};

use super::Problem;

/// What a token may do. Roles nest: a moderator is also a service, an admin also a moderator.
/// `edge` stands beside them: it only reads, as no player, and may introspect tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads only. A player can never write.
    Player,
    /// Submits score events and sets friend lists for its games.
    Service,
    /// A service that may also moderate.
    Moderator,
    /// A moderator that may also define boards.
    Admin,
    /// An edge cache (the Cloudflare Worker): reads every read of its games, any player's
    /// friends included, and asks the origin what a bearer token is, so it never holds the
    /// static secrets. It never writes.
    Edge,
}

impl Role {
    /// The role's name in config files and introspection answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Player => "player",
            Role::Service => "service",
            Role::Moderator => "moderator",
            Role::Admin => "admin",
            Role::Edge => "edge",
        }
    }

    /// "a service token", "an edge token": the role with its article, for refusals' words.
    pub fn a_token(self) -> &'static str {
        match self {
            Role::Player => "a player token",
            Role::Service => "a service token",
            Role::Moderator => "a moderator token",
            Role::Admin => "an admin token",
            Role::Edge => "an edge token",
        }
    }

    /// The role named `name`, if any. O(1).
    pub fn parse(name: &str) -> Option<Role> {
        Some(match name {
            "player" => Role::Player,
            "service" => Role::Service,
            "moderator" => Role::Moderator,
            "admin" => Role::Admin,
            "edge" => Role::Edge,
            _ => return None,
        })
    }

    /// Whether the role may submit events and friend lists.
    pub fn can_write(self) -> bool {
        matches!(self, Role::Service | Role::Moderator | Role::Admin)
    }

    /// Whether the role may moderate.
    pub fn can_moderate(self) -> bool {
        matches!(self, Role::Moderator | Role::Admin)
    }

    /// Whether the role may define boards.
    pub fn can_define_boards(self) -> bool {
        matches!(self, Role::Admin)
    }

    /// Whether the role may read snapshots without `public_reads`: they hold every player's
    /// score, so only the edge and admins.
    pub fn can_read_snapshots(self) -> bool {
        matches!(self, Role::Edge | Role::Admin)
    }

    /// Whether the role may ask what a bearer token is.
    pub fn can_introspect(self) -> bool {
        matches!(self, Role::Edge | Role::Admin)
    }
}

impl core::fmt::Display for Role {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An authenticated caller, as a tier knows it.
pub trait Subject {
    /// The name refusals use (`"game-server"`, `"jwt:p-ava"`); `None` when the tier does not
    /// know it (the edge's callers learned from introspection).
    fn name(&self) -> Option<&str>;
    /// Its role.
    fn role(&self) -> Role;
    /// Whether it may touch `game` (its games list it, or `*`).
    fn allows_game(&self, game: &str) -> bool;
    /// The player a player token reads as.
    fn player_id(&self) -> Option<&str>;
}

/// Why a read is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denied {
    /// Answer this problem.
    Problem(Problem),
    /// The refusal's words need the caller's name, which this tier does not know: the origin,
    /// which does, must answer.
    AskOrigin,
}

impl From<Problem> for Denied {
    fn from(problem: Problem) -> Denied {
        Denied::Problem(problem)
    }
}

/// The token of an `Authorization` header's text: the scheme `Bearer` in any case (RFC 9110
/// §11.1 makes schemes case-insensitive), a space, then the token, trimmed. O(header length).
pub fn bearer_token(value: &str) -> Result<&str, Problem> {
    let scheme = "bearer ";
    match value.get(..scheme.len()) {
        Some(head) if head.eq_ignore_ascii_case(scheme) => Ok(value[scheme.len()..].trim()),
        _ => Err(Problem::unauthenticated(
            "the Authorization header must be `Bearer <token>`",
        )),
    }
}

/// The 403 for a caller of other games.
fn other_game(caller: &impl Subject, game: &str) -> Denied {
    match caller.name() {
        Some(name) => Problem::forbidden(format!("token {name:?} may not read game {game:?}")).into(),
        None => Denied::AskOrigin,
    }
}

/// Who may read `game`'s boards: anyone with `public_reads`, otherwise a caller of the game.
/// O(the caller's games).
pub fn reader<S: Subject>(caller: Option<&S>, public_reads: bool, game: &str) -> Result<(), Denied> {
    match caller {
        None if public_reads => Ok(()),
        None => Err(Problem::unauthenticated("reads need a token").into()),
        Some(c) if !c.allows_game(game) => Err(other_game(c, game)),
        Some(_) => Ok(()),
    }
}

/// What a reader is shown of an anonymous player: the game's service, moderator and admin
/// tokens see everything (they set the profile); players, the edge and anonymous readers see
/// the public form, which is also what snapshots and live messages carry. O(1).
pub fn audience<S: Subject>(caller: Option<&S>) -> crate::Audience {
    match caller.map(Subject::role) {
        Some(Role::Service | Role::Moderator | Role::Admin) => crate::Audience::Trusted,
        _ => crate::Audience::Public,
    }
}

/// Who may read `player`'s friends in `game` (friends-of, and the friend list itself): a
/// caller of the game, and a player only its own; a friend list is private, so `public_reads`
/// never opens it. O(the caller's games).
pub fn friends_reader<S: Subject>(caller: Option<&S>, game: &str, player: &str) -> Result<(), Denied> {
    let caller = caller
        .ok_or_else(|| Problem::unauthenticated("a friend list is private: friends-of needs a token"))?;
    own_or_game(caller, game, player, "friends")
}

/// Who may read `player`'s profile in `game`: a caller of the game, and a player only its own;
/// `public_reads` never opens it. What an anonymous profile shows is [`audience`]'s to say.
/// O(the caller's games).
pub fn profile_reader<S: Subject>(caller: Option<&S>, game: &str, player: &str) -> Result<(), Denied> {
    let caller = caller.ok_or_else(|| Problem::unauthenticated("a profile read needs a token"))?;
    own_or_game(caller, game, player, "profile")
}

/// A caller of `game`, and a player token only for its own player's `what`.
fn own_or_game<S: Subject>(caller: &S, game: &str, player: &str, what: &str) -> Result<(), Denied> {
    if !caller.allows_game(game) {
        return Err(other_game(caller, game));
    }
    if caller.role() == Role::Player && caller.player_id() != Some(player) {
        return Err(Problem::forbidden(format!(
            "a player token reads only its own player's {what}, not {player:?}'s"
        ))
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use alloc::string::String;

    use super::*;

    struct Token {
        name: Option<&'static str>,
        role: Role,
        game: &'static str,
        player: Option<&'static str>,
    }

    impl Subject for Token {
        fn name(&self) -> Option<&str> {
            self.name
        }
        fn role(&self) -> Role {
            self.role
        }
        fn allows_game(&self, game: &str) -> bool {
            self.game == "*" || self.game == game
        }
        fn player_id(&self) -> Option<&str> {
            self.player
        }
    }

    fn detail(denied: Denied) -> String {
        match denied {
            Denied::Problem(p) => alloc::format!("{} {}", p.status, p.detail),
            Denied::AskOrigin => "ask the origin".into(),
        }
    }

    /// The scheme is case-insensitive; anything but `Bearer` is refused with the header's form.
    #[test]
    fn a_bearer_token_is_read_in_any_case() {
        for header in ["Bearer abc", "bearer abc", "BEARER  abc ", "bEaReR abc"] {
            assert_eq!(bearer_token(header), Ok("abc"), "{header}");
        }
        for header in ["Basic abc", "Bearerabc", "Bear", "", "Token abc"] {
            assert_eq!(
                detail(bearer_token(header).unwrap_err().into()),
                "401 the Authorization header must be `Bearer <token>`",
                "{header}"
            );
        }
    }

    /// The read rules and their words: public reads open reads but never a friend list; a
    /// caller of another game is refused by name, or handed to the origin when its name is not
    /// known; a player reads only its own friends.
    #[test]
    fn the_read_rules() {
        let service = Token {
            name: Some("game-server"),
            role: Role::Service,
            game: "g",
            player: None,
        };
        let ava = Token {
            name: Some("jwt:p-ava"),
            role: Role::Player,
            game: "g",
            player: Some("p-ava"),
        };
        let unnamed = Token {
            name: None,
            ..service
        };
        assert_eq!(reader::<Token>(None, true, "g"), Ok(()));
        assert_eq!(
            detail(reader::<Token>(None, false, "g").unwrap_err()),
            "401 reads need a token"
        );
        assert_eq!(reader(Some(&ava), false, "g"), Ok(()));
        assert_eq!(
            detail(reader(Some(&ava), false, "h").unwrap_err()),
            "403 token \"jwt:p-ava\" may not read game \"h\""
        );
        assert_eq!(reader(Some(&unnamed), false, "h"), Err(Denied::AskOrigin));
        assert_eq!(
            detail(friends_reader::<Token>(None, "g", "p-ava").unwrap_err()),
            "401 a friend list is private: friends-of needs a token"
        );
        assert_eq!(friends_reader(Some(&ava), "g", "p-ava"), Ok(()));
        assert_eq!(profile_reader(Some(&ava), "g", "p-ava"), Ok(()));
        assert_eq!(
            detail(profile_reader(Some(&ava), "g", "p-ben").unwrap_err()),
            "403 a player token reads only its own player's profile, not \"p-ben\"'s"
        );
        assert_eq!(
            detail(profile_reader::<Token>(None, "g", "p-ava").unwrap_err()),
            "401 a profile read needs a token"
        );
        assert_eq!(
            detail(friends_reader(Some(&ava), "g", "p-ben").unwrap_err()),
            "403 a player token reads only its own player's friends, not \"p-ben\"'s"
        );
        assert_eq!(friends_reader(Some(&unnamed), "g", "p-ben"), Ok(()));
    }

    /// Roles read and print their names, and their capabilities nest.
    #[test]
    fn roles() {
        for role in [
            Role::Player,
            Role::Service,
            Role::Moderator,
            Role::Admin,
            Role::Edge,
        ] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
        assert!(Role::Admin.can_moderate() && Role::Moderator.can_write() && !Role::Edge.can_write());
        assert!(Role::Edge.can_read_snapshots() && !Role::Service.can_read_snapshots());
    }
}
