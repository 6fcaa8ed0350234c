//! OpenTelemetry (feature `otel`): a task sent without a trace context of its own takes the
//! current `tracing` span's, and the worker loops run each handler in a consumer span
//! (`process <recipient>`) linked to the task's trace context, whose context goes back with the
//! reply unless the handler set one. Without the feature, nothing of this is built.

use std::future::Future;

use crate::{Reply, Trace};
use a2a_mailbox_types::A2ATask;

#[cfg(feature = "otel")]
mod on {
    use opentelemetry::trace::TraceContextExt;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::{A2ATask, Trace};

    /// The trace context that hands `span` on.
    pub fn trace_of(span: &Span) -> Option<Trace> {
        Trace::of(span.context().span().span_context())
    }

    /// The consumer span of a handler working on `task`, linked to the task's trace context.
    pub fn processing(task: &A2ATask) -> Span {
        let span = tracing::info_span!(
            "process",
            otel.name = %format_args!("process {}", task.recipient),
            otel.kind = "consumer",
            messaging.system = "a2a_mailbox",
            messaging.operation.type = "process",
            messaging.destination.name = %task.recipient,
            messaging.message.id = %task.id,
        );
        if let Some(cx) = task.trace.as_ref().and_then(Trace::span_context) {
            span.add_link(cx);
        }
        span
    }
}

/// The current span's trace context (`None` without the feature, or outside a span).
pub(crate) fn current() -> Option<Trace> {
    #[cfg(feature = "otel")]
    return on::trace_of(&tracing::Span::current());
    #[cfg(not(feature = "otel"))]
    None
}

/// A handler's consumer span, made before the handler takes the task.
pub(crate) struct Processing {
    #[cfg(feature = "otel")]
    span: tracing::Span,
}

/// The consumer span of a handler about to work on `task`.
pub(crate) fn processing(task: &A2ATask) -> Processing {
    #[cfg(feature = "otel")]
    return Processing {
        span: on::processing(task),
    };
    #[cfg(not(feature = "otel"))]
    {
        let _ = task;
        Processing {}
    }
}

impl Processing {
    /// Runs `work` (the handler's future) in the span; its reply carries the span's context
    /// unless the handler gave it one.
    pub(crate) fn run<F>(self, work: F) -> impl Future<Output = Reply>
    where
        F: Future<Output = Reply>,
    {
        #[cfg(feature = "otel")]
        {
            use tracing::Instrument;
            let carried = on::trace_of(&self.span);
            async move {
                let mut reply = work.instrument(self.span).await;
                if reply.trace.is_none() {
                    reply.trace = carried;
                }
                reply
            }
        }
        #[cfg(not(feature = "otel"))]
        work
    }
}
