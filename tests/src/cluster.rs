//! What the harnesses know of a clustered database: which partition a game lands in and which
//! schema holds it, the core's rules, as the origin uses them.

pub use standings_core::partition::{partition_of, schema_of};
