//! A panic that still happens (docs/contract.md#errors): no request input may reach one, but
//! should a bug panic anyway, [`catch_panics`] answers the request 500 `internal` with an
//! `X-Request-Id` header naming it in the logs (the request id of its tracing span), counts it
//! in `a2a_panics_total`, and lets the worker go on serving its other connections. Every other
//! 500 a route answers carries the header too.
//!
//! [`inject_panic`] is the fault injection that tests it: with the test-only setting
//! `A2A_MAILBOX_TEST_PANIC_PATH`, a request to that path panics where a handler would.

use std::fmt;
use std::panic::AssertUnwindSafe;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use futures_util::FutureExt;
use tracing_actix_web::RequestId;

use crate::error::{ErrorCode, MailboxError};
use crate::http::state::State;

/// The response header that names a request as its log lines do.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// What a panic's payload says, when it is text.
fn said(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// The answer to a request that panicked: 500 `internal`, naming the request by its id.
#[derive(Debug)]
struct Panicked(Option<RequestId>);

impl fmt::Display for Panicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(id) => write!(f, "internal error; the logs name it by request id {id}"),
            None => f.write_str("internal error"),
        }
    }
}

impl ResponseError for Panicked {
    fn status_code(&self) -> StatusCode {
        StatusCode::INTERNAL_SERVER_ERROR
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = MailboxError::new(ErrorCode::Internal, self.to_string()).error_response();
        name(res.headers_mut(), self.0);
        res
    }
}

/// Adds `X-Request-Id: id` to a response's headers.
fn name(headers: &mut HeaderMap, id: Option<RequestId>) {
    if let Some(value) = id.and_then(|id| HeaderValue::from_str(&id.to_string()).ok()) {
        headers.insert(REQUEST_ID, value);
    }
}

/// Runs the rest of the chain. A panic in it answers 500 `internal` (as an error, so that no
/// handle on the request outlives the call: routing needs the request to itself); every 500
/// carries an `X-Request-Id` header naming the request in the logs.
pub async fn catch_panics<B: MessageBody>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let id = req.extensions().get::<RequestId>().copied();
    let state = req.app_data::<State>().cloned();
    // The call itself runs inside the guarded future: a service may panic before it yields one.
    let served = AssertUnwindSafe(async move { next.call(req).await })
        .catch_unwind()
        .await;
    match served {
        Ok(Ok(mut res)) => {
            if res.status() == StatusCode::INTERNAL_SERVER_ERROR {
                name(res.headers_mut(), id);
            }
            Ok(res)
        }
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            let request_id = id.map(|id| id.to_string()).unwrap_or_default();
            tracing::error!(request_id, panic = said(&*panic), "a request panicked");
            if let Some(state) = state {
                let metrics = &state.mailbox.metrics;
                metrics.inc(&metrics.panics);
            }
            Err(Panicked(id).into())
        }
    }
}

/// Panics on a request to `A2A_MAILBOX_TEST_PANIC_PATH` (a test-only fault injection; unset,
/// this layer is not in the chain at all).
pub async fn inject_panic<B: MessageBody>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let path = req.app_data::<State>().and_then(|s| s.panic_path.clone());
    if path.as_deref() == Some(req.path()) {
        panic!(
            "the fault injection of A2A_MAILBOX_TEST_PANIC_PATH: {}",
            req.path()
        );
    }
    next.call(req).await
}
