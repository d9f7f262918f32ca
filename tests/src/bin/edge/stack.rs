//! The processes of a run: the origin (its config, tokens and snapshot settings) and the
//! workers in front of it.

use std::path::PathBuf;
use std::time::Duration;

use standings_tests::edge::{Worker, WorkerSpec};
use standings_tests::http::Client;
use standings_tests::service::{Database, Service};

use crate::Args;

/// The game every board of the run belongs to.
pub(crate) const GAME: &str = "edge-e2e";
/// The board's read path.
pub(crate) const BOARD: &str = "/v1/leaderboards/edge-e2e/solo/s1/global";
/// Where the board is defined.
pub(crate) const DEFINE: &str = "/v1/boards/edge-e2e/solo/s1/global";
/// The read path of the board whose days are read at many `at`s: daily only, with a grace of
/// days, so that events of the days before today are on time.
pub(crate) const DAYS_BOARD: &str = "/v1/leaderboards/edge-e2e/solo/s1/by-day";
/// Where that board is defined.
pub(crate) const DAYS_DEFINE: &str = "/v1/boards/edge-e2e/solo/s1/by-day";
/// The worker's token at the origin: role `edge`, the run's game only.
pub(crate) const EDGE_TOKEN: &str = "e2e-edge-secret-00000000000000";
/// A service token of the game: writes, and reads through introspection.
pub(crate) const WRITER_TOKEN: &str = "e2e-writer-secret-000000000000";
/// A static player token of the game (a reader the edge learns about by introspection).
pub(crate) const READER_TOKEN: &str = "e2e-reader-secret-000000000000";
/// The player [`READER_TOKEN`] speaks for.
pub(crate) const READER_PLAYER: &str = "p-00001";
/// A service token of another game only.
pub(crate) const OTHER_GAME_TOKEN: &str = "e2e-other-game-secret-00000000";
/// The HS256 secret of player JWTs, shared by the origin and the worker.
pub(crate) const JWT_SECRET: &str = "e2e-jwt-secret-e2e-jwt-secret-0000000";
/// The origin's `head_max_age_seconds`: the head lifetime.
pub(crate) const HEAD_MAX_AGE_SECONDS: u64 = 1;
/// How long an origin or a worker may take to become ready.
/// Sockets one player may hold on one live view through the edge, in this run.
pub(crate) const LIVE_MAX_PER_HOLDER: usize = 12;
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The origin and the worker (and, once the public-reads case asked for it, a second worker).
pub(crate) struct Stack {
    /// The origin process.
    pub(crate) origin: Service,
    /// The worker with `PUBLIC_READS=false`.
    pub(crate) worker: Worker,
    /// A second worker over the same origin with `PUBLIC_READS=true`.
    pub(crate) public_worker: Option<Worker>,
    wrangler: PathBuf,
    config: PathBuf,
}

impl Stack {
    /// Writes the origin's config, starts it, then starts the worker in front of it.
    pub(crate) async fn start(args: &Args) -> Result<Stack, String> {
        let (wrangler, config) = WorkerSpec::paths(&args.worker_dir, args.wrangler_config.as_deref());
        // Refuse early, before any process starts, when the worker is not built.
        let probe = WorkerSpec {
            wrangler: wrangler.clone(),
            config: config.clone(),
            vars: Vec::new(),
            secrets: Vec::new(),
            dir: std::env::temp_dir(),
        };
        probe.check()?;
        let extra = format!(
            "player_jwt_hs256_secret = \"{JWT_SECRET}\"\npin_http_threads = false\n\n\
             [snapshots]\ninterval_ms = {interval}\nhead_max_age_seconds = {HEAD_MAX_AGE_SECONDS}\n\n\
             [[tokens]]\nname = \"e2e-edge\"\nsecret = \"{EDGE_TOKEN}\"\nrole = \"edge\"\ngames = [\"{GAME}\"]\n\n\
             [[tokens]]\nname = \"e2e-writer\"\nsecret = \"{WRITER_TOKEN}\"\nrole = \"service\"\ngames = [\"{GAME}\"]\n\n\
             [[tokens]]\nname = \"e2e-reader\"\nsecret = \"{READER_TOKEN}\"\nrole = \"player\"\nplayer_id = \"{READER_PLAYER}\"\ngames = [\"{GAME}\"]\n\n\
             [[tokens]]\nname = \"e2e-other\"\nsecret = \"{OTHER_GAME_TOKEN}\"\nrole = \"service\"\ngames = [\"other-game\"]\n",
            interval = args.interval_ms
        );
        let mut origin =
            Service::prepare_with(&args.standings_bin, Database::Sqlite, args.keep, "edge", &extra)?;
        let ready = origin.start(READY_TIMEOUT).await?;
        println!(
            "edge: origin ready on {} in {ready:.1?} ({})",
            origin.addr,
            origin.dir.display()
        );
        let stack = Stack {
            worker: start_worker(&wrangler, &config, &origin, false).await?,
            origin,
            public_worker: None,
            wrangler,
            config,
        };
        println!("edge: worker ready on {}", stack.worker.addr);
        Ok(stack)
    }

    /// Starts the second worker, with `PUBLIC_READS=true`, if it is not running yet.
    pub(crate) async fn public_worker(&mut self) -> Result<&Worker, String> {
        if self.public_worker.is_none() {
            let worker = start_worker(&self.wrangler, &self.config, &self.origin, true).await?;
            println!("edge: public-reads worker ready on {}", worker.addr);
            self.public_worker = Some(worker);
        }
        self.public_worker
            .as_ref()
            .ok_or_else(|| "the public-reads worker did not start".to_string())
    }

    /// A client of the origin.
    pub(crate) fn origin_client(&self) -> Client {
        Client::new(&self.origin.addr)
    }

    /// A client of the worker.
    pub(crate) fn edge_client(&self) -> Client {
        Client::new(&self.worker.addr)
    }

    /// Where to look when something fails.
    pub(crate) fn logs(&self) -> String {
        format!("{}\n{}", self.origin.log_tail(), self.worker.log_tail())
    }
}

/// Starts a worker in front of `origin`, in a folder of the origin's run.
async fn start_worker(
    wrangler: &std::path::Path,
    config: &std::path::Path,
    origin: &Service,
    public_reads: bool,
) -> Result<Worker, String> {
    let name = if public_reads { "worker-public" } else { "worker" };
    let spec = WorkerSpec {
        wrangler: wrangler.to_path_buf(),
        config: config.to_path_buf(),
        vars: vec![
            ("ORIGIN_URL".into(), format!("http://{}", origin.addr)),
            ("PUBLIC_READS".into(), public_reads.to_string()),
            // Small, so that the live scenario can reach it.
            ("LIVE_MAX_PER_HOLDER".into(), LIVE_MAX_PER_HOLDER.to_string()),
        ],
        secrets: vec![
            ("EDGE_TOKEN".into(), EDGE_TOKEN.into()),
            ("PLAYER_JWT_HS256_SECRET".into(), JWT_SECRET.into()),
        ],
        dir: origin.dir.join(name),
    };
    Worker::start(&spec, READY_TIMEOUT).await
}
