//! The A2A protocol 1.0 facade (docs/contract.md#a2a), black-box: the real binary over HTTP on SQLite and on
//! PostgreSQL, driven by hand on the wire and by the reference client (`a2a-sdk`, Python).

#[allow(dead_code)]
#[macro_use]
mod common;

mod a2a {
    mod card;
    mod collision;
    mod edges;
    mod errors;
    mod expiry;
    mod nul;
    mod read;
    pub mod rpc;
    mod sdk;
    mod send;
    mod sse;
    mod stream;
    mod trace;
}
