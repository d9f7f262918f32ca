//! Reading a score event from untrusted JSON as the origin does: the typed read of the fast
//! path, and `parse_json`'s reader (`origin/src/json_value.rs`, included as it is), which
//! every body the typed read does not take goes through. Never a panic; the reader agrees with
//! `serde_json` on every body without a repeated key; a body the typed read takes is one the
//! reader takes too (so no repeated key slips past the fast path) and reads to the same
//! fields; the ids and the timestamp are then checked as the origin checks them.
#![no_main]

#[allow(dead_code, unreachable_pub)]
#[path = "../../origin/src/json_value.rs"]
mod json_value;

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_json::Value;

/// The shape of the origin's `EventBody` (`origin/src/intake.rs`, private there).
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventBody {
    event_id: String,
    player_id: String,
    game: String,
    mode: String,
    season: String,
    #[serde(default)]
    scopes: Option<Vec<String>>,
    value: i64,
    achieved_at: String,
}

fuzz_target!(|data: &[u8]| {
    let read = json_value::read_value(data);
    let plain = serde_json::from_slice::<Value>(data);
    match (&read, &plain) {
        (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "the reader agrees with serde_json"),
        (Ok(_), Err(e)) => panic!("the reader took a body serde_json refuses: {e}"),
        (Err(json_value::ReadError::NotJson(_)), Ok(_)) => {
            panic!("the reader refused as not JSON a body serde_json takes")
        }
        (Err(_), _) => {}
    }
    let Ok(typed) = serde_json::from_slice::<EventBody>(data) else {
        return;
    };
    let value = read.expect("a body the typed read takes has no repeated key");
    let general: EventBody = serde_json::from_value(value).expect("the general path reads it too");
    assert_eq!(general, typed);
    let _ = standings_core::check_id("event_id", &typed.event_id);
    let _ = standings_core::check_id("player_id", &typed.player_id);
    let _ = typed
        .achieved_at
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond());
});
