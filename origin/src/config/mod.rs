//! The service's TOML configuration. Its keys are a contract: operators and tests rely on them.
//!
//! The first start writes `./standings-data/standings.toml` (mode 0600) with fresh random tokens
//! and a player JWT secret (for `standings viewer-link`),
//! so a service never starts with a default secret.
//!
//! The keys and their defaults are documented in `docs/configuration.md` (the `[live]`,
//! `[snapshots]` and `[cluster]` tables also in `docs/live.md`, `docs/snapshots.md` and
//! `docs/cluster.md`), and the defaults are written once, in the code below; a test holds the
//! TOML of the first three pages to the code. Each table has a file of its own here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod cluster;
mod error;
mod live;
mod snapshots;
mod tokens;

pub use self::cluster::ClusterConfig;
pub use self::error::ConfigError;
pub use self::live::LiveConfig;
pub use self::snapshots::SnapshotsConfig;
use self::tokens::all_games;
pub use self::tokens::{Role, TokenConfig};

/// The default data folder of the embedded setup.
pub const DEFAULT_DATA_DIR: &str = "./standings-data";
/// The default config file, written on first start.
pub const DEFAULT_CONFIG_PATH: &str = "./standings-data/standings.toml";
/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7400";

/// The whole configuration file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The address to listen on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// `sqlite://PATH` or `postgres://...`.
    pub database: String,
    /// When true, reads need no token.
    #[serde(default)]
    pub public_reads: bool,
    /// When set, player tokens may also be HS256 JWTs signed with this secret (`sub` = player id,
    /// `games` = the games it may read, `exp` required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_jwt_hs256_secret: Option<String>,
    /// The longest a player JWT may live: `exp` at most this far past its `iat`, and past now.
    #[serde(
        default = "default_jwt_lifetime",
        skip_serializing_if = "is_default_jwt_lifetime"
    )]
    pub player_jwt_max_lifetime_seconds: i64,
    /// How long a closed period stays in memory before it is read from storage instead.
    #[serde(default = "default_retention", skip_serializing_if = "is_default_retention")]
    pub closed_period_retention_seconds: i64,
    /// How long the feed keeps a record (`docs/feed.md`); a read from before the oldest kept is
    /// refused.
    #[serde(
        default = "default_feed_retention",
        skip_serializing_if = "is_default_feed_retention"
    )]
    pub feed_retention_seconds: i64,
    /// Failed attempts at one record before a webhook endpoint is parked (`docs/feed.md`).
    #[serde(
        default = "default_webhook_max_attempts",
        skip_serializing_if = "is_default_webhook_max_attempts"
    )]
    pub webhook_max_attempts: i64,
    /// The wait after a webhook delivery's first failure; each next one doubles (up to 10
    /// minutes).
    #[serde(
        default = "default_webhook_backoff_ms",
        skip_serializing_if = "is_default_webhook_backoff_ms"
    )]
    pub webhook_backoff_ms: i64,
    /// How long a webhook receiver has to answer a delivery.
    #[serde(
        default = "default_webhook_timeout_ms",
        skip_serializing_if = "is_default_webhook_timeout_ms"
    )]
    pub webhook_timeout_ms: u64,
    /// A PEM file of CA certificates webhook deliveries over https trust beside the Mozilla
    /// roots compiled in: a private CA's receivers. Read at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_ca_file: Option<String>,
    /// How many closed periods that left memory are kept restored once read, the most recently
    /// used (each costs its board's memory; one past it is read from storage again).
    #[serde(
        default = "default_closed_periods_cached",
        skip_serializing_if = "is_default_closed_periods_cached"
    )]
    pub closed_periods_cached: usize,
    /// How long a read given `min_position` waits for the boards to reach it before it is
    /// answered 503 `POSITION_NOT_REACHED` (read-your-writes, `docs/api.md`).
    #[serde(
        default = "default_min_position_wait",
        skip_serializing_if = "is_default_min_position_wait"
    )]
    pub min_position_wait_ms: u64,
    /// Besides the checkpoint written at every clean shutdown, begin one each time the log has
    /// grown by this many entries (default [`DEFAULT_CHECKPOINT_EVERY_EVENTS`]) and by enough to
    /// cost more to replay than the newest checkpoint's bytes to store, which bounds the replay
    /// after a crash; 0 writes them only at shutdown. Writes become visible only once the boards
    /// are encoded (linear in the members held); the bytes are stored while writes go on.
    #[serde(
        default = "default_checkpoint_every",
        skip_serializing_if = "is_default_checkpoint_every"
    )]
    pub checkpoint_every_events: u64,
    /// How many threads change a split board's score-range shards at the end of each group of
    /// writes; 0 (the default) is half the CPUs this process may use. With 1 its shards change
    /// in turn, event by event, on the applying thread.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shard_threads: usize,
    /// How many threads serve connections; 0 (the default) is one per CPU this process may use.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub http_threads: usize,
    /// Pin each connection thread to a CPU of its own when there is one CPU per thread (the
    /// default). Set it to false when other busy processes share this machine's CPUs.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub pin_http_threads: bool,
    /// How long a new connection, or a request whose first byte came, may take to send the
    /// whole request header before the connection is closed.
    #[serde(
        default = "default_header_read_timeout",
        skip_serializing_if = "is_default_header_read_timeout"
    )]
    pub header_read_timeout_seconds: u64,
    /// How long a keep-alive connection may stay idle between the end of an answer and the
    /// first byte of its next request before it is closed.
    #[serde(
        default = "default_idle_timeout",
        skip_serializing_if = "is_default_idle_timeout"
    )]
    pub idle_timeout_seconds: u64,
    /// The most connections open at once; one more is closed as it arrives. 0 (the default)
    /// derives it from the descriptor limit when the service starts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_connections: usize,
    /// Live subscriptions: their window, heartbeat, queues and limits.
    #[serde(default, skip_serializing_if = "LiveConfig::is_default")]
    pub live: LiveConfig,
    /// Snapshots published for the edge: how often, how long parts stay, how long heads are
    /// cached and when a board nobody asks for stops being published.
    #[serde(default, skip_serializing_if = "SnapshotsConfig::is_default")]
    pub snapshots: SnapshotsConfig,
    /// Several origins over one PostgreSQL database (`docs/cluster.md`); absent, this origin is
    /// the database's only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterConfig>,
    /// The static tokens.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
}

/// The most connection threads a config may ask for.
pub const MAX_HTTP_THREADS: usize = 1024;

/// Slow enough for a client on a poor mobile link, short enough that a slowloris client holds
/// a descriptor for seconds, not minutes.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECONDS: u64 = 10;

/// Long enough for a game server's connection to survive a quiet minute between submissions.
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u64 = 60;

fn default_header_read_timeout() -> u64 {
    DEFAULT_HEADER_READ_TIMEOUT_SECONDS
}

fn is_default_header_read_timeout(seconds: &u64) -> bool {
    *seconds == DEFAULT_HEADER_READ_TIMEOUT_SECONDS
}

fn default_idle_timeout() -> u64 {
    DEFAULT_IDLE_TIMEOUT_SECONDS
}

fn is_default_idle_timeout(seconds: &u64) -> bool {
    *seconds == DEFAULT_IDLE_TIMEOUT_SECONDS
}

/// A week.
pub const DEFAULT_CLOSED_PERIOD_RETENTION_SECONDS: i64 = 7 * 86_400;

/// A crash then replays at most about a million log entries after the checkpoint.
pub const DEFAULT_CHECKPOINT_EVERY_EVENTS: u64 = 1_000_000;

/// A day: a game client signs its player in again at least daily.
pub const DEFAULT_PLAYER_JWT_MAX_LIFETIME_SECONDS: i64 = 86_400;

fn default_jwt_lifetime() -> i64 {
    DEFAULT_PLAYER_JWT_MAX_LIFETIME_SECONDS
}

fn is_default_jwt_lifetime(seconds: &i64) -> bool {
    *seconds == DEFAULT_PLAYER_JWT_MAX_LIFETIME_SECONDS
}

fn default_checkpoint_every() -> u64 {
    DEFAULT_CHECKPOINT_EVERY_EVENTS
}

fn is_default_checkpoint_every(events: &u64) -> bool {
    *events == DEFAULT_CHECKPOINT_EVERY_EVENTS
}

/// The default of `min_position_wait_ms`.
pub const DEFAULT_MIN_POSITION_WAIT_MS: u64 = 1_000;

fn default_min_position_wait() -> u64 {
    DEFAULT_MIN_POSITION_WAIT_MS
}

fn is_default_min_position_wait(ms: &u64) -> bool {
    *ms == DEFAULT_MIN_POSITION_WAIT_MS
}

fn default_closed_periods_cached() -> usize {
    crate::boards::DEFAULT_CLOSED_CACHE
}

fn is_default_closed_periods_cached(n: &usize) -> bool {
    *n == crate::boards::DEFAULT_CLOSED_CACHE
}

/// Failed attempts before a webhook endpoint is parked, by default.
pub const DEFAULT_WEBHOOK_MAX_ATTEMPTS: i64 = 8;
/// The first backoff of a webhook delivery, by default.
pub const DEFAULT_WEBHOOK_BACKOFF_MS: i64 = 1_000;
/// How long a webhook receiver has to answer, by default.
pub const DEFAULT_WEBHOOK_TIMEOUT_MS: u64 = 10_000;

fn default_webhook_max_attempts() -> i64 {
    DEFAULT_WEBHOOK_MAX_ATTEMPTS
}

fn is_default_webhook_max_attempts(n: &i64) -> bool {
    *n == DEFAULT_WEBHOOK_MAX_ATTEMPTS
}

fn default_webhook_backoff_ms() -> i64 {
    DEFAULT_WEBHOOK_BACKOFF_MS
}

fn is_default_webhook_backoff_ms(ms: &i64) -> bool {
    *ms == DEFAULT_WEBHOOK_BACKOFF_MS
}

fn default_webhook_timeout_ms() -> u64 {
    DEFAULT_WEBHOOK_TIMEOUT_MS
}

fn is_default_webhook_timeout_ms(ms: &u64) -> bool {
    *ms == DEFAULT_WEBHOOK_TIMEOUT_MS
}

/// How long the feed keeps a record by default: a week.
pub const DEFAULT_FEED_RETENTION_SECONDS: i64 = 7 * 86_400;

fn default_feed_retention() -> i64 {
    DEFAULT_FEED_RETENTION_SECONDS
}

fn is_default_feed_retention(seconds: &i64) -> bool {
    *seconds == DEFAULT_FEED_RETENTION_SECONDS
}

fn default_retention() -> i64 {
    DEFAULT_CLOSED_PERIOD_RETENTION_SECONDS
}

fn is_default_retention(seconds: &i64) -> bool {
    *seconds == DEFAULT_CLOSED_PERIOD_RETENTION_SECONDS
}

/// Whether a number key holds its default, 0 (then it is not written out).
fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

pub(super) fn default_true() -> bool {
    true
}

pub(super) fn is_true(b: &bool) -> bool {
    *b
}

fn default_listen() -> String {
    DEFAULT_LISTEN.into()
}

/// Checks a `listen` address (an IP address and a port), as the config and `--listen` take it.
pub fn check_listen(listen: &str) -> Result<(), String> {
    listen
        .parse::<std::net::SocketAddr>()
        .map(|_| ())
        .map_err(|e| format!("listen = {listen:?} is not an address with a port (as 127.0.0.1:7400): {e}"))
}

/// Checks a `database` URL's scheme, as the config and `--database` take it.
pub fn check_database(database: &str) -> Result<(), String> {
    if ["sqlite:", "postgres:", "postgresql:"]
        .iter()
        .any(|scheme| database.starts_with(scheme))
    {
        Ok(())
    } else {
        Err(format!(
            "database = {database:?} must start with sqlite://, postgres:// or postgresql://"
        ))
    }
}

impl Config {
    /// Parses and checks a configuration.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: origin.to_path_buf(),
            source,
        })?;
        config.check().map_err(|why| ConfigError::Invalid {
            path: origin.to_path_buf(),
            why,
        })?;
        Ok(config)
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    fn check(&self) -> Result<(), String> {
        check_listen(&self.listen)?;
        check_database(&self.database)?;
        if self.closed_periods_cached == 0 {
            return Err("closed_periods_cached must be at least 1".into());
        }
        let mut secrets = std::collections::HashSet::new();
        for token in &self.tokens {
            if token.secret.len() < 16 {
                return Err(format!(
                    "token {:?}: the secret must be at least 16 characters",
                    token.name
                ));
            }
            if !secrets.insert(token.secret.as_str()) {
                return Err(format!(
                    "token {:?}: another token has the same secret",
                    token.name
                ));
            }
            if token.games.is_empty() {
                return Err(format!(
                    "token {:?}: games is empty; use [\"*\"] for all",
                    token.name
                ));
            }
            match (token.role, &token.player_id) {
                (Role::Player, None) => {
                    return Err(format!(
                        "token {:?}: role = \"player\" needs a player_id",
                        token.name
                    ));
                }
                (Role::Player, Some(id)) => standings_core::check_id("player_id", id)
                    .map_err(|e| format!("token {:?}: {e}", token.name))?,
                (_, Some(_)) => {
                    return Err(format!(
                        "token {:?}: only player tokens carry a player_id",
                        token.name
                    ));
                }
                (_, None) => {}
            }
            if token.rate_limit_per_second == Some(0) {
                return Err(format!(
                    "token {:?}: rate_limit_per_second must be at least 1",
                    token.name
                ));
            }
        }
        if self.shard_threads > standings_core::MAX_SHARDS {
            return Err(format!(
                "shard_threads = {} is more than {}, the most shards a board has; 0 runs half the CPUs",
                self.shard_threads,
                standings_core::MAX_SHARDS
            ));
        }
        if self.http_threads > MAX_HTTP_THREADS {
            return Err(format!(
                "http_threads = {} is more than {MAX_HTTP_THREADS}; 0 runs one per CPU",
                self.http_threads
            ));
        }
        for (key, seconds) in [
            ("header_read_timeout_seconds", self.header_read_timeout_seconds),
            ("idle_timeout_seconds", self.idle_timeout_seconds),
        ] {
            if seconds == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        if self.closed_period_retention_seconds < 0 {
            return Err("closed_period_retention_seconds must not be negative".into());
        }
        if self.feed_retention_seconds < 1 {
            return Err("feed_retention_seconds must be at least 1".into());
        }
        if self.webhook_max_attempts < 1 {
            return Err("webhook_max_attempts must be at least 1".into());
        }
        if self.webhook_backoff_ms < 1 {
            return Err("webhook_backoff_ms must be at least 1".into());
        }
        if self.webhook_timeout_ms < 1 {
            return Err("webhook_timeout_ms must be at least 1".into());
        }
        if let Some(path) = &self.webhook_ca_file {
            crate::feed::delivery::extra_roots(path)?;
        }
        if let Some(secret) = &self.player_jwt_hs256_secret
            && secret.len() < 32
        {
            return Err("player_jwt_hs256_secret must be at least 32 characters".into());
        }
        if self.player_jwt_max_lifetime_seconds < 1 {
            return Err("player_jwt_max_lifetime_seconds must be at least 1".into());
        }
        self.live.check()?;
        if let Some(cluster) = &self.cluster {
            if self.database.starts_with("sqlite:") {
                return Err(format!(
                    "[cluster] needs PostgreSQL: database = {:?} is SQLite, which one process owns; remove [cluster] or use postgres://",
                    self.database
                ));
            }
            cluster.check()?;
        }
        self.snapshots.check()
    }

    /// The embedded default: SQLite under `data_dir`, fresh random admin and service tokens.
    pub fn fresh_default(data_dir: &Path) -> Result<Config, ConfigError> {
        let db = data_dir.join("standings.db");
        Ok(Config {
            listen: DEFAULT_LISTEN.into(),
            database: format!("sqlite://{}", db.display()),
            public_reads: false,
            // So that the viewer can read with a short-lived player token (`viewer-link`)
            // rather than a static token that writes.
            player_jwt_hs256_secret: Some(random_secret()?),
            player_jwt_max_lifetime_seconds: DEFAULT_PLAYER_JWT_MAX_LIFETIME_SECONDS,
            closed_period_retention_seconds: DEFAULT_CLOSED_PERIOD_RETENTION_SECONDS,
            feed_retention_seconds: DEFAULT_FEED_RETENTION_SECONDS,
            webhook_max_attempts: DEFAULT_WEBHOOK_MAX_ATTEMPTS,
            webhook_backoff_ms: DEFAULT_WEBHOOK_BACKOFF_MS,
            webhook_timeout_ms: DEFAULT_WEBHOOK_TIMEOUT_MS,
            webhook_ca_file: None,
            closed_periods_cached: crate::boards::DEFAULT_CLOSED_CACHE,
            min_position_wait_ms: DEFAULT_MIN_POSITION_WAIT_MS,
            checkpoint_every_events: DEFAULT_CHECKPOINT_EVERY_EVENTS,
            shard_threads: 0,
            http_threads: 0,
            pin_http_threads: true,
            header_read_timeout_seconds: DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
            idle_timeout_seconds: DEFAULT_IDLE_TIMEOUT_SECONDS,
            max_connections: 0,
            live: LiveConfig::default(),
            snapshots: SnapshotsConfig::default(),
            cluster: None,
            tokens: vec![
                TokenConfig {
                    name: "admin".into(),
                    secret: random_secret()?,
                    role: Role::Admin,
                    games: all_games(),
                    player_id: None,
                    rate_limit_per_second: None,
                },
                TokenConfig {
                    name: "game-server".into(),
                    secret: random_secret()?,
                    role: Role::Service,
                    games: all_games(),
                    player_id: None,
                    rate_limit_per_second: None,
                },
            ],
        })
    }

    /// Loads the config at `path`, or on first start (no `--config` given and no file at the
    /// default path) writes a fresh default there with mode 0600. Returns the config, its path
    /// and whether it was just written.
    pub fn load_or_init(explicit: Option<&Path>) -> Result<(Config, PathBuf, bool), ConfigError> {
        if let Some(path) = explicit {
            return Ok((Config::load(path)?, path.to_path_buf(), false));
        }
        let path = PathBuf::from(DEFAULT_CONFIG_PATH);
        if path.exists() {
            return Ok((Config::load(&path)?, path, false));
        }
        let dir = PathBuf::from(DEFAULT_DATA_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| ConfigError::Create {
            path: dir.clone(),
            source,
        })?;
        let config = Config::fresh_default(&dir)?;
        let text = toml::to_string_pretty(&config).map_err(ConfigError::Serialize)?;
        write_private(&path, &text)?;
        Ok((config, path, true))
    }
}

/// Writes a file readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<(), ConfigError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path).map_err(|source| ConfigError::Create {
        path: path.to_path_buf(),
        source,
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// 32 random bytes from the operating system, as 64 hex characters.
pub fn random_secret() -> Result<String, ConfigError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(ConfigError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "database = \"sqlite://./s.db\"\n";

    fn parse(extra: &str) -> Result<Config, ConfigError> {
        Config::parse(&format!("{BASE}{extra}"), Path::new("standings.toml"))
    }

    /// The TOML blocks of a page of the docs.
    fn toml_blocks(page: &str) -> Vec<toml::Table> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs").join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        text.split("```toml\n")
            .skip(1)
            .map(|rest| rest.split("```").next().unwrap())
            .map(|block| toml::from_str(block).unwrap_or_else(|e| panic!("{page}: {e}\n{block}")))
            .collect()
    }

    /// Every default the docs show in a TOML block (configuration.md, live.md, snapshots.md) is
    /// the code's, and every key they show in `[live]`, `[snapshots]` and `[cluster]` is a
    /// setting: the defaults are written in the code, and the pages are held to them here.
    #[test]
    fn the_documented_defaults_are_the_code_s() {
        let cluster: ClusterConfig =
            toml::from_str("node_id = \"a\"\nadvertise_url = \"http://a:1\"\nsecret = \"s\"\n").unwrap();
        let config = parse("").unwrap();
        fn table<T: Serialize>(section: &T) -> toml::Table {
            toml::Table::try_from(section).unwrap()
        }
        let sections: [(&str, toml::Table); 3] = [
            ("live", table(&config.live)),
            ("snapshots", table(&config.snapshots)),
            ("cluster", table(&cluster)),
        ];
        let mut checked = 0;
        for page in ["configuration.md", "live.md", "snapshots.md"] {
            for block in toml_blocks(page) {
                for (section, code) in &sections {
                    let Some(toml::Value::Table(shown)) = block.get(*section) else {
                        continue;
                    };
                    for (key, value) in shown {
                        let default = code
                            .get(key)
                            .unwrap_or_else(|| panic!("{page}: [{section}] {key} is not a setting"));
                        // Per-node values (an id, an address, a secret) are examples, not defaults.
                        if !(*section == "cluster" && value.is_str()) {
                            assert_eq!(value, default, "{page}: [{section}] {key}");
                            checked += 1;
                        }
                    }
                }
                if let Some(shown) = block.get("player_jwt_max_lifetime_seconds") {
                    assert_eq!(
                        shown.as_integer(),
                        Some(config.player_jwt_max_lifetime_seconds),
                        "{page}"
                    );
                    checked += 1;
                }
                if let Some(shown) = block.get("public_reads") {
                    assert_eq!(shown.as_bool(), Some(config.public_reads), "{page}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "{checked} documented defaults checked");
    }

    /// A `[cluster]` table's settings are checked at start, each refusal naming the setting; an
    /// advertised URL is a scheme, host and port, since the other nodes append paths to it.
    #[test]
    fn cluster_settings_are_checked_at_start() {
        let cluster = |line: &str| {
            Config::parse(
                &format!(
                    "database = \"postgres://db/x\"\n[cluster]\nnode_id = \"a\"\nsecret = \"a-cluster-secret-of-some-length\"\n{line}\n"
                ),
                Path::new("s.toml"),
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        assert_eq!(cluster("advertise_url = \"http://10.0.0.5:7400\""), Ok(()));
        assert_eq!(cluster("advertise_url = \"http://10.0.0.5:7400/\""), Ok(()));
        for (url, says) in [
            ("http://10.0.0.5:7400/standings", "no path or query"),
            ("http://10.0.0.5:7400/?x=1", "no path or query"),
            ("ftp://10.0.0.5", "must be an http:// URL"),
        ] {
            let refused = cluster(&format!("advertise_url = {url:?}")).unwrap_err();
            assert!(
                refused.contains(says) && refused.contains(url),
                "{url}: {refused}"
            );
        }
        let url = "advertise_url = \"http://10.0.0.5:7400\"";
        assert_eq!(cluster(&format!("{url}\nstandby_reads_max_lag_ms = 0")), Ok(()));
        let refused = cluster(&format!("{url}\nstandby_reads_max_lag_ms = 60001")).unwrap_err();
        assert!(
            refused.contains("cluster.standby_reads_max_lag_ms = 60001 must be from 0 to 60000"),
            "{refused}"
        );
    }

    /// A database URL names SQLite or PostgreSQL by either of PostgreSQL's schemes (libpq and
    /// sqlx take both); any other scheme is refused, naming the ones taken.
    #[test]
    fn the_database_url_takes_both_postgresql_schemes() {
        for url in ["sqlite://./s.db", "postgres://db/x", "postgresql://app@db:5432/x"] {
            let config = Config::parse(&format!("database = {url:?}\n"), Path::new("s.toml")).unwrap();
            assert_eq!(config.database, url);
        }
        let refused = Config::parse("database = \"mysql://db/x\"\n", Path::new("s.toml"))
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(
            refused.contains("must start with sqlite://, postgres:// or postgresql://"),
            "{refused}"
        );
        assert!(parse("closed_periods_cached = 0\n").is_err());
        assert_eq!(parse("").unwrap().closed_periods_cached, 16);
    }

    /// The `[live]` table's new limits default as documented and are checked by name.
    #[test]
    fn live_limits_default_and_are_checked() {
        let live = parse("").unwrap().live;
        assert_eq!(
            (
                live.max_subscribers_per_address,
                live.max_window_share_percent,
                live.stop_grace_seconds
            ),
            (100, 50, 3)
        );
        for (table, says) in [
            ("max_window_share_percent = 0", "must be from 1 to 100"),
            ("max_window_share_percent = 101", "must be from 1 to 100"),
            ("stop_grace_seconds = 0", "must be from 1 to 60"),
            (
                "max_subscribers_per_address = 0",
                "live.max_subscribers_per_address must be at least 1",
            ),
        ] {
            let refused = parse(&format!("[live]\n{table}\n"))
                .map_err(|e| crate::chain::Chain(&e).to_string())
                .unwrap_err();
            assert!(refused.contains(says), "{table}: {refused}");
        }
    }

    /// `role = "edge"` is read as [`Role::Edge`], which only reads and introspects, and like
    /// every role but `player` it carries no player_id.
    #[test]
    fn an_edge_token_reads_and_introspects_only() {
        let token = "[[tokens]]\nname = \"edge\"\nsecret = \"edge-secret-0000000000\"\nrole = \"edge\"\ngames = [\"arena-clash\"]\n";
        let config = parse(token).unwrap();
        let role = config.tokens[0].role;
        assert_eq!(role, Role::Edge);
        assert_eq!(role.to_string(), "edge");
        assert!(role.can_introspect() && Role::Admin.can_introspect());
        assert!(!role.can_write() && !role.can_moderate() && !role.can_define_boards());
        for other in [Role::Player, Role::Service, Role::Moderator] {
            assert!(!other.can_introspect(), "{other}");
        }
        let with_player = parse(&format!("{token}player_id = \"p-ava\"\n"))
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(
            with_player.contains("only player tokens carry a player_id"),
            "{with_player}"
        );
    }

    /// Without a `[snapshots]` table: published every second, parts kept a minute, heads
    /// cached a second, boards followed ten minutes; each key can be set, and a value out of
    /// range (a retention shorter than a head's max-age among them) is refused by name.
    #[test]
    fn snapshots_default_and_are_checked() {
        assert_eq!(parse("").unwrap().snapshots, SnapshotsConfig::default());
        let config = parse(
            "[snapshots]\ninterval_ms = 250\nretention_seconds = 30\nhead_max_age_seconds = 2\nidle_seconds = 60\nmax_instances = 100\nmax_instances_per_board = 4\nmax_patch_bytes = 0\nmax_base_age_seconds = 30\n",
        )
        .unwrap();
        assert_eq!(
            config.snapshots,
            SnapshotsConfig {
                interval_ms: 250,
                retention_seconds: 30,
                head_max_age_seconds: 2,
                idle_seconds: 60,
                max_instances: 100,
                max_instances_per_board: 4,
                max_patch_bytes: 0,
                max_base_age_seconds: 30,
            }
        );
        for (table, says) in [
            ("interval_ms = 5", "snapshots.interval_ms = 5 must be from 10"),
            (
                "retention_seconds = 1\nhead_max_age_seconds = 5",
                "snapshots.retention_seconds = 1 must be at least 1 and at least head_max_age_seconds (5)",
            ),
            ("retention_seconds = 0", "snapshots.retention_seconds = 0"),
            ("idle_seconds = 0", "snapshots.idle_seconds = 0 must be from 1"),
            ("max_instances = 0", "must each be at least 1"),
            ("max_instances_per_board = 0", "must each be at least 1"),
            (
                "max_patch_bytes = 100",
                "snapshots.max_patch_bytes = 100 must be 0",
            ),
            ("interval = 5", "unknown field `interval`"),
        ] {
            let refused = parse(&format!("[snapshots]\n{table}\n"))
                .map_err(|e| crate::chain::Chain(&e).to_string())
                .unwrap_err();
            assert!(refused.contains(says), "{table}: {refused}");
        }
    }

    /// Without the keys: one connection thread per CPU, pinned; both can be set, and a thread
    /// count past the limit or of the wrong type is refused by name. So is a count of shard
    /// threads past the most shards.
    #[test]
    fn connection_threads_default_to_one_per_cpu_pinned() {
        let config = parse("").unwrap();
        assert_eq!((config.http_threads, config.pin_http_threads), (0, true));
        let config = parse("http_threads = 3\npin_http_threads = false\n").unwrap();
        assert_eq!((config.http_threads, config.pin_http_threads), (3, false));
        assert_eq!(parse("shard_threads = 4\n").unwrap().shard_threads, 4);
        let refused = parse("shard_threads = 65\n")
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(
            refused.contains("shard_threads = 65 is more than 64"),
            "{refused}"
        );

        let too_many = parse("http_threads = 5000\n")
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(
            too_many.contains("http_threads = 5000 is more than 1024"),
            "{too_many}"
        );
        let negative = parse("http_threads = -1\n")
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(negative.contains("http_threads"), "{negative}");
    }

    /// Player JWTs live a day at most unless the config says otherwise; a bound under a second
    /// is refused by name.
    #[test]
    fn player_jwts_live_a_day_at_most_by_default() {
        assert_eq!(parse("").unwrap().player_jwt_max_lifetime_seconds, 86_400);
        let config = parse("player_jwt_max_lifetime_seconds = 600\n").unwrap();
        assert_eq!(config.player_jwt_max_lifetime_seconds, 600);
        let zero = parse("player_jwt_max_lifetime_seconds = 0\n")
            .map_err(|e| crate::chain::Chain(&e).to_string())
            .unwrap_err();
        assert!(
            zero.contains("player_jwt_max_lifetime_seconds must be at least 1"),
            "{zero}"
        );
    }

    /// Without the keys: a 10 s header deadline, 60 s of keep-alive idleness and a cap derived
    /// from the descriptor limit (0); each can be set, and a zero timeout is refused by name.
    /// (The serve code turns them into the connections' limits.)
    #[test]
    fn connection_limits_default_to_10_s_60_s_and_a_derived_cap() {
        let config = parse("").unwrap();
        assert_eq!(
            (
                config.header_read_timeout_seconds,
                config.idle_timeout_seconds,
                config.max_connections
            ),
            (10, 60, 0)
        );
        let config =
            parse("header_read_timeout_seconds = 1\nidle_timeout_seconds = 2\nmax_connections = 50\n")
                .unwrap();
        assert_eq!(
            (
                config.header_read_timeout_seconds,
                config.idle_timeout_seconds,
                config.max_connections
            ),
            (1, 2, 50)
        );
        for key in ["header_read_timeout_seconds", "idle_timeout_seconds"] {
            let zero = parse(&format!("{key} = 0\n"))
                .map_err(|e| crate::chain::Chain(&e).to_string())
                .unwrap_err();
            assert!(zero.contains(&format!("{key} must be at least 1")), "{zero}");
        }
    }
}
