//! The one error type of the client.

use std::fmt;
use std::time::Duration;

use a2a_mailbox_types::{AgentId, ErrorCode};

/// A refusal or failure answered by the mailbox in the contract's error body (docs/contract.md#errors).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The HTTP status (it follows from `code`).
    pub status: u16,
    /// The contract's stable machine code.
    pub code: ErrorCode,
    /// Human-readable text; free, never parsed.
    pub message: String,
    /// `true` when the same request may succeed later (`storage_unavailable`,
    /// `idempotency_in_flight`).
    pub retriable: bool,
    /// The `Retry-After` header, when the mailbox sent one.
    pub retry_after: Option<Duration>,
    /// In a batch, the position of the refused task.
    pub index: Option<usize>,
}

/// Everything a call of [`Client`](crate::Client) can fail with.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The mailbox answered with an error body: its `code`, `retriable` and `Retry-After`.
    Api(ApiError),
    /// The mailbox could not be reached, or the connection broke before a whole answer came.
    Transport {
        /// What went wrong.
        message: String,
        /// `true` when the request never left (connection refused): nothing can have happened.
        before_sending: bool,
    },
    /// The mailbox answered something that is not the contract's shape.
    UnexpectedAnswer {
        /// The HTTP status of that answer.
        status: u16,
        /// What could not be read.
        message: String,
    },
    /// The client refused its input before any call: a bad base URL, a token whose payload
    /// cannot be read, an invalid AgentId.
    InvalidInput(String),
    /// [`Client::from_checkpoint`](crate::Client::from_checkpoint): the checkpoint was made for
    /// another agent than the token's subject, so resuming it would hand that agent's tasks to
    /// this one.
    CheckpointAgentMismatch {
        /// The agent the checkpoint belongs to.
        checkpoint: AgentId,
        /// The token's `sub`.
        token: AgentId,
    },
}

impl Error {
    /// The contract's code, for an error the mailbox answered.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Api(e) => Some(e.code),
            _ => None,
        }
    }

    /// Whether the same request may succeed later: a retriable code, a broken connection, or a
    /// gateway's 502/503/504. A lease or a drain is retried by the client on a narrower set
    /// (see [the crate's retries](crate#retries)): after such an error the mailbox may have acted.
    pub fn retriable(&self) -> bool {
        match self {
            Error::Api(e) => e.retriable,
            Error::Transport { .. } => true,
            Error::UnexpectedAnswer { status, .. } => matches!(status, 502..=504),
            Error::InvalidInput(_) | Error::CheckpointAgentMismatch { .. } => false,
        }
    }

    /// How long the mailbox asked to wait before retrying (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Api(e) => e.retry_after,
            _ => None,
        }
    }

    /// The HTTP status of the answer, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api(e) => Some(e.status),
            Error::UnexpectedAnswer { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// `true` when the mailbox answered this `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code() == Some(code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api(e) => write!(f, "{} {}: {}", e.status, e.code, e.message),
            Error::Transport { message, .. } => write!(f, "cannot reach the mailbox: {message}"),
            Error::UnexpectedAnswer { status, message } => {
                write!(f, "unexpected answer (HTTP {status}): {message}")
            }
            Error::InvalidInput(m) => f.write_str(m),
            Error::CheckpointAgentMismatch { checkpoint, token } => write!(
                f,
                "the checkpoint belongs to agent {checkpoint}, but the token's subject is {token}"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A transport failure of reqwest, and whether the request can have reached the mailbox.
pub(crate) fn transport(e: reqwest::Error) -> Error {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    Error::Transport {
        message,
        before_sending: e.is_connect(),
    }
}
