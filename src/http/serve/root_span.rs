//! Each request's span (the HTTP server span of an exported trace): tracing-actix-web's, made
//! a child of the caller's W3C trace context (`traceparent`/`tracestate`) while spans are
//! exported, so a send, a lease or a result joins the trace of the agent that made it.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::Error;
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RootSpanBuilder};

use crate::http::trace::from_headers;
use crate::telemetry::{self, spans};

pub struct Root;

impl RootSpanBuilder for Root {
    fn on_request_start(request: &ServiceRequest) -> Span {
        let span = tracing_actix_web::root_span!(request);
        if telemetry::on() {
            spans::parent(&span, from_headers(request.headers()).as_ref());
        }
        span
    }

    fn on_request_end<B: MessageBody>(span: Span, outcome: &Result<ServiceResponse<B>, Error>) {
        DefaultRootSpanBuilder::on_request_end(span, outcome);
    }
}
