//! The `[live]` table (`docs/live.md`).

use serde::{Deserialize, Serialize};

/// The `[live]` table: how subscriptions are coalesced and fed, and how many may be open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LiveConfig {
    /// The coalescing window: the changes within one go out as one delta per view.
    pub window_ms: u64,
    /// How often an otherwise quiet stream gets a `heartbeat`, so proxies keep it open.
    pub heartbeat_seconds: u64,
    /// Messages queued for one subscriber; one more and it is sent `resync` and closed.
    pub queue_messages: usize,
    /// Subscriptions open at once under one token (a static token's name, or a player's JWT
    /// subject); one more is answered 429.
    pub max_subscribers_per_token: usize,
    /// Subscriptions open at once on one board (all its periods and views); one more is 429.
    pub max_subscribers_per_board: usize,
    /// Subscriptions open at once in all; one more is answered 503.
    pub max_subscribers: usize,
    /// Subscriptions without a token (with `public_reads`) open at once from one address; one
    /// more is answered 429.
    pub max_subscribers_per_address: usize,
    /// The share of each window (1 to 100 %) the windows' work may take on average before a
    /// subscription that adds a view nobody watches yet is answered 503 `LIVE_BUSY`.
    pub max_window_share_percent: u8,
    /// How long a stop gives streams after `going_away` before it drops their connections.
    pub stop_grace_seconds: u64,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            window_ms: 250,
            heartbeat_seconds: 15,
            queue_messages: 64,
            max_subscribers_per_token: 1_000,
            max_subscribers_per_board: 20_000,
            max_subscribers: 50_000,
            max_subscribers_per_address: 100,
            max_window_share_percent: 50,
            stop_grace_seconds: 3,
        }
    }
}

impl LiveConfig {
    pub(super) fn is_default(&self) -> bool {
        *self == LiveConfig::default()
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if !(10..=60_000).contains(&self.window_ms) {
            return Err(format!(
                "live.window_ms = {} must be from 10 to 60000",
                self.window_ms
            ));
        }
        if !(1..=3_600).contains(&self.heartbeat_seconds) {
            return Err(format!(
                "live.heartbeat_seconds = {} must be from 1 to 3600",
                self.heartbeat_seconds
            ));
        }
        if !(2..=65_536).contains(&self.queue_messages) {
            return Err(format!(
                "live.queue_messages = {} must be from 2 to 65536",
                self.queue_messages
            ));
        }
        for (key, n) in [
            ("max_subscribers_per_token", self.max_subscribers_per_token),
            ("max_subscribers_per_board", self.max_subscribers_per_board),
            ("max_subscribers", self.max_subscribers),
            ("max_subscribers_per_address", self.max_subscribers_per_address),
        ] {
            if n == 0 {
                return Err(format!("live.{key} must be at least 1"));
            }
        }
        if !(1..=100).contains(&self.max_window_share_percent) {
            return Err(format!(
                "live.max_window_share_percent = {} must be from 1 to 100",
                self.max_window_share_percent
            ));
        }
        if !(1..=60).contains(&self.stop_grace_seconds) {
            return Err(format!(
                "live.stop_grace_seconds = {} must be from 1 to 60",
                self.stop_grace_seconds
            ));
        }
        Ok(())
    }
}
