//! Storage faults as the mailbox sees them: "the database cannot serve now" is
//! `storage_unavailable` (retriable, and it heals by itself); anything else is a bug.

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
/// full, out of resources, shutting down, an I/O error). A client's mistake never gets here: the
/// mailbox refuses bad input before a statement sees it.
fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // SQLITE_BUSY (5), SQLITE_LOCKED (6), SQLITE_NOMEM (7), SQLITE_READONLY (8),
                // SQLITE_IOERR (10), SQLITE_FULL (13), SQLITE_CANTOPEN (14), SQLITE_PROTOCOL
                // (15), and their extended codes.
                code.parse::<i32>()
                    .map(|c| matches!(c & 0xff, 5 | 6 | 7 | 8 | 10 | 13 | 14 | 15))
                    .unwrap_or(false)
            } else {
                // PostgreSQL: serialization failure, deadlock, lock not available; the classes
                // connection exception (08), insufficient resources (53: disk full, out of
                // memory, too many connections), operator intervention (57: shutdown) and
                // system error (58: I/O).
                matches!(code.as_ref(), "40001" | "40P01" | "55P03")
                    || ["08", "53", "57", "58"].iter().any(|c| code.starts_with(c))
            }
        }
        _ => false,
    }
}
