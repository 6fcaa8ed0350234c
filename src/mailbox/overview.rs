//! The operator's overview: where the mailbox stands now, and its throughput and deepest queues
//! lately.

use super::{now_ms, Mailbox};
use crate::auth::Caller;
use crate::error::MailboxError;
use crate::metrics::{DepthMinute, Minute};

/// Finished tasks are counted up to this many (more shows as "at least").
pub const FINISHED_COUNT_CAP: u64 = 100_000;

/// Lease ages that bound the stale-lease buckets: 1, 5 and 30 minutes.
pub const LEASE_AGE_BOUNDS_MS: [i64; 3] = [60_000, 300_000, 1_800_000];

/// The deepest queues the overview lists, and the sampler of their depth reads.
pub const DEEPEST_QUEUES: usize = 20;

/// The deepest queues of the moment whose depth over time the overview shows.
pub const CHARTED_QUEUES: usize = 5;

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
    /// The queued tasks of the [`CHARTED_QUEUES`] deepest queues (the first of `depth`) per
    /// minute, as this instance sampled them, oldest first.
    pub depth_over_time: Vec<DepthMinute>,
    pub oldest_queued_age_ms: Option<u64>,
    /// In-flight leases by age since their last heartbeat: under 1 minute, 1–5, 5–30, 30 and more.
    pub lease_ages: [u64; 4],
    /// Sends, leases, answers and errors per minute on this instance, oldest first.
    pub throughput: Vec<Minute>,
    pub at_ms: u64,
}

impl Mailbox {
    /// The overview; operators only. It records the current minute's throughput and depth.
    pub async fn overview(&self, caller: &Caller) -> Result<Overview, MailboxError> {
        caller.require_operator()?;
        let now = now_ms();
        let count = |n: i64| n.max(0) as u64;
        let queued = count(self.store.count_in_state("queued").await?);
        let in_flight = count(self.store.count_in_state("in_flight").await?);
        let result_pending = count(self.store.count_in_state("result_pending").await?);
        let cap = (FINISHED_COUNT_CAP as i64).saturating_add(1);
        let finished = count(self.store.count_finished(cap).await?);
        let bounds = LEASE_AGE_BOUNDS_MS.map(|age| now.saturating_sub(age));
        let (oldest_queued, _) = self.store.oldest().await?;
        let lease_ages = self.store.lease_ages(bounds).await?.map(count);
        let minute = this_minute();
        let depth = self.depth_in(minute).await?;
        self.metrics
            .throughput
            .sample(self.metrics.throughput_counts(), minute);
        let charted: Vec<String> = depth
            .iter()
            .take(CHARTED_QUEUES)
            .map(|(r, _)| r.clone())
            .collect();
        Ok(Overview {
            queued,
            in_flight,
            result_pending,
            finished,
            depth_over_time: self.metrics.depths.minutes(minute, &charted),
            depth,
            oldest_queued_age_ms: oldest_queued.map(|at| count(now.saturating_sub(at))),
            lease_ages,
            throughput: self.metrics.throughput.minutes(minute),
            at_ms: count(now),
        })
    }

    /// Reads the [`DEEPEST_QUEUES`] deepest queues and records them as this minute's depth,
    /// so that the overview's chart has a point each minute whoever looks (`server.rs`).
    pub async fn sample_depth(&self) -> Result<(), MailboxError> {
        self.depth_in(this_minute()).await.map(drop)
    }

    /// The [`DEEPEST_QUEUES`] deepest queues, recorded as the depth of minute `minute`.
    async fn depth_in(&self, minute: u64) -> Result<Vec<(String, u64)>, MailboxError> {
        let deepest: Vec<(String, u64)> = self
            .store
            .depth_by_recipient(DEEPEST_QUEUES as i64)
            .await?
            .into_iter()
            .map(|(r, n)| (r, n.max(0) as u64))
            .collect();
        let every_queue = deepest.len() < DEEPEST_QUEUES;
        self.metrics
            .depths
            .sample(minute, deepest.clone(), every_queue);
        Ok(deepest)
    }
}

/// The epoch minute now.
pub fn this_minute() -> u64 {
    now_ms().max(0) as u64 / 60_000
}
