//! The operator's overview: where the mailbox stands now, and its throughput lately.

use super::{now_ms, Mailbox};
use crate::auth::Caller;
use crate::error::MailboxError;
use crate::metrics::Minute;

/// Finished tasks are counted up to this many (more shows as "at least").
pub const FINISHED_COUNT_CAP: u64 = 100_000;

/// Lease ages that bound the stale-lease buckets: 1, 5 and 30 minutes.
pub const LEASE_AGE_BOUNDS_MS: [i64; 3] = [60_000, 300_000, 1_800_000];

/// The overview of the mailbox.
#[derive(Clone, Debug, Default)]
pub struct Overview {
    pub queued: u64,
    pub in_flight: u64,
    pub result_pending: u64,
    /// Resolved or canceled, kept until compaction: counted up to [`FINISHED_COUNT_CAP`], and
    /// one more when there are more.
    pub finished: u64,
    /// The deepest queues: recipient and queued tasks.
    pub depth: Vec<(String, u64)>,
    pub oldest_queued_age_ms: Option<u64>,
    /// In-flight leases by age since their last heartbeat: under 1 minute, 1–5, 5–30, 30 and more.
    pub lease_ages: [u64; 4],
    /// Sends, leases and results per minute on this instance, oldest first.
    pub throughput: Vec<Minute>,
    pub at_ms: u64,
}

impl Mailbox {
    /// The overview; operators only.
    pub async fn overview(&self, caller: &Caller) -> Result<Overview, MailboxError> {
        caller.require_operator()?;
        let now = now_ms();
        let count = |n: i64| n.max(0) as u64;
        let queued = count(self.store.count_in_state("queued").await?);
        let in_flight = count(self.store.count_in_state("in_flight").await?);
        let result_pending = count(self.store.count_in_state("result_pending").await?);
        let cap = FINISHED_COUNT_CAP as i64 + 1;
        let finished = count(self.store.count_finished(cap).await?);
        let bounds = LEASE_AGE_BOUNDS_MS.map(|age| now - age);
        let (oldest_queued, _) = self.store.oldest().await?;
        let depth = self.store.depth_by_recipient(20).await?;
        self.metrics.throughput.sample(
            self.metrics.throughput_counts(),
            (now.max(0) as u64) / 60_000,
        );
        Ok(Overview {
            queued,
            in_flight,
            result_pending,
            finished,
            depth: depth.into_iter().map(|(r, n)| (r, count(n))).collect(),
            oldest_queued_age_ms: oldest_queued.map(|at| count(now - at)),
            lease_ages: self.store.lease_ages(bounds).await?.map(count),
            throughput: self
                .metrics
                .throughput
                .minutes((now.max(0) as u64) / 60_000),
            at_ms: count(now),
        })
    }
}
