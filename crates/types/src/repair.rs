//! Explicit lease repair (docs/contract.md#repair): the request an operator sends and what the repair did.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::A2ATaskResult;

/// The duplicate-work posture an operator states when requeueing a leased task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DuplicateRisk {
    /// The task is safe to execute again: allowed only for a task that declared
    /// `duplicate_safety: "idempotent"` with a key (else 409 `duplicate_risk_mismatch`).
    Idempotent,
    /// The operator accepts that the work may happen twice.
    OperatorAccepted,
}

impl DuplicateRisk {
    /// The posture as it travels (`"operator_accepted"`).
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateRisk::Idempotent => "idempotent",
            DuplicateRisk::OperatorAccepted => "operator_accepted",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RepairCommand {
    /// Return the in-flight task to the END of the queue, keeping its attempt counter.
    #[cfg_attr(feature = "openapi", schema(title = "RequeueCommand"))]
    Requeue {
        /// Guard: refuse unless this is still the current lease.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_id: Option<Uuid>,
        duplicate_risk: DuplicateRisk,
    },
    /// Clear the lease and post an error result for the sender.
    #[cfg_attr(feature = "openapi", schema(title = "ForceErrorCommand"))]
    ForceError {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_id: Option<Uuid>,
        /// Non-blank, at most 1,024 characters, without NUL; becomes the result's
        /// `error_message`.
        #[cfg_attr(
            feature = "openapi",
            schema(
                min_length = 1,
                max_length = 1024,
                pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$"
            )
        )]
        message: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ARepairRequest))]
pub struct RepairRequest {
    pub task_id: Uuid,
    /// Why the operator repairs this lease (non-blank, at most 1,024 characters); recorded in
    /// the audit row.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 1024,
            pattern = r"[^\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
        )
    )]
    pub reason: String,
    pub command: RepairCommand,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RepairAction {
    Requeued,
    ForcedError,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RepairedState {
    Queued,
    ResultPending,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ARepairOutcome))]
pub struct RepairOutcome {
    pub task_id: Uuid,
    pub action: RepairAction,
    pub state: RepairedState,
    pub attempt: u32,
    /// The error result posted by `force_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<A2ATaskResult>,
}
