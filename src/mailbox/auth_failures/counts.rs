//! Refused tokens counted in memory, by client address and minute, until they are written: no
//! I/O here. At most [`MAX_ADDRESSES`] addresses at one time; any further one counts under
//! [`OVERFLOW`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::json;
use tokio::sync::Notify;

use crate::auth::AuthReason;

/// Addresses counted on their own at one time; any further one counts under [`OVERFLOW`].
pub const MAX_ADDRESSES: usize = 1024;
pub const OVERFLOW: &str = "other";
const MINUTE_MS: i64 = 60_000;

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
    pub(super) fresh: Notify,
}

impl AuthFailures {
    /// Counts one refused token from `address` (an IP, or [`UNIX`](super::UNIX)); answers how many that
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
    pub(super) fn changed(&self) -> Vec<UnwrittenCount> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, e)| e.count != e.written)
            .map(|((address, minute), e)| UnwrittenCount {
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
    pub(super) fn written(&self, done: &[(UnwrittenCount, i64)], now: i64) {
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

/// An entry to write: its audit row, if written before, and what the row says now.
pub(super) struct UnwrittenCount {
    key: (String, i64),
    pub first_ms: i64,
    pub row: Option<i64>,
    count: u64,
    pub body: String,
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
        let done: Vec<(UnwrittenCount, i64)> = pending.into_iter().map(|p| (p, 1)).collect();
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
