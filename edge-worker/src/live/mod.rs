//! Live subscriptions at the edge (`docs/edge.md`, "Live boards"): a Durable Object per board
//! view holds one subscription to the origin and fans its messages out to every socket that
//! subscribed through the edge. This module is the object's logic, free of the platform:
//! [`upstream`] reads the origin's messages into the core's types, [`relay`] keeps the view and
//! its recent history and decides what each socket is sent, with the core's own rules
//! (`first_message`, `ViewDelta::between`) and printer (`live_message`), so a socket cannot
//! tell the edge from the origin. [`key`] names the object a subscription belongs to.

pub mod key;
pub mod relay;
pub mod upstream;
