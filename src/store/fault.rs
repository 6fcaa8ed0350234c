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

/// Errors that mean "the database cannot serve now" rather than "the code is wrong".
fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // SQLITE_BUSY (5), SQLITE_LOCKED (6) and their extended codes.
                code.parse::<i32>()
                    .map(|c| c & 0xff == 5 || c & 0xff == 6)
                    .unwrap_or(false)
            } else {
                // PostgreSQL: serialization failure, deadlock, shutdown, too many connections,
                // lock not available.
                matches!(
                    code.as_ref(),
                    "40001" | "40P01" | "57P01" | "57P02" | "57P03" | "53300" | "55P03"
                )
            }
        }
        _ => false,
    }
}
