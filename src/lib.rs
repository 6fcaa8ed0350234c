//! a2a-mailbox: a durable, explicitly leased task mailbox between AI agents.
//!
//! Layout: `domain` (wire types), `auth` (JWT + capabilities), `store` (the SQLite/PostgreSQL
//! seam), `mailbox` (the operations, each one transaction), `http` (thin routes), `server`
//! (wiring), `config` (flags and environment).

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
pub mod transport;
pub mod trim;
