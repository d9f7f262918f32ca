//! The Standings edge worker: the read API served from the origin's snapshots, in a
//! Cloudflare Worker, with the core's own code and JSON, so its answers are the origin's, byte
//! for byte, at the snapshot's `board_version`.
//!
//! The logic ([`Edge`]) is platform-free: it takes an `http::Request` and answers one, over
//! three small traits ([`Origin`], [`Cache`], [`Clock`]) that the tests implement in memory,
//! and every rule it shares with the origin (parameters, refusals, heads, access, answers) is
//! the core's read contract (`standings_core::contract`). The `wasm` module
//! (wasm32-unknown-unknown only) maps workers-rs types onto them and does nothing else.
//!
//! Architecture Invariant: the edge invents no data. Every entry it answers comes from a
//! snapshot part whose hash the origin's manifest names; when the origin is unreachable it
//! answers from the last snapshot it holds, marked stale, or not at all.
#![forbid(unsafe_code)]

pub mod auth;
pub mod config;
pub mod decoded;
pub mod edge;
pub mod instances;
pub mod live;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod live_object;
pub mod platform;
pub mod problem;
pub mod route;
pub mod stats;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod wasm;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod workers_types;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

pub use config::Config;
pub use edge::{Edge, Outcome};
pub use platform::{Cache, Clock, Origin, Request, Response, Unavailable};
