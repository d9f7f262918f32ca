//! Cross-crate and end-to-end tests for Standings live in `tests/tests/`; this library holds what
//! the harnesses in `src/bin/` share: their start-up and command line (`harness`), the one HTTP
//! client (`http`, which the origin's process tests use too), the service under test, a
//! clustered database's partitions (`cluster`), the edge
//! worker under `wrangler dev`, a latency histogram, a live subscriber's client, a webhook receiver and the load
//! generator's workload.
#![forbid(unsafe_code)]

pub mod cluster;
pub mod edge;
pub mod harness;
pub mod http;
pub mod latency;
pub mod live;
pub mod receiver;
pub mod service;
pub mod workload;
