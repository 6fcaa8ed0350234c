//! How long to wait between two tries of one logical call.

use std::time::Duration;

/// Capped exponential backoff with jitter, for retriable errors (503, 409
/// `idempotency_in_flight`, a refused or broken connection; for leases and drains, a narrower
/// set: see [the crate's retries](crate#retries)).
///
/// Try `n` (from 0) waits a random time between half and all of `initial * 2^n`, never more
/// than `max`, and never less than the mailbox's `Retry-After` (itself capped by `max`).
///
/// ```
/// use std::time::Duration;
/// use a2a_mailbox_client::Backoff;
///
/// let patient = Backoff { retries: 10, initial: Duration::from_millis(50), max: Duration::from_secs(2) };
/// assert!(Backoff::none().retries == 0 && patient.retries == 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Retries after the first try; 0 never retries.
    pub retries: u32,
    /// The first wait (before jitter).
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    /// 6 retries, from 100 ms up to 5 s: about 15 s in all before giving up.
    fn default() -> Self {
        Backoff {
            retries: 6,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// Never retry: every error is returned at once.
    pub fn none() -> Backoff {
        Backoff {
            retries: 0,
            ..Backoff::default()
        }
    }

    /// The wait before retry number `attempt` (from 0).
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let full = self
            .initial
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.max);
        let jittered = full / 2 + full.mul_f64(random_fraction() / 2.0);
        jittered.max(retry_after.unwrap_or_default().min(self.max))
    }
}

/// A number in `[0, 1)` from the random bits of a UUIDv4.
fn random_fraction() -> f64 {
    let (_, low) = uuid::Uuid::new_v4().as_u64_pair();
    // The low half carries two fixed variant bits at its top; the other 62 are random.
    (low & ((1 << 62) - 1)) as f64 / (1u64 << 62) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_are_capped_and_respect_retry_after() {
        let b = Backoff {
            retries: 5,
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1000),
        };
        for _ in 0..100 {
            let d0 = b.delay(0, None);
            assert!(d0 >= Duration::from_millis(50) && d0 <= Duration::from_millis(100));
            let d3 = b.delay(3, None);
            assert!(d3 >= Duration::from_millis(400) && d3 <= Duration::from_millis(800));
            assert!(b.delay(40, None) <= Duration::from_millis(1000));
            assert_eq!(
                b.delay(0, Some(Duration::from_secs(60))),
                Duration::from_millis(1000)
            );
        }
    }
}
