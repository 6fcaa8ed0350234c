//! Readiness (`/readyz`): whether the database answers and a write commits, learnt by at most one
//! check per [`READINESS_INTERVAL`] however many callers ask, so that a flood of anonymous probes
//! is not a flood of commits (nor, on PostgreSQL, of pool connections).

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::error::MailboxError;

/// How long the outcome of a readiness check is answered before a caller checks again: a fault
/// shows within this much (plus the check's own time), and so does its end.
const READINESS_INTERVAL: Duration = Duration::from_secs(1);

/// The outcome of the last readiness check and when it ended. The lock is held through a check,
/// so callers that arrive meanwhile wait for its outcome instead of checking too.
#[derive(Default)]
pub(super) struct Readiness {
    last: Mutex<Option<(Instant, Result<(), MailboxError>)>>,
}

impl Readiness {
    /// The outcome of the last check while it is younger than [`READINESS_INTERVAL`]; else this
    /// caller runs `check`, and callers that arrive meanwhile share its outcome. Failures are
    /// kept as long as successes, so a database in trouble is not asked more often than a
    /// healthy one.
    pub(super) async fn check(
        &self,
        check: impl Future<Output = Result<(), MailboxError>>,
    ) -> Result<(), MailboxError> {
        let mut last = self.last.lock().await;
        if let Some((at, outcome)) = last.as_ref() {
            if at.elapsed() < READINESS_INTERVAL {
                return outcome.clone();
            }
        }
        let outcome = check.await;
        *last = Some((Instant::now(), outcome.clone()));
        outcome
    }
}
