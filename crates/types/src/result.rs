//! A result: as the recipient posts it and as the sender drains it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Content;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Ok,
    Error,
    Partial,
}

impl ResultStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Ok => "ok",
            ResultStatus::Error => "error",
            ResultStatus::Partial => "partial",
        }
    }
    pub fn parse(s: &str) -> Option<ResultStatus> {
        match s {
            "ok" => Some(ResultStatus::Ok),
            "error" => Some(ResultStatus::Error),
            "partial" => Some(ResultStatus::Partial),
            _ => None,
        }
    }
}

/// A result as it is delivered to the sender. It never carries a `lease_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct A2ATaskResult {
    pub task_id: Uuid,
    pub status: ResultStatus,
    /// Always emitted; `[]` when empty.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = r"^[^\u0000]*$"))]
    pub error_message: Option<String>,
    /// The W3C trace context of the answer (taken from the `traceparent`/`tracestate` headers
    /// of its post when absent; the body wins). One that is not well formed is dropped, never
    /// refused; it is no part of the result's identity: the same result again under another
    /// trace is a replay. Its shape is a task's `trace`: `{"traceparent", "tracestate"?}`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::trace::lenient"
    )]
    // Any value is taken (and dropped unless it is a `Trace`): the document promises no refusal.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<serde_json::Value>, example = json!(
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})))]
    pub trace: Option<crate::Trace>,
}

/// The body of `POST /a2a/results`: a result plus an optional fencing `lease_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostResult {
    pub task_id: Uuid,
    pub status: ResultStatus,
    #[serde(default)]
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = r"^[^\u0000]*$"))]
    pub error_message: Option<String>,
    /// Optional fencing guard: when given it must be the task's current lease id (409 `lease_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<Uuid>,
    /// The W3C trace context of the answer (taken from the `traceparent`/`tracestate` headers
    /// of its post when absent; the body wins). One that is not well formed is dropped, never
    /// refused; it is no part of the result's identity: the same result again under another
    /// trace is a replay. Its shape is a task's `trace`: `{"traceparent", "tracestate"?}`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::trace::lenient"
    )]
    // Any value is taken (and dropped unless it is a `Trace`): the document promises no refusal.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<serde_json::Value>, example = json!(
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})))]
    pub trace: Option<crate::Trace>,
}

impl PostResult {
    /// The result as the sender will drain it (without the `lease_id`).
    pub fn result(&self) -> A2ATaskResult {
        A2ATaskResult {
            task_id: self.task_id,
            status: self.status,
            content: self.content.clone(),
            error_message: self.error_message.clone(),
            trace: self.trace.clone(),
        }
    }
}
