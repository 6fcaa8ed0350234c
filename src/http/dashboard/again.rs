//! A form sent again (a double click, Back and resubmit) finds its row's lease gone: it was the
//! first submit that ended it. What that one did is in the task's audit rows, issued by the same
//! operator and naming the lease the form carries; the second answer says so instead of "the
//! lease changed".

use uuid::Uuid;

use super::events::{kind_of, text};
use super::layout::{when, SignedIn};
use crate::http::state::AppState;
use crate::mailbox::audit::kind;

/// How many of a task's newest audit rows are looked through.
const ROWS: i64 = 200;

/// What `s`'s operator already did to `task` under `lease`, as a sentence; `None` when they did
/// nothing to it (someone or something else changed the lease).
pub async fn already_done(
    state: &AppState,
    s: &SignedIn,
    task: Uuid,
    lease: Uuid,
) -> Option<String> {
    let rows = state
        .mailbox
        .audit_of_task(&s.caller, task, ROWS)
        .await
        .ok()?;
    let lease = lease.to_string();
    let mine = rows.iter().find(|e| {
        e.issuer == s.caller.sub.as_str() && text(&e.kind, "lease_id") == Some(lease.as_str())
    })?;
    let what = match (kind_of(mine), text(&mine.kind, "action")) {
        (kind::REPAIR_APPLIED, Some("force_error")) => "error already forced by you",
        (kind::REPAIR_APPLIED, _) => "already requeued by you",
        (kind::TASK_CANCELED, _) => "already canceled by you",
        _ => return None,
    };
    Some(format!(
        "{what} ({} UTC), under the lease this page showed: nothing more was done",
        when(mine.timestamp_ms)
    ))
}
