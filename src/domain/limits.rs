//! The bounds every wire type shares: the largest timestamp, and no NUL in stored text.

use crate::error::MailboxError;

/// Largest value a `*_ms` field may carry: timestamps are stored as signed 64-bit integers.
pub const MAX_MS: u64 = i64::MAX as u64;

/// Keys and messages are stored as text columns, which cannot hold U+0000 on PostgreSQL: such
/// strings are refused on both engines alike (400).
pub fn no_nul(field: &str, value: Option<&str>) -> Result<(), MailboxError> {
    if value.is_some_and(|v| v.contains('\0')) {
        return Err(MailboxError::invalid(format!(
            "{field} must not contain the NUL character (U+0000)"
        )));
    }
    Ok(())
}
