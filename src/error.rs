//! The one error type of the service and its mapping to the contract's statuses and codes (§9).

use std::fmt;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

/// Stable machine codes of the contract; each one has a fixed HTTP status: `invalid_request` 400;
/// `unauthenticated` 401; `sender_mismatch`, `capability_missing`, `capability_scope_mismatch`,
/// `not_lessee` 403; `not_found`, `unknown_task` 404; `task_id_conflict`, `not_in_flight`,
/// `lease_mismatch`, `result_conflict`, `idempotency_in_flight` 409; `payload_too_large` 413;
/// `unsupported_media_type` 415; `idempotency_key_reused` 422; `storage_unavailable` 503;
/// `internal` 500.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
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
    PayloadTooLarge,
    UnsupportedMediaType,
    IdempotencyKeyReused,
    MethodNotAllowed,
    StorageUnavailable,
    Internal,
}

impl ErrorCode {
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            InvalidRequest => StatusCode::BAD_REQUEST,
            Unauthenticated => StatusCode::UNAUTHORIZED,
            SenderMismatch | CapabilityMissing | CapabilityScopeMismatch | NotLessee => {
                StatusCode::FORBIDDEN
            }
            NotFound | UnknownTask => StatusCode::NOT_FOUND,
            TaskIdConflict | NotInFlight | LeaseMismatch | ResultConflict | IdempotencyInFlight => {
                StatusCode::CONFLICT
            }
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

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
            PayloadTooLarge => "payload_too_large",
            UnsupportedMediaType => "unsupported_media_type",
            IdempotencyKeyReused => "idempotency_key_reused",
            MethodNotAllowed => "method_not_allowed",
            StorageUnavailable => "storage_unavailable",
            Internal => "internal",
        }
    }

    pub fn retriable(self) -> bool {
        matches!(
            self,
            ErrorCode::StorageUnavailable | ErrorCode::IdempotencyInFlight
        )
    }
}

/// The error body: `{"kind":"error","code","message","retriable"}`. Every refusal and failure
/// answers it, with the HTTP status of its `code` (API.md §9).
#[derive(Clone, Debug, Serialize, ToSchema)]
#[schema(example = json!({"kind": "error", "code": "not_found",
    "message": "no task 0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90 is visible to the caller", "retriable": false}))]
pub struct ErrorBody {
    /// Always `"error"`.
    #[schema(value_type = crate::http::openapi::ErrorKind)]
    pub kind: &'static str,
    /// The stable machine code; it determines the HTTP status.
    pub code: ErrorCode,
    /// Human-readable; free text, never internal detail.
    pub message: String,
    /// `true` when the same request may succeed later (`storage_unavailable`,
    /// `idempotency_in_flight`).
    pub retriable: bool,
}

#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
    /// The `Allow` header of a 405.
    pub allow: Option<&'static str>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            retry_after: None,
            allow: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InvalidRequest, message)
    }
    pub fn unauthenticated(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Unauthenticated, message)
    }
    /// 405 `method_not_allowed` with `Allow: <method>`.
    pub fn method_not_allowed(method: &'static str) -> ApiError {
        let mut e = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("this path answers {method} only"),
        );
        e.allow = Some(method);
        e
    }
    /// 503 `storage_unavailable`, retriable, with `Retry-After: 1`.
    pub fn storage_unavailable(message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(ErrorCode::StorageUnavailable, message);
        e.retry_after = Some(1);
        e
    }
    /// A failure the caller cannot be blamed for. The cause is logged, never returned.
    pub fn internal(cause: impl fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(ErrorCode::Internal, "internal error")
    }
    /// A client error (4xx): the request was refused and the mailbox is unchanged.
    pub fn is_client_error(&self) -> bool {
        self.code.status().is_client_error()
    }
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            kind: "error",
            code: self.code,
            message: self.message.clone(),
            retriable: self.code.retriable(),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }
    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code());
        if let Some(secs) = self.retry_after {
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if let Some(allow) = self.allow {
            res.insert_header((header::ALLOW, allow));
        }
        res.json(self.body())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> ApiError {
        if is_unavailable(&e) {
            tracing::warn!(error = %e, "storage unavailable");
            ApiError::storage_unavailable("the database is unreachable or busy; retry later")
        } else {
            ApiError::internal(e)
        }
    }
}

/// Errors that mean "the database cannot serve now" rather than "the code is wrong".
fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // SQLITE_BUSY (5), SQLITE_LOCKED (6) and their extended codes.
                code.parse::<i32>()
                    .map(|c| c & 0xff == 5 || c & 0xff == 6)
                    .unwrap_or(false)
            } else {
                // PostgreSQL: serialization failure, deadlock, shutdown, too many connections,
                // lock not available.
                matches!(
                    code.as_ref(),
                    "40001" | "40P01" | "57P01" | "57P02" | "57P03" | "53300" | "55P03"
                )
            }
        }
        _ => false,
    }
}
