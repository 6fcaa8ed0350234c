//! Storage faults as the mailbox sees them: "the database cannot serve now" is
//! `storage_unavailable` (retriable, and it heals by itself); anything else is a bug.

use super::engines::ENGINES;
use crate::error::MailboxError;

impl From<sqlx::Error> for MailboxError {
    fn from(e: sqlx::Error) -> MailboxError {
        if is_unavailable(&e) {
            tracing::warn!(error = %e, "storage unavailable");
            MailboxError::storage_unavailable("the database is unreachable or busy; retry later")
        } else {
            MailboxError::internal(e)
        }
    }
}

/// Errors that mean "the database cannot serve now" rather than "the code is wrong": the pool,
/// the connection or the wire failed, or the database reports a fault of its own (busy, locked,
/// full, out of resources, shutting down, an I/O error: each engine's `unavailable` knows its
/// codes). A client's mistake never gets here: the mailbox refuses bad input before a statement
/// sees it.
fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => ENGINES.iter().any(|e| (e.unavailable)(db.as_ref())),
        _ => false,
    }
}
