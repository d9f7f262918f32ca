//! Webhook endpoints: each game's receivers of its feed, signed as Standard Webhooks specify
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of
//! `id.timestamp.body` under the secret's bytes), delivered at least once and in seq order per
//! endpoint, retried with backoff and then parked with its reason until resumed.
//!
//! These are the decisions, pure functions of an [`Endpoint`]: a definition checked, a secret
//! rotated, the signature, what an attempt's outcome does. `feed::delivery` is their driver.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The record kinds an endpoint may ask for.
pub(crate) const KINDS: [&str; 7] = [
    "overtaken",
    "band_entered",
    "band_left",
    "period_closed",
    "season_finalized",
    "reward",
    "correction",
];

/// How long a rotated secret keeps signing beside the new one.
pub(crate) const ROTATION_OVERLAP_MS: i64 = 24 * 3_600 * 1_000;

/// The shortest and longest secret, in bytes once decoded (the specification asks for 24 to 64).
const SECRET_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// One endpoint: what it receives and how far it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) game: String,
    pub(crate) id: String,
    pub(crate) url: String,
    /// `whsec_` and the base64 of the key.
    pub(crate) secret: String,
    /// The secret before the last rotation, signing beside it until `previous_until`.
    pub(crate) previous_secret: Option<String>,
    pub(crate) previous_until: Option<i64>,
    pub(crate) kinds: Vec<String>,
    /// The last seq delivered (or skipped, as a kind the endpoint does not take).
    pub(crate) delivered_through: i64,
    /// Why deliveries stopped, while they are stopped.
    pub(crate) parked_reason: Option<String>,
    /// Failed attempts at the next record.
    pub(crate) attempts: i64,
    /// When the next attempt is due (ms).
    pub(crate) next_attempt_at: i64,
    pub(crate) last_error: Option<String>,
    pub(crate) created_at: i64,
}

/// What a definition's body says, as sent.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Definition {
    pub(crate) url: String,
    pub(crate) secret: String,
    pub(crate) kinds: Vec<String>,
}

/// How deliveries are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Retries {
    /// Failed attempts at one record before the endpoint is parked.
    pub(crate) max_attempts: i64,
    /// The wait after the first failure; each next one doubles, up to [`MAX_BACKOFF_MS`].
    pub(crate) backoff_ms: i64,
    /// How long a receiver has to answer.
    pub(crate) timeout: Duration,
}

/// The longest wait between two attempts.
const MAX_BACKOFF_MS: i64 = 10 * 60 * 1_000;

/// The key bytes of a `whsec_` secret, or why it is not one. O(length).
pub(crate) fn key_of(secret: &str) -> Result<Vec<u8>, String> {
    let encoded = secret
        .strip_prefix("whsec_")
        .ok_or("secret must start with whsec_ and go on in base64 (Standard Webhooks)")?;
    let key = STANDARD
        .decode(encoded)
        .map_err(|e| format!("secret after whsec_ is not base64: {e}"))?;
    if !SECRET_BYTES.contains(&key.len()) {
        return Err(format!(
            "secret holds {} bytes; it must hold {} to {}",
            key.len(),
            SECRET_BYTES.start(),
            SECRET_BYTES.end()
        ));
    }
    Ok(key)
}

/// The endpoint `def` defines for `game` and `id` at `now`, from `existing` (its delivery state
/// kept; a new secret rotates, the old one signing beside it for [`ROTATION_OVERLAP_MS`]), or
/// new (delivering from the feed's next record, after `feed_end`). The error is in the API's
/// words. O(kinds).
pub(crate) fn defined(
    game: &str,
    id: &str,
    def: Definition,
    existing: Option<Endpoint>,
    feed_end: i64,
    now: i64,
) -> Result<Endpoint, String> {
    let url = def.url.trim();
    let bare = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    if bare.is_none_or(str::is_empty) || url.contains(char::is_whitespace) {
        return Err(format!("url {url:?} is not an https:// or http:// URL"));
    }
    let parsed: Result<hyper::Uri, _> = url.parse();
    if !parsed.is_ok_and(|u| u.host().is_some_and(|h| !h.is_empty())) {
        return Err(format!("url {url:?} is not a URL with a host"));
    }
    key_of(&def.secret)?;
    if def.kinds.is_empty() {
        return Err(format!(
            "kinds is empty; name at least one of {}",
            KINDS.join(", ")
        ));
    }
    let mut kinds = Vec::new();
    for kind in def.kinds {
        if !KINDS.contains(&kind.as_str()) {
            return Err(format!(
                "kinds: {kind:?} is not a record kind; expected {}",
                KINDS.join(", ")
            ));
        }
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(match existing {
        None => Endpoint {
            game: game.to_string(),
            id: id.to_string(),
            url: url.to_string(),
            secret: def.secret,
            previous_secret: None,
            previous_until: None,
            kinds,
            delivered_through: feed_end,
            parked_reason: None,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            created_at: now,
        },
        Some(old) => {
            let rotated = old.secret != def.secret;
            Endpoint {
                url: url.to_string(),
                previous_secret: if rotated {
                    Some(old.secret.clone())
                } else {
                    old.previous_secret.clone()
                },
                previous_until: if rotated {
                    Some(now + ROTATION_OVERLAP_MS)
                } else {
                    old.previous_until
                },
                secret: def.secret,
                kinds,
                ..old
            }
        }
    })
}

/// The `webhook-signature` header of a message: `v1,<signature>` under the secret, and under
/// the previous one while it still signs, separated by a space. O(body).
pub(crate) fn signature(endpoint: &Endpoint, msg_id: &str, timestamp: i64, body: &[u8], now: i64) -> String {
    let mut secrets = vec![endpoint.secret.as_str()];
    if let (Some(previous), Some(until)) = (&endpoint.previous_secret, endpoint.previous_until)
        && now < until
    {
        secrets.push(previous);
    }
    secrets
        .into_iter()
        .filter_map(|s| key_of(s).ok())
        .map(|key| {
            let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length");
            mac.update(msg_id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body);
            format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What an attempt at delivering the record at `seq` came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The receiver answered 2xx.
    Delivered,
    /// It answered otherwise, or not in time, or could not be reached.
    Failed(String),
}

/// The endpoint after an attempt at the record at `seq` at `now`: delivered, it moves past it;
/// failed, it waits its backoff, or after `retries.max_attempts` it is parked. O(1).
pub(crate) fn after_attempt(
    mut e: Endpoint,
    seq: i64,
    outcome: Outcome,
    retries: &Retries,
    now: i64,
) -> Endpoint {
    match outcome {
        Outcome::Delivered => {
            e.delivered_through = seq;
            e.attempts = 0;
            e.next_attempt_at = 0;
            e.last_error = None;
        }
        Outcome::Failed(why) => {
            e.attempts += 1;
            if e.attempts >= retries.max_attempts {
                e.parked_reason = Some(format!(
                    "{} attempts at seq {seq} failed; the last: {why}",
                    e.attempts
                ));
            } else {
                let shift = u32::try_from(e.attempts - 1).unwrap_or(u32::MAX).min(20);
                e.next_attempt_at =
                    now.saturating_add(retries.backoff_ms.saturating_mul(1 << shift).min(MAX_BACKOFF_MS));
            }
            e.last_error = Some(why);
        }
    }
    e
}

/// The endpoint resumed: its attempts start again at the record it stopped at. O(1).
pub(crate) fn resumed(mut e: Endpoint) -> Endpoint {
    e.parked_reason = None;
    e.attempts = 0;
    e.next_attempt_at = 0;
    e
}

/// The endpoint's state as the API shows it.
pub(crate) fn view(e: &Endpoint, now: i64) -> serde_json::Value {
    serde_json::json!({
        "game": e.game,
        "endpoint_id": e.id,
        "url": e.url,
        "kinds": e.kinds,
        "state": if e.parked_reason.is_some() { "parked" } else { "active" },
        "parked_reason": e.parked_reason,
        "delivered_through": e.delivered_through,
        "attempts": e.attempts,
        "next_attempt_at": (e.next_attempt_at > now).then(|| crate::clock::format_rfc3339(e.next_attempt_at)),
        "last_error": e.last_error,
        "rotating_until": e.previous_until.filter(|u| *u > now).map(crate::clock::format_rfc3339),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        defined(
            "g",
            "e1",
            Definition {
                url: "http://127.0.0.1:9/hook".into(),
                secret: format!("whsec_{}", STANDARD.encode([7u8; 32])),
                kinds: vec!["overtaken".into(), "band_left".into(), "overtaken".into()],
            },
            None,
            41,
            1_000,
        )
        .unwrap()
    }

    /// The example of the Standard Webhooks specification signs to its published signature.
    #[test]
    fn signs_the_specifications_example() {
        let mut e = endpoint();
        e.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&e, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body, 0),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_definition_is_checked_and_a_new_secret_rotates() {
        let e = endpoint();
        assert_eq!(e.kinds, ["overtaken", "band_left"]);
        assert_eq!(e.delivered_through, 41);
        for (url, secret, kinds, words) in [
            ("ftp://x", "whsec_AAAA", vec!["overtaken"], "https://"),
            ("http://x", "nope", vec!["overtaken"], "whsec_"),
            ("http://[", e.secret.as_str(), vec!["overtaken"], "with a host"),
            ("http://x", "whsec_AAAA", vec!["overtaken"], "bytes"),
            ("http://x", e.secret.as_str(), vec![], "empty"),
            (
                "http://x",
                e.secret.as_str(),
                vec!["rewards"],
                "not a record kind",
            ),
        ] {
            let def = Definition {
                url: url.into(),
                secret: secret.into(),
                kinds: kinds.into_iter().map(String::from).collect(),
            };
            let why = defined("g", "e", def, None, 0, 0).unwrap_err();
            assert!(why.contains(words), "{why}");
        }
        let rotated = defined(
            "g",
            "e1",
            Definition {
                url: e.url.clone(),
                secret: format!("whsec_{}", STANDARD.encode([9u8; 32])),
                kinds: vec!["overtaken".into()],
            },
            Some(e.clone()),
            99,
            5_000,
        )
        .unwrap();
        assert_eq!(rotated.previous_secret.as_deref(), Some(e.secret.as_str()));
        assert_eq!(rotated.delivered_through, 41, "the delivery state stays");
        let both = signature(&rotated, "m", 1, b"{}", 5_001);
        assert_eq!(both.split(' ').count(), 2);
        let after = signature(&rotated, "m", 1, b"{}", 5_000 + ROTATION_OVERLAP_MS);
        assert_eq!(after.split(' ').count(), 1);
        assert_eq!(
            both.split(' ').nth(1),
            Some(signature(&e, "m", 1, b"{}", 0).as_str())
        );
    }

    #[test]
    fn failures_back_off_then_park_and_a_resume_starts_again() {
        let retries = Retries {
            max_attempts: 3,
            backoff_ms: 100,
            timeout: Duration::from_secs(1),
        };
        let e = endpoint();
        let e = after_attempt(e, 42, Outcome::Failed("500".into()), &retries, 1_000);
        assert_eq!((e.attempts, e.next_attempt_at), (1, 1_100));
        let e = after_attempt(e, 42, Outcome::Failed("timeout".into()), &retries, 1_100);
        assert_eq!((e.attempts, e.next_attempt_at), (2, 1_300));
        let e = after_attempt(e, 42, Outcome::Failed("refused".into()), &retries, 1_300);
        assert!(
            e.parked_reason
                .as_deref()
                .unwrap()
                .contains("3 attempts at seq 42")
        );
        let e = resumed(e);
        assert_eq!((e.attempts, e.parked_reason.as_deref()), (0, None));
        let e = after_attempt(e, 42, Outcome::Delivered, &retries, 2_000);
        assert_eq!(
            (e.delivered_through, e.attempts, e.last_error.as_deref()),
            (42, 0, None)
        );
    }
}
