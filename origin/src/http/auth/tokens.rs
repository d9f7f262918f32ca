//! The static bearer tokens of the config, each with its principal and an optional rate limit
//! (a token bucket).

use std::sync::Mutex;
use std::time::Instant;

use super::Principal;
use crate::config::TokenConfig;
use crate::sync::LockUnpoisoned;

/// A static token of the config: whom it names, and its rate limit when it has one.
pub(super) struct StaticToken {
    pub(super) principal: Principal,
    limiter: Option<Mutex<Bucket>>,
}

impl StaticToken {
    /// The token `config` defines, its bucket full.
    pub(super) fn new(config: &TokenConfig) -> StaticToken {
        let principal = Principal {
            name: config.name.clone(),
            role: config.role,
            games: config.games.clone(),
            player_id: config.player_id.clone(),
        };
        let limiter = config.rate_limit_per_second.map(|rate| {
            Mutex::new(Bucket {
                rate: f64::from(rate),
                tokens: f64::from(rate),
                last: Instant::now(),
            })
        });
        StaticToken { principal, limiter }
    }

    /// Whether a request with this token is within its rate limit, which it is then charged
    /// for. O(1).
    pub(super) fn take(&self) -> bool {
        self.limiter
            .as_ref()
            .is_none_or(|limiter| limiter.lock_unpoisoned().take())
    }
}

/// A token bucket: `rate` tokens a second, holding at most one second's worth.
struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn take(&mut self) -> bool {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
