//! The messaging spans (OpenTelemetry's messaging conventions): `send` as the producer of a
//! task, `receive` for a lease or a drain, `settle` for a result. A send's span is a child of
//! the task's own trace context (the sender's); a lease's span links to each task it leased,
//! a result's span to the task it answers, a drain's span to each result it took. Each is made
//! only while spans are exported ([`super::on`]); otherwise it is `Span::none()` and costs a
//! load of one flag.

use a2a_mailbox_types::Trace;
use opentelemetry::trace::TraceContextExt;
use tracing::field::Empty;
use tracing::{info_span, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `messaging.system`: this mailbox is its own messaging system.
pub const SYSTEM: &str = "a2a_mailbox";

/// Makes `trace` the parent of `span` (which must not have been entered yet).
pub fn parent(span: &Span, trace: Option<&Trace>) {
    if let Some(cx) = trace.and_then(Trace::span_context) {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(cx));
    }
}

/// Links `span` to the trace context of each of `traces` that has one.
pub fn link_each<'a>(span: &Span, traces: impl IntoIterator<Item = Option<&'a Trace>>) {
    if span.is_none() {
        return;
    }
    for cx in traces.into_iter().flatten().filter_map(Trace::span_context) {
        span.add_link(cx);
    }
}

/// Records what one operation was about: the task's id, or how many a batch held.
pub fn record_ids(span: &Span, ids: impl ExactSizeIterator<Item = uuid::Uuid>) {
    if span.is_none() {
        return;
    }
    if ids.len() == 1 {
        for id in ids {
            span.record("messaging.message.id", tracing::field::display(id));
        }
    } else {
        span.record("messaging.batch.message_count", ids.len());
    }
}

/// A span of `operation` (`send`, `receive` or `settle`, named `name`) on `destination`.
fn span(operation: &'static str, name: &'static str, kind: &str, destination: &str) -> Span {
    if !super::on() {
        return Span::none();
    }
    info_span!(
        "messaging",
        otel.name = %format_args!("{name} {destination}"),
        otel.kind = kind,
        messaging.system = SYSTEM,
        messaging.operation.type = operation,
        messaging.operation.name = name,
        messaging.destination.name = %destination,
        messaging.message.id = Empty,
        messaging.batch.message_count = Empty,
    )
}

/// A send to `recipient`'s queue: a child of the task's own trace context, if it has one.
pub fn send(recipient: &str, trace: Option<&Trace>) -> Span {
    let s = span("send", "send", "producer", recipient);
    parent(&s, trace);
    s
}

/// A batch of sends (to one or more recipients): linked to each task's trace context.
pub fn send_batch<'a>(traces: impl IntoIterator<Item = Option<&'a Trace>>) -> Span {
    let s = span("send", "send", "producer", "(batch)");
    link_each(&s, traces);
    s
}

/// A lease from `recipient`'s queue; the tasks it leased are linked when known.
pub fn lease(recipient: &str) -> Span {
    span("receive", "lease", "client", recipient)
}

/// A result for task `task`: a child of the result's own trace context, if it has one.
pub fn settle(trace: Option<&Trace>) -> Span {
    let s = span("settle", "result", "client", "results");
    parent(&s, trace);
    s
}

/// A drain of `sender`'s results; the results it took are linked when known.
pub fn drain(sender: &str) -> Span {
    span("receive", "drain", "client", sender)
}
