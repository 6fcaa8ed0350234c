//! a2a-mailbox: a durable, explicitly leased task mailbox between AI agents.
//!
//! Layout: `domain` (wire types), `auth` (JWT + capabilities), `store` (the SQLite/PostgreSQL
//! seam), `mailbox` (the operations, each one transaction), `http` (thin routes), `server`
//! (wiring), `config` (flags and environment).
//!
//! No request input may reach a panic: outside tests the crate denies `unwrap`, `expect`,
//! indexing and slicing that may panic, and arithmetic that may overflow. Each exception is an
//! `#[allow]` on the smallest item (or a module no request reaches), its reason beside it. A
//! panic that happens anyway is answered by `http::serve::panics` (500 `internal`, counted in
//! `a2a_panics_total`).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod http;
pub mod mailbox;
pub mod metrics;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod transport;
pub mod trim;
