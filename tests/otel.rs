//! Trace export, end to end: the service exports its spans over OTLP/HTTP to a collector inside
//! the test (`common/otlp.rs`), the test process exports its own (the sender's span, the typed
//! client's worker span) to the same collector, and one trace id joins them. Every test on
//! SQLite and on PostgreSQL.

#[allow(dead_code)]
#[macro_use]
mod common;

mod otel {
    mod cli;
    mod flow;
    mod surfaces;

    use std::sync::OnceLock;

    use a2a_mailbox::telemetry::Export;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    use crate::common::otlp::{collector, Collector};
    use crate::common::AppConfig;

    static EXPORT: OnceLock<Export> = OnceLock::new();

    /// The collector, with this test process's spans exported to it (once per process).
    pub fn traced() -> &'static Collector {
        let c = collector();
        EXPORT.get_or_init(|| {
            let export = Export::start(Some(&c.url)).expect("the test process's export");
            tracing_subscriber::registry().with(export.layer()).init();
            export
        });
        c
    }

    /// Sends what the test process's spans that ended to the collector.
    pub fn flush() {
        if let Some(export) = EXPORT.get() {
            export.flush();
        }
    }

    /// A service exporting its spans to the collector every 100 ms.
    pub fn exporting() -> AppConfig {
        AppConfig::default()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector().url)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
    }
}
