//! Running the real `standings` binary in a test: start it, wait until it is ready, call it
//! over HTTP/1.1 (with the harnesses' client, `standings_tests::http`), stop it.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use standings_tests::http::Client;

use crate::common::config;

pub const BIN: &str = env!("CARGO_BIN_EXE_standings");

/// One HTTP/1.1 call on a connection of its own, through the harnesses' client: the status and
/// the body as JSON (`null` when it is not JSON).
pub async fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let reply = Client::new(addr)
        .request(method, path, token, Some(body.as_bytes()))
        .await
        .unwrap_or_else(|why| panic!("{why}"));
    (
        reply.status,
        serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
    )
}

/// A free loopback port (bound and released; the service binds it right after).
pub fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The running binary; killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `/readyz` until it answers 200, with a deadline.
pub async fn wait_ready(addr: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("standings exited early with {status}");
        }
        if let Ok(stream) = tokio::net::TcpStream::connect(addr).await {
            drop(stream);
            if http(addr, "GET", "/readyz", None, None).await.0 == 200 {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "standings did not become ready at {addr}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub fn write_config(dir: &Path, url: &str, addr: &str) -> std::path::PathBuf {
    let mut config = config(url);
    config.listen = addr.into();
    let path = dir.join("standings.toml");
    std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
    path
}

pub async fn serve(config: &Path, addr: &str) -> Running {
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    wait_ready(addr, &mut child).await;
    Running(child)
}

/// [`serve`], keeping what the binary prints: the line that says how it restored its state.
pub async fn serve_logged(config: &Path, addr: &str) -> (Running, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    wait_ready(addr, &mut child).await;
    let serving = rx
        .iter()
        .find(|line| line.contains("serving on"))
        .expect("the binary says where it serves");
    (Running(child), serving)
}

/// Sends SIGTERM and waits, with a deadline, for a clean exit.
pub fn terminate(mut running: Running) {
    let pid = running.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            assert!(status.success(), "a clean stop on SIGTERM, got {status}");
            return;
        }
        assert!(Instant::now() < deadline, "standings did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(25));
    }
}
