//! The bounded, opt-in retry gate (§7): its policy, its rules and its report. The scan that
//! applies them, and the scheduler tick's coalescing, are in `scan.rs`.

mod preview;
mod scan;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::{DuplicateSafety, TaskState};
use crate::error::MailboxError;
use crate::store::TaskRow;

/// Bounds of one retry scan. `{}` means these defaults, and a dry run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
#[schema(as = A2AAutoRetryPolicy)]
pub struct RetryPolicy {
    /// Without `true` the scan changes nothing and skips every task as `disabled`.
    pub enabled: bool,
    /// Only leases whose last heartbeat is at least this old are stale.
    #[schema(maximum = 9223372036854775807_u64)]
    #[serde(deserialize_with = "crate::domain::integral::number")]
    pub min_lease_age_ms: u64,
    /// Tasks leased this many times already are left alone.
    #[schema(format = Int64, maximum = 4294967295_u32)]
    #[serde(deserialize_with = "crate::domain::integral::number")]
    pub max_attempts: u32,
    /// At most this many requeues per scan.
    #[schema(format = Int64, maximum = 4294967295_u32)]
    #[serde(deserialize_with = "crate::domain::integral::number")]
    pub max_requeues: u32,
    /// At most this many in-flight tasks are examined, oldest lease first (1..=1000).
    #[schema(format = Int64, minimum = 1, maximum = 1000)]
    #[serde(deserialize_with = "crate::domain::integral::number")]
    pub scan_limit: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            enabled: false,
            min_lease_age_ms: 300_000,
            max_attempts: 3,
            max_requeues: 1,
            scan_limit: 100,
        }
    }
}

impl RetryPolicy {
    pub fn validate(&self) -> Result<(), MailboxError> {
        if self.scan_limit == 0 || self.scan_limit > 1000 {
            return Err(MailboxError::invalid("scan_limit must be within 1..=1000"));
        }
        if self.min_lease_age_ms > crate::domain::MAX_MS {
            return Err(MailboxError::invalid("min_lease_age_ms is out of range"));
        }
        Ok(())
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
            lease_age_ms: now - row.heartbeat_at_ms.unwrap_or(now),
            idempotency_key: row.idem_key.as_deref(),
            duplicate_safety: row.duplicate_safety.as_deref(),
            attempt: row.attempt as u32,
        }
    }
}

impl RetryPolicy {
    /// The gate's rules, in the contract's order, except the capability scope (which needs the
    /// caller): `Ok` when the task may be requeued, else the first failing rule (and the lease
    /// age for `lease_too_young`). Also used by the CLI to say what a dry run would do.
    pub fn verdict(
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    Disabled,
    NotInFlight,
    MissingLease,
    LeaseTooYoung,
    MissingIdempotency,
    UnsafeDuplicateSafety,
    MaxAttemptsReached,
    LimitReached,
    CapabilityScopeMismatch,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Disabled => "disabled",
            SkipReason::NotInFlight => "not_in_flight",
            SkipReason::MissingLease => "missing_lease",
            SkipReason::LeaseTooYoung => "lease_too_young",
            SkipReason::MissingIdempotency => "missing_idempotency",
            SkipReason::UnsafeDuplicateSafety => "unsafe_duplicate_safety",
            SkipReason::MaxAttemptsReached => "max_attempts_reached",
            SkipReason::LimitReached => "limit_reached",
            SkipReason::CapabilityScopeMismatch => "capability_scope_mismatch",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Requeued {
    pub task_id: Uuid,
    /// The stale lease that was released.
    pub lease_id: Uuid,
    /// The attempt counter, kept; the next lease increments it.
    pub attempt: u32,
    pub idempotency_key: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Skipped {
    pub task_id: Uuid,
    pub reason: SkipReason,
    pub attempt: u32,
    /// Present for `lease_too_young`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_age_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = A2AAutoRetryReport)]
pub struct RetryReport {
    pub policy: RetryPolicy,
    pub considered: u32,
    pub requeued: Vec<Requeued>,
    pub skipped: Vec<Skipped>,
    /// `true` when this scan did nothing because it was coalesced with another one: a
    /// scheduler tick that started while another tick's scan ran, or less than
    /// `A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS` after the previous tick started (on
    /// any instance of the database); a manual scan that found another scan running.
    #[serde(default)]
    pub coalesced: bool,
}

/// Who runs a scan: an operator over HTTP or the scheduler tick.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    Manual,
    Scheduler,
}
