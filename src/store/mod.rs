//! The storage seam: every SQL statement and every migration concern of the service, behind
//! named operations that speak the service's own types.
//!
//! - [`Store`] (`facade.rs`) opens the engine picked from the database URL (`engines.rs`) and
//!   forwards to it through ONE seam, the trait `Backend` (`backend.rs`): migrations, the named
//!   reads (`reads.rs`, `listing.rs`, `overview.rs`), the one-write paths and their holds
//!   ([`Hold`]), and write units ([`Store::transact`], `unit.rs`).
//! - [`Tx`] (`runner.rs`) is a write transaction over an engine's `Transaction`; its named
//!   operations (`ops.rs`, `audit.rs`) are what a mailbox rule calls, in the order the rule
//!   decides. `dialect.rs` runs a statement on any `sqlx` engine: each engine's `Dialect` binds
//!   the parameters, and the rows are decoded into the store's types (`rows.rs`).
//! - `sqlite/` and `postgres/` each implement `Backend` and `Dialect` with their own
//!   statements, pools, migrations and way of committing: SQLite's group-commit writer,
//!   PostgreSQL's group-commit lane and its `step_many.sql`. Nothing outside those two folders
//!   branches on the engine. `docs/engine.md` says what a third engine provides.
//!
//! Files import downward only: the engines import `backend.rs` and the shared parts below it
//! (`dialect.rs`, `runner.rs`, `rows.rs`, `unit.rs`, `statements.rs`, `transitions.rs`,
//! `records.rs`, `new_task.rs`, `ops.rs`); `engines.rs` lists the engines' `ENGINE`s; the
//! facade imports the trait and `engines.rs`; the named reads import the facade.

mod audit;
mod backend;
#[cfg(test)]
mod conformance;
mod dialect;
mod engines;
mod facade;
mod fault;
mod leases;
mod listing;
mod new_task;
mod ops;
mod overview;
mod postgres;
mod readiness;
mod reads;
mod records;
mod rows;
mod runner;
#[cfg(test)]
mod sql_files;
mod sqlite;
mod statements;
mod takes;
mod transitions;
mod unit;

pub use backend::{Engine, Held, Hold, PoolSettings, LOCK_WAIT};
pub use engines::{DEFAULT_DATABASE_URL, DEFAULT_ENGINE};
pub use facade::Store;
pub use leases::{LeaseAfter, LeaseKey, LeaseOrder, LeaseQuery};
pub use listing::{ListColumn, PageAfter, TaskFilter};
pub use new_task::NewTask;
pub use ops::StoredResult;
pub use reads::AuditQuery;
pub use records::{
    from_stored, parse_uuid, result_from_columns, AuditRow, CacheHit, Committed, Compacted,
    Drained, KeyRecord, LeaseView, QueueHead, TaskOrigin, TaskRow,
};
pub use runner::Tx;
pub use unit::Op;
