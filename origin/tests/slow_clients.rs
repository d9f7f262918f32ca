//! Slow and idle clients against the real `standings` binary: slowloris sockets trickling a
//! header, new sockets that send nothing and idle keep-alive sockets are closed at their
//! deadlines, and with 2,000 of them held open (past the connection cap, under a descriptor
//! limit of 1,024) a normal client's read still answers.
//!
//! The HTTP front does not depend on the database, so these run on SQLite only.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_standings");

/// The running binary; killed when dropped.
struct Running {
    child: Child,
    addr: SocketAddr,
    /// The line that says where it serves.
    serving: String,
    /// Its standard error, line by line, read on a thread of its own.
    stderr: mpsc::Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Everything it wrote to standard error so far.
    fn stderr_so_far(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

/// Starts the binary on `127.0.0.1:0` with `extra` config keys, under `ulimit -n` of
/// `nofile` when given, and waits for the line that says where it serves.
fn start(db: &TestDb, extra: &str, nofile: Option<u32>) -> Running {
    let mut config = toml::to_string(&config(&db.url)).unwrap();
    // Top-level keys go before the first table.
    config = format!("{extra}\n{config}");
    let path = db.dir.join("standings.toml");
    std::fs::write(&path, config).unwrap();
    let mut command = match nofile {
        Some(n) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--nofile={n}")).arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    let mut child = command
        .args(["serve", "--config"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let stderr = lines_of(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let serving = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("serving on") => break line,
            Ok(_) => {}
            Err(e) => panic!("the binary did not say where it serves: {e}"),
        }
    };
    let addr = serving
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    Running {
        child,
        addr,
        serving,
        stderr,
    }
}

fn lines_of(stderr: ChildStderr) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("standings: {line}");
            let _ = tx.send(line);
        }
    });
    rx
}

/// Sends `GET path` on a keep-alive connection and reads the answer (status and body), with a
/// read deadline; `None` when the connection closed or timed out first.
fn get_on(stream: &mut TcpStream, path: &str) -> Option<(u16, String)> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").as_bytes())
        .ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))?
            .trim()
            .parse()
            .ok()?;
        if buf.len() >= end + 4 + length {
            let status = head.split_whitespace().nth(1)?.parse().ok()?;
            let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned();
            return Some((status, body));
        }
    }
}

/// `GET path` on a new connection.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).ok()?;
    get_on(&mut stream, path)
}

/// One client-side socket of a slow or idle client, and when it was last given a deadline.
struct Held {
    stream: TcpStream,
    since: Instant,
    closed_after: Option<Duration>,
}

impl Held {
    fn new(stream: TcpStream) -> Held {
        stream.set_nonblocking(true).unwrap();
        Held {
            stream,
            since: Instant::now(),
            closed_after: None,
        }
    }

    /// Whether the service has closed it (end of stream or a reset), noting when.
    fn check_closed(&mut self) -> bool {
        if self.closed_after.is_some() {
            return true;
        }
        let mut byte = [0u8; 512];
        let closed = match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != ErrorKind::WouldBlock,
        };
        if closed {
            self.closed_after = Some(self.since.elapsed());
        }
        closed
    }

    /// Sends one more byte of an endless header line; a failed write means it is closed.
    fn trickle(&mut self) {
        if self.closed_after.is_none() && self.stream.write(b"a").is_err() {
            self.closed_after = Some(self.since.elapsed());
        }
    }
}

/// A slowloris socket: a request line and the start of a header that never ends.
fn slowloris(addr: SocketAddr) -> Held {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: test\r\nx-slow: ")
        .unwrap();
    Held::new(stream)
}

/// An idle keep-alive socket: one request answered, then nothing.
fn idle(addr: SocketAddr) -> Held {
    let mut stream = TcpStream::connect(addr).unwrap();
    let answer = get_on(&mut stream, "/healthz");
    assert_eq!(answer.map(|(status, _)| status), Some(200));
    Held::new(stream)
}

/// Polls every socket, trickling into the slowloris ones, until all are closed or `deadline`
/// passes; returns how many are still open.
fn poll_until_closed(held: &mut [Held], trickling: bool, deadline: Instant) -> usize {
    loop {
        let mut open = 0;
        for h in held.iter_mut() {
            if trickling {
                h.trickle();
            }
            if !h.check_closed() {
                open += 1;
            }
        }
        if open == 0 || Instant::now() >= deadline {
            return open;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of an unlabelled metric in `/metrics`.
fn metric(addr: SocketAddr, name: &str) -> u64 {
    let (status, body) = get(addr, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

fn sqlite_db() -> TestDb {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(TestDb::new(Db::Sqlite))
}

/// With a 1 s header deadline and 2 s of allowed idleness: slowloris sockets (still trickling
/// bytes) and new sockets that send nothing are closed after 1 s, idle keep-alive sockets
/// after 2 s from their answer (not at the header deadline); a client that keeps asking every
/// half second keeps its connection; and meanwhile a normal read answers.
#[test]
fn slow_and_idle_sockets_are_closed_at_their_deadlines() {
    let db = sqlite_db();
    let running = start(
        &db,
        "header_read_timeout_seconds = 1\nidle_timeout_seconds = 2",
        None,
    );
    let addr = running.addr;
    let mut slow: Vec<Held> = (0..200).map(|_| slowloris(addr)).collect();
    let mut silent: Vec<Held> = (0..200)
        .map(|_| Held::new(TcpStream::connect(addr).unwrap()))
        .collect();
    let mut idle: Vec<Held> = (0..200).map(|_| idle(addr)).collect();
    let mut busy = TcpStream::connect(addr).unwrap();
    assert_eq!(
        get(addr, "/healthz").map(|a| a.0),
        Some(200),
        "a normal read answers"
    );

    // Every half second for 3 s, on one connection: longer than both deadlines.
    let busy_since = Instant::now();
    while busy_since.elapsed() < Duration::from_secs(3) {
        assert_eq!(
            get_on(&mut busy, "/healthz").map(|a| a.0),
            Some(200),
            "a connection in use is kept"
        );
        for h in &mut slow {
            h.trickle();
        }
        for h in slow.iter_mut().chain(&mut silent).chain(&mut idle) {
            h.check_closed();
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    let deadline = Instant::now() + Duration::from_secs(30);
    assert_eq!(
        poll_until_closed(&mut slow, true, deadline),
        0,
        "slowloris sockets closed"
    );
    assert_eq!(
        poll_until_closed(&mut silent, false, deadline),
        0,
        "silent sockets closed"
    );
    assert_eq!(
        poll_until_closed(&mut idle, false, deadline),
        0,
        "idle sockets closed"
    );
    for (what, held, at_least) in [
        ("slowloris", &slow, Duration::from_secs(1)),
        ("silent", &silent, Duration::from_secs(1)),
        ("idle", &idle, Duration::from_secs(2)),
    ] {
        let earliest = held.iter().filter_map(|h| h.closed_after).min().unwrap();
        let latest = held.iter().filter_map(|h| h.closed_after).max().unwrap();
        eprintln!(
            "{what}: {} sockets closed after {earliest:.2?} to {latest:.2?}",
            held.len()
        );
        // Closed no earlier than their deadline, less the time an answer takes to reach the
        // client (an idle socket's clock starts when the service finishes its answer).
        assert!(
            earliest + Duration::from_millis(100) >= at_least,
            "{what} sockets closed after {earliest:?}, before their deadline of {at_least:?}"
        );
    }
    assert!(metric(addr, "standings_connections_timed_out_total") >= 600);
    drop(running);
}

/// Under a descriptor limit of 1,024 and the cap derived from it, 2,000 slow or idle sockets
/// (1,000 trickling a header, 1,000 silent; a 20 s header deadline): the ones past the cap are
/// closed at once, a
/// client connected before them is answered throughout, a new one is closed at once rather
/// than left waiting, and once the held ones reach their header deadline a new client is
/// answered again, while the 2,000 are still open on the client side. No accept ever fails
/// for want of a descriptor.
#[test]
fn with_2000_slow_or_idle_sockets_held_open_a_normal_read_answers() {
    let db = sqlite_db();
    let running = start(
        &db,
        // Long enough that the whole flood is in place before the first of it times out, on
        // a machine busy enough that opening 2,000 sockets takes seconds.
        "header_read_timeout_seconds = 20\nidle_timeout_seconds = 60",
        Some(1024),
    );
    let addr = running.addr;
    let cap: usize = running
        .serving
        .split("at most ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        cap < 1024 && cap > 500,
        "the cap is derived from the limit: {}",
        running.serving
    );
    let mut normal = TcpStream::connect(addr).unwrap();
    assert_eq!(get_on(&mut normal, "/healthz").map(|a| a.0), Some(200));

    let started = Instant::now();
    // Opened from four threads, so that the flood is in place well before its deadline.
    let mut held: Vec<Held> = std::thread::scope(|scope| {
        let openers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(move || {
                    (0..500)
                        .map(|i| {
                            if i % 2 == 0 {
                                slowloris(addr)
                            } else {
                                Held::new(TcpStream::connect(addr).unwrap())
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        openers.into_iter().flat_map(|o| o.join().unwrap()).collect()
    });
    let opened_in = started.elapsed();
    // The ones past the cap are closed as they arrive; poll until the count settles.
    let settle = Instant::now() + Duration::from_secs(2);
    let mut closed;
    loop {
        closed = held.iter_mut().map(Held::check_closed).filter(|&c| c).count();
        if closed >= 2_000 - cap || Instant::now() >= settle {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Read over the client connected before the flood: it is answered throughout.
    let metric_on = |stream: &mut TcpStream, name: &str| -> u64 {
        let (status, body) = get_on(stream, "/metrics").expect("/metrics answers");
        assert_eq!(status, 200);
        body.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let open = metric_on(&mut normal, "standings_connections_open");
    let refused = metric_on(&mut normal, "standings_connections_refused_total");
    let timed_out = metric_on(&mut normal, "standings_connections_timed_out_total");
    eprintln!(
        "2,000 sockets opened in {opened_in:.2?}; cap {cap}; {closed} closed by the service, \
         {refused} of them at once; {open} open (the normal client among them), {timed_out} timed out"
    );
    assert!(open as usize <= cap, "{open} open with a cap of {cap}");
    assert_eq!(
        timed_out, 0,
        "the flood took {opened_in:?} to open, past the header deadline of its first sockets"
    );
    // Every socket the service did not hold was refused.
    assert!(
        refused >= (2_000 - (cap - 1)) as u64,
        "{refused} refused with a cap of {cap}"
    );
    assert_eq!(
        get_on(&mut normal, "/healthz").map(|a| a.0),
        Some(200),
        "the client connected before the flood is answered"
    );
    // A new connection now is closed at once, not left hanging.
    let mut late = TcpStream::connect(addr).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut byte = [0u8; 1];
    let asked_at = Instant::now();
    let closed = match late.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    };
    assert!(closed, "a connection past the cap is closed at once");
    eprintln!(
        "a connection past the cap was closed after {:.2?}",
        asked_at.elapsed()
    );

    // Once the held ones pass their header deadline, a new client is answered; the attacker
    // keeps its 2,000 sockets open on its side and keeps trickling.
    let deadline = Instant::now() + Duration::from_secs(60);
    let answered_after = loop {
        for h in &mut held {
            h.trickle();
        }
        if get(addr, "/healthz").map(|a| a.0) == Some(200) {
            break started.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "no new client was answered within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("a new client was answered {answered_after:.2?} after the flood began");
    assert_eq!(get_on(&mut normal, "/healthz").map(|a| a.0), Some(200));
    assert!(metric(addr, "standings_connections_refused_total") >= refused);
    let stderr = running.stderr_so_far();
    assert!(!stderr.contains("Too many open files"), "{stderr}");
    assert!(!stderr.contains("accepting a connection failed"), "{stderr}");
    drop(running);
}
