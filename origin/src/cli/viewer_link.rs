//! `standings viewer-link`: a link to the board viewer that reads with a short-lived player JWT,
//! so nobody pastes a write-capable static token into a browser. `serve` prints one on its first
//! start; this command makes a fresh one from the config at any time.

use std::process::ExitCode;

use clap::Args;

use super::{Global, load_config};
use crate::config::Config;

/// The player id the viewer's token reads as: a player token reads every board of its games,
/// and only its own friend list and profile.
const VIEWER_PLAYER: &str = "viewer";

/// The options of `viewer-link`.
#[derive(Debug, Args)]
pub(super) struct ViewerLinkArgs {
    /// The game the link opens (the viewer lists its boards).
    #[arg(long, value_name = "GAME")]
    game: Option<String>,
    /// A board to watch at once, as MODE/SEASON/SCOPE (needs --game).
    #[arg(long, value_name = "MODE/SEASON/SCOPE", requires = "game")]
    board: Option<String>,
    /// How long the link's token reads, in minutes (at most the config's
    /// player_jwt_max_lifetime_seconds).
    #[arg(long, default_value_t = 60, value_name = "MINUTES")]
    minutes: i64,
}

pub(super) fn viewer_link(global: &Global, args: &ViewerLinkArgs) -> Result<ExitCode, String> {
    // A link for a service that never started would read nothing: make no config here.
    if global.config.is_none() && !std::path::Path::new(crate::config::DEFAULT_CONFIG_PATH).exists() {
        return Err(format!(
            "no config at {}: start `standings serve` once (it writes one), or give --config",
            crate::config::DEFAULT_CONFIG_PATH
        ));
    }
    let (config, _, _) = load_config(global)?;
    let board = match &args.board {
        None => None,
        Some(board) => match board.split('/').collect::<Vec<_>>()[..] {
            [mode, season, scope] if !mode.is_empty() && !season.is_empty() && !scope.is_empty() => {
                Some((mode, season, scope))
            }
            _ => {
                return Err(format!(
                    "--board {board:?} must be MODE/SEASON/SCOPE, as solo/S7/global"
                ));
            }
        },
    };
    let link = link(
        &config,
        args.game.as_deref(),
        board,
        args.minutes * 60,
        crate::clock::now_ms() / 1000,
    )?;
    println!("{link}");
    Ok(ExitCode::SUCCESS)
}

/// The viewer's address on `config.listen`, with a player JWT for every game valid for
/// `seconds` from `now_secs` in its fragment (which browsers never send to a server).
pub(super) fn link(
    config: &Config,
    game: Option<&str>,
    board: Option<(&str, &str, &str)>,
    seconds: i64,
    now_secs: i64,
) -> Result<String, String> {
    let Some(secret) = &config.player_jwt_hs256_secret else {
        return Err(
            "the config has no player_jwt_hs256_secret, so no read-only link can be made: add one (32 characters or more) and restart the service"
                .into(),
        );
    };
    if seconds < 60 || seconds > config.player_jwt_max_lifetime_seconds {
        return Err(format!(
            "--minutes must be from 1 to {} (player_jwt_max_lifetime_seconds)",
            config.player_jwt_max_lifetime_seconds / 60
        ));
    }
    let token = crate::http::auth::sign_jwt(
        secret.as_bytes(),
        &serde_json::json!({"sub": VIEWER_PLAYER, "games": ["*"], "iat": now_secs, "exp": now_secs + seconds}),
    );
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(game) = game {
        query.append_pair("game", game);
    }
    if let Some((mode, season, scope)) = board {
        query
            .append_pair("mode", mode)
            .append_pair("season", season)
            .append_pair("scope", scope);
    }
    let query = query.finish();
    let query = if query.is_empty() {
        query
    } else {
        format!("?{query}")
    };
    Ok(format!("http://{}/{query}#token={token}", config.listen))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The link reads as a player of every game, for the minutes asked, and opens the board
    /// named; without a JWT secret, or past the longest lifetime, it says what to change.
    #[test]
    fn a_link_carries_a_short_lived_read_only_token() {
        let mut config = Config::fresh_default(std::path::Path::new("/tmp")).unwrap();
        let link = link(
            &config,
            Some("arena clash"),
            Some(("solo", "S7", "global")),
            3600,
            1_000,
        )
        .unwrap();
        let (address, token) = link.split_once("#token=").unwrap();
        assert_eq!(
            address,
            "http://127.0.0.1:7400/?game=arena+clash&mode=solo&season=S7&scope=global"
        );
        let secret = config.player_jwt_hs256_secret.clone().unwrap();
        let claims = standings_core::jwt::verify(secret.as_bytes(), token, 1_000, 86_400).unwrap();
        assert_eq!((claims.player.as_str(), claims.exp), ("viewer", 4_600));
        assert_eq!(claims.games, vec!["*".to_string()]);
        assert!(link_err(&config, 86_400 * 2).contains("--minutes must be from 1 to 1440"));
        config.player_jwt_hs256_secret = None;
        assert!(link_err(&config, 3600).contains("no player_jwt_hs256_secret"));
    }

    fn link_err(config: &Config, seconds: i64) -> String {
        link(config, None, None, seconds, 0).unwrap_err()
    }
}
