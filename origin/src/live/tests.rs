//! The hub on an in-memory registry with a manual clock: each window is one move of the clock,
//! and every message is awaited with a real-time bound only as a failure guard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use standings_core::{
    BoardId, BoardRules, PlayerId, Position, ScoreEvent, ScoreMode, ViewDelta, ViewEntry, ViewState,
};

use super::{Hub, Kind, Outgoing, SubscribeError, Subscription, Watch};
use crate::boards::{BoardEntry, BoardSlot, Registry};
use crate::clock::{Clock, parse_rfc3339};
use crate::config::LiveConfig;
use crate::domain::BoardDef;
use crate::domain::periods::PeriodKind;
use crate::metrics::Metrics;

/// 2025-10-13T12:00:00Z.
const NOON: i64 = 1_760_356_800_000;

struct World {
    registry: Arc<Registry>,
    entry: Arc<BoardEntry>,
    clock: Clock,
    metrics: Arc<Metrics>,
    hub: Arc<Hub>,
    window: i64,
    events: usize,
}

fn board_id() -> BoardId {
    BoardId {
        game: "g".into(),
        mode: "m".into(),
        season: "s1".into(),
        scope: "global".into(),
    }
}

impl World {
    fn new(config: LiveConfig) -> World {
        let registry = Arc::new(Registry::default());
        let entry = registry
            .add(&BoardDef {
                metadata_max_bytes: 256,
                shards: 1,
                segments: Default::default(),
                feed: Default::default(),
                id: board_id(),
                rules: BoardRules::new(ScoreMode::Highest),
                periods: vec!["all_time".into(), "daily".into()],
                grace_seconds: 0,
                timezone: "UTC".into(),
            })
            .unwrap();
        let clock = Clock::manual(NOON);
        let metrics = Arc::new(Metrics::default());
        let window = config.window_ms as i64;
        let hub = Hub::new(config, registry.clone(), clock.clone(), metrics.clone());
        hub.start();
        World {
            registry,
            entry,
            clock,
            metrics,
            hub,
            window,
            events: 0,
        }
    }

    fn all_time(&self) -> Arc<BoardSlot> {
        self.entry.all_time()
    }

    fn daily(&self) -> Arc<BoardSlot> {
        let period = self.entry.calendar.period_of(PeriodKind::Daily, NOON).unwrap();
        self.entry.instance_or_create(&period)
    }

    /// Scores `player` on `slot` as the applier would, and reports the change.
    fn score(&mut self, slot: &BoardSlot, player: &str, value: i64) {
        self.events += 1;
        let event = ScoreEvent::new(
            &format!("e{}", self.events),
            player,
            value,
            NOON + self.events as i64,
        )
        .unwrap();
        slot.write().apply(&event).unwrap();
        self.hub.changed([&slot.id], Instant::now());
    }

    /// A watch of `view` by a token, coming back at `since_version` of the slot's own
    /// instance when given.
    fn watch(&self, slot: &Arc<BoardSlot>, view: &str, since_version: Option<u64>) -> Watch {
        Watch {
            slot: slot.clone(),
            view: view.parse().unwrap(),
            since: since_version.map(|board_version| Position {
                period_key: Some(slot.period.key.clone()),
                board_version,
            }),
            holder: Some("token:t".into()),
            address: None,
        }
    }

    fn subscribe(&self, slot: &Arc<BoardSlot>, view: &str) -> Subscription {
        self.hub.subscribe(self.watch(slot, view, None)).unwrap()
    }

    /// Moves the clock one window on and waits until the hub's window task has flushed it.
    async fn next_window(&self) {
        self.move_clock(|clock| clock.advance(self.window)).await;
    }

    /// Moves the clock and waits until the hub's window task has flushed (and, when due,
    /// sent heartbeats) at the new time.
    async fn move_clock(&self, step: impl FnOnce(&Clock)) {
        let mut windows = self.hub.shared.windows.subscribe();
        let before = *windows.borrow_and_update();
        step(&self.clock);
        tokio::time::timeout(Duration::from_secs(10), windows.wait_for(|n| *n > before))
            .await
            .expect("the window within the failure guard")
            .unwrap();
    }
}

async fn next(subscription: &mut Subscription) -> Option<Outgoing> {
    tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("a message within the failure guard")
}

fn json(message: &Outgoing) -> Value {
    serde_json::from_slice(&message.json).unwrap()
}

fn entries(list: &Value) -> Vec<ViewEntry> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| ViewEntry {
            country: None,
            display_name: None,
            metadata: None,
            rank: e["rank"].as_u64().unwrap(),
            player_id: PlayerId::new(e["player_id"].as_str().unwrap()).unwrap(),
            value: e["value"].as_i64().unwrap(),
            achieved_at: parse_rfc3339(e["achieved_at"].as_str().unwrap()).unwrap(),
            global_rank: e["global_rank"].as_u64(),
        })
        .collect()
}

/// A client of the view, following messages as docs/live.md says (through the core's apply).
fn client_of(message: &Outgoing) -> ViewState {
    assert_eq!(message.kind, Kind::Snapshot);
    let body = json(message);
    assert_eq!(message.board_version, body["board_version"].as_u64());
    assert_eq!(message.period_key.as_deref(), body["period_key"].as_str());
    ViewState {
        period_key: body["period_key"].as_str().unwrap().into(),
        board_version: body["board_version"].as_u64().unwrap(),
        entries: entries(&body["entries"]),
    }
}

fn delta_of(message: &Outgoing) -> ViewDelta {
    assert_eq!(message.kind, Kind::Delta);
    let body = json(message);
    assert_eq!(message.board_version, body["board_version"].as_u64());
    assert_eq!(message.period_key.as_deref(), body["period_key"].as_str());
    ViewDelta {
        period_key: body["period_key"].as_str().unwrap().into(),
        base_version: body["base_version"].as_u64().unwrap(),
        board_version: body["board_version"].as_u64().unwrap(),
        changed: entries(&body["changed"]),
        left: body["left"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| PlayerId::new(p.as_str().unwrap()).unwrap())
            .collect(),
    }
}

/// A subscriber gets a snapshot equal to a fresh read, then one delta per window that brings
/// it exactly to a fresh read again; a window in which the view changed nothing net sends
/// nothing, so the next delta starts at the version the subscriber holds.
#[tokio::test]
async fn a_subscriber_follows_the_board_window_by_window() {
    let mut world = World::new(LiveConfig::default());
    let slot = world.all_time();
    for (player, value) in [("a", 50), ("b", 40), ("c", 30)] {
        world.score(&slot, player, value);
    }
    let mut sub = world.subscribe(&slot, "top:2");
    let mut client = client_of(&next(&mut sub).await.unwrap());
    assert_eq!(
        client,
        ViewState::read(&slot.read(), &"top:2".parse().unwrap(), &slot.period.key)
    );
    sub.written(&next_written(&client));

    world.score(&slot, "z", 99);
    world.score(&slot, "c", 45);
    world.next_window().await;
    let message = next(&mut sub).await.unwrap();
    assert!(message.committed.is_some(), "the change was reported");
    sub.written(&message);
    client.apply(&delta_of(&message)).unwrap();
    assert_eq!(
        client,
        ViewState::read(&slot.read(), &"top:2".parse().unwrap(), &slot.period.key)
    );

    // Below the view only: the board moves, the view does not.
    let held = client.board_version;
    world.score(&slot, "b", 41);
    world.next_window().await;
    world.score(&slot, "y", 100);
    world.next_window().await;
    let message = next(&mut sub).await.unwrap();
    let delta = delta_of(&message);
    assert_eq!(delta.base_version, held, "the quiet window sent nothing");
    client.apply(&delta).unwrap();
    assert_eq!(
        client,
        ViewState::read(&slot.read(), &"top:2".parse().unwrap(), &slot.period.key)
    );

    let rendered = world.metrics.render(&world.registry);
    assert!(rendered.contains("standings_live_subscribers{board=\"g/m/s1/global\"} 1"));
    assert!(rendered.contains("standings_live_messages_total{type=\"delta\"} 1"));
    assert!(rendered.contains("standings_live_notify_lag_seconds_count 1"));
    drop(sub);
    let rendered = world.metrics.render(&world.registry);
    assert!(!rendered.contains("standings_live_subscribers{board="));
    assert!(rendered.contains("standings_live_drops_total 1"));
}

/// The snapshot message a client was built from, as `written` would see it.
fn next_written(client: &ViewState) -> Outgoing {
    Outgoing {
        kind: Kind::Snapshot,
        board_version: Some(client.board_version),
        period_key: Some(Arc::from(client.period_key.as_str())),
        json: bytes::Bytes::from_static(b"{}"),
        committed: None,
    }
}

/// A client coming back with the version it held gets one delta that brings it to a fresh
/// read; one coming back at the topic's own version gets an empty delta; one whose version
/// the board never reached gets a snapshot.
#[tokio::test]
async fn a_returning_client_catches_up_in_one_step() {
    let mut world = World::new(LiveConfig::default());
    let slot = world.all_time();
    for (player, value) in [("a", 50), ("b", 40), ("c", 30)] {
        world.score(&slot, player, value);
    }
    let view = "around:b:1";
    // Another viewer keeps the topic open while the client is away, so the topic's state
    // moves on without it.
    let mut other = world.subscribe(&slot, view);
    let mut sub = world.subscribe(&slot, view);
    let held = client_of(&next(&mut sub).await.unwrap());
    drop(sub);
    let _ = next(&mut other).await.unwrap();
    world.score(&slot, "d", 45);
    world.score(&slot, "b", 60);
    world.next_window().await;
    assert_eq!(next(&mut other).await.unwrap().kind, Kind::Delta);

    let mut back = world
        .hub
        .subscribe(world.watch(&slot, view, Some(held.board_version)))
        .unwrap();
    let mut client = held.clone();
    let first = next(&mut back).await.unwrap();
    client.apply(&delta_of(&first)).unwrap();
    assert_eq!(
        client,
        ViewState::read(&slot.read(), &view.parse().unwrap(), &slot.period.key)
    );

    let mut same = world
        .hub
        .subscribe(world.watch(&slot, view, Some(client.board_version)))
        .unwrap();
    let empty = delta_of(&next(&mut same).await.unwrap());
    assert_eq!(
        (empty.base_version, empty.board_version),
        (client.board_version, client.board_version)
    );
    assert!(empty.changed.is_empty() && empty.left.is_empty());

    let mut ahead = world
        .hub
        .subscribe(world.watch(&slot, view, Some(1_000)))
        .unwrap();
    assert_eq!(next(&mut ahead).await.unwrap().kind, Kind::Snapshot);
}

/// A subscriber that does not read is sent resync once its queue is full and its stream
/// ends, while another subscriber of the same view keeps receiving every delta.
#[tokio::test]
async fn a_stalled_subscriber_is_resynced_and_the_others_go_on() {
    let mut world = World::new(LiveConfig {
        queue_messages: 2,
        ..LiveConfig::default()
    });
    let slot = world.all_time();
    world.score(&slot, "a", 1);
    let mut stalled = world.subscribe(&slot, "player:a");
    let mut reader = world.subscribe(&slot, "player:a");
    let mut client = client_of(&next(&mut reader).await.unwrap());
    for value in 2..=4 {
        world.score(&slot, "a", value);
        world.next_window().await;
        client
            .apply(&delta_of(&next(&mut reader).await.unwrap()))
            .unwrap();
        assert_eq!(client.entries[0].value, value);
    }
    let resync = next(&mut stalled).await.unwrap();
    assert_eq!(resync.kind, Kind::Resync);
    assert_eq!(json(&resync)["reason"], "slow_consumer");
    assert!(next(&mut stalled).await.is_none());
    assert_eq!(world.metrics.live.resyncs.get(), 1);
    drop(stalled);
    assert_eq!(
        world.metrics.live.drops.get(),
        0,
        "a resynced subscriber did not drop itself"
    );
    world.score(&slot, "a", 5);
    world.next_window().await;
    client
        .apply(&delta_of(&next(&mut reader).await.unwrap()))
        .unwrap();
    assert_eq!(client.entries[0].value, 5);
}

/// An archived season ends its streams with `closed` (season_archived).
#[tokio::test]
async fn an_archive_ends_the_streams() {
    let world = World::new(LiveConfig::default());
    let all_time = world.all_time();
    let mut sub = world.subscribe(&all_time, "top:10");
    let _ = next(&mut sub).await.unwrap();
    world.entry.archive();
    world.next_window().await;
    let closed = next(&mut sub).await.unwrap();
    assert_eq!(json(&closed)["reason"], "season_archived");
    assert!(next(&mut sub).await.is_none());
}

/// A period whose close time passed ends its streams with `closed` (period_closed) and the
/// version they hold, and a subscriber to it afterwards gets its last state, then `closed`.
#[tokio::test]
async fn a_period_close_ends_the_streams() {
    let mut world = World::new(LiveConfig::default());
    let daily = world.daily();
    world.score(&daily, "a", 1);
    let mut day = world.subscribe(&daily, "top:10");
    let version = next(&mut day).await.unwrap().board_version.unwrap();
    let end = daily.period.end_ms.unwrap();
    world.move_clock(|clock| clock.set(end)).await;
    let closed = next(&mut day).await.unwrap();
    assert_eq!(closed.kind, Kind::Closed);
    assert_eq!(
        json(&closed),
        serde_json::json!({"type":"closed","reason":"period_closed","period_key":"2025-10-13","board_version":version})
    );
    assert!(next(&mut day).await.is_none());
    let mut late = world.subscribe(&daily, "top:10");
    assert_eq!(next(&mut late).await.unwrap().kind, Kind::Snapshot);
    assert_eq!(next(&mut late).await.unwrap().kind, Kind::Closed);
    assert!(next(&mut late).await.is_none());
}

/// A heartbeat reaches every subscriber each heartbeat_seconds of the clock.
#[tokio::test]
async fn heartbeats_follow_the_clock() {
    let world = World::new(LiveConfig::default());
    let slot = world.all_time();
    let mut sub = world.subscribe(&slot, "top:1");
    let _ = next(&mut sub).await.unwrap();
    world.move_clock(|clock| clock.advance(15_000)).await;
    let beat = next(&mut sub).await.unwrap();
    assert_eq!(beat.kind, Kind::Heartbeat);
    assert_eq!(json(&beat), serde_json::json!({"type":"heartbeat"}));
}

/// Stopping sends going_away to every subscriber, ends their streams, refuses new ones, and
/// returns once every subscription is dropped.
#[tokio::test]
async fn going_away_ends_every_stream_and_waits_for_them() {
    let world = World::new(LiveConfig::default());
    let slot = world.all_time();
    let mut subs = vec![
        world.subscribe(&slot, "top:1"),
        world.subscribe(&slot, "player:p"),
    ];
    let stop = tokio::spawn({
        let hub = world.hub.clone();
        async move {
            hub.going_away(tokio::time::Instant::now() + Duration::from_secs(30))
                .await
        }
    });
    for sub in &mut subs {
        assert_eq!(next(sub).await.unwrap().kind, Kind::Snapshot);
        assert_eq!(next(sub).await.unwrap().kind, Kind::GoingAway);
        assert!(next(sub).await.is_none());
    }
    assert!(matches!(
        world.hub.subscribe(world.watch(&slot, "top:1", None)),
        Err(SubscribeError::Stopping)
    ));
    assert!(!stop.is_finished());
    drop(subs);
    tokio::time::timeout(Duration::from_secs(10), stop)
        .await
        .expect("going_away returns once the streams are gone")
        .unwrap();
}

/// The limits refuse a subscriber beyond them, with the setting, and a dropped subscription
/// frees its place.
#[tokio::test]
async fn limits_count_per_token_per_board_and_in_all() {
    let world = World::new(LiveConfig {
        max_subscribers_per_token: 2,
        max_subscribers_per_board: 3,
        max_subscribers: 4,
        ..LiveConfig::default()
    });
    let slot = world.all_time();
    let public = |slot: &Arc<BoardSlot>, view: &str| Watch {
        holder: None,
        ..world.watch(slot, view, None)
    };
    let first = world.subscribe(&slot, "top:1");
    let _second = world.subscribe(&slot, "top:2");
    assert_eq!(
        world.hub.subscribe(world.watch(&slot, "top:3", None)).err(),
        Some(SubscribeError::PerToken { limit: 2 })
    );
    let _third = world.hub.subscribe(public(&slot, "top:3")).unwrap();
    // The daily instance is the same board.
    assert_eq!(
        world.hub.subscribe(public(&world.daily(), "top:4")).err(),
        Some(SubscribeError::PerBoard { limit: 3 })
    );
    let other = world
        .registry
        .add(&BoardDef {
            metadata_max_bytes: 256,
            shards: 1,
            segments: Default::default(),
            feed: Default::default(),
            id: BoardId {
                scope: "eu".into(),
                ..board_id()
            },
            rules: BoardRules::new(ScoreMode::Highest),
            periods: vec!["all_time".into()],
            grace_seconds: 0,
            timezone: "UTC".into(),
        })
        .unwrap()
        .all_time();
    let _fourth = world.hub.subscribe(public(&other, "top:1")).unwrap();
    assert_eq!(
        world.hub.subscribe(public(&other, "top:2")).err(),
        Some(SubscribeError::Total { limit: 4 })
    );
    drop(first);
    let _fifth = world.hub.subscribe(world.watch(&slot, "top:5", None)).unwrap();
}

/// Many subscribers of one view share the very same bytes of each message: one encoding per
/// view and window, and the snapshot is encoded again only for the view's first subscriber
/// (whose view may be its alone, so it is not kept then).
#[tokio::test]
async fn subscribers_of_one_view_share_the_bytes() {
    let mut world = World::new(LiveConfig::default());
    let slot = world.all_time();
    let mut subs: Vec<_> = (0..4).map(|_| world.subscribe(&slot, "top:5")).collect();
    let mut firsts = Vec::new();
    for sub in &mut subs {
        firsts.push(next(sub).await.unwrap().json);
    }
    world.score(&slot, "a", 7);
    world.next_window().await;
    let mut deltas = Vec::new();
    for sub in &mut subs {
        deltas.push(next(sub).await.unwrap().json);
    }
    let shared = |list: &[bytes::Bytes]| list.iter().all(|b| b.as_ptr() == list[0].as_ptr());
    assert!(shared(&deltas));
    assert!(shared(&firsts[1..]));
    assert!(firsts.iter().all(|b| *b == firsts[0]));
}

/// A subscriber to a period with no instance yet (the read path hands it an empty board) sees
/// the instance's first events once the writer creates it; a change nobody reported through
/// `changed` is sent too, only without a commit time.
#[tokio::test]
async fn a_period_without_an_instance_yet_is_followed_once_it_has_one() {
    let world = World::new(LiveConfig::default());
    let period = world.entry.calendar.period_of(PeriodKind::Daily, NOON).unwrap();
    assert!(world.entry.instance(&period.key).is_none());
    let empty = Arc::new(BoardSlot::new(
        board_id(),
        period.clone(),
        standings_core::Board::new(BoardRules::new(ScoreMode::Highest)),
    ));
    let mut sub = world.subscribe(&empty, "around:p:2");
    let mut client = client_of(&next(&mut sub).await.unwrap());
    assert_eq!(client.board_version, 0);
    assert!(client.entries.is_empty());
    let slot = world.entry.instance_or_create(&period);
    for (i, player) in ["q", "p", "r"].iter().enumerate() {
        let event = ScoreEvent::new(&format!("x{i}"), player, 10 * i as i64, NOON).unwrap();
        slot.write().apply(&event).unwrap();
    }
    world.next_window().await;
    let message = next(&mut sub).await.unwrap();
    assert!(message.committed.is_none());
    client.apply(&delta_of(&message)).unwrap();
    assert_eq!(
        client,
        ViewState::read(&slot.read(), &"around:p:2".parse().unwrap(), &slot.period.key)
    );
    assert_eq!(client.entries.len(), 3);
}

/// An idle subscriber costs a few hundred bytes in the hub (its handle, its queue with no
/// buffer, its slot in the topic), far below the 8 KB an idle subscriber may cost in all.
#[test]
fn an_idle_subscriber_is_small() {
    use std::mem::size_of;
    let own = size_of::<Subscription>() + size_of::<super::Queue>() + size_of::<(u64, Arc<super::Queue>)>();
    assert!(own <= 512, "{own} bytes");
}

/// `changed` keeps nothing while nobody watches, and otherwise the earliest commit of the
/// changes a window carries, which dates its delta for the lag histogram.
#[tokio::test]
async fn a_delta_is_dated_by_the_earliest_change_it_carries() {
    let world = World::new(LiveConfig::default());
    let slot = world.all_time();
    let early = Instant::now();
    let later = early + Duration::from_millis(5);
    world.hub.changed([&slot.id], early);
    assert!(world.hub.shared.reports.lock().unwrap().is_empty());
    let mut sub = world.subscribe(&slot, "top:3");
    let _ = next(&mut sub).await.unwrap();
    slot.write()
        .apply(&ScoreEvent::new("x1", "a", 1, NOON).unwrap())
        .unwrap();
    world.hub.changed([&slot.id], later);
    world.hub.changed([&slot.id], early);
    world.next_window().await;
    assert_eq!(next(&mut sub).await.unwrap().committed, Some(early));
}

/// A window reads a board's views in bounded holds of its read lock; every view of a board
/// with more topics than one hold reads still gets its delta, in one window.
#[tokio::test]
async fn a_window_reaches_every_view_across_its_batches() {
    let mut world = World::new(LiveConfig {
        max_subscribers_per_token: 1_000,
        ..LiveConfig::default()
    });
    let slot = world.all_time();
    for i in 0..100 {
        world.score(&slot, &format!("p{i}"), 1_000 + i);
    }
    // More views than one hold reads: a new leader moves every one of them.
    let views: Vec<String> = (1..=100)
        .map(|n| format!("top:{n}"))
        .chain((0..100).map(|i| format!("around:p{i}:0")))
        .chain((0..100).map(|i| format!("around:p{i}:1")))
        .collect();
    assert!(views.len() > super::window::VIEWS_PER_HOLD);
    let mut subs = Vec::new();
    for view in &views {
        let mut sub = world.subscribe(&slot, view);
        let client = client_of(&next(&mut sub).await.unwrap());
        subs.push((view, sub, client));
    }
    world.score(&slot, "leader", 5_000);
    world.next_window().await;
    for (view, sub, client) in &mut subs {
        client.apply(&delta_of(&next(sub).await.unwrap())).unwrap();
        assert_eq!(
            *client,
            ViewState::read(&slot.read(), &view.parse().unwrap(), &slot.period.key)
        );
    }
}

/// A subscriber that comes while the board has moved past the topic's last window gets the
/// board's version then, not the topic's; the next window brings it and the subscribers
/// already there to one version (an empty delta where their view did not change), and every
/// delta after it chains for all of them.
#[tokio::test]
async fn a_new_subscriber_starts_at_the_boards_version() {
    let mut world = World::new(LiveConfig::default());
    let slot = world.all_time();
    for (player, value) in [("a", 50), ("b", 40), ("c", 30)] {
        world.score(&slot, player, value);
    }
    let top = "top:2";
    let mut early = world.subscribe(&slot, top);
    let mut early_client = client_of(&next(&mut early).await.unwrap());
    // Below the view: the board moves, the view does not, and no window runs.
    for value in 1..=5 {
        world.score(&slot, "c", 30 + value);
    }
    let board_version = slot.read().version();
    assert!(board_version > early_client.board_version);
    let mut late = world.subscribe(&slot, top);
    let mut late_client = client_of(&next(&mut late).await.unwrap());
    assert_eq!(
        late_client.board_version, board_version,
        "the board's version, not the topic's"
    );
    assert_eq!(late_client.entries, early_client.entries);
    // A returning client at an old version is brought to the board's version too.
    let mut back = world
        .hub
        .subscribe(world.watch(&slot, top, Some(early_client.board_version)))
        .unwrap();
    let mut back_client = early_client.clone();
    back_client
        .apply(&delta_of(&next(&mut back).await.unwrap()))
        .unwrap();
    assert_eq!(back_client.board_version, board_version);

    world.next_window().await;
    let advance = delta_of(&next(&mut early).await.unwrap());
    assert!(advance.changed.is_empty() && advance.left.is_empty());
    early_client.apply(&advance).unwrap();
    assert_eq!(early_client, late_client);

    world.score(&slot, "z", 99);
    world.next_window().await;
    let fresh = ViewState::read(&slot.read(), &top.parse().unwrap(), &slot.period.key);
    for (sub, client) in [
        (&mut early, &mut early_client),
        (&mut late, &mut late_client),
        (&mut back, &mut back_client),
    ] {
        client.apply(&delta_of(&next(sub).await.unwrap())).unwrap();
        assert_eq!(*client, fresh);
    }
}

/// A subscriber that joins while the view itself changed gets the changed view at once, and
/// the next window sends the others the change and it nothing it already has.
#[tokio::test]
async fn a_subscriber_joining_a_changed_view_is_not_sent_the_change_twice() {
    let mut world = World::new(LiveConfig::default());
    let slot = world.all_time();
    world.score(&slot, "a", 50);
    let view = "top:3";
    let mut early = world.subscribe(&slot, view);
    let mut early_client = client_of(&next(&mut early).await.unwrap());
    world.score(&slot, "b", 60);
    let mut late = world.subscribe(&slot, view);
    let mut late_client = client_of(&next(&mut late).await.unwrap());
    assert_eq!(late_client.entries.len(), 2);
    world.next_window().await;
    early_client
        .apply(&delta_of(&next(&mut early).await.unwrap()))
        .unwrap();
    assert_eq!(early_client, late_client);
    world.score(&slot, "c", 70);
    world.next_window().await;
    let delta = delta_of(&next(&mut late).await.unwrap());
    assert_eq!(
        delta.base_version, late_client.board_version,
        "nothing in between"
    );
    late_client.apply(&delta).unwrap();
    early_client
        .apply(&delta_of(&next(&mut early).await.unwrap()))
        .unwrap();
    assert_eq!(early_client, late_client);
}

/// Every snapshot and delta names its period instance; a version of another instance (or a
/// bare version of a day) is answered with a snapshot, never a delta that would mix two days,
/// while a bare version of the all-time board still catches up.
#[tokio::test]
async fn a_version_of_another_instance_gets_a_snapshot() {
    let mut world = World::new(LiveConfig::default());
    let daily = world.daily();
    let all_time = world.all_time();
    for value in 1..=3 {
        world.score(&daily, "a", value);
        world.score(&all_time, "a", value);
    }
    let mut today = world.subscribe(&daily, "top:3");
    let first = next(&mut today).await.unwrap();
    assert_eq!(first.period_key.as_deref(), Some("2025-10-13"));
    assert_eq!(json(&first)["period_key"], "2025-10-13");
    let at = |key: Option<&str>, board_version| Watch {
        since: Some(Position {
            period_key: key.map(Into::into),
            board_version,
        }),
        ..world.watch(&daily, "top:3", None)
    };
    for since in [at(Some("2025-10-12"), 1), at(None, 1)] {
        let mut back = world.hub.subscribe(since).unwrap();
        assert_eq!(next(&mut back).await.unwrap().kind, Kind::Snapshot);
    }
    let mut same_day = world.hub.subscribe(at(Some("2025-10-13"), 1)).unwrap();
    let catch_up = next(&mut same_day).await.unwrap();
    assert_eq!(catch_up.kind, Kind::Delta);
    assert_eq!(json(&catch_up)["period_key"], "2025-10-13");
    let bare_all_time = Watch {
        since: Some(Position {
            period_key: None,
            board_version: 1,
        }),
        ..world.watch(&all_time, "top:3", None)
    };
    let mut back = world.hub.subscribe(bare_all_time).unwrap();
    assert_eq!(next(&mut back).await.unwrap().kind, Kind::Delta);
}

/// While the windows' work is past its share, a subscription that would add a view is refused
/// (and counted), one to a view already watched is taken, and once the work falls back new
/// views are taken again.
#[tokio::test]
async fn busy_windows_refuse_new_views_only() {
    let world = World::new(LiveConfig {
        max_window_share_percent: 50,
        ..LiveConfig::default()
    });
    let slot = world.all_time();
    let _watched = world.subscribe(&slot, "top:10");
    // Two views (the one watched and the new one) at 100 ms each.
    let cost = &world.hub.shared.view_cost_ns;
    cost.store(100_000_000, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        world.hub.subscribe(world.watch(&slot, "player:p", None)).err(),
        Some(SubscribeError::Busy {
            work_ms: 200,
            window_ms: 250
        })
    );
    assert_eq!(world.metrics.live.busy_refusals.get(), 1);
    let _joined = world.hub.subscribe(world.watch(&slot, "top:10", None)).unwrap();
    cost.store(1_000_000, std::sync::atomic::Ordering::Relaxed);
    let _new = world.hub.subscribe(world.watch(&slot, "player:p", None)).unwrap();
}

/// Subscribers without a token are counted by address, with their own limit; a token's
/// subscriptions are not counted there.
#[tokio::test]
async fn anonymous_subscribers_are_limited_per_address() {
    let world = World::new(LiveConfig {
        max_subscribers_per_address: 2,
        ..LiveConfig::default()
    });
    let slot = world.all_time();
    let from = |address: &str, holder: Option<&str>| Watch {
        holder: holder.map(Into::into),
        address: Some(address.parse().unwrap()),
        ..world.watch(&slot, "top:1", None)
    };
    let first = world.hub.subscribe(from("10.0.0.1", None)).unwrap();
    let _second = world.hub.subscribe(from("10.0.0.1", None)).unwrap();
    assert_eq!(
        world.hub.subscribe(from("10.0.0.1", None)).err(),
        Some(SubscribeError::PerAddress { limit: 2 })
    );
    let _elsewhere = world.hub.subscribe(from("10.0.0.2", None)).unwrap();
    let _with_a_token = world.hub.subscribe(from("10.0.0.1", Some("token:t"))).unwrap();
    drop(first);
    let _again = world.hub.subscribe(from("10.0.0.1", None)).unwrap();
}

/// A stop whose subscribers do not take their `going_away` waits for them only until its
/// deadline.
#[tokio::test]
async fn going_away_waits_no_longer_than_its_deadline() {
    let world = World::new(LiveConfig::default());
    let slot = world.all_time();
    let _stalled = world.subscribe(&slot, "top:1");
    let began = std::time::Instant::now();
    world
        .hub
        .going_away(tokio::time::Instant::now() + Duration::from_millis(200))
        .await;
    assert!(began.elapsed() < Duration::from_secs(5));
}
