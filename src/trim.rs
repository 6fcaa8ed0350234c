//! Giving memory back to the system once a burst of parked requests is over.
//!
//! Thousands of parked requests hold a few tens of kilobytes each (mostly the HTTP layer's
//! buffers and request heads). glibc's malloc keeps what they free in its arenas for reuse, so
//! without help the process would stay at its peak long after the burst. While the number of
//! parked requests stays near its peak nothing is done; once it has fallen to a quarter of a
//! peak of at least [`BURST`], the free memory of every arena is handed back (`malloc_trim`),
//! every [`EVERY`] for [`TRIMS`] rounds, as the burst's connections close.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;

/// The fewest parked requests worth trimming after.
const BURST: u64 = 256;
/// How often the number of parked requests is looked at.
const EVERY: Duration = Duration::from_secs(2);
/// Rounds of trimming after a burst (its connections close over a few seconds).
const TRIMS: u32 = 5;

/// Watches the number of parked requests and trims after each burst.
pub async fn after_bursts(metrics: Arc<Metrics>) {
    let mut peak = 0;
    let mut trims = 0;
    let mut every = tokio::time::interval(EVERY);
    loop {
        every.tick().await;
        let now = metrics.waiters.load(Ordering::Relaxed);
        peak = peak.max(now);
        if peak >= BURST && now <= peak / 4 {
            peak = now;
            trims = TRIMS;
        }
        if trims > 0 {
            trims = trims.saturating_sub(1);
            let _ = tokio::task::spawn_blocking(give_back).await;
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn give_back() {
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back() {}
