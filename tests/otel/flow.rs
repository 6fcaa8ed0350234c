//! One trace from the agent that asked to the agent that answered: a sender's span sends through
//! the typed client, a worker of the typed client leases and answers, the sender drains, and the
//! collector holds one trace id across the sender's span, the mailbox's spans and (by link) the
//! worker's span.

use std::time::Duration;

use a2a_mailbox_client::{Client, NewTask, Reply, Worker};
use opentelemetry::trace::TraceContextExt;
use serde_json::json;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{exporting, flush, traced};
use crate::common::otlp::Span;
use crate::common::TestApp;

/// The kinds OTLP numbers.
const SERVER: i32 = 2;
const CLIENT: i32 = 3;
const PRODUCER: i32 = 4;
const CONSUMER: i32 = 5;

/// The mailbox's span of `operation` about task `id`.
pub fn mailbox_span(spans: &[Span], operation: &str, id: &str) -> Option<Span> {
    spans
        .iter()
        .find(|s| {
            s.attr("messaging.operation.type") == Some(operation)
                && s.attr("messaging.message.id") == Some(id)
                && s.attr("messaging.system") == Some("a2a_mailbox")
                && s.kind != CONSUMER
        })
        .cloned()
}

both_engines!(
    one_trace_joins_sender_mailbox_and_worker,
    config = exporting
);
async fn one_trace_joins_sender_mailbox_and_worker(app: TestApp) {
    let collector = traced();
    let alice = Client::new(&app.address, app.alice()).unwrap();
    let bob = Client::new(&app.address, app.token("bob", json!(["a2a.respond.alice"]))).unwrap();

    // The sender's span: the client hands its context on with the task.
    let ask = tracing::info_span!("ask bob for a summary");
    let sent = alice
        .send(NewTask::new("bob", "summarise the Q3 report"))
        .instrument(ask.clone())
        .await
        .unwrap();
    let asked = ask.context().span().span_context().clone();
    drop(ask);
    let (trace_id, ask_id) = (asked.trace_id().to_string(), asked.span_id().to_string());
    let id = sent.task_id.to_string();

    // The worker of the typed client: a consumer span per task, linked to the sender's.
    let worker = Worker::new(bob).poll_wait(Duration::from_secs(10));
    worker
        .run_once(&|_leased| async { Reply::text("revenue up 4%") })
        .await
        .unwrap()
        .expect("bob leased the task");
    let drained = alice
        .next_result(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("alice drained the result");
    flush();

    let send = collector
        .until("the mailbox's send span", |s| mailbox_span(s, "send", &id))
        .await;
    assert_eq!(send.trace_id, trace_id, "the send joins the sender's trace");
    assert_eq!(send.parent_span_id, ask_id, "a child of the sender's span");
    assert_eq!(send.kind, PRODUCER);
    assert_eq!(send.attr("messaging.destination.name"), Some("bob"));
    assert_eq!(send.name, "send bob");
    let http = collector
        .until("the HTTP span of the send", |spans| {
            spans
                .iter()
                .find(|s| s.kind == SERVER && s.name == "POST /a2a/tasks" && s.trace_id == trace_id)
                .cloned()
        })
        .await;
    assert_eq!(
        http.parent_span_id, ask_id,
        "the request's span joins it too"
    );

    let lease = collector
        .until("the mailbox's lease span", |s| {
            mailbox_span(s, "receive", &id)
        })
        .await;
    assert!(
        lease.links_to(&trace_id),
        "the lease links to the sender's trace: {lease:?}"
    );
    assert_eq!((lease.kind, lease.name.as_str()), (CLIENT, "lease bob"));

    let process = collector
        .until("the worker's span", |spans| {
            spans
                .iter()
                .find(|s| s.kind == CONSUMER && s.attr("messaging.message.id") == Some(&id))
                .cloned()
        })
        .await;
    assert!(
        process.links_to(&trace_id),
        "the worker's span links to the sender's trace"
    );
    assert_eq!(process.name, "process bob");

    let settle = collector
        .until("the mailbox's result span", |s| {
            mailbox_span(s, "settle", &id)
        })
        .await;
    assert!(
        settle.links_to(&trace_id),
        "the result links to the task's trace"
    );
    assert_eq!(
        settle.trace_id, process.trace_id,
        "and continues the worker's"
    );
    assert_eq!(settle.parent_span_id, process.span_id);

    let back = drained
        .trace
        .expect("the drained result carries the worker's context");
    assert_eq!(back.trace_id(), process.trace_id);
    let drain = collector
        .until("the mailbox's drain span", |spans| {
            spans
                .iter()
                .find(|s| s.name == "drain alice" && s.attr("messaging.message.id") == Some(&id))
                .cloned()
        })
        .await;
    assert!(
        drain.links_to(&process.trace_id),
        "the drain links to the result's trace"
    );
}

/// A collector that takes connections and never answers.
fn black_hole() -> String {
    static HOLE: std::sync::OnceLock<std::net::TcpListener> = std::sync::OnceLock::new();
    let l = HOLE.get_or_init(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    format!("http://{}", l.local_addr().unwrap())
}

/// A service exporting to a collector that never answers, through a queue of 2 spans.
fn stalled() -> crate::common::AppConfig {
    crate::common::AppConfig::default()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &black_hole())
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "2")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
}

both_engines!(
    a_collector_that_never_answers_costs_requests_nothing,
    config = stalled
);
async fn a_collector_that_never_answers_costs_requests_nothing(app: TestApp) {
    let alice = Client::new(&app.address, app.alice()).unwrap();
    for i in 0..30 {
        alice
            .send(NewTask::new("bob", format!("task {i}")))
            .await
            .expect("every send is answered while export is stuck");
    }
    app.until_metric_at_least("a2a_otel_spans_total{outcome=\"dropped\"}", 1.0)
        .await;
    assert_eq!(
        app.metric("a2a_otel_spans_total{outcome=\"exported\"}")
            .await,
        0.0
    );
}
