//! The retry scan (docs/contract.md#retry-gate) and how scans and scheduler ticks coalesce.
//!
//! Scans never run at the same time: on PostgreSQL a scan holds a transaction-scoped advisory
//! lock, and within one process a scan holds the mailbox's scan mutex. A scan that finds another
//! one running does not wait for it and does nothing (`considered: 0`, `coalesced: true`).
//!
//! Every enabled scan (an enabled `retry-stale` call or a scheduler tick, mixed) is coalesced
//! across every instance on the database through one row (`scheduler_ticks`, see the store's
//! `claim_tick`): a scan runs only if it claims that row in its own transaction, that is when
//! the previous scan started at least the configured spacing before this one and had finished
//! before this one started. The claim commits with the scan, so ten scans fired at once on any
//! number of instances run one scan, and `max_requeues` bounds them together. Each requeue is
//! fenced by the lease the scan read (the store's `requeue`): a lease that changed meanwhile is
//! left alone.

use std::collections::BTreeMap;

use serde_json::json;

use super::{
    fresh_report, Candidate, Gate, Requeued, RetryPolicy, RetryReport, ScanKind, SkipReason,
    Skipped,
};
use crate::auth::{cap_error, Caller, CapCheck, ScopeCtx, OPERATOR};
use crate::domain::Validate;
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::audit::{
    audit, checks_audit, kind, EndedLease, RepairApplied, CAPABILITY_CHECK,
};
use crate::mailbox::Author;
use crate::mailbox::{now_ms, rule, Cx, Done, Mailbox, Wake};
use crate::store::{parse_uuid, TaskRow, Tx};
use uuid::Uuid;

/// The actions an enabled scan needs, as its audited capability check lists them.
const SCAN_ACTIONS: [&str; 2] = [OPERATOR, REQUEUE];
const REQUEUE: &str = "a2a.repair.requeue";

/// The scope id of an enabled scan's capability check (docs/contract.md#audit).
const SCAN_SCOPE: &str = "a2a-auto-retry";

impl Mailbox {
    /// `POST /a2a/retry-stale` (manual) and `POST /a2a/scheduler/tick` (policy from config).
    pub async fn retry_stale(
        &self,
        by: Author<'_>,
        policy: &RetryPolicy,
        kind: ScanKind,
    ) -> Result<Done<RetryReport>, MailboxError> {
        // A dry run's check is not audited; an enabled scan's is, in its transaction.
        if !policy.enabled {
            by.caller.require_operator()?;
        }
        policy.validate()?;
        // When this tick started, before it waits for anything.
        let started = now_ms();
        // Only one scan at a time in this process; others coalesce into it.
        let guard = self.scan_lock.try_lock();
        let busy = guard.is_err();
        let policy = policy.clone();
        self.write(
            by,
            rule!(|this, cx| this.retry_in(cx, &policy, kind, started, busy)),
        )
        .await
    }

    async fn retry_in(
        &self,
        cx: Cx<'_>,
        policy: &RetryPolicy,
        kind: ScanKind,
        started: i64,
        busy: bool,
    ) -> Result<Done<RetryReport>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let cap_error = if policy.enabled {
            self.check_scan(tx, caller, now).await?
        } else {
            None
        };
        let mut coalesced = busy;
        let mut claimed = false;
        if cap_error.is_none() && !coalesced {
            // Every enabled scan and every tick shares one bound: it runs only if it claims
            // the database's scan row (a dry run changes nothing and claims nothing).
            if kind == ScanKind::Scheduler || policy.enabled {
                claimed = tx
                    .claim_tick(started, self.cfg.scheduler_min_spacing_ms)
                    .await?;
                coalesced = !claimed;
            }
            // Scans of other instances on the same database (manual ones included).
            coalesced = coalesced || !tx.try_scan_lock().await?;
        }
        let (report, wake) = if cap_error.is_some() || coalesced {
            let report = RetryReport {
                coalesced,
                ..fresh_report(policy, 0)
            };
            (report, Wake::Nobody)
        } else {
            self.scan(tx, caller, policy, now).await?
        };
        if claimed {
            tx.finish_tick(now_ms()).await?;
        }
        if kind == ScanKind::Scheduler {
            let error = cap_error.as_ref().map(|e| e.to_string());
            scan_row(tx, caller, policy, &report, error, now).await?;
        }
        if let Some(e) = cap_error {
            return Err(e);
        }
        Ok(Done::changed(report).waking(wake))
    }

    /// The audited capability check of an enabled scan (one row per scan). A caller that is
    /// not an operator (a scoped `a2a.operator` included) is refused at once; without
    /// `a2a.repair.requeue` the scan is refused after its scan row is written (that refusal is
    /// answered). A scoped `a2a.repair.requeue` passes here and narrows, row by row, what the
    /// scan may requeue.
    async fn check_scan(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        now: i64,
    ) -> Result<Option<MailboxError>, MailboxError> {
        let operator = caller.check(OPERATOR, &ScopeCtx::default());
        let requeue = caller.check(REQUEUE, &ScopeCtx::default());
        let missing: Vec<&str> = [
            (OPERATOR, operator != CapCheck::Passed),
            (REQUEUE, requeue == CapCheck::Missing),
        ]
        .into_iter()
        .filter_map(|(action, missing)| missing.then_some(action))
        .collect();
        let body = checks_audit(SCAN_SCOPE, &SCAN_ACTIONS, &missing);
        audit(tx, now, caller.sub.as_str(), CAPABILITY_CHECK, body).await?;
        cap_error(operator, OPERATOR)?;
        Ok((requeue == CapCheck::Missing).then(|| {
            MailboxError::new(
                ErrorCode::CapabilityMissing,
                "the token lacks the capability a2a.repair.requeue, which an enabled retry scan needs",
            )
        }))
    }

    async fn scan(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        policy: &RetryPolicy,
        now: i64,
    ) -> Result<(RetryReport, Wake), MailboxError> {
        let rows = tx.in_flight_by_age(policy.scan_limit as i64).await?;
        let mut report = fresh_report(policy, rows.len());
        // The recipients of the requeued tasks: whom the scan's commit wakes.
        let mut woken = Vec::new();
        for row in rows {
            self.requeue_row(tx, caller, policy, row, now, &mut report, &mut woken)
                .await?;
        }
        Ok((report, Wake::Many(woken)))
    }

    /// The gate's rules on one in-flight row, and its requeue (fenced by the lease read) when
    /// they pass: into `report`, and its recipient into `woken`.
    #[allow(clippy::too_many_arguments)]
    async fn requeue_row(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        policy: &RetryPolicy,
        row: TaskRow,
        now: i64,
        report: &mut RetryReport,
        woken: &mut Vec<Wake>,
    ) -> Result<(), MailboxError> {
        let attempt = row.attempt as u32;
        let task_id = parse_uuid(&row.id)?;
        let candidate = Candidate::of(&row, now);
        let age = candidate.lease_age_ms;
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
                return Ok(());
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
        if !super::scope_admits(caller, &row, &lease_id) {
            skip(SkipReason::CapabilityScopeMismatch);
            return Ok(());
        }
        if !tx.requeue(&row, now).await? {
            skip(SkipReason::NotInFlight);
            return Ok(());
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
            ended: EndedLease::of(&row),
        }
        .record(tx, now, caller.sub.as_str())
        .await?;
        self.metrics.inc(&self.metrics.requeues_auto);
        woken.push(Wake::requeued(&row.recipient, &row.id));
        report.requeued.push(Requeued {
            task_id,
            lease_id: parse_uuid(&lease_id)?,
            attempt,
            idempotency_key: key,
        });
        Ok(())
    }

    /// The dashboard's run of the retry gate: the gate's rules, and a requeue fenced by the
    /// lease shown, on the tasks its preview listed (`listed`: task id and lease id) and on no
    /// other; one whose lease changed since is skipped as `not_in_flight`. Audited as an
    /// enabled scan is. It claims no scheduler tick: what it may requeue is bounded by the
    /// list, which the preview drew under the same bounds.
    pub async fn retry_listed(
        &self,
        by: Author<'_>,
        policy: &RetryPolicy,
        listed: &[(Uuid, Uuid)],
    ) -> Result<Done<RetryReport>, MailboxError> {
        policy.validate()?;
        let policy = RetryPolicy {
            enabled: true,
            ..policy.clone()
        };
        let listed = listed.to_vec();
        self.write(
            by,
            rule!(|this, cx| this.retry_listed_in(cx, &policy, &listed)),
        )
        .await
    }

    async fn retry_listed_in(
        &self,
        cx: Cx<'_>,
        policy: &RetryPolicy,
        listed: &[(Uuid, Uuid)],
    ) -> Result<Done<RetryReport>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        if let Some(refused) = self.check_scan(tx, caller, now).await? {
            return Err(refused);
        }
        let mut report = fresh_report(policy, listed.len());
        let mut woken = Vec::new();
        for (task_id, lease_id) in listed {
            let row = tx.task_for_update(&task_id.to_string()).await?;
            match row {
                Some(row) if row.lease_id.as_deref() == Some(lease_id.to_string().as_str()) => {
                    self.requeue_row(tx, caller, policy, row, now, &mut report, &mut woken)
                        .await?;
                }
                other => report.skipped.push(Skipped {
                    task_id: *task_id,
                    reason: SkipReason::NotInFlight,
                    attempt: other.map_or(0, |r| r.attempt as u32),
                    lease_age_ms: None,
                }),
            }
        }
        Ok(Done::changed(report).waking(Wake::Many(woken)))
    }
}

/// The scheduler tick's `a2a_auto_retry_scheduler_scan` row.
async fn scan_row(
    tx: &mut Tx,
    caller: &Caller,
    policy: &RetryPolicy,
    report: &RetryReport,
    error: Option<String>,
    now: i64,
) -> Result<(), MailboxError> {
    let mut by_reason = BTreeMap::new();
    for s in &report.skipped {
        let n = by_reason.entry(s.reason.as_str()).or_insert(0u32);
        *n = n.saturating_add(1);
    }
    audit(
        tx,
        now,
        caller.sub.as_str(),
        kind::RETRY_SCAN,
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
            "coalesced": report.coalesced,
            "error": error,
        }),
    )
    .await
}
