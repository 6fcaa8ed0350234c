//! The bounded, opt-in retry gate (docs/contract.md#retry-gate): its policy, its rules and its report. The scan that
//! applies them, and the scheduler tick's coalescing, are in `scan.rs`.

mod preview;
mod scan;

use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::{DuplicateSafety, TaskState, Validate};
use crate::error::MailboxError;
use crate::store::TaskRow;

pub use a2a_mailbox_types::{Requeued, RetryPolicy, RetryReport, SkipReason, Skipped};

impl Validate for RetryPolicy {
    fn validate(&self) -> Result<(), MailboxError> {
        if self.scan_limit == 0 || self.scan_limit > 1000 {
            return Err(MailboxError::invalid("scan_limit must be within 1..=1000"));
        }
        if self.min_lease_age_ms > crate::domain::MAX_MS {
            return Err(MailboxError::invalid("min_lease_age_ms is out of range"));
        }
        Ok(())
    }
}

/// A scan's report before it requeued or skipped anything: `considered` tasks under `policy`.
fn fresh_report(policy: &RetryPolicy, considered: usize) -> RetryReport {
    RetryReport {
        policy: policy.clone(),
        considered: considered as u32,
        requeued: vec![],
        skipped: vec![],
        coalesced: false,
    }
}

/// What the gate knows of one in-flight task.
pub struct Candidate<'a> {
    pub in_flight: bool,
    pub lease_id: Option<&'a str>,
    /// Time since the last heartbeat.
    pub lease_age_ms: i64,
    pub idempotency_key: Option<&'a str>,
    pub duplicate_safety: Option<&'a str>,
    pub attempt: u32,
}

/// Whether the caller's `a2a.repair.requeue` grant admits requeueing this task's lease: the
/// one rule of the gate that needs the caller.
pub(crate) fn scope_admits(caller: &Caller, row: &TaskRow, lease_id: &str) -> bool {
    let ctx = ScopeCtx {
        peer: Some(&row.recipient),
        task_id: Some(row.id.clone()),
        lease_id: Some(lease_id.to_owned()),
        duplicate_risk: Some("idempotent"),
    };
    caller.check("a2a.repair.requeue", &ctx) == CapCheck::Passed
}

impl Candidate<'_> {
    /// What the gate knows of a task row, `now`.
    pub(crate) fn of(row: &TaskRow, now: i64) -> Candidate<'_> {
        Candidate {
            in_flight: row.state() == TaskState::InFlight,
            lease_id: row.lease_id.as_deref(),
            lease_age_ms: now.saturating_sub(row.heartbeat_at_ms.unwrap_or(now)),
            idempotency_key: row.idem_key.as_deref(),
            duplicate_safety: row.duplicate_safety.as_deref(),
            attempt: row.attempt as u32,
        }
    }
}

/// The gate's rules over a policy.
pub trait Gate {
    /// The gate's rules, in the contract's order, except the capability scope (which needs the
    /// caller): `Ok` when the task may be requeued, else the first failing rule (and the lease
    /// age for `lease_too_young`). Also used by the CLI to say what a dry run would do.
    fn verdict(&self, c: &Candidate, requeued_so_far: u32)
        -> Result<(), (SkipReason, Option<u64>)>;
}

impl Gate for RetryPolicy {
    fn verdict(
        &self,
        c: &Candidate,
        requeued_so_far: u32,
    ) -> Result<(), (SkipReason, Option<u64>)> {
        if !self.enabled {
            return Err((SkipReason::Disabled, None));
        }
        if !c.in_flight {
            return Err((SkipReason::NotInFlight, None));
        }
        if c.lease_id.is_none() {
            return Err((SkipReason::MissingLease, None));
        }
        if c.lease_age_ms < self.min_lease_age_ms as i64 {
            return Err((
                SkipReason::LeaseTooYoung,
                Some(c.lease_age_ms.max(0) as u64),
            ));
        }
        if c.idempotency_key.is_none_or(|k| k.trim().is_empty()) {
            return Err((SkipReason::MissingIdempotency, None));
        }
        if c.duplicate_safety != Some(DuplicateSafety::Idempotent.as_str()) {
            return Err((SkipReason::UnsafeDuplicateSafety, None));
        }
        if c.attempt >= self.max_attempts {
            return Err((SkipReason::MaxAttemptsReached, None));
        }
        if requeued_so_far >= self.max_requeues {
            return Err((SkipReason::LimitReached, None));
        }
        Ok(())
    }
}

/// Who runs a scan: an operator over HTTP or the scheduler tick.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    Manual,
    Scheduler,
}
