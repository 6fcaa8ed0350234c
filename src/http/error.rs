//! The HTTP face of [`MailboxError`]: the one table of statuses, the error body, and the
//! `Retry-After` header.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};

use crate::domain::answers::ErrorKind;
use crate::error::{ErrorCode, MailboxError};

/// The HTTP status of each code (docs/contract.md#errors): the one table the responses, the OpenAPI document
/// and its examples all read.
pub fn status(code: ErrorCode) -> StatusCode {
    use ErrorCode::*;
    match code {
        InvalidRequest => StatusCode::BAD_REQUEST,
        Unauthenticated => StatusCode::UNAUTHORIZED,
        SenderMismatch | CapabilityMissing | CapabilityScopeMismatch | NotLessee => {
            StatusCode::FORBIDDEN
        }
        NotFound | UnknownTask => StatusCode::NOT_FOUND,
        TaskIdConflict
        | NotInFlight
        | LeaseMismatch
        | ResultConflict
        | IdempotencyInFlight
        | NotCancelable
        | TaskCanceled
        | DuplicateRiskMismatch => StatusCode::CONFLICT,
        PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
        MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        TooManyWaiting => StatusCode::TOO_MANY_REQUESTS,
        StorageUnavailable | Overloaded => StatusCode::SERVICE_UNAVAILABLE,
        Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

pub use a2a_mailbox_types::ErrorBody;

/// The body of an error answer.
pub fn error_body(e: &MailboxError) -> ErrorBody {
    ErrorBody {
        kind: ErrorKind::Tag,
        code: e.code,
        message: e.message.clone(),
        retriable: e.code.retriable(),
        index: e.index,
    }
}

impl ResponseError for MailboxError {
    fn status_code(&self) -> StatusCode {
        status(self.code)
    }
    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code());
        if let Some(wait) = self.retry_after {
            let secs = wait.as_millis().div_ceil(1000).max(1);
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if self.replayed {
            res.insert_header(("Idempotent-Replayed", "true"));
        }
        if self.code == ErrorCode::Unauthenticated {
            // RFC 6750: which scheme the token must come in (MCP clients read it).
            res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        res.json(error_body(self))
    }
}

/// 405 `method_not_allowed` with `Allow: <method>`.
pub fn method_not_allowed(allow: &str) -> HttpResponse {
    let e = MailboxError::new(
        ErrorCode::MethodNotAllowed,
        format!("this path answers {allow} only"),
    );
    let mut res = e.error_response();
    if let Ok(v) = header::HeaderValue::from_str(allow) {
        res.headers_mut().insert(header::ALLOW, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::openapi::conventions::{error_example, example_message};

    #[test]
    fn error_examples_match_error_body() {
        for code in ErrorCode::ALL {
            let body = error_body(&MailboxError::new(code, example_message(code)));
            assert_eq!(serde_json::to_value(body).unwrap(), error_example(code));
        }
    }
}
