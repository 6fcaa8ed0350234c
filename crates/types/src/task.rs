//! A task from one agent to another, its content and its duplicate-safety declaration.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::AgentId;

/// One block of structured content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    #[cfg_attr(feature = "openapi", schema(title = "TextContent"))]
    Text { text: String },
    /// Any JSON value, nested at most `A2A_MAILBOX_MAX_JSON_DEPTH` deep (64 by default; deeper is
    /// 400 `invalid_request`).
    #[cfg_attr(feature = "openapi", schema(title = "JsonContent"))]
    Json { value: serde_json::Value },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DuplicateSafety {
    /// Duplicate execution may cause external effects: never retried automatically.
    Unsafe,
    /// Executing the task more than once is safe; eligible for the result cache and the retry gate.
    Idempotent,
}

impl DuplicateSafety {
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateSafety::Unsafe => "unsafe",
            DuplicateSafety::Idempotent => "idempotent",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Idempotency {
    pub duplicate_safety: DuplicateSafety,
    /// Stable key of the logical work unit, chosen by the outermost retrying layer. Non-blank.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
            example = "refund-order-1234"
        )
    )]
    pub key: String,
}

/// A task from one agent to another. Absent `idempotency` means `unsafe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct A2ATask {
    /// Chosen by the sender (the outermost retrying layer) and reused on every retry.
    pub id: Uuid,
    /// Must equal the token subject.
    pub sender: AgentId,
    pub recipient: AgentId,
    pub intent_text: String,
    /// Typed kind of the task; when present it must be non-blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
            example = "refund"
        )
    )]
    pub task_kind: Option<String>,
    /// Structured input; defaults to `[]`.
    #[serde(default)]
    pub content: Vec<Content>,
    /// The task this one is part of (a fan-out); it may live in another system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Uuid>,
    /// Groups the tasks of one conversation; echoed back. No NUL character.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = r"^[^\u0000]*$", example = "conversation-42")
    )]
    pub context_id: Option<String>,
    /// Absolute deadline in epoch milliseconds; a queued task past it is never leased.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::integral::optional"
    )]
    #[cfg_attr(feature = "openapi", schema(maximum = 9223372036854775807_u64))]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<Idempotency>,
    /// Free-form JSON object kept with the task and shown wherever the task is, nested at most
    /// `A2A_MAILBOX_MAX_JSON_DEPTH` deep (64 by default; deeper is 400 `invalid_request`). The
    /// mailbox never reads it, except the key `urn:a2a-mailbox:v1:a2a`, where the A2A facade
    /// (docs/contract.md#a2a) keeps the A2A message a task was sent as: that key is the facade's
    /// alone, and a native send drops it before the task is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>, example = json!({"ticket": "SUP-981"})))]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// The sender's W3C trace context, handed to whoever leases the task (taken from the
    /// `traceparent`/`tracestate` headers when absent; the body wins). One that is not well
    /// formed is dropped, never refused; it is no part of the task's identity: a retry with
    /// another trace replays, keeping the first. Its shape: `{"traceparent": "00-<32 hex>-<16
    /// hex>-<2 hex>", "tracestate": "k=v,…"}` (`tracestate` optional); any other value sent is
    /// dropped, and an answer never shows one.
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
