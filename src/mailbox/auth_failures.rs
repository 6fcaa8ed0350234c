//! Refused tokens (docs/contract.md#audit): a failed authentication is not a request from anyone and never
//! costs a database write of its own. Failures are counted in memory per client address and
//! minute; [`flush`] writes each (address, minute) as ONE `authentication_failed` row, issuer
//! `anonymous`, body `{address, count, reasons}`: the first failure of the minute writes it
//! promptly, later ones update its counts, every second at most. Memory stays bounded: an entry
//! is dropped once written and its minute over, and past [`MAX_ADDRESSES`] a new address is
//! counted under [`OVERFLOW`]. Past `auth_failures_per_minute` refusals from one address in a
//! minute, each further refusal is answered [`SLOW_DOWN`] late: a flood then costs the server a
//! timer per request instead of its CPU, and authenticated callers keep their latency.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::{now_ms, Mailbox};
use crate::auth::AuthReason;

/// The audit slug, and the issuer of its rows.
pub use super::audit::kind::AUTHENTICATION_FAILED;
pub const ANONYMOUS: &str = "anonymous";
/// Addresses counted on their own at one time; any further one counts under [`OVERFLOW`].
pub const MAX_ADDRESSES: usize = 1024;
pub const OVERFLOW: &str = "other";
/// The address of a client over a Unix socket (it has no IP).
pub const UNIX: &str = "unix";
const MINUTE_MS: i64 = 60_000;
/// How often counts are written while failures keep coming.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How late a refusal past the address's budget is answered.
pub const SLOW_DOWN: Duration = Duration::from_millis(100);
/// The shortest gap between two writes, however many new addresses fail meanwhile.
const MIN_GAP: Duration = Duration::from_millis(100);

/// The failures of one address in one minute.
#[derive(Default)]
struct Entry {
    first_ms: i64,
    count: u64,
    reasons: BTreeMap<&'static str, u64>,
    /// The audit row written for it, once written.
    row: Option<i64>,
    /// `count` as last written.
    written: u64,
}

/// Failures counted since they were last written, by (address, minute).
#[derive(Default)]
pub struct AuthFailures {
    entries: Mutex<HashMap<(String, i64), Entry>>,
    /// Signalled by the first failure of an (address, minute): write its row now.
    fresh: Notify,
}

impl AuthFailures {
    /// Counts one refused token from `address` (an IP, or [`UNIX`]); answers how many that
    /// address has had this minute. No I/O.
    pub fn record(&self, address: &str, reason: AuthReason, now: i64) -> u64 {
        let minute = now.div_euclid(MINUTE_MS);
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let key = if map.contains_key(&(address.to_owned(), minute)) || map.len() < MAX_ADDRESSES {
            address
        } else {
            OVERFLOW
        };
        let e = map.entry((key.to_owned(), minute)).or_default();
        if e.count == 0 {
            e.first_ms = now;
            self.fresh.notify_one();
        }
        e.count = e.count.saturating_add(1);
        let n = e.reasons.entry(reason.slug()).or_default();
        *n = n.saturating_add(1);
        e.count
    }

    /// The entries whose counts changed since written: (address, minute, first, row, count, body).
    fn changed(&self) -> Vec<Pending> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, e)| e.count != e.written)
            .map(|((address, minute), e)| Pending {
                key: (address.clone(), *minute),
                first_ms: e.first_ms,
                row: e.row,
                count: e.count,
                body: json!({"address": address, "count": e.count, "reasons": e.reasons})
                    .to_string(),
            })
            .collect()
    }

    /// Notes what was written, and drops entries written whose minute is over.
    fn written(&self, done: &[(Pending, i64)], now: i64) {
        let minute = now.div_euclid(MINUTE_MS);
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        for (p, row) in done {
            if let Some(e) = map.get_mut(&p.key) {
                e.row = Some(*row);
                e.written = p.count;
            }
        }
        map.retain(|(_, m), e| *m >= minute || e.count != e.written);
    }

    /// How many (address, minute) entries are held (for tests).
    pub fn held(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

struct Pending {
    key: (String, i64),
    first_ms: i64,
    row: Option<i64>,
    count: u64,
    body: String,
}

impl Mailbox {
    /// A refused token from `address`: counted by reason, and in the audit feed at the next
    /// flush. Costs no database write of its own. Answers how long to hold the refusal back:
    /// [`SLOW_DOWN`] once the address is past its budget for the minute.
    pub fn auth_failed(&self, address: &str, reason: AuthReason) -> Option<Duration> {
        if let Some(counter) = self.metrics.auth_failures.get(reason as usize) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let count = self.auth_failures.record(address, reason, now_ms());
        let budget = self.cfg.auth_failures_per_minute;
        (budget > 0 && count > budget).then_some(SLOW_DOWN)
    }

    /// Writes the counts that changed (all in one transaction); answers how many rows it wrote.
    pub async fn flush_auth_failures(&self) -> Result<usize, crate::error::MailboxError> {
        let pending = self.auth_failures.changed();
        if pending.is_empty() {
            self.auth_failures.written(&[], now_ms());
            return Ok(0);
        }
        let done = self
            .store
            .transact(Box::new(move |tx| {
                Box::pin(async move {
                    let mut done = Vec::with_capacity(pending.len());
                    for p in pending {
                        let row = tx
                            .upsert_audit(
                                p.row,
                                p.first_ms,
                                ANONYMOUS,
                                AUTHENTICATION_FAILED,
                                &p.body,
                            )
                            .await?;
                        done.push((p, row));
                    }
                    Ok(done)
                })
            }))
            .await?;
        self.auth_failures.written(&done, now_ms());
        Ok(done.len())
    }
}

/// Writes refused tokens' counts for as long as the server runs: promptly after the first
/// failure of an (address, minute), and every second while counts change. A write that fails
/// keeps its counts for the next one.
pub async fn flush(mailbox: Mailbox) {
    loop {
        let _ = tokio::time::timeout(FLUSH_EVERY, mailbox.auth_failures.fresh.notified()).await;
        if let Err(e) = mailbox.flush_auth_failures().await {
            tracing::warn!(error = %e, "could not write the audit rows of refused tokens");
        }
        tokio::time::sleep(MIN_GAP).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_past_the_cap_count_as_one_and_written_minutes_are_dropped() {
        let f = AuthFailures::default();
        let t = 10 * MINUTE_MS;
        for i in 0..MAX_ADDRESSES + 50 {
            f.record(
                &format!("10.0.{}.{}", i / 256, i % 256),
                AuthReason::Expired,
                t,
            );
        }
        f.record("10.0.0.0", AuthReason::Missing, t + 1);
        assert_eq!(f.held(), MAX_ADDRESSES + 1, "the cap, plus `other`");
        let pending = f.changed();
        let other = pending.iter().find(|p| p.key.0 == OVERFLOW).unwrap();
        assert_eq!(other.count, 50);
        let first = pending.iter().find(|p| p.key.0 == "10.0.0.0").unwrap();
        assert_eq!(first.count, 2);
        let body: serde_json::Value = serde_json::from_str(&first.body).unwrap();
        assert_eq!(
            body,
            json!({"address": "10.0.0.0", "count": 2, "reasons": {"expired": 1, "missing": 1}})
        );
        let done: Vec<(Pending, i64)> = pending.into_iter().map(|p| (p, 1)).collect();
        f.written(&done, t + 2);
        assert_eq!(f.held(), MAX_ADDRESSES + 1, "the minute is not over");
        assert!(f.changed().is_empty());
        f.written(&[], t + MINUTE_MS);
        assert_eq!(f.held(), 0, "written, and their minute is over");
    }

    #[test]
    fn unwritten_counts_are_kept_past_their_minute() {
        let f = AuthFailures::default();
        f.record("::1", AuthReason::BadSignature, 0);
        f.written(&[], 5 * MINUTE_MS);
        assert_eq!(f.changed().len(), 1);
    }
}
