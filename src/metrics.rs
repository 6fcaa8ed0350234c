//! Process-local counters and latency histograms, rendered in the Prometheus text format.
//! Queue gauges are read from the database at scrape time, and the storage engine adds its own
//! families ([`Reading`]; see `http/api/system.rs`, the `/metrics` route).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::auth::AuthReason;

mod depth;
mod throughput;
pub use depth::{DepthMinute, Depths};
pub use throughput::{Counts, Minute, Throughput, MINUTES};

/// Appends the identity provider's key-set fetches (`auth/jwks.rs`): those that succeeded and
/// those that failed.
pub fn render_jwks(out: &mut String, (ok, failed): (u64, u64)) {
    let name = "a2a_jwks_fetches_total";
    let _ = writeln!(
        out,
        "# HELP {name} Fetches of the identity provider's JWKS, by outcome.\n# TYPE {name} counter"
    );
    let _ = writeln!(out, "{name}{{outcome=\"ok\"}} {ok}");
    let _ = writeln!(out, "{name}{{outcome=\"error\"}} {failed}");
}

/// Appends what trace export did with the spans it was given (`telemetry`): exported, dropped
/// because its queue was full, or lost in a batch the collector did not take.
pub fn render_spans(out: &mut String, tally: &crate::telemetry::Tally) {
    let name = "a2a_otel_spans_total";
    let _ = writeln!(
        out,
        "# HELP {name} Spans given to trace export, by outcome.\n# TYPE {name} counter"
    );
    for (outcome, n) in [
        ("exported", &tally.exported),
        ("dropped", &tally.dropped),
        ("failed", &tally.failed),
    ] {
        let _ = writeln!(
            out,
            "{name}{{outcome=\"{outcome}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
}

/// Upper bounds (seconds) of the request latency buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
pub struct Metrics {
    pub tasks_sent: AtomicU64,
    pub leases: AtomicU64,
    /// Results stored (posted by recipients; not repairs or expiries).
    pub results_posted: AtomicU64,
    /// Of [`Metrics::results_posted`], those with status `error`.
    pub error_results: AtomicU64,
    /// Queued tasks resolved with an error because their deadline passed.
    pub deadlines_expired: AtomicU64,
    pub requeues_manual: AtomicU64,
    pub requeues_auto: AtomicU64,
    pub forced_errors: AtomicU64,
    pub cache_hits: AtomicU64,
    pub idempotency_replays: AtomicU64,
    /// Requests parked now, waiting for a task or a result (a gauge; see `mailbox/wakeups.rs`).
    pub waiters: AtomicU64,
    /// Parked requests woken by a commit (or handed what they waited for by it).
    pub wakeups: AtomicU64,
    /// Per [`BATCH_KINDS`]: long-polls whose claim or drain the store held, handed their task
    /// or result in the commit that queued or stored it.
    pub handoffs: [AtomicU64; 4],
    /// Requests whose handling panicked, answered 500 `internal` (`http/serve/panics.rs`).
    pub panics: AtomicU64,
    /// Refused tokens, per reason (`AuthReason as usize`).
    pub auth_failures: [AtomicU64; AuthReason::SLUGS.len()],
    latency: Mutex<BTreeMap<(String, String, u16), Histogram>>,
    /// The counters per minute, for the dashboard.
    pub throughput: Throughput,
    /// The deepest queues per minute, for the dashboard.
    pub depths: Depths,
}

/// The one-write paths an engine may combine into one commit (the `kind` label), in
/// [`Metrics::handoffs`] order; also the kinds' numbers in PostgreSQL's `a2a_step_many`.
pub const BATCH_KINDS: [&str; 4] = ["send", "claim", "result", "drain"];

/// What a family counts: a value now, or a total since the process started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    Gauge,
    Counter,
}

/// One sample read at scrape time (the queue gauges, the storage engine's own families),
/// rendered after its family's `# HELP` and `# TYPE` lines; a family's samples come together.
#[derive(Debug)]
pub struct Reading {
    pub name: &'static str,
    pub help: &'static str,
    pub of: MetricType,
    /// `{label="value"}`, or empty.
    pub labels: String,
    pub value: f64,
}

impl Reading {
    pub fn gauge(name: &'static str, help: &'static str, labels: String, value: f64) -> Reading {
        let of = MetricType::Gauge;
        Reading {
            name,
            help,
            of,
            labels,
            value,
        }
    }

    pub fn counter(name: &'static str, help: &'static str, labels: String, value: f64) -> Reading {
        let of = MetricType::Counter;
        Reading {
            name,
            help,
            of,
            labels,
            value,
        }
    }
}

/// Each kind's place in [`BATCH_KINDS`] and in the per-kind counters (checked by a unit test).
pub mod kind {
    pub const SEND: usize = 0;
    pub const CLAIM: usize = 1;
    pub const RESULT: usize = 2;
    pub const DRAIN: usize = 3;
}

impl Metrics {
    pub fn inc(&self, c: &AtomicU64) {
        self.add(c, 1);
    }

    pub fn add(&self, c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// A result posted by a recipient, an error one or not.
    pub fn result_posted(&self, error: bool) {
        self.inc(&self.results_posted);
        if error {
            self.inc(&self.error_results);
        }
    }

    /// Sends, leases, answers and errors counted so far, as [`Throughput::sample`] takes them.
    /// An answer is a result posted, an error forced by an operator or a deadline that passed;
    /// an error is any of them but a posted result whose status is not `error`.
    pub fn throughput_counts(&self) -> Counts {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let forced_or_expired =
            load(&self.forced_errors).saturating_add(load(&self.deadlines_expired));
        [
            load(&self.tasks_sent),
            load(&self.leases),
            load(&self.results_posted).saturating_add(forced_or_expired),
            load(&self.error_results).saturating_add(forced_or_expired),
        ]
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut map = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = map
            .entry((method.to_owned(), route.to_owned(), status))
            .or_default();
        for (count, b) in h.counts.iter_mut().zip(BUCKETS.iter()) {
            if seconds <= *b {
                *count = count.saturating_add(1);
            }
        }
        h.count = h.count.saturating_add(1);
        h.sum += seconds;
    }

    /// Renders the readings taken by the caller, then the counters and histograms.
    pub fn render(&self, readings: &[Reading]) -> String {
        let mut out = String::new();
        let mut names = std::collections::BTreeSet::new();
        for Reading {
            name,
            help,
            of,
            labels,
            value,
        } in readings
        {
            if names.insert(*name) {
                let of = match of {
                    MetricType::Gauge => "gauge",
                    MetricType::Counter => "counter",
                };
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {of}");
            }
            let _ = writeln!(out, "{name}{labels} {value}");
        }
        let name = "a2a_waiters";
        let _ = writeln!(
            out,
            "# HELP {name} Requests parked on this instance now whose first look found nothing, waiting for a task, a result or a change.\n# TYPE {name} gauge\n{name} {}",
            self.waiters.load(Ordering::Relaxed)
        );
        let counters: [(&str, &str, &AtomicU64); 10] = [
            (
                "a2a_tasks_sent_total",
                "Tasks queued by this instance.",
                &self.tasks_sent,
            ),
            (
                "a2a_leases_total",
                "Leases granted by this instance.",
                &self.leases,
            ),
            (
                "a2a_results_posted_total",
                "Results posted to this instance.",
                &self.results_posted,
            ),
            (
                "a2a_requeues_manual_total",
                "Manual repair requeues.",
                &self.requeues_manual,
            ),
            (
                "a2a_requeues_auto_total",
                "Requeues by the retry gate.",
                &self.requeues_auto,
            ),
            (
                "a2a_forced_errors_total",
                "Manual force_error repairs.",
                &self.forced_errors,
            ),
            (
                "a2a_result_cache_hits_total",
                "Sends answered from the result cache.",
                &self.cache_hits,
            ),
            (
                "a2a_idempotency_key_replays_total",
                "Requests answered from a stored Idempotency-Key response.",
                &self.idempotency_replays,
            ),
            (
                "a2a_wakeups_total",
                "Parked requests woken by a commit that concerned them (or handed what they waited for by it).",
                &self.wakeups,
            ),
            (
                "a2a_panics_total",
                "Requests whose handling panicked, each answered 500 internal with an X-Request-Id header naming it in the logs.",
                &self.panics,
            ),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let name = "a2a_handoffs_total";
        let _ = writeln!(
            out,
            "# HELP {name} Waiting long-polls answered in the commit that queued their task (claim) or stored their result (drain).\n# TYPE {name} counter"
        );
        for (kind, c) in BATCH_KINDS.iter().zip(&self.handoffs) {
            let n = c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {n}");
        }
        let name = "a2a_auth_failures_total";
        let _ = writeln!(
            out,
            "# HELP {name} Refused bearer tokens, by reason.\n# TYPE {name} counter"
        );
        for (reason, c) in AuthReason::SLUGS.iter().zip(&self.auth_failures) {
            let n = c.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {n}");
        }
        let name = "a2a_http_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} HTTP request latency by route.\n# TYPE {name} histogram"
        );
        let map = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, route, status), h) in map.iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            for (count, b) in h.counts.iter().zip(BUCKETS.iter()) {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {count}");
            }
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{kind, Metrics, Throughput, BATCH_KINDS, MINUTES};

    #[test]
    fn each_kind_index_names_its_kind() {
        let named = [
            (kind::SEND, "send"),
            (kind::CLAIM, "claim"),
            (kind::RESULT, "result"),
            (kind::DRAIN, "drain"),
        ];
        for (at, name) in named {
            assert_eq!(BATCH_KINDS[at], name);
        }
    }

    #[test]
    fn a_minute_counts_what_happened_since_the_previous_sample() {
        let metrics = Metrics::default();
        let t = Throughput::default();
        metrics.add(&metrics.tasks_sent, 1);
        t.sample(metrics.throughput_counts(), 100);
        metrics.add(&metrics.tasks_sent, 5);
        metrics.add(&metrics.leases, 2);
        t.sample(metrics.throughput_counts(), 101);
        metrics.result_posted(true);
        metrics.result_posted(false);
        metrics.inc(&metrics.forced_errors);
        metrics.inc(&metrics.deadlines_expired);
        t.sample(metrics.throughput_counts(), 101);
        let minutes = t.minutes(101);
        assert_eq!(minutes.len(), MINUTES);
        let last = minutes.last().unwrap();
        assert_eq!(
            (
                last.minute,
                last.sent,
                last.leased,
                last.answered,
                last.errors
            ),
            (101, 5, 2, 4, 3),
            "a posted error, a forced one and a deadline's are errors; a posted success is not"
        );
        assert_eq!(
            minutes[MINUTES - 2].sent,
            1,
            "the first sample counts from the start of the process"
        );
        assert_eq!(minutes[MINUTES - 3].sent, 0, "nothing before it");
    }
}
