//! The wall clock, in the contract's unit: milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How far off a deadline too far to compute is put instead: about 30 years, as Tokio's own
/// timers put one.
const FAR: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);

/// The instant `wait` from now, for a request's deadline. Every configured wait is far below
/// what an instant can hold (docs/configuration.md), and should one not be, the deadline is
/// [`FAR`] off rather than a panic.
pub fn deadline_after(wait: std::time::Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(wait)
        .or_else(|| now.checked_add(FAR))
        .unwrap_or(now)
}
