//! The workloads: loading the population into both sides, checking that both hold the same
//! order, and the timed side-by-side measurements.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cpu::{Account, Usage};
use crate::http::{HttpConn, count};
use crate::latency::Histogram;
use crate::resp::{Reply, RespConn};
use crate::service::{ADMIN_TOKEN, SERVICE_TOKEN};
use crate::workload::{Population, Rng, Standing, player_id, push_int, push_rfc3339};

/// The read path of the board under test.
pub(crate) const BOARD_PATH: &str = "/v1/leaderboards/loadgen/bench/s1/global";
/// Where the board under test is defined.
pub(crate) const DEFINE_PATH: &str = "/v1/boards/loadgen/bench/s1/global";
const TOP_PATH: &[u8] = b"/v1/leaderboards/loadgen/bench/s1/global/top?limit=100";

/// Everything a measurement needs to know, shared by every connection.
pub(crate) struct Plan {
    /// The players both sides hold.
    pub(crate) population: Population,
    /// The service's address.
    pub(crate) standings_addr: String,
    /// Redis's address.
    pub(crate) redis_addr: String,
    /// The Redis sorted set holding the population.
    pub(crate) redis_key: Vec<u8>,
    /// Concurrent keep-alive connections per measurement.
    pub(crate) connections: usize,
    /// Unmeasured time at the start of each measurement.
    pub(crate) warmup: Duration,
    /// Measured time of each measurement.
    pub(crate) measure: Duration,
    /// Makes submitted event ids unique to this run.
    pub(crate) nonce: u64,
    /// The event ids the load sends.
    pub(crate) event_ids: EventIds,
}

/// The event ids the load sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventIds {
    /// `load-0`, `load-1`, ...: in member order.
    Member,
    /// Random UUIDv4s, as many game servers send them.
    Uuid4,
    /// UUIDv7s: the time in ms first, then random bits, so ids come roughly in order.
    Uuid7,
}

impl EventIds {
    /// The spelling of `--event-ids`.
    pub(crate) fn parse(name: &str) -> Option<EventIds> {
        match name {
            "member" => Some(EventIds::Member),
            "uuid4" => Some(EventIds::Uuid4),
            "uuid7" => Some(EventIds::Uuid7),
            _ => None,
        }
    }

    /// How the report names them.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            EventIds::Member => "ids in member order",
            EventIds::Uuid4 => "random UUIDv4 ids",
            EventIds::Uuid7 => "UUIDv7 ids",
        }
    }
}

/// What one side is asked to do, over and over, for a fixed time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// One random player's rank: `GET .../rank` vs `ZREVRANK`.
    Rank,
    /// The top 100: `GET .../top?limit=100` vs `ZREVRANGE key 0 99 WITHSCORES`.
    Top,
    /// A random player's neighbours, radius 5: `GET .../nearby` vs `ZREVRANK` + `ZREVRANGE`.
    Nearby,
    /// One durable score event for a random player: `POST /v1/score-events` vs `ZADD GT`.
    Submit,
}

impl Workload {
    /// Every workload, in the order they run.
    pub(crate) const ALL: [Workload; 4] = [Workload::Rank, Workload::Top, Workload::Nearby, Workload::Submit];
}

/// Which side a measurement drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The Standings service over HTTP.
    Standings,
    /// Redis over RESP.
    Redis,
}

/// The result of one timed measurement, with the CPU use of what it accounted for.
pub(crate) struct Measured<C = Usage> {
    /// Requests completed in the measured window.
    pub(crate) ops: u64,
    /// The measured window.
    pub(crate) window: Duration,
    /// Their durations.
    pub(crate) latency: Histogram,
    /// Who used the CPU during the measured window.
    pub(crate) cpu: C,
}

impl<C> Measured<C> {
    /// Operations per second.
    pub(crate) fn throughput(&self) -> f64 {
        self.ops as f64 / self.window.as_secs_f64()
    }
}

/// Defines the `highest` board.
pub(crate) async fn define_board(addr: &str) -> Result<(), String> {
    define_board_at(addr, DEFINE_PATH).await
}

/// Defines the `highest` board split into `shards` score ranges (1: whole).
pub(crate) async fn define_split_board(addr: &str, shards: u16) -> Result<(), String> {
    let body = format!(r#"{{"score_mode":"highest","value_min":0,"value_max":100000000,"shards":{shards}}}"#);
    define_board_with(addr, DEFINE_PATH, body.as_bytes()).await
}

/// Defines a `highest` board at `path` (`/v1/boards/GAME/MODE/SEASON/SCOPE`).
pub(crate) async fn define_board_at(addr: &str, path: &str) -> Result<(), String> {
    define_board_with(
        addr,
        path,
        br#"{"score_mode":"highest","value_min":0,"value_max":100000000}"#,
    )
    .await
}

/// Defines a board at `path` with the definition `body`.
async fn define_board_with(addr: &str, path: &str, body: &[u8]) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    let answer = conn.put(path, body).await?;
    if answer.status != 201 && answer.status != 200 {
        return Err(format!(
            "defining the board answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    Ok(())
}

/// Appends one score event of the board under test as JSON.
pub(crate) fn push_event(out: &mut Vec<u8>, event_id: &[u8], member: u64, standing: Standing) {
    push_event_of(out, b"loadgen", event_id, member, standing);
}

/// Appends one score event of `game`'s board `bench/s1/global` as JSON.
pub(crate) fn push_event_of(
    out: &mut Vec<u8>,
    game: &[u8],
    event_id: &[u8],
    member: u64,
    standing: Standing,
) {
    out.extend_from_slice(b"{\"event_id\":\"");
    out.extend_from_slice(event_id);
    out.extend_from_slice(b"\",\"player_id\":\"");
    out.extend_from_slice(&player_id(member));
    out.extend_from_slice(b"\",\"game\":\"");
    out.extend_from_slice(game);
    out.extend_from_slice(b"\",\"mode\":\"bench\",\"season\":\"s1\",\"scopes\":[\"global\"],\"value\":");
    push_int(out, standing.value);
    out.extend_from_slice(b",\"achieved_at\":\"");
    push_rfc3339(out, standing.achieved_at);
    out.extend_from_slice(b"\"}");
}

/// Appends the event id of `member` as `ids` spells it. The random bits are drawn for
/// `member` and unique to the run's `nonce`; a UUIDv7 takes `now_ms` as its time.
fn push_event_id(out: &mut Vec<u8>, ids: EventIds, nonce: u64, member: u64, now_ms: u64) {
    let random = || {
        let mut rng = Rng::stream(nonce, member);
        (rng.next_u64(), rng.next_u64())
    };
    match ids {
        EventIds::Member => {
            out.extend_from_slice(b"load-");
            push_int(out, member as i64);
        }
        EventIds::Uuid4 => {
            let (high, low) = random();
            push_uuid(out, (high & !0xf000) | 0x4000, low);
        }
        EventIds::Uuid7 => {
            // 48 bits of Unix time in ms, the version, 12 random bits.
            let (high, low) = random();
            push_uuid(
                out,
                ((now_ms & 0xffff_ffff_ffff) << 16) | 0x7000 | (high & 0x0fff),
                low,
            );
        }
    }
}

/// Appends a UUID of these bits with the variant bits set to 10, in the hyphenated lowercase
/// form.
fn push_uuid(out: &mut Vec<u8>, high: u64, low: u64) {
    let low = (low & !(0b11 << 62)) | (0b10 << 62);
    let bits = (u128::from(high) << 64) | u128::from(low);
    let hex = format!("{bits:032x}");
    for (i, part) in [&hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push(b'-');
        }
        out.extend_from_slice(part.as_bytes());
    }
}

/// What a run of batches submits.
#[derive(Clone, Copy)]
pub(crate) enum Batches {
    /// Every member once, with its standing and an id as `--event-ids` spells it.
    Load,
    /// `n` more events, for members drawn at random, with fresh standings and ids of their own.
    Tail(u64),
    /// Every member once more, for one day of a board that keeps daily periods: a skewed value
    /// drawn for that day, achieved within `[start_ms, start_ms + span_ms)` (member `i` in the
    /// `i`th slice of it), with ids of their own.
    Day {
        /// The day's first instant, ms since the epoch.
        start_ms: i64,
        /// How much of the day the times spread over (no later than now for the current day).
        span_ms: i64,
    },
}

/// Loads every member through `POST /v1/score-events/batch`, `batch` events per request over
/// `connections` connections, and checks that every event was accepted. Returns the time it
/// took.
pub(crate) async fn load_standings(
    plan: &Arc<Plan>,
    batch: u64,
    connections: usize,
    timeout: Duration,
) -> Result<Duration, String> {
    post_batches(plan, Batches::Load, batch, connections, timeout).await
}

/// Submits `what` through `POST /v1/score-events/batch`, `batch` events per request over
/// `connections` connections, and checks that every event was accepted. Returns the time it
/// took.
pub(crate) async fn post_batches(
    plan: &Arc<Plan>,
    what: Batches,
    batch: u64,
    connections: usize,
    timeout: Duration,
) -> Result<Duration, String> {
    let members = match what {
        Batches::Load | Batches::Day { .. } => plan.population.members,
        Batches::Tail(n) => n,
    };
    let batches = members.div_ceil(batch);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + timeout;
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        let plan = plan.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(&plan.standings_addr, SERVICE_TOKEN).await?;
            let mut body = Vec::with_capacity(batch as usize * 200 + 16);
            let mut event_id = Vec::with_capacity(32);
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= batches {
                    return Ok::<(), String>(());
                }
                if Instant::now() > deadline {
                    return Err(format!("loading did not finish within {timeout:?}"));
                }
                let first = b * batch;
                let last = (first + batch).min(members);
                body.clear();
                body.extend_from_slice(b"{\"events\":[");
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                for i in first..last {
                    if i > first {
                        body.push(b',');
                    }
                    event_id.clear();
                    match what {
                        Batches::Load => {
                            push_event_id(&mut event_id, plan.event_ids, plan.nonce, i, now_ms);
                            push_event(&mut body, &event_id, i, plan.population.standing(i));
                        }
                        Batches::Tail(_) => {
                            let mut rng = Rng::stream(plan.population.seed ^ TAIL_STREAM, i);
                            let member = rng.below(plan.population.members);
                            event_id.extend_from_slice(b"tail-");
                            push_int(&mut event_id, plan.nonce as i64);
                            event_id.push(b'-');
                            push_int(&mut event_id, i as i64);
                            let standing = plan.population.fresh_standing(&mut rng);
                            push_event(&mut body, &event_id, member, standing);
                        }
                        Batches::Day { start_ms, span_ms } => {
                            event_id.extend_from_slice(b"day-");
                            push_int(&mut event_id, plan.nonce as i64);
                            event_id.push(b'-');
                            push_int(&mut event_id, start_ms);
                            event_id.push(b'-');
                            push_int(&mut event_id, i as i64);
                            let standing = day_standing(plan.population, start_ms, span_ms, i);
                            push_event(&mut body, &event_id, i, standing);
                        }
                    }
                }
                body.extend_from_slice(b"]}");
                let answer = conn.post("/v1/score-events/batch", &body).await?;
                let accepted = count(conn.body(&answer), b"\"ACCEPTED\"");
                if answer.status != 200 || accepted as u64 != last - first {
                    return Err(format!(
                        "batch {b} answered {} with {accepted} of {} accepted: {}",
                        answer.status,
                        last - first,
                        conn.body_text(&answer)
                    ));
                }
                if batches >= 10 && (b + 1).is_multiple_of(batches / 10) {
                    eprintln!(
                        "loadgen:   standings: {} of {members} submitted ({:.1?})",
                        (b + 1) * batch,
                        started.elapsed()
                    );
                }
            }
        }));
    }
    for task in tasks {
        task.await.map_err(|e| format!("a loading task failed: {e}"))??;
    }
    Ok(started.elapsed())
}

/// Seeds the draws of [`Batches::Tail`] apart from every other stream.
const TAIL_STREAM: u64 = 0x7461_696c;

/// Member `i`'s standing on the day of [`Batches::Day`]: a value drawn for that day (so two
/// days rank the players differently), achieved in the `i`th of `members` equal slices of the
/// span (the slices may be shorter than a millisecond; equal times fall back to the id).
fn day_standing(population: Population, start_ms: i64, span_ms: i64, i: u64) -> Standing {
    let mut rng = Rng::stream(population.seed ^ start_ms as u64, i);
    let slice = i128::from(span_ms.max(1)) * i128::from(i) / i128::from(population.members.max(1));
    Standing {
        value: rng.skewed_value(),
        achieved_at: start_ms + slice as i64,
    }
}

/// Appends one RESP bulk string.
fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    push_int(out, bytes.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Deletes the key, then loads every member into the sorted set with pipelined `ZADD`s of
/// `batch` members, 8 commands in flight. Returns the time the `ZADD`s took.
pub(crate) async fn load_redis(plan: &Plan, batch: u64) -> Result<Duration, String> {
    const IN_FLIGHT: u64 = 8;
    let mut conn = RespConn::connect(&plan.redis_addr).await?;
    conn.call(&[b"DEL", &plan.redis_key]).await?;
    let members = plan.population.members;
    let started = Instant::now();
    let mut first = 0;
    let mut score = Vec::with_capacity(24);
    while first < members {
        let mut commands = 0;
        while commands < IN_FLIGHT && first < members {
            let last = (first + batch).min(members);
            let out = conn.raw();
            out.push(b'*');
            push_int(out, (2 + 2 * (last - first)) as i64);
            out.extend_from_slice(b"\r\n");
            push_bulk(out, b"ZADD");
            push_bulk(out, &plan.redis_key);
            for member in first..last {
                score.clear();
                push_int(
                    &mut score,
                    plan.population.redis_score(plan.population.standing(member)) as i64,
                );
                push_bulk(out, &score);
                push_bulk(out, &player_id(member));
            }
            commands += 1;
            first = last;
        }
        conn.flush().await?;
        for _ in 0..commands {
            match conn.reply().await? {
                Reply::Int(_) => {}
                other => return Err(format!("ZADD answered {other:?}")),
            }
        }
    }
    Ok(started.elapsed())
}

/// Redis's `used_memory`, in bytes: what its allocator holds for data and overhead.
pub(crate) async fn redis_used_memory(addr: &str) -> Result<u64, String> {
    let mut conn = RespConn::connect(addr).await?;
    let Reply::Bulk(Some(range)) = conn.call(&[b"INFO", b"memory"]).await? else {
        return Err("INFO memory did not answer a bulk string".into());
    };
    let text = String::from_utf8_lossy(conn.bytes(&range)).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "INFO memory has no used_memory".into())
}

/// Redis's process id, for CPU accounting.
pub(crate) async fn redis_pid(addr: &str) -> Result<u32, String> {
    let mut conn = RespConn::connect(addr).await?;
    let Reply::Bulk(Some(range)) = conn.call(&[b"INFO", b"server"]).await? else {
        return Err("INFO server did not answer a bulk string".into());
    };
    let text = String::from_utf8_lossy(conn.bytes(&range)).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "INFO server has no process_id".into())
}

/// Deletes the key.
pub(crate) async fn redis_delete(addr: &str, key: &[u8]) -> Result<(), String> {
    RespConn::connect(addr)
        .await?
        .call(&[b"DEL", key])
        .await
        .map(drop)
}

fn json(conn: &HttpConn, answer: &crate::http::Answer, what: &str) -> Result<serde_json::Value, String> {
    if answer.status != 200 {
        return Err(format!(
            "{what} answered {}: {}",
            answer.status,
            conn.body_text(answer)
        ));
    }
    serde_json::from_slice(conn.body(answer)).map_err(|e| format!("{what} is not JSON: {e}"))
}

fn entry_ids(value: &serde_json::Value) -> Vec<Vec<u8>> {
    value["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| e["player_id"].as_str().map(|s| s.as_bytes().to_vec()))
                .collect()
        })
        .unwrap_or_default()
}

/// Every other element (the members of a `WITHSCORES` reply).
fn members_of(items: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    items.into_iter().step_by(2).collect()
}

/// Checks, before anything is measured, that both sides hold the same players in the same
/// order: the top 100, and the rank, value and neighbours of `samples` random players.
pub(crate) async fn verify_same_order(plan: &Plan, samples: u64) -> Result<(), String> {
    let mut http = HttpConn::connect(&plan.standings_addr, SERVICE_TOKEN).await?;
    let mut redis = RespConn::connect(&plan.redis_addr).await?;
    let key = plan.redis_key.as_slice();

    let path = std::str::from_utf8(TOP_PATH).map_err(|e| e.to_string())?;
    let answer = http.get(path).await?;
    let top = json(&http, &answer, "top")?;
    let reply = redis
        .call(&[b"ZREVRANGE", key, b"0", b"99", b"WITHSCORES"])
        .await?;
    let redis_top = members_of(redis.bulk_items(&reply)?);
    if entry_ids(&top) != redis_top || redis_top.len() as u64 != plan.population.members.min(100) {
        return Err("the top 100 differ between Standings and Redis".into());
    }
    if top["total_players"].as_u64() != Some(plan.population.members) {
        return Err(format!(
            "Standings holds {} players, not {}",
            top["total_players"], plan.population.members
        ));
    }

    let mut rng = Rng::stream(plan.population.seed, 0xc0ffee);
    for _ in 0..samples {
        let member = rng.below(plan.population.members);
        let id = player_id(member);
        let id_text = std::str::from_utf8(&id).map_err(|e| e.to_string())?;
        let answer = http.get(&format!("{BOARD_PATH}/players/{id_text}/rank")).await?;
        let rank = json(&http, &answer, "rank")?;
        let Reply::Int(redis_rank) = redis.call(&[b"ZREVRANK", key, &id]).await? else {
            return Err(format!("Redis has no rank for {id_text}"));
        };
        let expected = plan.population.standing(member).value;
        if rank["rank"].as_u64() != Some(redis_rank as u64 + 1) || rank["value"].as_i64() != Some(expected) {
            return Err(format!(
                "{id_text}: Standings says rank {} value {}, Redis rank {} and the loaded value is {expected}",
                rank["rank"],
                rank["value"],
                redis_rank + 1
            ));
        }
        let answer = http
            .get(&format!("{BOARD_PATH}/players/{id_text}/nearby?radius=5"))
            .await?;
        let nearby = json(&http, &answer, "nearby")?;
        let start = (redis_rank - 5).max(0).to_string();
        let stop = (redis_rank + 5).to_string();
        let reply = redis
            .call(&[
                b"ZREVRANGE",
                key,
                start.as_bytes(),
                stop.as_bytes(),
                b"WITHSCORES",
            ])
            .await?;
        if entry_ids(&nearby) != members_of(redis.bulk_items(&reply)?) {
            return Err(format!(
                "the neighbours of {id_text} differ between Standings and Redis"
            ));
        }
    }
    Ok(())
}

/// One connection of a measurement.
enum Conn {
    Standings(HttpConn),
    Redis(RespConn),
}

/// Runs `workload` against `side` with the plan's connections: a warm-up, then the measured
/// window, whose CPU use `account` reads. Connection `i` draws the same players on both sides.
pub(crate) async fn measure<A: Account>(
    plan: &Arc<Plan>,
    side: Side,
    workload: Workload,
    account: &A,
) -> Result<Measured<A::Usage>, String> {
    let mut conns = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        conns.push(match side {
            Side::Standings => Conn::Standings(HttpConn::connect(&plan.standings_addr, SERVICE_TOKEN).await?),
            Side::Redis => Conn::Redis(RespConn::connect(&plan.redis_addr).await?),
        });
    }
    let measured_from = Instant::now() + plan.warmup;
    let until = measured_from + plan.measure;
    let mut tasks = Vec::with_capacity(conns.len());
    for (index, conn) in conns.into_iter().enumerate() {
        let plan = plan.clone();
        tasks.push(tokio::spawn(async move {
            drive(&plan, workload, index as u64, conn, measured_from, until).await
        }));
    }
    tokio::time::sleep_until(measured_from.into()).await;
    let cpu_from = account.read();
    tokio::time::sleep_until(until.into()).await;
    let cpu = account.between(&cpu_from, &account.read());
    let mut latency = Histogram::new();
    let mut ops = 0;
    for task in tasks {
        let (done, histogram) = task
            .await
            .map_err(|e| format!("a measuring task failed: {e}"))??;
        ops += done;
        latency.merge(&histogram);
    }
    Ok(Measured {
        ops,
        window: plan.measure,
        latency,
        cpu,
    })
}

/// One connection's loop: requests back to back until `until`, timing those begun after
/// `measured_from`.
async fn drive(
    plan: &Plan,
    workload: Workload,
    index: u64,
    mut conn: Conn,
    measured_from: Instant,
    until: Instant,
) -> Result<(u64, Histogram), String> {
    let mut rng = Rng::stream(plan.population.seed, ((workload as u64 + 1) << 32) | index);
    let mut latency = Histogram::new();
    let mut ops = 0u64;
    let mut body = Vec::with_capacity(512);
    let mut event_id = Vec::with_capacity(64);
    let (mut start, mut stop, mut score) = (Vec::new(), Vec::new(), Vec::new());
    let key = plan.redis_key.as_slice();
    let members = plan.population.members;
    let mut submitted = 0u64;
    loop {
        let begun = Instant::now();
        if begun >= until {
            break;
        }
        let member = rng.below(members);
        let id = player_id(member);
        match &mut conn {
            Conn::Standings(http) => {
                let expected = match workload {
                    Workload::Rank | Workload::Nearby => {
                        let path = http.start("GET");
                        path.extend_from_slice(BOARD_PATH.as_bytes());
                        path.extend_from_slice(b"/players/");
                        path.extend_from_slice(&id);
                        path.extend_from_slice(if workload == Workload::Rank {
                            b"/rank"
                        } else {
                            b"/nearby?radius=5"
                        });
                        200
                    }
                    Workload::Top => {
                        http.start("GET").extend_from_slice(TOP_PATH);
                        200
                    }
                    Workload::Submit => {
                        let standing = plan.population.fresh_standing(&mut rng);
                        event_id.clear();
                        event_id.extend_from_slice(b"sub-");
                        push_int(&mut event_id, plan.nonce as i64);
                        event_id.push(b'-');
                        push_int(&mut event_id, index as i64);
                        event_id.push(b'-');
                        push_int(&mut event_id, submitted as i64);
                        submitted += 1;
                        body.clear();
                        push_event(&mut body, &event_id, member, standing);
                        http.start("POST").extend_from_slice(b"/v1/score-events");
                        202
                    }
                };
                let answer = http.send(body_for(workload, &body)).await?;
                if answer.status != expected {
                    return Err(format!(
                        "{workload:?} answered {} (expected {expected}): {}",
                        answer.status,
                        http.body_text(&answer)
                    ));
                }
            }
            Conn::Redis(redis) => match workload {
                Workload::Rank => {
                    expect_int(redis.call(&[b"ZREVRANK", key, &id]).await?, "ZREVRANK").map(drop)?
                }
                Workload::Top => expect_array(
                    redis
                        .call(&[b"ZREVRANGE", key, b"0", b"99", b"WITHSCORES"])
                        .await?,
                )?,
                Workload::Nearby => {
                    let rank = expect_int(redis.call(&[b"ZREVRANK", key, &id]).await?, "ZREVRANK")?;
                    start.clear();
                    push_int(&mut start, (rank - 5).max(0));
                    stop.clear();
                    push_int(&mut stop, rank + 5);
                    expect_array(
                        redis
                            .call(&[b"ZREVRANGE", key, &start, &stop, b"WITHSCORES"])
                            .await?,
                    )?;
                }
                Workload::Submit => {
                    let standing = plan.population.fresh_standing(&mut rng);
                    score.clear();
                    push_int(&mut score, plan.population.redis_score(standing) as i64);
                    expect_int(redis.call(&[b"ZADD", key, b"GT", &score, &id]).await?, "ZADD").map(drop)?;
                }
            },
        }
        if begun >= measured_from {
            latency.record(begun.elapsed());
            ops += 1;
        }
    }
    Ok((ops, latency))
}

/// The body a workload sends: the event for a submission, nothing for reads.
fn body_for(workload: Workload, body: &[u8]) -> &[u8] {
    if workload == Workload::Submit { body } else { &[] }
}

fn expect_int(reply: Reply, what: &str) -> Result<i64, String> {
    match reply {
        Reply::Int(n) => Ok(n),
        other => Err(format!("{what} answered {other:?}")),
    }
}

fn expect_array(reply: Reply) -> Result<(), String> {
    match reply {
        Reply::Array(Some(_), _) => Ok(()),
        other => Err(format!("ZREVRANGE answered {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(ids: EventIds, nonce: u64, member: u64, now_ms: u64) -> String {
        let mut out = Vec::new();
        push_event_id(&mut out, ids, nonce, member, now_ms);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn uuid7_ids_lead_with_the_time_and_sort_by_it() {
        let now = 1_764_500_000_123u64;
        let a = id_of(EventIds::Uuid7, 7, 5, now);
        assert_eq!(a.len(), 36, "{a}");
        assert_eq!(a.replace('-', "")[..12], format!("{now:012x}"), "{a}");
        assert_eq!(&a[14..15], "7", "version 7: {a}");
        assert!(
            matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
            "variant: {a}"
        );
        assert_ne!(a, id_of(EventIds::Uuid7, 7, 6, now));
        // A later millisecond sorts after, whatever the random bits.
        assert!(id_of(EventIds::Uuid7, 7, 1, now + 1) > id_of(EventIds::Uuid7, 7, 2, now));
        assert_eq!(id_of(EventIds::Member, 7, 42, now), "load-42");
        assert_eq!(EventIds::parse("uuid7"), Some(EventIds::Uuid7));
        assert_eq!(EventIds::parse("uuid"), None);
    }

    #[test]
    fn random_event_ids_are_uuid_v4_and_differ_by_member_and_run() {
        let id = |nonce, member| id_of(EventIds::Uuid4, nonce, member, 0);
        let a = id(7, 0);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12],
            "{a}"
        );
        assert!(
            a.bytes()
                .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert!(parts[2].starts_with('4'), "version 4: {a}");
        assert!(
            matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
            "variant: {a}"
        );
        assert_eq!(a, id(7, 0));
        assert_ne!(a, id(7, 1));
        assert_ne!(a, id(8, 0));
    }
}
