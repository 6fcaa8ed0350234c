//! A task from one agent to another, its content and its duplicate-safety declaration.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{no_nul, AgentId, MAX_MS};
use crate::error::MailboxError;

/// One block of structured content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    #[schema(title = "TextContent")]
    Text { text: String },
    /// Any JSON value.
    #[schema(title = "JsonContent")]
    Json { value: serde_json::Value },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Idempotency {
    pub duplicate_safety: DuplicateSafety,
    /// Stable key of the logical work unit, chosen by the outermost retrying layer. Non-blank.
    #[schema(
        min_length = 1,
        pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
        example = "refund-order-1234"
    )]
    pub key: String,
}

/// A task from one agent to another. Absent `idempotency` means `unsafe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct A2ATask {
    /// Chosen by the sender (the outermost retrying layer) and reused on every retry.
    pub id: Uuid,
    /// Must equal the token subject.
    pub sender: AgentId,
    pub recipient: AgentId,
    pub intent_text: String,
    /// Typed kind of the task; when present it must be non-blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
        example = "refund"
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
    #[schema(pattern = r"^[^\u0000]*$", example = "conversation-42")]
    pub context_id: Option<String>,
    /// Absolute deadline in epoch milliseconds; a queued task past it is never leased.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::integral::optional"
    )]
    #[schema(maximum = 9223372036854775807_u64)]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<Idempotency>,
    /// Free-form JSON object kept with the task and shown wherever the task is; the mailbox never
    /// reads it, except the key `urn:a2a-mailbox:v1:a2a`, where the A2A facade (§16) keeps the
    /// A2A message a task was sent as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, example = json!({"ticket": "SUP-981"}))]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

impl A2ATask {
    pub fn validate(&self) -> Result<(), MailboxError> {
        if let Some(kind) = &self.task_kind {
            if kind.trim().is_empty() {
                return Err(MailboxError::invalid(
                    "task_kind must not be blank when present",
                ));
            }
        }
        if let Some(idem) = &self.idempotency {
            if idem.key.trim().is_empty() {
                return Err(MailboxError::invalid("idempotency.key must not be blank"));
            }
        }
        if self.deadline_ms.is_some_and(|d| d > MAX_MS) {
            return Err(MailboxError::invalid("deadline_ms is out of range"));
        }
        no_nul(
            "idempotency.key",
            self.idempotency.as_ref().map(|i| i.key.as_str()),
        )?;
        // Lists filter on these, so they are kept in text columns too.
        no_nul("task_kind", self.task_kind.as_deref())?;
        no_nul("context_id", self.context_id.as_deref())?;
        Ok(())
    }

    /// The receiver-side result cache key (§6.2), for idempotent tasks with a key.
    pub fn cache_key(&self) -> Option<String> {
        let idem = self.idempotency.as_ref()?;
        if idem.duplicate_safety != DuplicateSafety::Idempotent {
            return None;
        }
        let kind = self.task_kind.as_deref().unwrap_or(&self.intent_text);
        // JSON array encoding keeps the four parts unambiguous whatever characters they hold.
        Some(
            serde_json::to_string(&(
                self.sender.as_str(),
                self.recipient.as_str(),
                kind,
                idem.key.as_str(),
            ))
            .expect("strings serialise"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_key_uses_kind_or_intent() {
        let mut t: A2ATask = serde_json::from_value(serde_json::json!({
            "id": Uuid::nil(), "sender": "a", "recipient": "b", "intent_text": "do",
            "idempotency": {"duplicate_safety": "idempotent", "key": "k"}
        }))
        .unwrap();
        assert_eq!(t.cache_key().unwrap(), r#"["a","b","do","k"]"#);
        t.task_kind = Some("refund".into());
        assert_eq!(t.cache_key().unwrap(), r#"["a","b","refund","k"]"#);
        t.idempotency.as_mut().unwrap().duplicate_safety = DuplicateSafety::Unsafe;
        assert!(t.cache_key().is_none());
    }
}
