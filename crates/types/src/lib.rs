//! The wire types of the a2a-mailbox HTTP API (its contract: `docs/contract.md` in the
//! repository), defined once and shared by the
//! server and its Rust client: tasks, results, leases, task states, the answer bodies tagged by
//! `kind`, and the error codes.
//!
//! Deserialisation enforces the shape (types, enums, the AgentId syntax); the rules serde cannot
//! express (non-blank strings, ranges) are the server's. With the `openapi` feature every type
//! also derives `utoipa::ToSchema`, as the server's OpenAPI document needs.
//!
//! ```
//! use a2a_mailbox_types::{A2ATask, TaskState};
//!
//! let task: A2ATask = serde_json::from_str(
//!     r#"{"id":"0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90","sender":"alice","recipient":"bob",
//!         "intent_text":"summarise the Q3 report"}"#,
//! )
//! .unwrap();
//! assert!(task.content.is_empty());
//! assert_eq!(TaskState::parse("in_flight"), Some(TaskState::InFlight));
//! ```

mod agent;
pub mod answers;
mod error;
pub mod integral;
mod misc;
mod repair;
mod result;
mod retry;
mod state;
mod task;
pub mod trace;
#[cfg(feature = "otel")]
mod trace_otel;

pub use agent::{AgentId, AGENT_ID_PATTERN};
pub use error::{ErrorBody, ErrorCode};
pub use misc::{AuditEvent, BatchItem, ChildCounts, HeartbeatRequest, Role, TaskBatch};
pub use repair::{
    DuplicateRisk, RepairAction, RepairCommand, RepairOutcome, RepairRequest, RepairedState,
};
pub use result::{A2ATaskResult, PostResult, ResultStatus};
pub use retry::{Requeued, RetryPolicy, RetryReport, SkipReason, Skipped};
pub use state::{
    CancelRequest, Cancellation, Lease, QueueEntry, QueueState, TaskState, TaskStatus,
};
pub use task::{A2ATask, Content, DuplicateSafety, Idempotency};
pub use trace::Trace;

/// How long the mailbox keeps an HTTP connection open with no request on it (between requests:
/// a request that waits is not idle). A client should stop reusing a connection before this:
/// a request written on one while the mailbox closes it is lost unanswered.
pub const IDLE_CONNECTION_CLOSE: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest a client should go on reusing an idle connection: a second less than
/// [`IDLE_CONNECTION_CLOSE`], so that its next request never meets the mailbox's close on the
/// way. The Rust client keeps to it.
pub const IDLE_CONNECTION_REUSE: std::time::Duration =
    IDLE_CONNECTION_CLOSE.saturating_sub(std::time::Duration::from_secs(1));
