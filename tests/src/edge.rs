//! What the edge harness (`src/bin/edge.rs`) and `loadgen edge` share: the edge worker under
//! `wrangler dev --local` (real workerd) as a process of the run, an HTTP client that keeps the
//! answer's headers (the edge's answers are told apart by them), and HS256 player JWTs signed
//! as the game's backend would sign them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One answer, whole: status, headers (names lowercased) and body.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The headers in the order sent, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first header called `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as lossy text, cut at 600 bytes, for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body[..self.body.len().min(600)]).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("the answer ({}) is not JSON: {e}: {}", self.status, self.text()))
    }
}

/// A keep-alive HTTP/1.1 client of one address, one request at a time, that reads
/// Content-Length, chunked and read-to-close bodies and keeps the headers. It reconnects when
/// the server closed the connection. Each answer costs a few allocations (headers, body), which
/// is noise beside a worker's answer.
pub struct Client {
    addr: String,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
}

impl Client {
    /// A client of `addr` (`127.0.0.1:PORT`); it connects on the first request.
    pub fn new(addr: &str) -> Client {
        Client {
            addr: addr.to_string(),
            stream: None,
            buf: Vec::with_capacity(64 * 1024),
        }
    }

    /// The address this client talks to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `GET path` with `token` as the bearer, if any.
    pub async fn get(&mut self, path: &str, token: Option<&str>) -> Result<Reply, String> {
        self.request("GET", path, token, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Reply, String> {
        self.request("POST", path, token, Some(body)).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&mut self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Reply, String> {
        self.request("PUT", path, token, Some(body)).await
    }

    /// Sends one request and reads its whole answer, within a deadline. A connection that was
    /// reused and turns out closed before any byte of the answer came is opened again once, so
    /// an idle connection the server dropped is not an error.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<Reply, String> {
        let mut request = Vec::with_capacity(256 + body.map_or(0, <[u8]>::len));
        request.extend_from_slice(format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.addr).as_bytes());
        if let Some(token) = token {
            request.extend_from_slice(format!("Authorization: Bearer {token}\r\n").as_bytes());
        }
        match body {
            Some(body) => {
                request.extend_from_slice(
                    format!(
                        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                request.extend_from_slice(body);
            }
            None => request.extend_from_slice(b"\r\n"),
        }
        let attempt = async {
            let reused = self.stream.is_some();
            match self.exchange(&request).await {
                Err(Exchange::Closed) if reused => match self.exchange(&request).await {
                    Err(Exchange::Closed) => Err(format!("{} closed the connection", self.addr)),
                    Err(Exchange::Failed(why)) => Err(why),
                    Ok(reply) => Ok(reply),
                },
                Err(Exchange::Closed) => Err(format!("{} closed the connection", self.addr)),
                Err(Exchange::Failed(why)) => Err(why),
                Ok(reply) => Ok(reply),
            }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, attempt).await {
            Ok(result) => {
                if result.is_err() {
                    self.stream = None;
                }
                result.map_err(|why| format!("{method} {path}: {why}"))
            }
            Err(_) => {
                self.stream = None;
                Err(format!(
                    "{method} {path} to {} got no answer within {REQUEST_TIMEOUT:?}",
                    self.addr
                ))
            }
        }
    }

    async fn exchange(&mut self, request: &[u8]) -> Result<Reply, Exchange> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.addr)
                .await
                .map_err(|e| Exchange::Failed(format!("cannot connect to {}: {e}", self.addr)))?;
            stream
                .set_nodelay(true)
                .map_err(|e| Exchange::Failed(e.to_string()))?;
            self.stream = Some(stream);
        }
        let stream = self.stream.as_mut().ok_or(Exchange::Closed)?;
        if stream.write_all(request).await.is_err() {
            self.stream = None;
            return Err(Exchange::Closed);
        }
        self.buf.clear();
        let result = read_reply(stream, &mut self.buf).await;
        match &result {
            Ok((_, keep)) if *keep => {}
            _ => self.stream = None,
        }
        result.map(|(reply, _)| reply)
    }
}

/// Why one exchange failed: the connection was closed before an answer began (worth one
/// retry on a fresh connection), or anything else.
enum Exchange {
    Closed,
    Failed(String),
}

/// Reads one answer; also says whether the connection may be kept.
async fn read_reply(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(Reply, bool), Exchange> {
    let head_end = loop {
        if let Some(at) = find(buf, b"\r\n\r\n") {
            break at + 4;
        }
        if fill(stream, buf).await? == 0 {
            return Err(if buf.is_empty() {
                Exchange::Closed
            } else {
                Exchange::Failed("the connection closed inside an answer's head".into())
            });
        }
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| Exchange::Failed("an answer head that is not UTF-8".into()))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| Exchange::Failed(format!("a malformed status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let value = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let mut keep = !value("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let chunked = value("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = value("content-length").and_then(|v| v.parse::<usize>().ok());
    let mut at = head_end;
    let body = if status == 204 || status == 304 {
        Vec::new()
    } else if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(end) = find(&buf[at..], b"\r\n") {
                    break at + end;
                }
                if fill(stream, buf).await? == 0 {
                    return Err(Exchange::Failed("the connection closed inside a chunk".into()));
                }
            };
            let size_text = std::str::from_utf8(&buf[at..line_end]).unwrap_or("");
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| Exchange::Failed(format!("a malformed chunk size {size_text:?}")))?;
            at = line_end + 2;
            // The chunk and its CRLF; the last chunk (size 0) is followed by an empty trailer.
            while buf.len() < at + size + 2 {
                if fill(stream, buf).await? == 0 {
                    return Err(Exchange::Failed("the connection closed inside a chunk".into()));
                }
            }
            body.extend_from_slice(&buf[at..at + size]);
            at += size + 2;
            if size == 0 {
                break;
            }
        }
        body
    } else if let Some(length) = length {
        while buf.len() < at + length {
            if fill(stream, buf).await? == 0 {
                return Err(Exchange::Failed("the connection closed inside a body".into()));
            }
        }
        at += length;
        buf[head_end..at].to_vec()
    } else {
        // No length: the body runs to the end of the connection.
        while fill(stream, buf).await? > 0 {}
        keep = false;
        buf[head_end..].to_vec()
    };
    Ok((
        Reply {
            status,
            headers,
            body,
        },
        keep,
    ))
}

/// Reads more bytes onto the end of `buf`; 0 at the end of the stream.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<usize, Exchange> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream
        .read(&mut chunk)
        .await
        .map_err(|e| Exchange::Failed(format!("cannot read an answer: {e}")))?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

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

    /// One keep-alive connection carries a Content-Length answer and then a chunked one (split
    /// across writes), headers kept with lowercase names; a connection the server closed after
    /// an answer is opened again for the next request.
    #[tokio::test]
    async fn the_client_reads_both_framings_and_reconnects() {
        async fn read_request(stream: &mut TcpStream) -> String {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                stream.read_exact(&mut byte).await.unwrap();
                head.push(byte[0]);
            }
            String::from_utf8(head).unwrap()
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.unwrap();
            let request = read_request(&mut first).await;
            assert!(request.starts_with("GET /a HTTP/1.1\r\n"), "{request}");
            assert!(request.contains("Authorization: Bearer t\r\n"), "{request}");
            first
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Standings-Cache: HIT\r\n\r\nhello")
                .await
                .unwrap();
            read_request(&mut first).await;
            first
                .write_all(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab")
                .await
                .unwrap();
            first.write_all(b"c\r\n2\r\nde\r\n0\r\n\r\n").await.unwrap();
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            read_request(&mut second).await;
            second
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await
                .unwrap();
        });
        let mut client = Client::new(&addr);
        let a = client.get("/a", Some("t")).await.unwrap();
        assert_eq!(
            (a.status, a.body.as_slice(), a.header("x-standings-cache")),
            (200, &b"hello"[..], Some("HIT"))
        );
        let b = client.get("/b", None).await.unwrap();
        assert_eq!((b.status, b.body.as_slice()), (404, &b"abcde"[..]));
        let c = client.get("/c", None).await.unwrap();
        assert_eq!((c.status, c.body.as_slice()), (200, &b"ok"[..]));
        server.await.unwrap();
    }

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
