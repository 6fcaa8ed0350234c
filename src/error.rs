//! The one error type of the mailbox and the contract's error codes (docs/contract.md#errors).
//!
//! This layer knows no HTTP: [`ErrorCode`] names what went wrong, and `src/http/error.rs` holds
//! the one table that maps each code to its HTTP status.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use a2a_mailbox_types::ErrorCode;

/// What a mailbox operation answers when it does not succeed: a code of the contract, a message
/// a person understands, and for retriable codes how long to wait before retrying.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MailboxError {
    pub code: ErrorCode,
    pub message: String,
    /// How long to wait before retrying (retriable codes only).
    #[serde(skip)]
    pub retry_after: Option<Duration>,
    /// The stored answer of an earlier identical request (an `Idempotency-Key` replay).
    #[serde(skip)]
    pub replayed: bool,
    /// In a batch, the position of the item that was refused (docs/contract.md#batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
}

/// The most bytes of an error's message: a refusal that quotes what it refuses (a parser's
/// complaint quotes the value) never answers, or keeps in an `Idempotency-Key` record, more.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// `message` cut to [`MAX_MESSAGE_BYTES`] at a character boundary, marked with `…` when cut.
fn bounded(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES.saturating_sub('…'.len_utf8());
        while !message.is_char_boundary(end) {
            end = end.saturating_sub(1);
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

impl MailboxError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> MailboxError {
        MailboxError {
            code,
            message: bounded(message.into()),
            retry_after: None,
            replayed: false,
            index: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> MailboxError {
        MailboxError::new(ErrorCode::InvalidRequest, message)
    }
    pub fn unauthenticated(message: impl Into<String>) -> MailboxError {
        MailboxError::new(ErrorCode::Unauthenticated, message)
    }
    /// `storage_unavailable`, retriable after a second.
    pub fn storage_unavailable(message: impl Into<String>) -> MailboxError {
        MailboxError::new(ErrorCode::StorageUnavailable, message)
            .retry_after(Duration::from_secs(1))
    }
    /// A failure the caller cannot be blamed for. The cause is logged, never returned.
    pub fn internal(cause: impl fmt::Display) -> MailboxError {
        tracing::error!(error = %cause, "internal error");
        MailboxError::new(ErrorCode::Internal, "internal error")
    }
    /// The refusal of item `index` of a batch.
    pub fn at_index(mut self, index: usize) -> MailboxError {
        self.index = Some(index);
        self
    }
    pub fn retry_after(mut self, wait: Duration) -> MailboxError {
        self.retry_after = Some(wait);
        self
    }
    /// See [`ErrorCode::is_refusal`].
    pub fn is_refusal(&self) -> bool {
        self.code.is_refusal()
    }
}

impl fmt::Display for MailboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for MailboxError {}

#[cfg(test)]
mod tests {
    use super::{MailboxError, MAX_MESSAGE_BYTES};

    #[test]
    fn a_message_is_cut_at_a_character_boundary() {
        let e = MailboxError::invalid(format!("invalid type: string {:?}", "€".repeat(2000)));
        assert!(e.message.len() <= MAX_MESSAGE_BYTES, "{}", e.message.len());
        assert!(e.message.ends_with('…'));
        assert_eq!(MailboxError::invalid("short").message, "short");
    }
}
