//! W3C trace context on the wire (docs/contract.md#trace-context): read from a request's
//! `traceparent`/`tracestate` headers, carried into the task or result it came with when that
//! names none of its own (the body wins), and written on a leased task's answer.

use actix_web::http::header::HeaderMap;
use actix_web::HttpResponseBuilder;
use serde_json::Value;

use a2a_mailbox_types::Trace;

/// The trace headers a send or a result takes (the OpenAPI document's parameters).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct TraceHeaders {
    /// The W3C trace context of the caller, stored with each task (or result) that has no
    /// `trace` of its own and handed to whoever leases the task (or drains the result). Not well
    /// formed: dropped, never refused. Never part of the request's identity (task-id replay,
    /// `result_conflict`, `Idempotency-Key`).
    #[param(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]
    traceparent: Option<String>,
    /// Its vendor data, kept with it (at most 512 characters; dropped when not well formed).
    #[param(example = "congo=t61rcWkgMzE")]
    tracestate: Option<String>,
}

/// The trace context of a request's headers, if well formed.
pub fn from_headers(headers: &HeaderMap) -> Option<Trace> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    Trace::parse(header("traceparent")?, header("tracestate"))
}

/// Puts `trace` into `object` (a task or a result as sent) unless it carries a well-formed trace
/// context of its own. One that is not well formed is replaced (it would be dropped anyway).
pub fn carry(object: &mut Value, trace: Option<&Trace>) {
    let (Some(trace), Some(fields)) = (trace, object.as_object_mut()) else {
        return;
    };
    if fields.get("trace").and_then(Trace::in_object).is_none() {
        if let Ok(value) = serde_json::to_value(trace) {
            fields.insert("trace".to_owned(), value);
        }
    }
}

/// [`carry`] into each object of a list (the items of a batch).
pub fn carry_each(items: &mut [Value], trace: Option<&Trace>) {
    for item in items {
        carry(item, trace);
    }
}

/// Writes `trace` as the answer's `traceparent` and `tracestate` headers.
pub fn answer_with(res: &mut HttpResponseBuilder, trace: Option<&Trace>) {
    if let Some(trace) = trace {
        res.insert_header(("traceparent", trace.traceparent.as_str()));
        if let Some(state) = &trace.tracestate {
            res.insert_header(("tracestate", state.as_str()));
        }
    }
}
