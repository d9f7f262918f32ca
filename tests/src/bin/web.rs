//! The web harness: the `standings-wasm` package's Node tests and the board viewer's browser
//! tests, against a real origin on 127.0.0.1 and (for the package and the page through the
//! edge) the edge worker under `wrangler dev --local`, both started by the run. The tests themselves are JavaScript
//! (`node --test`, in `wasm-pkg/test/`); this starts what they need, passes them its addresses
//! and tokens in the environment, and sums their TAP counts into one cargo-style line.
//!
//! ```text
//! cargo build -p standings-origin --bin standings -p standings-tests --bin web
//! wasm-pkg/build && (cd edge-worker && npm ci) && edge-worker/build
//! target/debug/web --standings-bin target/debug/standings
//! ```
//!
//! It builds nothing: the package must be built and installed (`wasm-pkg/build` runs `npm ci`
//! there, which links the package as `standings-wasm`), and for the browser part Debian's
//! `chromium` must be at `/usr/bin/chromium` and the worker built. The screenshots go to
//! `--artifacts`.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use standings_tests::edge::{Worker, WorkerSpec};
use standings_tests::harness::{self, Options};
use standings_tests::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service};

/// The game every board of the run belongs to.
const GAME: &str = "web-e2e";
/// The worker's token at the origin: role `edge`, every game.
const EDGE_TOKEN: &str = "web-edge-secret-000000000000000";
/// The HS256 secret of player JWTs, shared by the origin and the worker.
const JWT_SECRET: &str = "web-jwt-secret-web-jwt-secret-00000000";
/// How long an origin or a worker may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The web harness: the standings-wasm package's Node tests and the board viewer's browser
/// tests, against a real origin and the edge worker started by the run.
#[derive(clap::Parser, Debug)]
#[command(name = "web")]
struct Args {
    /// The origin binary.
    #[arg(long, value_name = "PATH", default_value = "target/debug/standings")]
    standings_bin: PathBuf,
    /// The package's folder, holding test/ and node_modules.
    #[arg(long, value_name = "DIR", default_value = "wasm-pkg")]
    package_dir: PathBuf,
    /// The worker's crate, holding node_modules/.bin/wrangler.
    #[arg(long, value_name = "DIR", default_value = "edge-worker")]
    worker_dir: PathBuf,
    /// Where the browser tests save screenshots.
    #[arg(long, value_name = "DIR", default_value = "target/web-artifacts")]
    artifacts: PathBuf,
    /// Only the package's Node tests.
    #[arg(long = "no-browser", action = clap::ArgAction::SetFalse)]
    browser: bool,
    /// Keep the temp folder (config, logs, SQLite file).
    #[arg(long)]
    keep: bool,
}

impl Options for Args {}

/// Passed and failed tests of the run so far.
#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
}

impl Counts {
    /// Runs `node --test` on `files` in the package's folder with `env`, echoing its TAP
    /// output and adding its `# pass` and `# fail` counts. A run that ends without them (node
    /// missing, a crash before the summary) counts as one failure.
    fn node(&mut self, package_dir: &Path, files: &[&str], env: &[(&str, String)]) {
        let mut command = Command::new("node");
        // Node 20 has WebSocket only behind this flag (LiveBoard's WebSocket transport).
        command
            .args([
                "--experimental-websocket",
                "--test",
                "--test-reporter=tap",
                "--test-concurrency=1",
            ])
            .args(files)
            .current_dir(package_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                eprintln!("web: cannot run node: {e}");
                self.failed += 1;
                return;
            }
        };
        let (mut pass, mut fail) = (None, None);
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
                let count = |prefix: &str| {
                    line.strip_prefix(prefix)
                        .and_then(|n| n.trim().parse::<u64>().ok())
                };
                pass = count("# pass ").or(pass);
                fail = count("# fail ").or(fail);
            }
        }
        let status = child.wait();
        match (pass, fail) {
            (Some(p), Some(f)) => {
                self.passed += p;
                self.failed += f;
                if f == 0 && !status.as_ref().is_ok_and(|s| s.success()) {
                    eprintln!("web: node exited with {status:?} after passing every test");
                    self.failed += 1;
                }
            }
            _ => {
                eprintln!("web: node ended ({status:?}) without a test summary");
                self.failed += 1;
            }
        }
    }
}

async fn run(args: &Args) -> Result<Counts, String> {
    let installed = args.package_dir.join("node_modules/standings-wasm/package.json");
    if !installed.is_file() {
        return Err(format!(
            "{} is missing: run wasm-pkg/build (it builds the package and runs npm ci)",
            installed.display()
        ));
    }
    let extra = format!(
        "player_jwt_hs256_secret = \"{JWT_SECRET}\"\npin_http_threads = false\n\n\
         [snapshots]\ninterval_ms = 200\nhead_max_age_seconds = 1\n\n\
         [live]\nwindow_ms = 50\n\n\
         [[tokens]]\nname = \"web-edge\"\nsecret = \"{EDGE_TOKEN}\"\nrole = \"edge\"\ngames = [\"*\"]\n"
    );
    let mut origin = Service::prepare_with(&args.standings_bin, Database::Sqlite, args.keep, "web", &extra)?;
    let ready = origin.start(READY_TIMEOUT).await?;
    println!(
        "web: origin ready on {} in {ready:.1?} ({})",
        origin.addr,
        origin.dir.display()
    );
    let mut env = vec![
        ("STANDINGS_ORIGIN", format!("http://{}", origin.addr)),
        ("STANDINGS_ADMIN_TOKEN", ADMIN_TOKEN.to_string()),
        ("STANDINGS_WRITER_TOKEN", SERVICE_TOKEN.to_string()),
        ("STANDINGS_JWT_SECRET", JWT_SECRET.to_string()),
        ("STANDINGS_GAME", GAME.to_string()),
        (
            "STANDINGS_VIEWER_LINK",
            origin.viewer_link(&["--game", GAME, "--board", "viewer/s1/global", "--minutes", "30"])?,
        ),
    ];
    let mut counts = Counts::default();
    println!("web: the package's Node tests");
    counts.node(
        &args.package_dir,
        &[
            "test/order.test.mjs",
            "test/live.test.mjs",
            "test/snapshot.test.mjs",
            "test/origin.test.mjs",
        ],
        &env,
    );
    let mut worker = None;
    if args.browser {
        let (wrangler, config) = WorkerSpec::paths(&args.worker_dir, None);
        let spec = WorkerSpec {
            wrangler,
            config,
            vars: vec![
                ("ORIGIN_URL".into(), format!("http://{}", origin.addr)),
                ("PUBLIC_READS".into(), "false".into()),
            ],
            secrets: vec![
                ("EDGE_TOKEN".into(), EDGE_TOKEN.into()),
                ("PLAYER_JWT_HS256_SECRET".into(), JWT_SECRET.into()),
            ],
            dir: origin.dir.join("worker"),
        };
        let started = Worker::start(&spec, READY_TIMEOUT).await?;
        println!("web: worker ready on {}", started.addr);
        env.push(("STANDINGS_EDGE", format!("http://{}", started.addr)));
        worker = Some(started);
        std::fs::create_dir_all(&args.artifacts)
            .map_err(|e| format!("cannot create {}: {e}", args.artifacts.display()))?;
        let artifacts = std::fs::canonicalize(&args.artifacts).map_err(|e| e.to_string())?;
        env.push(("STANDINGS_ARTIFACTS", artifacts.display().to_string()));
        println!("web: the package through the edge, and the board viewer in headless chromium");
        counts.node(
            &args.package_dir,
            &["test/edge.test.mjs", "test/browser/viewer.test.mjs"],
            &env,
        );
    }
    if counts.failed > 0 {
        println!("web: origin log tail:\n{}", origin.log_tail());
        if let Some(w) = &worker {
            println!("web: worker log tail:\n{}", w.log_tail());
        }
    }
    if let Some(mut w) = worker {
        w.stop();
    }
    origin.stop(Duration::from_secs(30))?;
    Ok(counts)
}

fn main() -> ExitCode {
    let args: Args = harness::options();
    harness::block_on("web", 1, async {
        let counts = run(&args).await?;
        // The cargo test summary's form, on stdout whatever the verdict, so tests/run sums these
        // with the crates' tests.
        let verdict = if counts.failed == 0 { "ok" } else { "FAILED" };
        println!(
            "test result: {verdict}. {} passed; {} failed; (the package and the board viewer, in Node and chromium)",
            counts.passed, counts.failed
        );
        if counts.failed == 0 {
            Ok(None)
        } else {
            Err(format!(
                "{} of the package's and the viewer's tests failed",
                counts.failed
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command lines tests/run and the module doc run parse, with their meanings.
    #[test]
    fn the_documented_command_lines_parse() {
        let parse = |line: &str| harness::try_options::<Args, _, _>(line.split_whitespace());
        let args =
            parse("web --standings-bin target/debug/standings --artifacts target/web-artifacts").unwrap();
        assert_eq!(args.artifacts, PathBuf::from("target/web-artifacts"));
        assert!(args.browser && !args.keep);
        assert_eq!(
            (args.package_dir.to_str(), args.worker_dir.to_str()),
            (Some("wasm-pkg"), Some("edge-worker"))
        );
        let args = parse("web --no-browser --keep").unwrap();
        assert!(!args.browser && args.keep);
        assert!(parse("web --browser").is_err());
    }
}
