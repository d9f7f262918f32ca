//! What the edge harness (`src/bin/edge.rs`) and `loadgen edge` share: the edge worker under
//! `wrangler dev --local` (real workerd) as a process of the run, and HS256 player JWTs signed
//! as the game's backend would sign them. Their HTTP client, which keeps the answer's headers,
//! is [`crate::http::Client`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::Client;

/// Signs an HS256 JWT with `key` over `claims`, as a game's backend signs its players' tokens.
pub fn sign_jwt(key: &[u8], claims: &serde_json::Value) -> String {
    standings_core::jwt::sign(key, &claims.to_string())
}

/// How to start one worker under `wrangler dev --local`.
pub struct WorkerSpec {
    /// The `wrangler` executable (`edge-worker/node_modules/.bin/wrangler` after `npm ci`).
    pub wrangler: PathBuf,
    /// The worker's `wrangler.toml`; wrangler runs in its folder.
    pub config: PathBuf,
    /// Plain variables, passed as `--var NAME:VALUE` (they override the file's `[vars]`).
    pub vars: Vec<(String, String)>,
    /// Secrets, written to an env file of the run (as `.dev.vars` would hold them).
    pub secrets: Vec<(String, String)>,
    /// The run's folder for this worker: env file, log, wrangler's state and home folders.
    pub dir: PathBuf,
}

impl WorkerSpec {
    /// The `wrangler` executable of the worker's crate `worker_dir`, and its `wrangler.toml`:
    /// `config` when given, else the one in the folder above the crate (the repository root).
    pub fn paths(worker_dir: &Path, config: Option<&Path>) -> (PathBuf, PathBuf) {
        let config = config.map(Path::to_path_buf).unwrap_or_else(|| {
            match worker_dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                Some(_) => PathBuf::from("."),
                None => PathBuf::from(".."),
            }
            .join("wrangler.toml")
        });
        (worker_dir.join("node_modules/.bin/wrangler"), config)
    }
}

/// A worker running under `wrangler dev --local`, in a process group of its own (wrangler,
/// its node children and workerd), which is stopped as a whole.
pub struct Worker {
    /// `127.0.0.1:PORT` it serves on.
    pub addr: String,
    child: Option<Child>,
    log: PathBuf,
}

impl WorkerSpec {
    /// Checks that wrangler and the built worker exist, with what to run when they do not.
    /// The entry point is the `main` the config names, relative to the config's folder.
    pub fn check(&self) -> Result<(), String> {
        if !self.wrangler.is_file() {
            return Err(format!(
                "no wrangler at {}: run `npm ci` in edge-worker/ first",
                self.wrangler.display()
            ));
        }
        let text = std::fs::read_to_string(&self.config)
            .map_err(|e| format!("cannot read {}: {e}", self.config.display()))?;
        let main = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("main"))
            .filter_map(|rest| rest.trim_start().strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
            .next()
            .ok_or_else(|| {
                format!(
                    "{} names no `main` (the built worker's entry point)",
                    self.config.display()
                )
            })?;
        let entry = self.config.parent().unwrap_or(Path::new(".")).join(&main);
        if !entry.is_file() {
            return Err(format!(
                "the worker is not built: {} (wrangler.toml's main) is missing; run edge-worker/build first",
                entry.display()
            ));
        }
        Ok(())
    }
}

impl Worker {
    /// Starts `wrangler dev --local` on a free port of 127.0.0.1 with a fresh state folder (so
    /// the Cache API starts empty and the first read of a page is a MISS), no metrics, no
    /// Cloudflare fetches and its home folders in the run's folder, and waits until it answers
    /// HTTP at all (any status). Wrangler reads no terminal (stdin is /dev/null).
    pub async fn start(spec: &WorkerSpec, timeout: Duration) -> Result<Worker, String> {
        spec.check()?;
        std::fs::create_dir_all(&spec.dir)
            .map_err(|e| format!("cannot create {}: {e}", spec.dir.display()))?;
        let env_file = spec.dir.join("worker.env");
        let secrets: String = spec.secrets.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        std::fs::write(&env_file, secrets)
            .map_err(|e| format!("cannot write {}: {e}", env_file.display()))?;
        let state = spec.dir.join("wrangler-state");
        // A state folder of an earlier run would hold its cached pages.
        let _ = std::fs::remove_dir_all(&state);
        let home = spec.dir.join("wrangler-home");
        std::fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
        let port = free_port()?;
        let inspector = free_port()?;
        let addr = format!("127.0.0.1:{port}");
        let log = spec.dir.join("wrangler.log");
        let out = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let config = std::fs::canonicalize(&spec.config)
            .map_err(|e| format!("cannot resolve {}: {e}", spec.config.display()))?;
        let folder = config.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut command = Command::new(&spec.wrangler);
        command
            .current_dir(&folder)
            .arg("dev")
            .arg("--local")
            .arg("--config")
            .arg(&config)
            .args(["--ip", "127.0.0.1", "--port", &port.to_string()])
            .args(["--inspector-port", &inspector.to_string()])
            .arg("--persist-to")
            .arg(&state)
            .arg("--env-file")
            .arg(&env_file)
            .arg("--show-interactive-dev-session=false")
            .args(["--log-level", "info"]);
        for (name, value) in &spec.vars {
            command.arg("--var").arg(format!("{name}:{value}"));
        }
        command
            .env("WRANGLER_SEND_METRICS", "false")
            .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
            .env("XDG_CONFIG_HOME", &home)
            .env("XDG_CACHE_HOME", &home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // Its own process group, so that stopping it stops workerd too.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let started = Instant::now();
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", spec.wrangler.display()))?;
        let mut worker = Worker {
            addr,
            child: Some(child),
            log,
        };
        let deadline = started + timeout;
        loop {
            if let Some(status) = worker.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                worker.child = None;
                return Err(format!(
                    "wrangler dev exited during start-up ({status}); {}",
                    worker.log_tail()
                ));
            }
            let mut client = Client::new(&worker.addr);
            if client.get("/edge/stats", None).await.is_ok() {
                return Ok(worker);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "wrangler dev did not answer HTTP within {timeout:?}; {}",
                    worker.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL after a few seconds.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let group = format!("-{}", child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever is left of the group (workerd outlives a killed node).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The last lines of wrangler's output, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "wrangler's output ({}) ends with:\n{}",
            self.log.display(),
            lines[lines.len().saturating_sub(20)..].join("\n")
        )
    }
}

impl Drop for Worker {
    /// Never leaves wrangler or workerd running, even when the run fails.
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free port on 127.0.0.1 (bound and released; the process binds it a moment later).
pub fn free_port() -> Result<u16, String> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// The numbers of a JSON document flattened to `(dotted.path, value)`, for counters whose
/// exact layout the reader need not know (`/edge/stats`).
pub fn numbers(value: &serde_json::Value) -> Vec<(String, f64)> {
    fn walk(prefix: &str, value: &serde_json::Value, out: &mut Vec<(String, f64)>) {
        match value {
            serde_json::Value::Number(n) => out.push((prefix.to_string(), n.as_f64().unwrap_or(0.0))),
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters are found at their dotted paths, however deep.
    #[test]
    fn numbers_flatten_nested_counters() {
        let flat = numbers(&serde_json::json!({"hits": 3, "origin": {"chunk": 2, "head": 1}, "name": "x"}));
        assert_eq!(
            flat,
            vec![
                ("hits".to_string(), 3.0),
                ("origin.chunk".to_string(), 2.0),
                ("origin.head".to_string(), 1.0)
            ]
        );
    }
}
