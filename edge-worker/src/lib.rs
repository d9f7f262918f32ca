//! The Standings edge worker. Its Cloudflare entry point arrives with the edge issue; until then
//! this crate only proves that the core links into it.
#![forbid(unsafe_code)]
