//! The facade's errors (docs/contract.md#a2a): the one table of A2A error codes, HTTP statuses, status names and
//! reasons, the two shapes they travel in, and which mailbox errors become which. Refusals of
//! the transport (no token, no capability, a storage fault) are not A2A errors: they answer the
//! native error body with its own status, as A2A prescribes for authentication.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde_json::{json, Map, Value};

use crate::error::{ErrorCode, MailboxError};

/// The A2A errors the facade answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    VersionNotSupported,
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    /// A fault of the server's storage after a stream began (its HTTP status is already sent).
    Unavailable,
}

impl Kind {
    /// JSON-RPC code, HTTP status, `google.rpc` status name, ErrorInfo reason.
    fn row(self) -> (i64, u16, &'static str, &'static str) {
        use Kind::*;
        match self {
            TaskNotFound => (-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
            TaskNotCancelable => (-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
            PushNotificationNotSupported => (
                -32003,
                400,
                "FAILED_PRECONDITION",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            UnsupportedOperation => (-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
            VersionNotSupported => (-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
            ParseError => (-32700, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
            InvalidRequest => (-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
            MethodNotFound => (-32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
            InvalidParams => (-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
            Unavailable => (-32603, 503, "UNAVAILABLE", "UNAVAILABLE"),
        }
    }

    pub fn code(self) -> i64 {
        self.row().0
    }
}

/// An A2A error: its kind, a message a person understands, and the ErrorInfo's metadata.
#[derive(Clone, Debug)]
pub struct A2aError {
    pub kind: Kind,
    pub message: String,
    pub metadata: Map<String, Value>,
}

impl A2aError {
    pub fn new(kind: Kind, message: impl Into<String>) -> A2aError {
        A2aError {
            kind,
            message: message.into(),
            metadata: Map::new(),
        }
    }

    pub fn params(message: impl Into<String>) -> A2aError {
        A2aError::new(Kind::InvalidParams, message)
    }

    /// The same error, its ErrorInfo naming the mailbox's own code (`mailboxError`).
    pub fn naming(mut self, mailbox_error: &str) -> A2aError {
        self.metadata
            .insert("mailboxError".into(), Value::from(mailbox_error));
        self
    }

    /// `[ErrorInfo]`: what JSON-RPC puts in `error.data` and HTTP+JSON in `error.details`.
    fn details(&self) -> Value {
        json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.row().3,
            "domain": "a2a-protocol.org",
            "metadata": self.metadata,
        }])
    }

    /// The JSON-RPC error object.
    pub fn rpc_error(&self) -> Value {
        json!({"code": self.kind.code(), "message": self.message, "data": self.details()})
    }

    /// The HTTP+JSON error body: `{"error": {code, status, message, details}}`.
    pub fn rest_body(&self) -> Value {
        let (_, status, name, _) = self.kind.row();
        json!({"error": {
            "code": status,
            "status": name,
            "message": self.message,
            "details": self.details(),
        }})
    }

    /// The HTTP+JSON answer: the error's status and its body.
    pub fn rest_response(&self) -> HttpResponse {
        let status = self.kind.row().1;
        HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST))
            .json(self.rest_body())
    }
}

impl Fault {
    /// The fault as an event of a stream already under way, whose HTTP status is sent: an A2A
    /// error as it is, a native one as UNAVAILABLE naming the mailbox's code.
    pub fn in_stream(self) -> A2aError {
        match self {
            Fault::A2a(e) => e,
            Fault::Native(e) => {
                let code = serde_json::to_value(e.code).unwrap_or_default();
                let named = code.as_str().unwrap_or("internal").to_owned();
                A2aError::new(Kind::Unavailable, e.message).naming(&named)
            }
        }
    }
}

/// Why a facade call failed: an A2A error, or a refusal of the transport answered natively.
#[derive(Debug)]
pub enum Fault {
    A2a(A2aError),
    Native(MailboxError),
}

impl From<A2aError> for Fault {
    fn from(e: A2aError) -> Fault {
        Fault::A2a(e)
    }
}

/// A mailbox error as the facade answers it: what A2A names gets its A2A error; a refusal of
/// the caller's identity or rights and a server-side fault stay native (HTTP status and body).
impl From<MailboxError> for Fault {
    fn from(e: MailboxError) -> Fault {
        let kind = match e.code {
            ErrorCode::NotFound | ErrorCode::UnknownTask => Kind::TaskNotFound,
            ErrorCode::NotCancelable => Kind::TaskNotCancelable,
            ErrorCode::InvalidRequest => Kind::InvalidParams,
            _ => return Fault::Native(e),
        };
        Fault::A2a(A2aError::new(kind, e.message))
    }
}
