//! A model of one partition's lease, fence and log, explored over interleavings by proptest.
//!
//! The database is plain data that runs the statements of `store::cluster` as PostgreSQL does:
//! `take`, `renew` and `release` update the lease row on the database's clock, and a write
//! transaction's fence share-locks that row until it commits, or is rolled back when the
//! database ends a session idle in its transaction (`idle_in_transaction_session_timeout`, the
//! lease time). The nodes run the real decisions of [`super::lease`]: when to renew,
//! `Held::renewed` from the moment the statement was sent, `serving` before a read or a write,
//! `plan` to take or give back. Their clocks run at rates of their own; every statement and
//! answer is delayed; nodes stop for a while as under `SIGSTOP`, in the middle of a write
//! transaction too; some commits' answers are lost and resolved as `Store::next_seq_landed`
//! does. The simulation's real time is the database's clock: only rates relative to it matter.
//!
//! One partition is enough: leases, fences and logs are per partition. The properties, checked
//! on every run: (1) no append commits under an epoch that no longer holds the lease, so none
//! follows a take of a newer epoch; (2) every acknowledged append is in the log once, before
//! every append submitted after its acknowledgement, and a writer only appends after the whole
//! log; (3) a node answers a read only while the database still backs its lease, and the read
//! sees every append acknowledged so far.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use super::lease::{self, Held, Lease};

/// How long a take waits for a write in flight before it gives up (`ClusterStore::take`).
const LOCK_TIMEOUT_MS: i64 = 1_000;

/// A node's monotonic clock, `rate_ppm` millionths faster than the database's.
#[derive(Clone, Copy, Debug, Default)]
struct Clock {
    origin: i64,
    rate_ppm: i64,
}

impl Clock {
    fn local(self, real: i64) -> i64 {
        self.origin + real * (1_000_000 + self.rate_ppm) / 1_000_000
    }

    /// The first real instant at which this clock reads `local` or later.
    fn real_at(self, local: i64) -> i64 {
        let rate = 1_000_000 + self.rate_ppm;
        ((local - self.origin).max(0) * 1_000_000 + rate - 1) / rate
    }
}

/// An append: its id (the order of submission), its writer, and the epoch it was written under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    id: usize,
    node: usize,
    epoch: i64,
}

/// The statements of `store::cluster` for one partition.
#[derive(Clone, Debug)]
enum Stmt {
    Renew(i64),
    ReadLease,
    Take,
    Release(i64),
    /// A takeover's catch-up for the epoch just taken: the log to its end.
    ReadLog(i64),
    /// A write transaction's first round trip: the fence, then the append after the entries
    /// the writer knows (a view behind the log would reuse its `seq`s).
    FenceAppend(Entry, Vec<Entry>),
    Commit(Entry),
    /// Whether a commit whose answer was lost is the last entry of its epoch.
    Landed(Entry),
}

#[derive(Clone, Debug)]
enum Answer {
    Renewed(i64, bool),
    Lease(Lease),
    Took(Option<i64>),
    Released,
    Log(i64, Vec<Entry>),
    Fenced(bool),
    /// `None`: lost (the connection broke once the commit's outcome was settled).
    Committed(Option<bool>),
    Landed(bool),
}

#[derive(Clone, Debug)]
enum Event {
    /// A statement reaches the database; the last field is its node's clock when it left.
    Arrive(usize, Stmt, i64),
    /// An answer reaches its node, with the sending time of its statement.
    Reply(usize, Answer, i64),
    Tick(usize),
    Submit(usize),
    Read(usize),
    Pause(usize, i64),
    Drain(usize, i64),
    /// The database ends a session idle in its transaction since the given instant.
    IdleKill(usize, i64),
    /// A take waiting for the lease row gives up.
    LockTimeout(usize),
}

/// The partition as a node sees it (`SlotState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ModelSlot {
    #[default]
    Elsewhere,
    Taking(Held),
    Owned(Held),
    Releasing(Held),
}

impl ModelSlot {
    fn held(self) -> Option<Held> {
        match self {
            ModelSlot::Elsewhere => None,
            ModelSlot::Taking(h) | ModelSlot::Owned(h) | ModelSlot::Releasing(h) => Some(h),
        }
    }
}

#[derive(Default)]
struct Node {
    clock: Clock,
    slot: ModelSlot,
    /// Its copy of the log: a takeover's catch-up, then its own commits.
    view: Vec<Entry>,
    /// Its write transaction in flight (one writer per partition).
    writing: Option<Entry>,
    /// When its lease loop's tick began, on its clock.
    tick_began: i64,
    paused_until: i64,
    draining_until: i64,
}

#[derive(Default)]
struct Database {
    epoch: i64,
    holder: Option<usize>,
    expires: i64,
    log: Vec<Entry>,
    /// Open write transactions, each share-locking the lease row: the entry, idle since.
    open: Vec<(Entry, i64)>,
    /// Statements waiting for the lease row: ticket, node, statement, sending time.
    waiting: Vec<(usize, usize, Stmt, i64)>,
    tickets: usize,
    /// Every take: its epoch and the log's length then.
    takes: Vec<(i64, usize)>,
}

/// A departure from the real rules, which some property must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flaw {
    /// The fence checks the lease without locking its row: a take does not wait for a write.
    FenceTakesNoLock,
    /// A new owner serves without reading the log to its end.
    ServeBeforeCatchUp,
    /// A writer acknowledges once its append is made, before the commit.
    AckBeforeCommit,
    /// A lease taken or renewed is counted from its answer's arrival, not from its sending.
    CountedFromAnswer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Violation {
    /// An append committed, or stands in the log, after the lease moved past its epoch.
    StaleEpoch(Entry),
    /// A node appended after a view that is not the log.
    ViewBehind(usize),
    Lost(usize),
    Duplicated(usize),
    /// The first was acknowledged before the second was submitted, yet follows it.
    Reordered(usize, usize),
    /// A node answered a read at this instant with no lease the database backs.
    UnsafeRead(usize, i64),
    /// A node's read missed this acknowledged append.
    StaleRead(usize, usize),
}

#[derive(Default)]
struct Model {
    ttl: i64,
    flaw: Option<Flaw>,
    now: i64,
    queue: BTreeMap<(i64, u64), Event>,
    next_event: u64,
    /// Each message's delay in turn, and whether a commit's answer on it is lost.
    legs: Vec<(i64, bool)>,
    next_leg: usize,
    db: Database,
    nodes: Vec<Node>,
    submitted: Vec<i64>,
    acked: Vec<(usize, i64)>,
    violations: Vec<Violation>,
    // What the run exercised, so that tests can tell a vacuous schedule from a rich one.
    served: usize,
    unserved: usize,
    refused: Vec<Entry>,
    resolved: usize,
    kills: usize,
    releases: usize,
}

fn name(n: usize) -> String {
    format!("n{n}")
}

impl Model {
    fn new(schedule: &Schedule, flaw: Option<Flaw>) -> Model {
        let nodes = schedule.clocks.iter().map(|&clock| Node {
            clock,
            ..Node::default()
        });
        let mut model = Model {
            ttl: schedule.ttl_ms,
            flaw,
            legs: schedule.legs.clone(),
            nodes: nodes.collect(),
            ..Model::default()
        };
        for n in 0..model.nodes.len() {
            model.at(0, Event::Tick(n));
        }
        for (at, event) in &schedule.happenings {
            model.at(*at, event.clone());
        }
        model
    }

    fn flawed(&self, flaw: Flaw) -> bool {
        self.flaw == Some(flaw)
    }

    fn at(&mut self, time: i64, event: Event) {
        self.queue.insert((time, self.next_event), event);
        self.next_event += 1;
    }

    fn local(&self, n: usize) -> i64 {
        self.nodes[n].clock.local(self.now)
    }

    fn leg(&mut self) -> (i64, bool) {
        let leg = self.legs[self.next_leg % self.legs.len()];
        self.next_leg += 1;
        leg
    }

    fn send(&mut self, n: usize, stmt: Stmt) {
        let (delay, _) = self.leg();
        let sent = self.local(n);
        self.at(self.now + delay, Event::Arrive(n, stmt, sent));
    }

    fn answer(&mut self, n: usize, answer: Answer, sent: i64) {
        let (delay, lost) = self.leg();
        let answer = match answer {
            Answer::Committed(_) if lost => Answer::Committed(None),
            other => other,
        };
        self.at(self.now + delay, Event::Reply(n, answer, sent));
    }

    /// Runs every event up to `until` (real ms), then judges the log.
    fn run(mut self, until: i64) -> Model {
        while let Some(((time, order), event)) = self.queue.pop_first() {
            if time > until {
                break;
            }
            self.now = time;
            // A stopped node handles nothing; what reached it waits, in order, for its resumption.
            if let Event::Reply(n, ..) | Event::Tick(n) | Event::Submit(n) | Event::Read(n) = event
                && self.nodes[n].paused_until > time
            {
                self.queue.insert((self.nodes[n].paused_until, order), event);
                continue;
            }
            match event {
                Event::Arrive(n, stmt, sent) => self.arrive(n, stmt, sent),
                Event::Reply(n, answer, sent) => self.reply(n, answer, sent),
                Event::Tick(n) => self.tick(n),
                Event::Submit(n) => self.submit(n),
                Event::Read(n) => self.read(n),
                Event::Pause(n, ms) => {
                    let node = &mut self.nodes[n];
                    node.paused_until = node.paused_until.max(time + ms);
                }
                Event::Drain(n, ms) => self.nodes[n].draining_until = time + ms,
                Event::IdleKill(n, since) => {
                    if let Some(i) = self.db.open.iter().position(|&(e, s)| e.node == n && s == since) {
                        self.db.open.remove(i);
                        self.kills += 1;
                        self.wake();
                    }
                }
                Event::LockTimeout(ticket) => {
                    if let Some(i) = self.db.waiting.iter().position(|w| w.0 == ticket) {
                        let (_, n, _, sent) = self.db.waiting.remove(i);
                        self.answer(n, Answer::Took(None), sent);
                    }
                }
            }
        }
        self.judge();
        self
    }

    // The database.

    fn arrive(&mut self, n: usize, stmt: Stmt, sent: i64) {
        let locked = !self.db.open.is_empty() && !self.flawed(Flaw::FenceTakesNoLock);
        if locked && matches!(stmt, Stmt::Take | Stmt::Renew(_) | Stmt::Release(_)) {
            let ticket = self.db.tickets;
            self.db.tickets += 1;
            if matches!(stmt, Stmt::Take) {
                self.at(self.now + LOCK_TIMEOUT_MS, Event::LockTimeout(ticket));
            }
            self.db.waiting.push((ticket, n, stmt, sent));
            return;
        }
        let answer = self.execute(n, stmt);
        self.answer(n, answer, sent);
    }

    fn execute(&mut self, n: usize, stmt: Stmt) -> Answer {
        let (now, ttl) = (self.now, self.ttl);
        let db = &mut self.db;
        let holds = |epoch| db.holder == Some(n) && db.epoch == epoch && db.expires > now;
        match stmt {
            Stmt::Take if db.holder.is_none() || db.expires <= now => {
                db.epoch += 1;
                db.holder = Some(n);
                db.expires = now + ttl;
                db.takes.push((db.epoch, db.log.len()));
                Answer::Took(Some(db.epoch))
            }
            Stmt::Take => Answer::Took(None),
            Stmt::Renew(epoch) => {
                let renewed = holds(epoch);
                if renewed {
                    db.expires = now + ttl;
                }
                Answer::Renewed(epoch, renewed)
            }
            Stmt::Release(epoch) => {
                if db.holder == Some(n) && db.epoch == epoch {
                    (db.holder, db.expires) = (None, now);
                    self.releases += 1;
                }
                Answer::Released
            }
            Stmt::ReadLease => Answer::Lease(Lease {
                partition: 0,
                node: db.holder.map(name),
                expires_in_ms: db.expires - now,
            }),
            Stmt::ReadLog(epoch) => Answer::Log(epoch, db.log.clone()),
            Stmt::FenceAppend(entry, view) => {
                if !holds(entry.epoch) {
                    return Answer::Fenced(false);
                }
                if view != db.log {
                    self.violations.push(Violation::ViewBehind(n));
                }
                db.open.push((entry, now));
                self.at(now + ttl.max(1_000), Event::IdleKill(n, now));
                Answer::Fenced(true)
            }
            Stmt::Commit(entry) => {
                // A session the database ended has nothing left to commit.
                let Some(i) = db.open.iter().position(|(e, _)| e.node == n) else {
                    self.refused.push(entry);
                    return Answer::Committed(Some(false));
                };
                db.open.remove(i);
                if db.epoch != entry.epoch || db.holder != Some(n) {
                    self.violations.push(Violation::StaleEpoch(entry));
                }
                db.log.push(entry);
                self.wake();
                Answer::Committed(Some(true))
            }
            Stmt::Landed(entry) => {
                Answer::Landed(db.log.iter().rev().find(|e| e.epoch == entry.epoch) == Some(&entry))
            }
        }
    }

    /// Once no transaction holds the lease row, the statements waiting for it run, in order.
    fn wake(&mut self) {
        if !self.db.open.is_empty() {
            return;
        }
        for (_, n, stmt, sent) in std::mem::take(&mut self.db.waiting) {
            let answer = self.execute(n, stmt);
            self.answer(n, answer, sent);
        }
    }

    // The nodes: the lease loop (`lease_loop::once`), the takeover and hand-over, the writer, reads.

    fn tick(&mut self, n: usize) {
        self.nodes[n].tick_began = self.local(n);
        match self.nodes[n].slot.held() {
            Some(held) => self.send(n, Stmt::Renew(held.epoch)),
            None => self.send(n, Stmt::ReadLease),
        }
    }

    fn next_tick(&mut self, n: usize) {
        let node = &self.nodes[n];
        let at = node.clock.real_at(node.tick_began + lease::tick_ms(self.ttl));
        self.at(at.max(self.now), Event::Tick(n));
    }

    fn reply(&mut self, n: usize, answer: Answer, sent: i64) {
        let from = if self.flawed(Flaw::CountedFromAnswer) {
            self.local(n)
        } else {
            sent
        };
        let ttl = self.ttl;
        let renewed = move |epoch| Held::renewed(epoch, from, ttl);
        match answer {
            Answer::Renewed(epoch, held) => {
                // Counted from its sending, a renewal ends before the database's expiry; one
                // refused drops the partition; one for a lease since given up changes nothing.
                let slot = &mut self.nodes[n].slot;
                *slot = match *slot {
                    ModelSlot::Taking(h) if h.epoch == epoch && held => ModelSlot::Taking(renewed(epoch)),
                    ModelSlot::Owned(h) if h.epoch == epoch && held => ModelSlot::Owned(renewed(epoch)),
                    ModelSlot::Releasing(h) if h.epoch == epoch && held => {
                        ModelSlot::Releasing(renewed(epoch))
                    }
                    s if s.held().is_some_and(|h| h.epoch == epoch) => ModelSlot::Elsewhere,
                    s => s,
                };
                self.send(n, Stmt::ReadLease);
            }
            Answer::Lease(row) => self.plan(n, row),
            Answer::Took(Some(epoch)) if self.flawed(Flaw::ServeBeforeCatchUp) => {
                self.nodes[n].slot = ModelSlot::Owned(renewed(epoch));
                self.next_tick(n);
            }
            Answer::Took(Some(epoch)) => {
                self.nodes[n].slot = ModelSlot::Taking(renewed(epoch));
                self.send(n, Stmt::ReadLog(epoch));
                self.next_tick(n);
            }
            Answer::Took(None) => self.next_tick(n),
            Answer::Log(epoch, log) => {
                // Only the catch-up of the lease still being taken brings the partition up.
                let node = &mut self.nodes[n];
                if let ModelSlot::Taking(held) = node.slot
                    && held.epoch == epoch
                {
                    (node.view, node.slot) = (log, ModelSlot::Owned(held));
                }
            }
            // Whatever the slot became meanwhile, as `lease_loop::hand_over` does.
            Answer::Released => self.nodes[n].slot = ModelSlot::Elsewhere,
            Answer::Fenced(true) => {
                let entry = self.nodes[n].writing.expect("a write in flight");
                if self.flawed(Flaw::AckBeforeCommit) {
                    self.acked.push((entry.id, self.now));
                }
                self.send(n, Stmt::Commit(entry));
            }
            Answer::Committed(Some(true)) | Answer::Landed(true) => self.committed(n),
            // An unknown outcome is judged by the log's rows of the writer's own epoch.
            Answer::Committed(None) => {
                self.resolved += 1;
                let entry = self.nodes[n].writing.expect("a write in flight");
                self.send(n, Stmt::Landed(entry));
            }
            Answer::Fenced(false) | Answer::Committed(Some(false)) | Answer::Landed(false) => {
                self.write_done(n);
            }
        }
    }

    fn plan(&mut self, n: usize, row: Lease) {
        let now = self.now;
        let draining = self.nodes[n].draining_until > now;
        let live = self
            .nodes
            .iter()
            .filter(|node| node.draining_until <= now)
            .count();
        let live = live.max(usize::from(!draining));
        let plan = lease::plan(&name(n), &[row], live, draining, &BTreeSet::from([0]));
        if let ModelSlot::Owned(held) = self.nodes[n].slot
            && plan.release.contains(&0)
        {
            // The hand-over stops serving at once and gives the lease back after the write in
            // flight.
            self.nodes[n].slot = ModelSlot::Releasing(held);
            if self.nodes[n].writing.is_none() {
                self.send(n, Stmt::Release(held.epoch));
            }
        }
        if plan.take.contains(&0) && self.nodes[n].slot == ModelSlot::Elsewhere {
            self.send(n, Stmt::Take);
        } else {
            self.next_tick(n);
        }
    }

    fn submit(&mut self, n: usize) {
        let local = self.local(n);
        let node = &mut self.nodes[n];
        let ModelSlot::Owned(held) = node.slot else {
            return;
        };
        if node.writing.is_some() || !held.serving(local) {
            return;
        }
        let entry = Entry {
            id: self.submitted.len(),
            node: n,
            epoch: held.epoch,
        };
        node.writing = Some(entry);
        let view = node.view.clone();
        self.submitted.push(self.now);
        self.send(n, Stmt::FenceAppend(entry, view));
    }

    /// A commit known to have taken: acknowledged, and applied if the engine that wrote it
    /// still serves (a later takeover's catch-up has it already).
    fn committed(&mut self, n: usize) {
        let entry = self.nodes[n].writing.expect("a write in flight");
        if !self.flawed(Flaw::AckBeforeCommit) {
            self.acked.push((entry.id, self.now));
        }
        let node = &mut self.nodes[n];
        if node.slot.held().is_some_and(|h| h.epoch == entry.epoch) {
            node.view.push(entry);
        }
        self.write_done(n);
    }

    fn write_done(&mut self, n: usize) {
        self.nodes[n].writing = None;
        if let ModelSlot::Releasing(held) = self.nodes[n].slot {
            self.send(n, Stmt::Release(held.epoch));
        }
    }

    fn read(&mut self, n: usize) {
        let ModelSlot::Owned(held) = self.nodes[n].slot else {
            return;
        };
        if !held.serving(self.local(n)) {
            self.unserved += 1;
            return;
        }
        self.served += 1;
        let db = &self.db;
        if db.holder != Some(n) || db.epoch != held.epoch || db.expires <= self.now {
            self.violations.push(Violation::UnsafeRead(n, self.now));
        }
        let view = &self.nodes[n].view;
        for &(id, _) in &self.acked {
            if !view.iter().any(|e| e.id == id) {
                self.violations.push(Violation::StaleRead(n, id));
            }
        }
    }

    /// Properties 1 and 2 over the final log.
    fn judge(&mut self) {
        let log = &self.db.log;
        let position = |id: usize| log.iter().position(|e| e.id == id);
        for (i, entry) in log.iter().enumerate() {
            if log[..i].iter().any(|e| e.id == entry.id) {
                self.violations.push(Violation::Duplicated(entry.id));
            }
            if self
                .db
                .takes
                .iter()
                .any(|&(epoch, len)| len <= i && entry.epoch < epoch)
            {
                self.violations.push(Violation::StaleEpoch(*entry));
            }
        }
        for &(a, acked_at) in &self.acked {
            let Some(at) = position(a) else {
                self.violations.push(Violation::Lost(a));
                continue;
            };
            for &(b, _) in &self.acked {
                if self.submitted[b] > acked_at && position(b).is_some_and(|bt| bt < at) {
                    self.violations.push(Violation::Reordered(a, b));
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Schedule {
    ttl_ms: i64,
    clocks: Vec<Clock>,
    /// Each message's delay in turn (used round and round), and whether a commit's answer on
    /// it is lost.
    legs: Vec<(i64, bool)>,
    /// Submissions, reads, pauses and drains, at real times.
    happenings: Vec<(i64, Event)>,
}

impl Schedule {
    /// Past the last happening by long enough for a lease to expire and be taken.
    fn end(&self) -> i64 {
        self.happenings.iter().map(|h| h.0).max().unwrap_or(0) + 3 * self.ttl_ms
    }
}

/// Schedules of 2–4 nodes with clocks `rates_ppm` off the database's: mostly quick messages,
/// some as slow as a lease time, a few lost commit answers, pauses up to three lease times and
/// drains up to two, among writes and reads.
fn schedules(rates_ppm: RangeInclusive<i64>) -> impl Strategy<Value = Schedule> {
    (1_000i64..=4_000, 2usize..=4).prop_flat_map(move |(ttl, nodes)| {
        let clock = (rates_ppm.clone(), 0i64..1_000_000);
        let leg = (
            prop_oneof![19 => 0..ttl / 50, 1 => 0..ttl],
            prop::bool::weighted(0.05),
        );
        let happening = prop_oneof![
            8 => (0..nodes).prop_map(Event::Submit),
            8 => (0..nodes).prop_map(Event::Read),
            1 => (0..nodes, 0..3 * ttl).prop_map(|(n, ms)| Event::Pause(n, ms)),
            1 => (0..nodes, 0..2 * ttl).prop_map(|(n, ms)| Event::Drain(n, ms)),
        ];
        (
            prop::collection::vec(clock, nodes),
            prop::collection::vec(leg, 1..48),
            prop::collection::vec((0..15 * ttl, happening), 0..240),
        )
            .prop_map(move |(clocks, legs, happenings)| Schedule {
                ttl_ms: ttl,
                clocks: clocks
                    .into_iter()
                    .map(|(rate_ppm, origin)| Clock { origin, rate_ppm })
                    .collect(),
                legs,
                happenings,
            })
    })
}

/// The first `count` schedules the generator gives, the same on every run.
fn generated(rates_ppm: RangeInclusive<i64>, count: usize) -> impl Iterator<Item = Schedule> {
    let mut runner = TestRunner::deterministic();
    let strategy = schedules(rates_ppm);
    (0..count).map(move |_| strategy.new_tree(&mut runner).expect("a schedule").current())
}

/// The violations of the first of 200 generated schedules that has any.
fn first_broken(rates_ppm: RangeInclusive<i64>, flaw: Option<Flaw>) -> Vec<Violation> {
    generated(rates_ppm, 200)
        .map(|s| Model::new(&s, flaw).run(s.end()).violations)
        .find(|v| !v.is_empty())
        .unwrap_or_default()
}

/// Nodes on exact clocks, every message `delay_ms`, nothing lost, a lease time of 3 s.
fn fixed(nodes: usize, delay_ms: i64, happenings: Vec<(i64, Event)>) -> Schedule {
    let clocks = vec![Clock::default(); nodes];
    Schedule {
        ttl_ms: 3_000,
        clocks,
        legs: vec![(delay_ms, false)],
        happenings,
    }
}

fn written(model: &Model) -> Vec<(usize, i64)> {
    model.db.log.iter().map(|e| (e.node, e.epoch)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// With clocks within 1% of the database's, no interleaving of renewals, expiries, pauses,
    /// takeovers, releases and lost answers breaks the fence, the log or the reads.
    #[test]
    fn no_schedule_breaks_the_fence_the_log_or_the_reads(schedule in schedules(-10_000..=10_000)) {
        let model = Model::new(&schedule, None).run(schedule.end());
        prop_assert!(model.violations.is_empty(), "{:?}", model.violations);
    }
}

/// The generated schedules exercise what the properties are about: takeovers, served and
/// refused reads, refused commits, lost answers, ended sessions and releases.
#[test]
fn the_generated_schedules_exercise_every_path() {
    let runs: Vec<Model> = generated(-10_000..=10_000, 64)
        .map(|s| Model::new(&s, None).run(s.end()))
        .collect();
    let sum = |count: fn(&Model) -> usize| runs.iter().map(count).sum::<usize>();
    let totals = [
        ("takeovers", sum(|m| m.db.takes.len().saturating_sub(1))),
        ("reads served", sum(|m| m.served)),
        ("reads refused", sum(|m| m.unserved)),
        ("commits refused", sum(|m| m.refused.len())),
        ("lost answers", sum(|m| m.resolved)),
        ("sessions ended", sum(|m| m.kills)),
        ("releases", sum(|m| m.releases)),
    ];
    assert!(totals.iter().all(|(_, n)| *n > 0), "{totals:?}");
}

/// A zombie: the owner stops with a write open past its lease; the database ends its session,
/// a standby takes over and appends; the zombie resumes, its commit is refused, and it
/// acknowledges nothing.
#[test]
fn a_zombie_resuming_past_its_lease_is_refused() {
    let mut happenings = vec![(1_500, Event::Submit(0)), (1_508, Event::Pause(0, 6_000))];
    happenings.extend([5_000, 5_500, 6_000].map(|at| (at, Event::Submit(1))));
    happenings.push((7_600, Event::Read(0)));
    let model = Model::new(&fixed(2, 5, happenings), None).run(12_000);
    assert_eq!(model.violations, vec![]);
    assert_eq!(model.kills, 1);
    assert_eq!(
        model
            .refused
            .iter()
            .map(|e| (e.node, e.epoch))
            .collect::<Vec<_>>(),
        [(0, 1)]
    );
    assert!(model.acked.iter().all(|&(id, _)| model.submitted[id] >= 5_000));
    assert_eq!(written(&model), [(1, 2); 3]);
    assert_eq!(model.nodes[1].view, model.db.log);
    assert_eq!(
        model.served, 0,
        "the zombie's read after it resumed is not answered"
    );
}

/// The same zombie resuming before the database ends its session commits, and the standby's
/// take waits for that commit; a fence that took no lock would let the take through first and
/// the zombie's append would follow it.
#[test]
fn a_take_waits_for_the_write_in_flight() {
    let schedule = fixed(
        2,
        5,
        vec![(1_500, Event::Submit(0)), (1_508, Event::Pause(0, 2_800))],
    );
    let model = Model::new(&schedule, None).run(10_000);
    assert_eq!(model.violations, vec![]);
    assert_eq!(
        model.db.takes,
        [(1, 0), (2, 1)],
        "taken once the zombie's append committed"
    );
    assert_eq!(model.acked.len(), 1);
    let model = Model::new(&schedule, Some(Flaw::FenceTakesNoLock)).run(10_000);
    let stale = Violation::StaleEpoch(Entry {
        id: 0,
        node: 0,
        epoch: 1,
    });
    assert!(model.violations.contains(&stale), "{:?}", model.violations);
}

/// An owner whose renewals take long (700 ms each way, against a lease of 3 s) keeps its lease
/// but serves only within each renewal's window, never past it.
#[test]
fn an_owner_whose_renewals_are_slow_serves_less_but_safely() {
    let reads = (0..200).map(|i| (i * 100, Event::Read(0))).collect();
    let model = Model::new(&fixed(2, 700, reads), None).run(20_000);
    assert_eq!(model.violations, vec![]);
    assert_eq!(model.db.takes.len(), 1, "the lease never expired");
    assert!(
        model.served > 20 && model.unserved > 20,
        "{} {}",
        model.served,
        model.unserved
    );
}

/// A draining owner gives its lease back and the other node takes it, reads the log to its end
/// and appends after it; a new owner that skipped the catch-up would append after a stale view.
#[test]
fn a_release_is_followed_by_a_take_that_reads_the_log_first() {
    let schedule = fixed(
        2,
        5,
        vec![
            (500, Event::Submit(0)),
            (700, Event::Submit(0)),
            (900, Event::Drain(0, 3_000)),
            (2_500, Event::Submit(1)),
            (2_600, Event::Read(1)),
        ],
    );
    let model = Model::new(&schedule, None).run(5_000);
    assert_eq!(model.violations, vec![]);
    assert_eq!((model.releases, model.served), (1, 1));
    assert_eq!(written(&model), [(0, 1), (0, 1), (1, 2)]);
    assert_eq!(model.nodes[1].view, model.db.log);
    let model = Model::new(&schedule, Some(Flaw::ServeBeforeCatchUp)).run(5_000);
    assert!(
        model.violations.contains(&Violation::ViewBehind(1)),
        "{:?}",
        model.violations
    );
}

/// The margin is what keeps reads safe: with clocks up to 19% slower than the database's,
/// within the fifth of the lease time kept in hand, no schedule answers an unsafe read; with
/// clocks 25–30% slower, beyond it, some schedule answers a read after the database could
/// already have given the lease to another node.
#[test]
fn a_drift_beyond_the_margin_lets_an_unsafe_read_through() {
    assert_eq!(first_broken(-190_000..=-150_000, None), vec![]);
    let violations = first_broken(-300_000..=-250_000, None);
    assert!(
        violations.iter().any(|v| matches!(v, Violation::UnsafeRead(..))),
        "{violations:?}"
    );
}

/// Each rule broken on purpose is caught on generated schedules: a fence without its lock lets
/// a deposed owner append after a take, a takeover without its catch-up appends after a stale
/// view, an acknowledgement before the commit loses appends (or reads miss them), and a lease
/// counted from its answer rather than from its sending is served past its expiry.
#[test]
fn each_rule_broken_on_purpose_is_caught() {
    let caught = |flaw: Flaw, v: &Violation| match flaw {
        Flaw::FenceTakesNoLock => matches!(v, Violation::StaleEpoch(_)),
        Flaw::ServeBeforeCatchUp => matches!(v, Violation::ViewBehind(_) | Violation::StaleRead(..)),
        Flaw::AckBeforeCommit => matches!(v, Violation::Lost(_) | Violation::StaleRead(..)),
        Flaw::CountedFromAnswer => matches!(v, Violation::UnsafeRead(..)),
    };
    let flaws = [
        Flaw::FenceTakesNoLock,
        Flaw::ServeBeforeCatchUp,
        Flaw::AckBeforeCommit,
        Flaw::CountedFromAnswer,
    ];
    for flaw in flaws {
        let violations = first_broken(-10_000..=10_000, Some(flaw));
        assert!(
            violations.iter().any(|v| caught(flaw, v)),
            "{flaw:?}: {violations:?}"
        );
    }
}
