//! The rules of a valid body that serde cannot express, the free text a person gives, whether a
//! task declared itself safe to run twice, and the result cache key.

use a2a_mailbox_types::{A2ATask, CancelRequest, DuplicateSafety, PostResult};

use super::limits::{no_nul, MAX_MS};
use crate::error::MailboxError;

/// A body's rules beyond its shape: `Err` (400 `invalid_request`) names the first broken one.
pub trait Validate {
    fn validate(&self) -> Result<(), MailboxError>;
}

impl Validate for A2ATask {
    fn validate(&self) -> Result<(), MailboxError> {
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
}

impl Validate for PostResult {
    fn validate(&self) -> Result<(), MailboxError> {
        no_nul("error_message", self.error_message.as_deref())
    }
}

impl Validate for CancelRequest {
    fn validate(&self) -> Result<(), MailboxError> {
        match &self.reason {
            Some(reason) => stated("reason", reason),
            None => Ok(()),
        }
    }
}

/// The most characters (not bytes) a cancel's or a repair's `reason`, or a forced error's
/// `message`, may hold.
pub const MAX_STATED_CHARS: usize = 1024;

/// Free text a person states (a cancel's or a repair's `reason`, a forced error's `message`):
/// not blank, at most [`MAX_STATED_CHARS`] characters, no NUL; else 400 naming `field`.
pub fn stated(field: &str, text: &str) -> Result<(), MailboxError> {
    no_nul(field, Some(text))?;
    if text.trim().is_empty() {
        return Err(MailboxError::invalid(format!("{field} must not be blank")));
    }
    let n = text.chars().count();
    if n > MAX_STATED_CHARS {
        return Err(MailboxError::invalid(format!(
            "{field} is {n} characters long; at most {MAX_STATED_CHARS} are allowed"
        )));
    }
    Ok(())
}

/// Whether the task's sender declared it safe to run twice: `duplicate_safety: "idempotent"`
/// with a key. Only such a task may be requeued as `duplicate_risk: "idempotent"`; a person
/// cannot declare a task safe that its sender declared unsafe (or did not declare at all).
pub fn declared_idempotent(task: &A2ATask) -> bool {
    task.idempotency.as_ref().is_some_and(|i| {
        i.duplicate_safety == DuplicateSafety::Idempotent && !i.key.trim().is_empty()
    })
}

/// The receiver-side result cache key (docs/contract.md#the-result-cache), for idempotent tasks with a key.
pub fn cache_key(task: &A2ATask) -> Option<String> {
    let idem = task.idempotency.as_ref()?;
    if idem.duplicate_safety != DuplicateSafety::Idempotent {
        return None;
    }
    let kind = task.task_kind.as_deref().unwrap_or(&task.intent_text);
    // JSON array encoding keeps the four parts unambiguous whatever characters they hold.
    // Serialising a tuple of strings cannot fail.
    serde_json::to_string(&(
        task.sender.as_str(),
        task.recipient.as_str(),
        kind,
        idem.key.as_str(),
    ))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn stated_text_is_non_blank_and_at_most_1024_characters() {
        assert!(stated("reason", "worker died").is_ok());
        assert!(stated("reason", &"é".repeat(MAX_STATED_CHARS)).is_ok());
        for bad in [
            " \t".to_owned(),
            "é".repeat(MAX_STATED_CHARS + 1),
            "a\0b".into(),
        ] {
            let e = stated("reason", &bad).unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::InvalidRequest);
            assert!(e.message.starts_with("reason "), "{}", e.message);
        }
    }

    #[test]
    fn only_idempotent_with_a_key_is_declared_idempotent() {
        let mut t: A2ATask = serde_json::from_value(serde_json::json!({
            "id": Uuid::nil(), "sender": "a", "recipient": "b", "intent_text": "do"
        }))
        .unwrap();
        assert!(!declared_idempotent(&t));
        t.idempotency = Some(a2a_mailbox_types::Idempotency {
            duplicate_safety: DuplicateSafety::Unsafe,
            key: "k".into(),
        });
        assert!(!declared_idempotent(&t));
        t.idempotency.as_mut().unwrap().duplicate_safety = DuplicateSafety::Idempotent;
        assert!(declared_idempotent(&t));
        t.idempotency.as_mut().unwrap().key = " ".into();
        assert!(!declared_idempotent(&t));
    }

    #[test]
    fn cache_key_uses_kind_or_intent() {
        let mut t: A2ATask = serde_json::from_value(serde_json::json!({
            "id": Uuid::nil(), "sender": "a", "recipient": "b", "intent_text": "do",
            "idempotency": {"duplicate_safety": "idempotent", "key": "k"}
        }))
        .unwrap();
        assert_eq!(cache_key(&t).unwrap(), r#"["a","b","do","k"]"#);
        t.task_kind = Some("refund".into());
        assert_eq!(cache_key(&t).unwrap(), r#"["a","b","refund","k"]"#);
        t.idempotency.as_mut().unwrap().duplicate_safety = DuplicateSafety::Unsafe;
        assert!(cache_key(&t).is_none());
    }
}
