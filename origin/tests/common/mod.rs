//! The test harness: a service on a fresh SQLite file or a fresh PostgreSQL database, called
//! through the real router.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use standings_origin::config::{Config, Role, TokenConfig};
use standings_origin::http::{App, Shared, app};
use tower::ServiceExt;

pub const ADMIN: &str = "admin-secret-0000000000000000";
pub const SERVICE: &str = "service-secret-000000000000000";
pub const OTHER_GAME: &str = "other-game-secret-000000000000";
pub const MODERATOR: &str = "moderator-secret-0000000000000";
pub const PLAYER: &str = "player-ava-secret-000000000000";
pub const LIMITED: &str = "limited-secret-00000000000000";
pub const JWT_SECRET: &str = "jwt-secret-jwt-secret-jwt-secret-0000";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// The PostgreSQL server the tests use (trust auth); each test gets its own database on it.
pub fn postgres_admin_url() -> String {
    std::env::var("STANDINGS_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A database of one test: a SQLite file in a fresh folder, or a fresh PostgreSQL database.
pub struct TestDb {
    pub url: String,
    pub dir: PathBuf,
    pg_name: Option<String>,
}

impl TestDb {
    pub async fn new(db: Db) -> TestDb {
        let dir = std::env::temp_dir().join(unique("standings_test"));
        std::fs::create_dir_all(&dir).unwrap();
        match db {
            Db::Sqlite => TestDb {
                url: format!("sqlite://{}", dir.join("standings.db").display()),
                dir,
                pg_name: None,
            },
            Db::Postgres => {
                let name = unique("standings_t");
                let admin = postgres_admin_url();
                execute(&admin, &format!("CREATE DATABASE {name}")).await;
                let base = admin.rsplit_once('/').map(|(b, _)| b.to_string()).unwrap();
                TestDb {
                    url: format!("{base}/{name}"),
                    dir,
                    pg_name: Some(name),
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(name) = self.pg_name.take() {
            // Dropped on a plain thread: the test's runtime may be gone by now.
            let admin = postgres_admin_url();
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(execute(
                    &admin,
                    &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                ));
            })
            .join();
        }
    }
}

/// Runs one statement on the database at `url` (SQLite or PostgreSQL), around the service.
pub async fn execute(url: &str, sql: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap_or_else(|e| {
        panic!("cannot connect to {url} (the PostgreSQL tests need a server there): {e}")
    });
    sqlx::Executor::execute(&mut conn, sql).await.unwrap();
    let _ = conn.close().await;
}

fn token(name: &str, secret: &str, role: Role, games: &[&str], player: Option<&str>) -> TokenConfig {
    TokenConfig {
        name: name.into(),
        secret: secret.into(),
        role,
        games: games.iter().map(|g| g.to_string()).collect(),
        player_id: player.map(str::to_string),
        rate_limit_per_second: None,
    }
}

pub fn config(url: &str) -> Config {
    let mut limited = token("limited", LIMITED, Role::Service, &["*"], None);
    limited.rate_limit_per_second = Some(3);
    Config {
        listen: "127.0.0.1:0".into(),
        database: url.into(),
        public_reads: false,
        player_jwt_hs256_secret: Some(JWT_SECRET.into()),
        player_jwt_max_lifetime_seconds: standings_origin::config::DEFAULT_PLAYER_JWT_MAX_LIFETIME_SECONDS,
        closed_period_retention_seconds: 86_400,
        feed_retention_seconds: standings_origin::config::DEFAULT_FEED_RETENTION_SECONDS,
        // Webhook retries within a test's patience.
        webhook_max_attempts: 4,
        webhook_backoff_ms: 50,
        webhook_timeout_ms: 500,
        webhook_ca_file: None,
        closed_periods_cached: 16,
        min_position_wait_ms: 200,
        checkpoint_every_events: 0,
        // Split boards' shards on two threads whatever the machine, so the tests drive the
        // path that spreads them.
        shard_threads: 2,
        http_threads: 0,
        pin_http_threads: true,
        header_read_timeout_seconds: 10,
        idle_timeout_seconds: 60,
        max_connections: 0,
        live: Default::default(),
        snapshots: Default::default(),
        cluster: None,
        tokens: vec![
            token("admin", ADMIN, Role::Admin, &["*"], None),
            token("game-server-07", SERVICE, Role::Service, &["arena-clash"], None),
            token("other-studio", OTHER_GAME, Role::Service, &["other-game"], None),
            token("mod", MODERATOR, Role::Moderator, &["*"], None),
            token("ava", PLAYER, Role::Player, &["*"], Some("p-ava")),
            limited,
        ],
    }
}

/// A running service (no socket: requests go through the router).
pub struct TestService {
    pub state: Shared,
    pub app: App,
    pub db: TestDb,
}

impl TestService {
    pub async fn start(db: Db) -> TestService {
        let db = TestDb::new(db).await;
        TestService::start_on(db).await
    }

    pub async fn start_on(db: TestDb) -> TestService {
        TestService::start_with_clock(db, standings_origin::clock::Clock::System).await
    }

    pub async fn start_with_clock(db: TestDb, clock: standings_origin::clock::Clock) -> TestService {
        let config = config(&db.url);
        TestService::start_with_config(db, &config, clock).await
    }

    /// A start on `config` (whose `database` is `db`'s).
    pub async fn start_with_config(
        db: TestDb,
        config: &Config,
        clock: standings_origin::clock::Clock,
    ) -> TestService {
        let state = standings_origin::start_with_clock(config, clock).await.unwrap();
        let app = app(state.clone());
        TestService { state, app, db }
    }

    /// Stops taking work and hands back the database, for a restart on it.
    pub async fn stop(self) -> TestDb {
        self.state.store().close().await;
        self.db
    }

    /// Sends a request and returns the status, the content type and the parsed body.
    pub async fn call_full(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (StatusCode, String, Value) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        let body = match body {
            Some(v) => {
                request = request.header("content-type", "application/json");
                Body::from(serde_json::to_vec(v).unwrap())
            }
            None => Body::empty(),
        };
        let response = self
            .app
            .clone()
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, content_type, value)
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let (status, _, value) = self.call_full(method, path, token, body).await;
        (status, value)
    }

    /// Sends `body` as it is, for bodies a `Value` cannot hold (a repeated key), and returns
    /// the status and the parsed answer.
    pub async fn call_raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        let response = self
            .app
            .clone()
            .oneshot(request.body(Body::from(body.to_string())).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    /// A GET with `token` and extra `headers`, answered as its status, headers and raw bytes
    /// (for answers that are not JSON, as snapshot parts are).
    pub async fn get_raw(
        &self,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
        let mut request = Request::builder().method(Method::GET).uri(path);
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self
            .app
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, bytes)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(SERVICE), None).await
    }

    /// Defines `arena-clash/solo/S7/{scope}` with the definition `body` (admin), asserting 201.
    pub async fn define_scope(&self, scope: &str, body: &Value) {
        let (status, answer) = self
            .call(
                Method::PUT,
                &format!("/v1/boards/arena-clash/solo/S7/{scope}"),
                Some(ADMIN),
                Some(body),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }

    pub async fn define(&self, board: &str, score_mode: &str) {
        let (status, body) = self
            .call(
                Method::PUT,
                &format!("/v1/boards/{board}"),
                Some(ADMIN),
                Some(&json!({"score_mode": score_mode, "value_min": -1_000_000_000, "value_max": 1_000_000_000})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }

    pub async fn submit(&self, event: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, "/v1/score-events", Some(SERVICE), Some(event))
            .await
    }

    /// `POST /v1/score-events/batch` with `events`, as the service token.
    pub async fn submit_batch(&self, events: &[Value]) -> (StatusCode, Value) {
        self.call(
            Method::POST,
            "/v1/score-events/batch",
            Some(SERVICE),
            Some(&json!({ "events": events })),
        )
        .await
    }
}

/// An event for arena-clash/solo/S7.
pub fn event(id: &str, player: &str, value: i64, achieved_at: &str) -> Value {
    json!({
        "event_id": id, "player_id": player, "game": "arena-clash", "mode": "solo", "season": "S7",
        "value": value, "achieved_at": achieved_at
    })
}

/// Runs a test body on both databases.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::common::Db::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name($crate::common::Db::Postgres).await
                }
            }
        )*
    };
}

/// Every live instance's (board, period, board_version, digest), sorted.
pub fn instances(registry: &standings_origin::boards::Registry) -> Vec<(String, String, u64, String)> {
    let mut all: Vec<_> = registry
        .all_instances()
        .iter()
        .map(|slot| {
            let board = slot.read();
            (
                slot.id.to_string(),
                slot.period.key.clone(),
                board.version(),
                board.digest().to_string(),
            )
        })
        .collect();
    all.sort();
    all
}

/// A player JWT for `player`, readable on `games`, signed with [`JWT_SECRET`] and valid for ten
/// minutes by the system clock (which is what the service checks a JWT's `exp` against).
pub fn player_jwt(player: &str, games: &[&str]) -> String {
    let now = standings_origin::clock::now_ms() / 1000;
    standings_origin::http::auth::sign_jwt(
        JWT_SECRET.as_bytes(),
        &json!({"sub": player, "exp": now + 600, "games": games}),
    )
}

/// The service of a [`TestService`] also served on a real socket on `127.0.0.1:0` by
/// `standings_origin::run`, in this process: for clients that need a connection of their own
/// (WebSocket upgrades), and for a real server stop.
pub struct Served {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestService {
    /// Serves this service's state on a fresh socket, with one connection thread and the
    /// harness's connection limits, until [`Served::stop`].
    pub async fn serve(&self) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let threads = standings_origin::http::serve::Threads { count: 1, pin: false };
        let limits = standings_origin::http::serve::Limits {
            header_read_timeout: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(60),
            max_connections: 256,
        };
        let task = tokio::spawn(standings_origin::run(
            listener,
            self.state.clone(),
            threads,
            limits,
            async move {
                let _ = stopped.await;
            },
        ));
        Served {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }
}

impl Served {
    /// Stops the server as a signal does (live streams are sent `going_away`, requests in
    /// flight finish, a checkpoint is written and the store closed) and waits until it is done.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A test that ends without a stop leaves no server behind on the next test's runtime.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Every record of `game`'s feed, read in pages of `limit` from the start, each page checked:
/// in `seq` order, `next_seq` the last record's seq, and an empty page's the `since_seq` asked.
pub async fn feed_records(service: &TestService, game: &str, limit: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut since = 0;
    loop {
        let (status, page) = service
            .call(
                Method::GET,
                &format!("/v1/games/{game}/feed?since_seq={since}&limit={limit}"),
                Some(SERVICE),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let records = page["records"].as_array().unwrap().clone();
        if records.is_empty() {
            assert_eq!(page["next_seq"], since);
            return all;
        }
        let next = page["next_seq"].as_i64().unwrap();
        assert_eq!(Some(next), records.last().unwrap()["seq"].as_i64());
        for r in records {
            assert!(r["seq"].as_i64().unwrap() > since, "in seq order: {r}");
            since = r["seq"].as_i64().unwrap();
            all.push(r);
        }
        since = next;
    }
}

/// Stores every feed record made so far (the keep task's store, at once).
pub async fn flush_feed(service: &TestService) {
    service
        .state
        .registry()
        .feed
        .flush(service.state.store())
        .await
        .unwrap();
}
