//! How long a connection may keep the service waiting, and how many may be open at once: the
//! cap is derived from the descriptor limit when the config sets none.

use std::time::Duration;

use crate::config::Config;

/// How long a connection may keep the service waiting, and how many may be open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// From a new connection, or a request's first byte, to the end of the request's header.
    pub header_read_timeout: Duration,
    /// From the end of an answer to the first byte of the next request on the connection.
    pub idle_timeout: Duration,
    /// The most connections open at once; one more is closed as it arrives.
    pub max_connections: usize,
}

/// Descriptors kept back beyond those open at start: the database pool reopening a broken
/// connection, SQLite's temporary files, the listener's next `accept` before a refusal closes
/// it, and whatever else the process opens while it runs.
const DESCRIPTOR_RESERVE: usize = 64;

/// The cap used when the descriptor limit cannot be read.
const FALLBACK_MAX_CONNECTIONS: usize = 1_000;

impl Limits {
    /// The connection limits `config` sets, with the cap derived now ([`Limits::derived_cap`])
    /// when it sets none.
    pub fn of(config: &Config) -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(config.header_read_timeout_seconds),
            idle_timeout: Duration::from_secs(config.idle_timeout_seconds),
            max_connections: match config.max_connections {
                0 => Limits::derived_cap(),
                n => n,
            },
        }
    }

    /// The connection cap for a process allowed `limit` descriptors of which `open` are in use
    /// (the store's connections among them): what is left after `DESCRIPTOR_RESERVE`, and at
    /// least one.
    pub fn cap_for(limit: usize, open: usize) -> usize {
        limit
            .saturating_sub(open)
            .saturating_sub(DESCRIPTOR_RESERVE)
            .max(1)
    }

    /// The cap for this process now: [`Limits::cap_for`] its soft `RLIMIT_NOFILE` and the
    /// descriptors it has open, both read from `/proc` (no `unsafe` and no extra crate for one
    /// number at start); `FALLBACK_MAX_CONNECTIONS` where they cannot be read.
    pub fn derived_cap() -> usize {
        let limit = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| open_files_limit(&text));
        let open = std::fs::read_dir("/proc/self/fd").map(|dir| dir.count()).ok();
        match (limit, open) {
            (Some(limit), Some(open)) => Limits::cap_for(limit, open),
            _ => FALLBACK_MAX_CONNECTIONS,
        }
    }
}

/// The soft limit on open files in the text of `/proc/self/limits`; `unlimited` is taken as a
/// million.
fn open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(1_000_000);
    }
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cap is the descriptor limit less those open and the reserve, and the soft limit is
    /// read from `/proc/self/limits` as Linux writes it.
    #[test]
    fn the_connection_cap_leaves_descriptors_in_reserve() {
        assert_eq!(Limits::cap_for(1024, 40), 1024 - 40 - DESCRIPTOR_RESERVE);
        assert_eq!(Limits::cap_for(80, 40), 1);
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             63494                63494                processes \n\
                    Max open files            1024                 524288               files     \n";
        assert_eq!(open_files_limit(text), Some(1024));
        let unlimited = "Max open files            unlimited            unlimited            files     \n";
        assert_eq!(open_files_limit(unlimited), Some(1_000_000));
        assert_eq!(open_files_limit("Max processes 5 5 processes\n"), None);
        assert!(Limits::derived_cap() >= 1);
    }

    /// A config's limits: its timeouts, and its cap, derived from the descriptor limit when it
    /// sets none.
    #[test]
    fn a_configs_limits_are_its_timeouts_and_its_cap() {
        let parse = |text: &str| {
            let text = format!("database = \"sqlite://./s.db\"\n{text}");
            Config::parse(&text, std::path::Path::new("standings.toml")).unwrap()
        };
        let limits = Limits::of(&parse(""));
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.idle_timeout, Duration::from_secs(60));
        assert!(limits.max_connections >= 1);
        let limits = Limits::of(&parse(
            "header_read_timeout_seconds = 1\nidle_timeout_seconds = 2\nmax_connections = 50\n",
        ));
        assert_eq!(
            (
                limits.header_read_timeout.as_secs(),
                limits.idle_timeout.as_secs(),
                limits.max_connections
            ),
            (1, 2, 50)
        );
    }
}
