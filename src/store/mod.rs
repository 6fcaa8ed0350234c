//! The storage seam: every SQL statement and every migration concern of the service, behind
//! named operations that speak the service's own types.
//!
//! - [`Store`] (`facade.rs`) opens the engine picked from the database URL and forwards to it
//!   through ONE seam, the trait `Backend` (`backend.rs`): migrations, the named reads
//!   (`reads.rs`, `listing.rs`, `overview.rs`), the fast paths (`fast.rs`), and write units
//!   ([`Store::transact`], `unit.rs`).
//! - [`Tx`] (`runner.rs`) is a write transaction over an engine's session; its named operations
//!   (`ops.rs`, `audit.rs`) are what a mailbox rule calls, in the order the rule decides.
//! - `sqlite/` and `postgres/` each implement `Backend` with their own statements, pools,
//!   migrations and way of committing: SQLite's group-commit writer, PostgreSQL's group-commit
//!   lane and its `step_many.sql`. Nothing outside those two folders branches on the engine.
//!
//! Files import downward only: the engines import `backend.rs` and the shared parts below it
//! (`runner.rs`, `unit.rs`, `statements.rs`, `transitions.rs`, `records.rs`, `new_task.rs`,
//! `ops.rs`); the facade imports the trait and the engines' `ENGINE`s; the named reads import
//! the facade.

mod audit;
mod backend;
#[cfg(test)]
mod conformance;
mod facade;
mod fast;
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
mod runner;
#[cfg(test)]
mod sql_files;
mod sqlite;
mod statements;
mod transitions;
mod unit;

pub use backend::{Engine, LaneOutcome, LaneTicket, PoolSettings, LOCK_WAIT};
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
