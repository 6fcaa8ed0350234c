//! Who may see a task, and the lease guard: the two checks every rule on one task starts with.

use uuid::Uuid;

use crate::auth::Caller;
use crate::error::{ErrorCode, MailboxError};
use crate::store::TaskRow;

/// Visible to its sender, its recipient, its current lessee and operators (docs/contract.md#capabilities).
pub(crate) fn visible_to(row: &TaskRow, caller: &Caller) -> bool {
    let me = caller.sub.as_str();
    row.sender == me
        || row.recipient == me
        || row.leased_to.as_deref() == Some(me)
        || caller.is_operator()
}

/// 404 `not_found`: the answer for a missing task and for an invisible one alike.
pub(crate) fn not_found(id: Uuid) -> MailboxError {
    MailboxError::new(
        ErrorCode::NotFound,
        format!("no task {id} is visible to the caller"),
    )
}

/// 409 `lease_mismatch` unless `given` is the current lease. The message names both leases, so
/// an operator sees what changed since they looked.
pub(crate) fn check_lease(row: &TaskRow, given: &str) -> Result<(), MailboxError> {
    if row.lease_id.as_deref() == Some(given) {
        return Ok(());
    }
    Err(MailboxError::new(
        ErrorCode::LeaseMismatch,
        format!(
            "lease {given} is not the current lease of task {} (current lease: {})",
            row.id,
            row.lease_id.as_deref().unwrap_or("none")
        ),
    ))
}
