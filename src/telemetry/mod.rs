//! Trace export (docs/operations.md#tracing): the service's spans (each HTTP request's, and the
//! messaging spans of `spans.rs`) sent to an OpenTelemetry collector over OTLP/HTTP with
//! protobuf, configured by the standard `OTEL_*` variables. Off unless
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off, no span
//! of `spans.rs` is even made.

mod client;
mod processor;
pub mod spans;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter as _};
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use processor::Tally;
use processor::{Bounded, Sizes};

/// Whether this process exports its spans.
static ON: AtomicBool = AtomicBool::new(false);

/// What happened to the spans this process made.
pub static TALLY: Tally = Tally {
    exported: AtomicU64::new(0),
    dropped: AtomicU64::new(0),
    failed: AtomicU64::new(0),
};

/// Whether spans are exported: the messaging spans are made only then.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
const SERVICE: &str = "a2a-mailbox";

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn number(name: &str, default: u64) -> anyhow::Result<u64> {
    match var(name) {
        None => Ok(default),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("{name}={v:?}: expected a whole number above 0"),
        },
    }
}

/// Whether the environment asks for export, refusing settings this service cannot honour
/// rather than exporting somewhere other than where the operator thinks.
fn wanted() -> anyhow::Result<bool> {
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    match var("OTEL_TRACES_EXPORTER").as_deref() {
        None | Some("otlp") => {}
        Some("none") => return Ok(false),
        Some(other) => bail!(
            "OTEL_TRACES_EXPORTER={other:?}: this service exports traces only by OTLP (\"otlp\"), \
             or not at all (\"none\")"
        ),
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(p) = var(name).filter(|p| p != "http/protobuf") {
            bail!(
                "{name}={p:?}: this service speaks OTLP over HTTP with protobuf only \
                 (\"http/protobuf\", usually port 4318); gRPC and JSON are not built in"
            );
        }
    }
    Ok(var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some())
}

/// The sizes of the queue and the batches (`OTEL_BSP_*`, the SDK's defaults).
fn sizes() -> anyhow::Result<Sizes> {
    let queue = number("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?;
    let batch = number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.min(queue);
    let delay = number("OTEL_BSP_SCHEDULE_DELAY", 5000)?;
    Ok(Sizes {
        queue: usize::try_from(queue).unwrap_or(usize::MAX),
        batch: usize::try_from(batch).unwrap_or(usize::MAX),
        delay: Duration::from_millis(delay),
    })
}

/// Starts this process's logs to stderr (`RUST_LOG`, `info` by default) and, for a service
/// (`serve`) whose `OTEL_*` variables ask for it, the export of its spans: the export, to shut
/// down at the end. Spans at `info` and above are exported whatever `RUST_LOG` logs.
pub fn start(serve: bool) -> anyhow::Result<Option<Export>> {
    let export = if serve { Export::from_env()? } else { None };
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")));
    let exported = Targets::new().with_target("a2a_mailbox", tracing::Level::INFO);
    let spans = export.as_ref().map(|e| e.layer().with_filter(exported));
    tracing_subscriber::registry().with(logs).with(spans).init();
    Ok(export)
}

/// A running export: its spans go to the collector until [`Export::shutdown`].
pub struct Export {
    provider: SdkTracerProvider,
}

impl Export {
    /// The export the environment asks for, or `None` (not asked, or turned off).
    pub fn from_env() -> anyhow::Result<Option<Export>> {
        if !wanted()? {
            return Ok(None);
        }
        let export = Export::start(None)?;
        ON.store(true, Ordering::Relaxed);
        Ok(Some(export))
    }

    /// An export to `endpoint` (the collector's base URL; `None`: the one the `OTEL_*`
    /// variables name), with the rest of the settings from the environment.
    pub fn start(endpoint: Option<&str>) -> anyhow::Result<Export> {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client::Client::new().context("the trace exporter's HTTP client")?);
        if let Some(base) = endpoint {
            builder = builder.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let mut exporter = builder.build().context("the OTLP trace exporter")?;
        let named = var("OTEL_SERVICE_NAME").is_some()
            || var("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="));
        let mut resource = Resource::builder();
        if !named {
            resource = resource.with_service_name(SERVICE);
        }
        let resource = resource.build();
        exporter.set_resource(&resource);
        let processor =
            Bounded::start(exporter, sizes()?, &TALLY).context("the trace exporter's thread")?;
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        Ok(Export { provider })
    }

    /// The layer that turns this process's `tracing` spans into exported ones.
    pub fn layer<S>(&self) -> impl Layer<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(SERVICE))
            .with_threads(false)
    }

    /// Sends what is queued, waiting for it (up to 10 s).
    pub fn flush(&self) {
        let _ = self.provider.force_flush();
    }

    /// Sends what is queued and stops.
    pub fn shutdown(&self) {
        let _ = self.provider.shutdown();
    }
}
