//! The contract's error codes and the error body (docs/contract.md#errors).

use serde::{Deserialize, Serialize};

use crate::answers::ErrorKind;

/// Stable machine codes of the contract. A code always travels with the same HTTP status; each
/// operation lists the codes it may answer under their status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    Unauthenticated,
    SenderMismatch,
    CapabilityMissing,
    CapabilityScopeMismatch,
    NotLessee,
    NotFound,
    UnknownTask,
    TaskIdConflict,
    NotInFlight,
    LeaseMismatch,
    ResultConflict,
    IdempotencyInFlight,
    /// The task is already answered: there is nothing to cancel.
    NotCancelable,
    /// The task was canceled: its former lessee should stop working on it.
    TaskCanceled,
    /// A requeue stated `duplicate_risk: "idempotent"` for a task that did not declare itself
    /// idempotent with a key: the operator must state `operator_accepted`.
    DuplicateRiskMismatch,
    PayloadTooLarge,
    /// The request's headers are past the server's limits (96 lines, 128 KiB in all).
    HeadersTooLarge,
    /// The request's headers did not arrive in time.
    RequestTimeout,
    UnsupportedMediaType,
    IdempotencyKeyReused,
    MethodNotAllowed,
    /// The caller already has as many requests waiting on this instance as it may.
    TooManyWaiting,
    /// This instance already holds as many waiting requests as it may, from everyone.
    Overloaded,
    StorageUnavailable,
    Internal,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorCode {
    /// Every code, in the order of the contract's table.
    pub const ALL: [ErrorCode; 26] = [
        ErrorCode::InvalidRequest,
        ErrorCode::Unauthenticated,
        ErrorCode::SenderMismatch,
        ErrorCode::CapabilityMissing,
        ErrorCode::CapabilityScopeMismatch,
        ErrorCode::NotLessee,
        ErrorCode::NotFound,
        ErrorCode::UnknownTask,
        ErrorCode::TaskIdConflict,
        ErrorCode::NotInFlight,
        ErrorCode::LeaseMismatch,
        ErrorCode::ResultConflict,
        ErrorCode::IdempotencyInFlight,
        ErrorCode::NotCancelable,
        ErrorCode::TaskCanceled,
        ErrorCode::DuplicateRiskMismatch,
        ErrorCode::PayloadTooLarge,
        ErrorCode::HeadersTooLarge,
        ErrorCode::RequestTimeout,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::MethodNotAllowed,
        ErrorCode::TooManyWaiting,
        ErrorCode::Overloaded,
        ErrorCode::StorageUnavailable,
        ErrorCode::Internal,
    ];

    /// The code as it travels (`"not_found"`).
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidRequest => "invalid_request",
            Unauthenticated => "unauthenticated",
            SenderMismatch => "sender_mismatch",
            CapabilityMissing => "capability_missing",
            CapabilityScopeMismatch => "capability_scope_mismatch",
            NotLessee => "not_lessee",
            NotFound => "not_found",
            UnknownTask => "unknown_task",
            TaskIdConflict => "task_id_conflict",
            NotInFlight => "not_in_flight",
            LeaseMismatch => "lease_mismatch",
            ResultConflict => "result_conflict",
            IdempotencyInFlight => "idempotency_in_flight",
            NotCancelable => "not_cancelable",
            TaskCanceled => "task_canceled",
            DuplicateRiskMismatch => "duplicate_risk_mismatch",
            PayloadTooLarge => "payload_too_large",
            HeadersTooLarge => "headers_too_large",
            RequestTimeout => "request_timeout",
            UnsupportedMediaType => "unsupported_media_type",
            IdempotencyKeyReused => "idempotency_key_reused",
            MethodNotAllowed => "method_not_allowed",
            TooManyWaiting => "too_many_waiting",
            Overloaded => "overloaded",
            StorageUnavailable => "storage_unavailable",
            Internal => "internal",
        }
    }

    /// Whether the same request may succeed later.
    pub fn retriable(self) -> bool {
        matches!(
            self,
            ErrorCode::StorageUnavailable
                | ErrorCode::IdempotencyInFlight
                | ErrorCode::TooManyWaiting
                | ErrorCode::Overloaded
        )
    }

    /// A refusal of the request (the caller's mistake or a rule), as opposed to a failure of the
    /// server or its storage. A refused write changes nothing but may keep its audit rows.
    pub fn is_refusal(self) -> bool {
        !matches!(
            self,
            ErrorCode::StorageUnavailable | ErrorCode::Overloaded | ErrorCode::Internal
        )
    }
}

/// The error body: `{"kind":"error","code","message","retriable"}`. Every refusal and failure
/// answers it, with the HTTP status of its `code` (docs/contract.md#errors).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"kind": "error", "code": "not_found",
    "message": "no task 0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90 is visible to the caller", "retriable": false})))]
pub struct ErrorBody {
    /// Always `"error"`.
    pub kind: ErrorKind,
    /// The stable machine code; it determines the HTTP status.
    pub code: ErrorCode,
    /// Human-readable; free text, never internal detail.
    pub message: String,
    /// `true` when the same request may succeed later (`storage_unavailable`,
    /// `idempotency_in_flight`, `too_many_waiting`, `overloaded`).
    pub retriable: bool,
    /// In a batch (`POST /a2a/tasks/batch`), the position of the item that was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
}
