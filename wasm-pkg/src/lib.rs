//! Standings for web front ends. The wasm-bindgen surface arrives with its issue; until then this
//! crate only proves that the core links into it.
#![forbid(unsafe_code)]
