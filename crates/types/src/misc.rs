//! Smaller shapes: listing's `role` and children's tally, an audit row, a batch and its items,
//! and the heartbeat body.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[cfg(feature = "openapi")]
use crate::A2ATask;

/// Whose tasks a list keeps (`role`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Tasks the caller sent.
    Sender,
    /// Tasks addressed to the caller.
    Recipient,
    /// Every task visible to the caller (for an operator, every task).
    #[default]
    Any,
}

/// How many of a parent's visible children are in each state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChildCounts {
    pub queued: u64,
    pub in_flight: u64,
    pub result_pending: u64,
    pub resolved: u64,
    pub canceled: u64,
}

/// One audit row. `kind` is `{"type": <slug>, ...fields of that slug}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEvent {
    /// A UUIDv7, like every other id.
    pub id: Uuid,
    pub timestamp_ms: u64,
    pub issuer: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({"type": "capability_check", "scope_id": "a2a-send:bob",
        "required_actions": ["a2a.send.bob"], "missing_actions": [], "passed": true})))]
    pub kind: Value,
}

/// One task of a batch's answer, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ABatchItem))]
pub struct BatchItem {
    pub task_id: Uuid,
    /// The task already existed with this body: its first answer again.
    pub replayed: bool,
    /// Answered at once from the result cache with a copy of this task's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<Uuid>,
}

/// The body of `POST /a2a/tasks/batch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ATaskBatch))]
pub struct TaskBatch {
    /// 1 to 500 tasks, each as the body of `POST /a2a/tasks`.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<A2ATask>, min_items = 1, max_items = 500))]
    pub tasks: Vec<Value>,
}

// The body of `POST /a2a/tasks/{id}/heartbeat` (a doc comment would become the schema's
// description, which the document leaves out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2AHeartbeatRequest))]
pub struct HeartbeatRequest {
    pub lease_id: Uuid,
}
