//! What PostgreSQL's group commit reports at `/metrics`, under the names it always had: the
//! lane's counters, counted as batches run (atomics, no lock, no allocation), and the gauges of
//! its queue, read at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::metrics::{Reading, BATCH_KINDS};

/// The lane's counters.
#[derive(Default)]
pub(crate) struct LaneCounters {
    /// Batches run (one transaction each, any mix of kinds).
    pub transactions: AtomicU64,
    /// Per [`BATCH_KINDS`]: batches that carried the kind.
    pub batches: [AtomicU64; 4],
    /// Per [`BATCH_KINDS`]: the requests of the kind they carried.
    pub requests: [AtomicU64; 4],
}

fn by_kind(kind: &str) -> String {
    format!("{{kind=\"{kind}\"}}")
}

fn count(c: &AtomicU64) -> f64 {
    c.load(Ordering::Relaxed) as f64
}

/// The lane's gauges (`waiting`: per kind, requests waiting for the next batch and polls
/// parked) and its counters.
pub(super) fn lane_metrics(
    waiting: [(&'static str, usize, usize); 4],
    counters: &LaneCounters,
    out: &mut Vec<Reading>,
) {
    for (kind, waiting, _) in waiting {
        out.push(Reading::gauge(
            "a2a_pg_batch_waiting",
            "PostgreSQL group commit: requests waiting for the next batch, by operation.",
            by_kind(kind),
            waiting as f64,
        ));
    }
    for (kind, _, parked) in waiting {
        out.push(Reading::gauge(
            "a2a_pg_parked_polls",
            "PostgreSQL group commit: long-polls whose claim or drain waits parked for the batch that queues their task or stores their result (not counting those riding in the running batch).",
            by_kind(kind),
            parked as f64,
        ));
    }
    out.push(Reading::counter(
        "a2a_pg_batch_transactions_total",
        "PostgreSQL group commit: batches run, one transaction each, whatever operations they carried.",
        String::new(),
        count(&counters.transactions),
    ));
    for (kind, c) in BATCH_KINDS.iter().zip(&counters.batches) {
        out.push(Reading::counter(
            "a2a_pg_batches_total",
            "PostgreSQL group commit: batches that carried this operation (a batch carries any mix of operations).",
            by_kind(kind),
            count(c),
        ));
    }
    for (kind, c) in BATCH_KINDS.iter().zip(&counters.requests) {
        out.push(Reading::counter(
            "a2a_pg_batched_requests_total",
            "PostgreSQL group commit: requests carried by those batches, by operation.",
            by_kind(kind),
            count(c),
        ));
    }
}
