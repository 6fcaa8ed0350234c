//! What an enabled scan would do now, without doing it: the gate's own rules over the tasks a
//! scan would examine, for an operator deciding whether to run it.

use super::{
    fresh_report, scope_admits, Candidate, Gate, Requeued, RetryPolicy, RetryReport, SkipReason,
    Skipped,
};
use crate::auth::Caller;
use crate::domain::Validate;
use crate::error::MailboxError;
use crate::mailbox::{now_ms, Mailbox};
use crate::store::parse_uuid;

impl Mailbox {
    /// The report an enabled scan with `policy` would answer now (operators only); changes
    /// nothing and writes no audit row. `requeued` lists what the scan would requeue.
    pub async fn preview_retry(
        &self,
        caller: &Caller,
        policy: &RetryPolicy,
    ) -> Result<RetryReport, MailboxError> {
        caller.require_operator()?;
        policy.validate()?;
        let enabled = RetryPolicy {
            enabled: true,
            ..policy.clone()
        };
        let now = now_ms();
        let limit = policy.scan_limit as i64;
        let rows = self
            .store
            .snapshot_in_flight(None, limit, None, (None, None))
            .await?;
        let mut report = fresh_report(&enabled, rows.len());
        for row in &rows {
            let task_id = parse_uuid(&row.id)?;
            let c = Candidate::of(row, now);
            let skip = |reason, lease_age_ms| Skipped {
                task_id,
                reason,
                attempt: c.attempt,
                lease_age_ms,
            };
            match enabled.verdict(&c, report.requeued.len() as u32) {
                Err((reason, age)) => report.skipped.push(skip(reason, age)),
                Ok(()) => {
                    let lease = row.lease_id.clone().unwrap_or_default();
                    if !scope_admits(caller, row, &lease) {
                        report
                            .skipped
                            .push(skip(SkipReason::CapabilityScopeMismatch, None));
                        continue;
                    }
                    report.requeued.push(Requeued {
                        task_id,
                        lease_id: parse_uuid(&lease)?,
                        attempt: c.attempt,
                        idempotency_key: row.idem_key.clone().unwrap_or_default(),
                    });
                }
            }
        }
        Ok(report)
    }
}
