//! The bounded, opt-in retry gate (§7) and the scheduler tick that runs it.
//!
//! Scans never run at the same time: on PostgreSQL a scan holds a transaction-scoped advisory
//! lock, on SQLite the process-wide scan mutex (SQLite serves one node). A scan that finds
//! another one running does not wait for it and does nothing (`considered: 0`), so two timers
//! firing together (or two instances ticking together) act as one scan: no task is requeued
//! twice and `max_requeues` bounds them together.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use super::audit::{audit, RepairApplied};
use super::{now_ms, rule, Done, IdemRequest, Mailbox, Wake};
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::{DuplicateSafety, TaskState};
use crate::error::MailboxError;
use crate::store::{parse_uuid, Tx};

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
}

/// Who runs a scan: an operator over HTTP or the scheduler tick.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    Manual,
    Scheduler,
}

impl Mailbox {
    /// `POST /a2a/retry-stale` (manual) and `POST /a2a/scheduler/tick` (policy from config).
    pub async fn retry_stale(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        policy: &RetryPolicy,
        kind: ScanKind,
    ) -> Result<Done<RetryReport>, MailboxError> {
        caller.require("a2a.operator", &ScopeCtx::default())?;
        policy.validate()?;
        // Only one scan at a time in this process; others coalesce into it.
        let guard = self.scan_lock.try_lock();
        let busy = guard.is_err();
        let policy = policy.clone();
        self.write(
            caller,
            idem,
            rule!(|this, tx, c| this.retry_in(tx, &c, &policy, kind, busy)),
        )
        .await
    }

    async fn retry_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        policy: &RetryPolicy,
        kind: ScanKind,
        mut busy: bool,
    ) -> Result<Done<RetryReport>, MailboxError> {
        let now = now_ms();
        let mut cap_error = None;
        if policy.enabled
            && caller.check("a2a.repair.requeue", &ScopeCtx::default()) == CapCheck::Missing
        {
            cap_error = Some(MailboxError::new(
                crate::error::ErrorCode::CapabilityMissing,
                "the token lacks the capability a2a.repair.requeue, which an enabled retry scan needs",
            ));
        }
        if !busy {
            // Scans of other instances on the same database.
            busy = !tx.try_scan_lock().await?;
        }
        let report = if cap_error.is_some() || busy {
            RetryReport {
                policy: policy.clone(),
                considered: 0,
                requeued: vec![],
                skipped: vec![],
            }
        } else {
            self.scan(tx, caller, policy, now).await?
        };
        let error = match &cap_error {
            Some(e) => Some(e.to_string()),
            None if busy => Some("another retry scan was running; this one did nothing".to_owned()),
            None => None,
        };
        if kind == ScanKind::Scheduler {
            let mut by_reason = BTreeMap::new();
            for s in &report.skipped {
                *by_reason.entry(s.reason.as_str()).or_insert(0u32) += 1;
            }
            audit(
                tx,
                now,
                caller.sub.as_str(),
                "a2a_auto_retry_scheduler_scan",
                json!({
                    "enabled": policy.enabled,
                    "considered": report.considered,
                    "requeued": report.requeued.len(),
                    "skipped": report.skipped.len(),
                    "skipped_by_reason": by_reason,
                    "bounds": {
                        "min_lease_age_ms": policy.min_lease_age_ms,
                        "max_attempts": policy.max_attempts,
                        "max_requeues": policy.max_requeues,
                        "scan_limit": policy.scan_limit,
                    },
                    "error": error,
                }),
            )
            .await?;
        }
        if let Some(e) = cap_error {
            return Err(e);
        }
        let wake = if report.requeued.is_empty() {
            Wake::Nobody
        } else {
            Wake::Everyone
        };
        Ok(Done::changed(report).waking(wake))
    }

    async fn scan(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<RetryReport, MailboxError> {
        let rows = tx.in_flight_by_age(policy.scan_limit as i64).await?;
        let mut report = RetryReport {
            policy: policy.clone(),
            considered: rows.len() as u32,
            requeued: vec![],
            skipped: vec![],
        };
        for row in rows {
            let attempt = row.attempt as u32;
            let task_id = parse_uuid(&row.id)?;
            let age = now - row.heartbeat_at_ms.unwrap_or(now);
            let candidate = Candidate {
                in_flight: row.state() == TaskState::InFlight,
                lease_id: row.lease_id.as_deref(),
                lease_age_ms: age,
                idempotency_key: row.idem_key.as_deref(),
                duplicate_safety: row.duplicate_safety.as_deref(),
                attempt,
            };
            let verdict = policy.verdict(&candidate, report.requeued.len() as u32);
            let (lease_id, key) = match verdict {
                Ok(()) => (
                    row.lease_id.clone().unwrap_or_default(),
                    row.idem_key.clone().unwrap_or_default(),
                ),
                Err((reason, lease_age_ms)) => {
                    report.skipped.push(Skipped {
                        task_id,
                        reason,
                        attempt,
                        lease_age_ms,
                    });
                    continue;
                }
            };
            let mut skip = |reason: SkipReason| {
                report.skipped.push(Skipped {
                    task_id,
                    reason,
                    attempt,
                    lease_age_ms: None,
                });
            };
            let ctx = ScopeCtx {
                peer: Some(&row.recipient),
                task_id: Some(row.id.clone()),
                lease_id: Some(lease_id.clone()),
                duplicate_risk: Some("idempotent"),
            };
            if caller.check("a2a.repair.requeue", &ctx) != CapCheck::Passed {
                skip(SkipReason::CapabilityScopeMismatch);
                continue;
            }
            if !tx.requeue(&row.id, now).await? {
                skip(SkipReason::NotInFlight);
                continue;
            }
            let reason = format!(
                "retry gate: lease idle for {age} ms (min_lease_age_ms {})",
                policy.min_lease_age_ms
            );
            RepairApplied {
                task_id: &row.id,
                action: "auto_requeue",
                reason: &reason,
                lease_id: Some(lease_id.clone()),
                duplicate_risk: Some("idempotent"),
                attempt,
            }
            .record(tx, now, caller.sub.as_str())
            .await?;
            self.metrics.inc(&self.metrics.requeues_auto);
            report.requeued.push(Requeued {
                task_id,
                lease_id: parse_uuid(&lease_id)?,
                attempt,
                idempotency_key: key,
            });
        }
        Ok(report)
    }
}
