//! The Standings process under test: its config and data folder, starting it, waiting until it
//! is ready, reading its resident memory, and stopping it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::HttpConn;

/// The admin token of the generated config.
pub const ADMIN_TOKEN: &str = "loadgen-admin-secret-0000000000";
/// The service token of the generated config, used for every submission and read.
pub const SERVICE_TOKEN: &str = "loadgen-service-secret-00000000";

/// Where the service keeps its events.
pub enum Database {
    /// A SQLite file in the run's folder.
    Sqlite,
    /// A fresh database on a PostgreSQL server, dropped at the end.
    Postgres {
        /// A URL of an existing database on the server, to create and drop ours from.
        admin_url: String,
        /// Our database's name.
        name: String,
    },
    /// A PostgreSQL database someone else made and drops, by its URL: the nodes of a cluster
    /// share one.
    Shared(String),
}

/// A configured service: binary, folder, config, and the running process if any.
pub struct Service {
    binary: PathBuf,
    /// The run's folder (config, log, SQLite file).
    pub dir: PathBuf,
    config: PathBuf,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    database: Database,
    database_url: String,
    child: Option<Child>,
    keep_dir: bool,
}

impl Service {
    /// Writes a config for a fresh database in a fresh folder, listening on a free port.
    pub fn prepare(binary: &Path, database: Database, keep_dir: bool) -> Result<Service, String> {
        Service::prepare_with(binary, database, keep_dir, "loadgen", "")
    }

    /// [`Service::prepare`] in a folder named after `harness`, with `extra_config` (top-level
    /// TOML settings and more `[[tokens]]`) appended to the generated config.
    pub fn prepare_with(
        binary: &Path,
        database: Database,
        keep_dir: bool,
        harness: &str,
        extra_config: &str,
    ) -> Result<Service, String> {
        Service::prepare_listening(
            binary,
            database,
            keep_dir,
            harness,
            free_local_addr()?,
            extra_config,
        )
    }

    /// [`Service::prepare_with`] listening on `addr` (from [`free_local_addr`]), for a config
    /// that names its own address (a cluster node's `advertise_url`).
    pub fn prepare_listening(
        binary: &Path,
        database: Database,
        keep_dir: bool,
        harness: &str,
        addr: String,
        extra_config: &str,
    ) -> Result<Service, String> {
        if !binary.is_file() {
            return Err(format!(
                "no standings binary at {}; build it with `cargo build --release -p standings-origin --bin standings` or pass --standings-bin",
                binary.display()
            ));
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("standings-{harness}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let database_url = match &database {
            Database::Sqlite => format!("sqlite://{}", dir.join("standings.db").display()),
            Database::Postgres { admin_url, name } => {
                psql(admin_url, &format!("DROP DATABASE IF EXISTS {name}"))?;
                psql(admin_url, &format!("CREATE DATABASE {name}"))?;
                let base = admin_url
                    .rsplit_once('/')
                    .map(|(base, _)| base)
                    .ok_or("the PostgreSQL URL has no database part")?;
                format!("{base}/{name}")
            }
            Database::Shared(url) => url.clone(),
        };
        let config = dir.join("standings.toml");
        // Top-level settings must come before the first table, so `extra_config`'s settings
        // go first and its tables after ours.
        let (extra_settings, extra_tables) = match extra_config.find("[[") {
            Some(at) => extra_config.split_at(at),
            None => (extra_config, ""),
        };
        let text = format!(
            "listen = \"{addr}\"\ndatabase = \"{database_url}\"\npublic_reads = false\n{extra_settings}\n\
             [[tokens]]\nname = \"loadgen-admin\"\nsecret = \"{ADMIN_TOKEN}\"\nrole = \"admin\"\ngames = [\"*\"]\n\n\
             [[tokens]]\nname = \"loadgen\"\nsecret = \"{SERVICE_TOKEN}\"\nrole = \"service\"\ngames = [\"*\"]\n\n{extra_tables}"
        );
        std::fs::write(&config, text).map_err(|e| format!("cannot write {}: {e}", config.display()))?;
        Ok(Service {
            binary: binary.to_path_buf(),
            dir,
            config,
            addr,
            database,
            database_url,
            child: None,
            keep_dir,
        })
    }

    /// Appends `toml` (tables, such as `[cluster]`) to the service's config; it takes effect at
    /// the next start.
    pub fn append_config(&self, toml: &str) -> Result<(), String> {
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&self.config)
            .and_then(|mut file| file.write_all(toml.as_bytes()))
            .map_err(|e| format!("cannot append to {}: {e}", self.config.display()))
    }

    /// The database URL the service uses.
    pub fn database_url(&self) -> &str {
        &self.database_url
    }

    /// Starts `standings serve` and waits until `/readyz` answers 200. Returns the time from
    /// spawning the process to that answer.
    pub async fn start(&mut self, timeout: Duration) -> Result<Duration, String> {
        if self.child.is_some() {
            return Err("the service is already running".into());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("standings.log"))
            .map_err(|e| format!("cannot open the service log: {e}"))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let child = Command::new(&self.binary)
            .arg("serve")
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let deadline = started + timeout;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(format!(
                    "the service exited during start-up ({status}); {}",
                    self.log_tail()
                ));
            }
            if let Ok(mut conn) = HttpConn::connect(&self.addr, SERVICE_TOKEN).await
                && let Ok(answer) = conn.get("/readyz").await
                && answer.status == 200
            {
                return Ok(started.elapsed());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the service was not ready within {timeout:?}; {}",
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Runs `standings rebuild` beside the running service: it replays the whole log, as a
    /// start without a checkpoint does (after a crash), and compares each board's digest with
    /// the live one. Returns how long it ran, once every board matched.
    pub fn rebuild(&self) -> Result<Duration, String> {
        let started = Instant::now();
        let output = Command::new(&self.binary)
            .arg("rebuild")
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {} rebuild: {e}", self.binary.display()))?;
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let boards: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains(" players, board_version "))
            .collect();
        if !output.status.success()
            || boards.is_empty()
            || !boards.iter().all(|l| l.ends_with("matches the live board"))
        {
            return Err(format!(
                "the rebuild did not match the live boards ({}): {stdout}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(took)
    }

    /// `standings viewer-link` on this service's config, with `args` (`--game`, `--board`):
    /// the link it prints, as an operator would paste it.
    pub fn viewer_link(&self, args: &[&str]) -> Result<String, String> {
        let output = Command::new(&self.binary)
            .arg("viewer-link")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {} viewer-link: {e}", self.binary.display()))?;
        let link = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success() || !link.starts_with("http://") {
            return Err(format!(
                "viewer-link failed ({}): {link}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(link)
    }

    /// The process id of the running service.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The service's resident memory in bytes (`VmRSS`) and its peak (`VmHWM`).
    pub fn resident(&self) -> Result<(u64, u64), String> {
        let pid = self.pid().ok_or("the service is not running")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
        let field = |name: &str| -> Result<u64, String> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
                .ok_or_else(|| format!("no {name} in /proc/{pid}/status"))
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Stops the service with SIGINT (its graceful shutdown), killing it if it has not exited
    /// within `timeout`.
    pub fn stop(&mut self, timeout: Duration) -> Result<(), String> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let signalled = Command::new("kill")
            .arg("-INT")
            .arg(child.id().to_string())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        let deadline = Instant::now() + timeout;
        while signalled && Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!(
            "the service did not stop within {timeout:?} of SIGINT and was killed"
        ))
    }

    /// Sends the running service `signal` (a name `kill` takes: `STOP`, `CONT`, `TERM`).
    pub fn signal(&self, signal: &str) -> Result<(), String> {
        let pid = self.pid().ok_or("the service is not running")?;
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .map_err(|e| format!("cannot run kill: {e}"))?;
        if sent.success() {
            Ok(())
        } else {
            Err(format!("kill -{signal} {pid} failed ({sent})"))
        }
    }

    /// Waits, without blocking the runtime, until the service exits (after a signal that stops
    /// it); killed if it has not within `timeout`.
    pub async fn exited(&mut self, timeout: Duration) -> Result<std::process::ExitStatus, String> {
        let Some(child) = self.child.as_mut() else {
            return Err("the service is not running".into());
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.kill();
                return Err(format!(
                    "the service did not exit within {timeout:?} and was killed; {}",
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Kills the service with SIGKILL, as a crash would: no checkpoint at the stop.
    pub fn kill(&mut self) -> Result<(), String> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        child
            .kill()
            .map_err(|e| format!("cannot kill the service: {e}"))?;
        child
            .wait()
            .map_err(|e| format!("cannot reap the killed service: {e}"))?;
        Ok(())
    }

    /// The service's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("standings.log")).unwrap_or_default()
    }

    /// The last lines of the service's log, for error messages, after every panic's first line
    /// (a backtrace would push it out of the tail).
    pub fn log_tail(&self) -> String {
        let text = self.log();
        let lines: Vec<&str> = text.lines().collect();
        // The panic's line and the message after it.
        let panics: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains("panicked at"))
            .flat_map(|(i, _)| lines[i..(i + 2).min(lines.len())].iter().copied())
            .collect();
        let panics = if panics.is_empty() {
            String::new()
        } else {
            format!("its panics:\n{}\n", panics.join("\n"))
        };
        format!(
            "the service log ({}) {panics}ends with:\n{}",
            self.dir.join("standings.log").display(),
            lines[lines.len().saturating_sub(15)..].join("\n")
        )
    }

    /// Every row of the event log as `(event_id, player_id, value)`, read with the database's own
    /// command-line client (`sqlite3` or `psql`) beside the running service, so that what is
    /// checked is what is stored, not what the service says.
    pub fn logged_events(&self) -> Result<Vec<(String, String, i64)>, String> {
        const QUERY: &str = "SELECT event_id, player_id, value FROM score_events ORDER BY seq";
        let output = match &self.database {
            Database::Sqlite => Command::new("sqlite3")
                .arg("-readonly")
                .arg("-separator")
                .arg("|")
                .arg(self.dir.join("standings.db"))
                .arg(QUERY)
                .output(),
            Database::Postgres { .. } | Database::Shared(_) => Command::new("psql")
                .arg(&self.database_url)
                .arg("-v")
                .arg("ON_ERROR_STOP=1")
                .arg("-At")
                .arg("-c")
                .arg(QUERY)
                .output(),
        }
        .map_err(|e| format!("cannot run the database client: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "reading the event log failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let text = String::from_utf8(output.stdout).map_err(|_| "the event log is not UTF-8")?;
        text.lines()
            .map(|line| {
                let mut fields = line.splitn(3, '|');
                match (
                    fields.next(),
                    fields.next(),
                    fields.next().and_then(|v| v.parse().ok()),
                ) {
                    (Some(id), Some(player), Some(value)) => Ok((id.to_string(), player.to_string(), value)),
                    _ => Err(format!("an unreadable log row: {line:?}")),
                }
            })
            .collect()
    }

    /// The size of the SQLite files (database and WAL), if SQLite.
    pub fn database_bytes(&self) -> Option<u64> {
        match self.database {
            Database::Sqlite => Some(
                ["standings.db", "standings.db-wal"]
                    .iter()
                    .filter_map(|f| std::fs::metadata(self.dir.join(f)).ok())
                    .map(|m| m.len())
                    .sum(),
            ),
            Database::Postgres { .. } | Database::Shared(_) => None,
        }
    }
}

impl Drop for Service {
    /// Never leaves a service running or a database behind, even when the run fails.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Database::Postgres { admin_url, name } = &self.database
            && let Err(e) = psql(admin_url, &format!("DROP DATABASE IF EXISTS {name}"))
        {
            eprintln!("standings-tests: {e}");
        }
        if self.keep_dir {
            eprintln!("standings-tests: kept {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A free port on 127.0.0.1 (bound and released; the service binds it a moment later).
pub fn free_local_addr() -> Result<String, String> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    Ok(addr.to_string())
}

/// Runs one SQL statement with the `psql` client.
pub fn psql(url: &str, sql: &str) -> Result<(), String> {
    psql_text(url, sql).map(drop)
}

/// Runs one SQL statement with the `psql` client and returns what it printed: the rows
/// unaligned, a line each, fields split by `|`.
pub fn psql_text(url: &str, sql: &str) -> Result<String, String> {
    let output = Command::new("psql")
        .arg(url)
        .arg("-v")
        .arg("ON_ERROR_STOP=1")
        .arg("-qAt")
        .arg("-c")
        .arg(sql)
        .output()
        .map_err(|e| format!("cannot run psql: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
