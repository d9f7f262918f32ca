//! Player JWTs (HS256): one check for every tier that serves reads, so the origin and the edge
//! worker accept and refuse the same tokens with the same words.
//!
//! A player token must carry `exp`, may carry `nbf` and `iat`, lives at most
//! `max_lifetime_secs` (from `iat`, or from now when it has none or names a later time), names
//! a valid `sub` and a non-empty `games` list. Time comes in as an argument, as everywhere in
//! the core.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::check_id;

/// What a valid player token says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerJwt {
    /// `sub`: the player it reads as.
    pub player: String,
    /// `games`: the games it may read, `["*"]` for all.
    pub games: Vec<String>,
    /// `exp`: when it stops being valid (seconds since the epoch).
    pub exp: i64,
}

/// Why a token is refused, in words a caller can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtRefusal(pub String);

impl fmt::Display for JwtRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the player token is not valid: {}", self.0)
    }
}

impl core::error::Error for JwtRefusal {}

/// Verifies `token` with `key` at `now_secs`. O(token length).
pub fn verify(
    key: &[u8],
    token: &str,
    now_secs: i64,
    max_lifetime_secs: i64,
) -> Result<PlayerJwt, JwtRefusal> {
    let bad = |why: &str| JwtRefusal(why.to_string());
    let mut parts = token.split('.');
    let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("not three parts"));
    };
    let json = |b64: &str| -> Option<Value> {
        URL_SAFE_NO_PAD
            .decode(b64)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    };
    let header = json(header_b64).ok_or_else(|| bad("the header is not base64url JSON"))?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(bad("only alg HS256 is accepted"));
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| bad("the signature is not base64url"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(|_| bad("bad key"))?;
    mac.update(header_b64.as_bytes());
    mac.update(b".");
    mac.update(payload_b64.as_bytes());
    mac.verify_slice(&signature)
        .map_err(|_| bad("the signature does not match"))?;
    let payload = json(payload_b64).ok_or_else(|| bad("the payload is not base64url JSON"))?;
    let seconds = |name: &str| match payload.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| bad(&format!("{name} is not a whole number of seconds"))),
    };
    let exp = seconds("exp")?.ok_or_else(|| bad("exp is missing; a player token must expire"))?;
    if now_secs >= exp {
        return Err(bad("it has expired"));
    }
    if let Some(nbf) = seconds("nbf")?
        && now_secs < nbf
    {
        return Err(bad("it is not valid yet"));
    }
    // A token that claims to be issued later than now is counted from now, so no `iat` can
    // stretch the time it is accepted.
    let issued = seconds("iat")?.map_or(now_secs, |iat| iat.min(now_secs));
    if exp.saturating_sub(issued) > max_lifetime_secs {
        return Err(bad(&format!(
            "it lives {} s, longer than the {max_lifetime_secs} s allowed (player_jwt_max_lifetime_seconds)",
            exp.saturating_sub(issued)
        )));
    }
    let sub = payload
        .get("sub")
        .and_then(|s| s.as_str())
        .ok_or_else(|| bad("sub is missing"))?;
    check_id("sub", sub).map_err(|e| bad(&e.to_string()))?;
    let games = match payload.get("games") {
        None => {
            return Err(bad(
                "the games claim is missing; a player token names the games it may read, as a list or [\"*\"]",
            ));
        }
        Some(Value::Array(games)) if !games.is_empty() => games
            .iter()
            .map(|g| g.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| bad("games must be a list of game names"))?,
        Some(_) => {
            return Err(bad(
                "games must be a non-empty list of game names, or [\"*\"] for all",
            ));
        }
    };
    Ok(PlayerJwt {
        player: sub.to_string(),
        games,
        exp,
    })
}

/// Signs `payload` (a JSON object's text) as an HS256 JWT, as a game backend does; for tests
/// and operators' tooling. O(payload length).
pub fn sign(key: &[u8], payload: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(payload);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{header}.{payload}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    /// A token signed here verifies with its claims; one byte changed in its payload or a
    /// different key is refused as a signature that does not match.
    #[test]
    fn a_signed_token_verifies_and_a_changed_one_does_not() {
        let token = sign(
            KEY,
            r#"{"sub":"p-ava","exp":2000,"iat":1000,"games":["arena-clash"]}"#,
        );
        assert_eq!(
            verify(KEY, &token, 1_500, 86_400),
            Ok(PlayerJwt {
                player: "p-ava".into(),
                games: alloc::vec!["arena-clash".into()],
                exp: 2_000,
            })
        );
        let mut parts: Vec<String> = token.split('.').map(String::from).collect();
        let payload = URL_SAFE_NO_PAD.encode(r#"{"sub":"p-ben","exp":2000,"iat":1000,"games":["*"]}"#);
        parts[1] = payload;
        let refused = |token: &str, key: &[u8]| verify(key, token, 1_500, 86_400).unwrap_err().to_string();
        assert_eq!(
            refused(&parts.join("."), KEY),
            "the player token is not valid: the signature does not match"
        );
        assert_eq!(
            refused(&token, b"another key"),
            "the player token is not valid: the signature does not match"
        );
    }
}
