//! A trace context as OpenTelemetry's span context, both ways (feature `otel`): what a span
//! links to or continues, and what a span hands on.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

use crate::Trace;

impl Trace {
    /// The remote span context this trace context names.
    pub fn span_context(&self) -> Option<SpanContext> {
        let p = self.traceparent.as_str();
        let trace_id = TraceId::from_hex(p.get(3..35)?).ok()?;
        let span_id = SpanId::from_hex(p.get(36..52)?).ok()?;
        let flags = u8::from_str_radix(p.get(53..55)?, 16).ok()?;
        let state = self
            .tracestate
            .as_deref()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let sampled = TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8());
        let cx = SpanContext::new(trace_id, span_id, sampled, true, state);
        cx.is_valid().then_some(cx)
    }

    /// The trace context that hands `cx` on (`None` for an invalid one).
    pub fn of(cx: &SpanContext) -> Option<Trace> {
        if !cx.is_valid() {
            return None;
        }
        let parent = format!(
            "00-{}-{}-{:02x}",
            cx.trace_id(),
            cx.span_id(),
            cx.trace_flags().to_u8()
        );
        let state = cx.trace_state().header();
        Trace::parse(&parent, Some(state.as_str()).filter(|s| !s.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_context_goes_to_a_span_context_and_back_unchanged() {
        let t = Trace::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("congo=t61rcWkgMzE"),
        )
        .unwrap();
        let cx = t.span_context().unwrap();
        assert!(cx.is_remote() && cx.is_sampled());
        assert_eq!(Trace::of(&cx), Some(t));
    }
}
