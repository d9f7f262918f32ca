//! Cross-crate and end-to-end tests for Standings live in `tests/tests/`.
#![forbid(unsafe_code)]
