//! The worker's settings, parsed once from its vars and secrets (`wrangler.toml` `[vars]`,
//! `.dev.vars` locally, `wrangler secret put` in production).

use core::fmt;

/// Every setting of the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `ORIGIN_URL`: where the origin listens, without a trailing `/`.
    pub origin_url: String,
    /// `EDGE_TOKEN` (secret): the origin's `edge` token, sent on every request the edge makes
    /// on its own behalf (heads, parts, friends, boards, introspection). Empty: none is sent.
    pub edge_token: String,
    /// `PLAYER_JWT_HS256_SECRET` (secret, optional): verifies player JWTs in the worker.
    /// Without it, JWTs are introspected at the origin like any other token.
    pub jwt_secret: Option<Vec<u8>>,
    /// `PLAYER_JWT_MAX_LIFETIME_SECONDS` (default 86400), as at the origin.
    pub jwt_max_lifetime_seconds: i64,
    /// `PUBLIC_READS` (`true`/`false`, default `false`): reads without a token are allowed.
    pub public_reads: bool,
    /// `DECODED_CACHE_BYTES` (default 32 MiB): the budget of decoded parts in one isolate.
    pub decoded_cache_bytes: usize,
    /// `MAX_SUBREQUESTS` (default 40): the most subrequests one read may make before it is
    /// forwarded to the origin instead.
    pub max_subrequests: usize,
    /// `MAX_PARTS_PER_READ` (default 96, at least 16): the most chunks one read may fetch
    /// and decode; a read that needs more is forwarded, so its CPU stays within the free
    /// plan's 10 ms (BENCHMARKS.md has the cost per part).
    pub max_parts_per_read: usize,
}

/// A var that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The var.
    pub name: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the worker var {} {}", self.name, self.problem)
    }
}

impl core::error::Error for ConfigError {}

impl Config {
    /// Reads the settings through `var` (the value of a var or secret, `None` when unset).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let origin_url = var("ORIGIN_URL")
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| ConfigError {
                name: "ORIGIN_URL",
                problem: "is not set; set it to the origin's base URL, e.g. http://127.0.0.1:8080".into(),
            })?;
        if !(origin_url.starts_with("http://") || origin_url.starts_with("https://")) {
            return Err(ConfigError {
                name: "ORIGIN_URL",
                problem: format!("is {origin_url:?}; it must start with http:// or https://"),
            });
        }
        let number = |name: &'static str, default: u64| -> Result<u64, ConfigError> {
            match var(name).map(|v| v.trim().to_string()) {
                None => Ok(default),
                Some(v) if v.is_empty() => Ok(default),
                Some(v) => v.parse::<u64>().map_err(|_| ConfigError {
                    name,
                    problem: format!("is {v:?}; it must be a whole number"),
                }),
            }
        };
        let public_reads = match var("PUBLIC_READS").as_deref().map(str::trim) {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError {
                    name: "PUBLIC_READS",
                    problem: format!("is {other:?}; it must be \"true\" or \"false\""),
                });
            }
        };
        let max_subrequests = number("MAX_SUBREQUESTS", 40)?;
        if max_subrequests < 4 {
            return Err(ConfigError {
                name: "MAX_SUBREQUESTS",
                problem: format!(
                    "is {max_subrequests}; a read needs at least 4 (auth, head, manifest, a part)"
                ),
            });
        }
        // A top page of 1,000 entries needs 8 rank chunks at the smallest chunk size, so 16
        // leaves every top, rank and nearby read answerable at the edge.
        let max_parts_per_read = number("MAX_PARTS_PER_READ", 96)?;
        if max_parts_per_read < 16 {
            return Err(ConfigError {
                name: "MAX_PARTS_PER_READ",
                problem: format!(
                    "is {max_parts_per_read}; it must be at least 16, what the largest top page needs"
                ),
            });
        }
        Ok(Config {
            origin_url,
            edge_token: var("EDGE_TOKEN")
                .map(|t| t.trim().to_string())
                .unwrap_or_default(),
            jwt_secret: var("PLAYER_JWT_HS256_SECRET")
                .filter(|s| !s.is_empty())
                .map(String::into_bytes),
            jwt_max_lifetime_seconds: i64::try_from(number("PLAYER_JWT_MAX_LIFETIME_SECONDS", 86_400)?)
                .unwrap_or(i64::MAX),
            public_reads,
            decoded_cache_bytes: usize::try_from(number("DECODED_CACHE_BYTES", 32 * 1024 * 1024)?)
                .unwrap_or(usize::MAX),
            max_subrequests: usize::try_from(max_subrequests).unwrap_or(usize::MAX),
            max_parts_per_read: usize::try_from(max_parts_per_read).unwrap_or(usize::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    /// Only ORIGIN_URL is needed; everything else has the documented default.
    #[test]
    fn defaults_apply() {
        let config = Config::from_vars(vars(&[("ORIGIN_URL", "http://127.0.0.1:8080/")])).unwrap();
        assert_eq!(
            config,
            Config {
                origin_url: "http://127.0.0.1:8080".into(),
                edge_token: String::new(),
                jwt_secret: None,
                jwt_max_lifetime_seconds: 86_400,
                public_reads: false,
                decoded_cache_bytes: 33_554_432,
                max_subrequests: 40,
                max_parts_per_read: 96,
            }
        );
    }

    /// A missing origin, a bad flag or a bad number is refused with the var's name.
    #[test]
    fn bad_vars_are_named() {
        assert_eq!(Config::from_vars(vars(&[])).unwrap_err().name, "ORIGIN_URL");
        let bad = |pairs: &[(&str, &str)]| {
            let mut all = vec![("ORIGIN_URL", "http://o")];
            all.extend_from_slice(pairs);
            Config::from_vars(vars(&all)).unwrap_err().to_string()
        };
        assert_eq!(
            bad(&[("PUBLIC_READS", "yes")]),
            "the worker var PUBLIC_READS is \"yes\"; it must be \"true\" or \"false\""
        );
        assert!(bad(&[("DECODED_CACHE_BYTES", "1e6")]).contains("DECODED_CACHE_BYTES"));
        assert!(bad(&[("MAX_SUBREQUESTS", "2")]).contains("at least 4"));
        assert!(bad(&[("MAX_PARTS_PER_READ", "15")]).contains("at least 16"));
        assert!(
            Config::from_vars(vars(&[("ORIGIN_URL", "127.0.0.1:8080")]))
                .unwrap_err()
                .to_string()
                .contains("http://")
        );
    }
}
