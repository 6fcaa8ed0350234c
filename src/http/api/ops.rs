//! Operator routes: the queue snapshot, lease repair, the retry gate, the scheduler tick,
//! compaction and the audit feed.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use crate::auth::Caller;
use crate::domain::answers;
use crate::domain::QueueState;
use crate::error::MailboxError;
use crate::http::openapi;
use crate::http::params::{limit, non_negative, LimitQuery};
use crate::http::respond::{answer, api_routes, Answer};
use crate::http::state::State;
use crate::http::write::{Keyed, WriteRequest};
use crate::mailbox::admin::AuditFilter;
use crate::mailbox::repair::RepairRequest;
use crate::mailbox::retry::{RetryPolicy, ScanKind};
use crate::mailbox::tasks::QueueFilter;

api_routes! {
    tag = "operator";
    queue => [
        "`invalid_request`: a negative or non-integer filter, or an unknown `state`.",
    ];
    repair => [
        "`invalid_request`: malformed JSON, wrong types, an unknown `action`, a blank `reason` or \
         `message` or one longer than 1,024 characters, or a bad `Idempotency-Key` header.",
        "`capability_missing`: the token does not grant `a2a.repair.<action>`. \
         `capability_scope_mismatch`: it does, but its scope (`peer`, `task_id`, `lease_id`, \
         `duplicate_risk`) does not admit this request.",
        "`not_found`: no task with this id is visible to the caller.",
        "`not_in_flight`: only leased tasks can be repaired. `lease_mismatch`: `lease_id` is not \
         the current lease. `duplicate_risk_mismatch`: a requeue as `idempotent` of a task that \
         did not declare `duplicate_safety: \"idempotent\"` with a key (state \
         `operator_accepted`).",
    ];
    retry_stale => [
        "`invalid_request`: malformed JSON, wrong types, `scan_limit` outside 1..=1000, \
         `min_lease_age_ms` out of range, or a bad `Idempotency-Key` header.",
        "`capability_missing`: the token does not grant `a2a.operator` (or, with `enabled: true`, \
         `a2a.repair.requeue`). `capability_scope_mismatch`: its grant of `a2a.operator` has a \
         scope, and a scoped `a2a.operator` is no operator grant.",
    ];
    scheduler_tick => [
        "`invalid_request`: a bad `Idempotency-Key` header.",
        "`capability_missing`: the token does not grant `a2a.operator` (or, when the configured \
         policy is enabled, `a2a.repair.requeue`). `capability_scope_mismatch`: its grant of \
         `a2a.operator` has a scope, and a scoped `a2a.operator` is no operator grant.",
    ];
    compact => [
        "`invalid_request`: a bad `Idempotency-Key` header.",
        "`capability_missing`: the token does not grant `a2a.compact`.",
    ];
    audit_recent => [
        "`invalid_request`: a non-integer `limit` or `since_ms`, or `since_ms` out of range.",
    ];
}

/// Repair a lease: requeue the task or answer it with an error.
///
/// Checks, in order: the token grants `a2a.repair.requeue` / `a2a.repair.force_error` (403, even
/// for unknown ids); the task is visible (404 `not_found`); it is in flight (409
/// `not_in_flight`); the grant's scope admits the request (403 `capability_scope_mismatch`);
/// `reason` (and `message`) are not blank and at most 1,024 characters (400); a given `lease_id`
/// is the current lease (409 `lease_mismatch`); `duplicate_risk: "idempotent"` only for a task
/// that declared `duplicate_safety: "idempotent"` with a key (409 `duplicate_risk_mismatch`: a
/// person cannot declare a task safe that its sender declared unsafe; state
/// `operator_accepted`). `requeue` puts the task at the END of the queue and keeps its attempt
/// counter (the next lease increments it); `force_error` posts an error result for the sender.
/// Each success writes an `a2a_repair_applied` audit row. A failed repair changes nothing (the
/// request's `capability_check` row is kept).
#[utoipa::path(post, path = "/a2a/repair",
    request_body(content = RepairRequest, description = "What to repair and how.",
        examples(
            ("requeue" = (value = json!(openapi::example_repair_requeue()))),
            ("force_error" = (value = json!(openapi::example_repair_force_error()))),
        )),
    responses(
        (status = 200, description = "Repaired.", body = answers::Repaired,
            examples(
                ("requeued" = (value = json!(openapi::example_repaired_requeued()))),
                ("forced_error" = (value = json!(openapi::example_repaired_forced_error()))),
            )),
    )
)]
async fn repair(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let req = body.read::<RepairRequest>()?;
    let done = state.mailbox.repair(req.by(&caller), &req.input).await?;
    let kind = answers::RepairedKind::Tag;
    let outcome = done.value.clone();
    Ok(answer(&done, answers::Repaired { kind, outcome }))
}

/// Run the retry gate once.
///
/// Looks at up to `scan_limit` in-flight tasks, oldest lease first, and requeues (with their own
/// ids) those whose lease is idle for at least `min_lease_age_ms`, that declared themselves
/// `idempotent` with a key, and that are below `max_attempts`, at most `max_requeues` of them.
/// Each task that is not requeued is reported with the first rule it fails. A dry run (the
/// default) changes nothing and skips every task as `disabled`. Needs `a2a.operator` without a
/// scope, and `a2a.repair.requeue` when `enabled` (a scoped one narrows what may be requeued).
/// Every enabled scan and every scheduler tick share one bound across every instance on the
/// database: a scan that starts while another runs, or less than
/// `A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS` (default 1000) after the previous one
/// started, changes nothing and answers `considered: 0` with `coalesced: true`, so scans fired
/// together never requeue a task twice or exceed `max_requeues` together. A requeue is fenced
/// by the lease the scan examined: a task whose lease changed meanwhile (a heartbeat, a result,
/// a cancel, another requeue) is left in flight and reported skipped `not_in_flight`.
#[utoipa::path(post, path = "/a2a/retry-stale",
    request_body(content = RetryPolicy,
        description = "The scan's bounds; absent fields take their defaults (`{}` is a dry run \
            with the defaults).",
        example = json!({"enabled": true, "min_lease_age_ms": 300000, "max_attempts": 3,
            "max_requeues": 1, "scan_limit": 100})),
    responses(
        (status = 200, description = "What the scan did (or, in a dry run, found).", body = answers::AutoRetried,
            example = openapi::example_auto_retried),
    )
)]
async fn retry_stale(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let policy = body.read::<RetryPolicy>()?;
    let r = state
        .mailbox
        .retry_stale(policy.by(&caller), &policy.input, ScanKind::Manual)
        .await?;
    Ok(auto_retried(&r))
}

/// Run the scheduler's retry scan once.
///
/// The endpoint an external timer (cron, a cloud scheduler, a Kubernetes CronJob) calls. Runs
/// the retry gate with the policy from configuration (`A2A_MAILBOX_AUTO_RETRY_*`; disabled
/// unless `A2A_MAILBOX_AUTO_RETRY_SCHEDULER=1`, and then every task is skipped `disabled`) and
/// writes one `a2a_auto_retry_scheduler_scan` audit row. Ticks and enabled retry-stale scans
/// are coalesced across every instance on the database: one that starts while another scan
/// runs, or less than `A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS` (default 1000) after the
/// previous one started, changes nothing and answers `considered: 0` with `coalesced: true`.
/// Takes no body. Needs `a2a.operator` without a scope, and `a2a.repair.requeue` when the
/// configured policy is enabled.
#[utoipa::path(post, path = "/a2a/scheduler/tick",
    responses(
        (status = 200, description = "What the scan did.", body = answers::AutoRetried,
            example = openapi::example_auto_retried),
    )
)]
async fn scheduler_tick(state: State, caller: Caller, req: HttpRequest) -> Answer {
    let key = Keyed::bodiless(&req)?;
    let policy = &state.scheduler_policy;
    let r = state
        .mailbox
        .retry_stale(key.by(&caller), policy, ScanKind::Scheduler)
        .await?;
    Ok(auto_retried(&r))
}

fn auto_retried(done: &crate::mailbox::Done<crate::mailbox::retry::RetryReport>) -> HttpResponse {
    let kind = answers::AutoRetriedKind::Tag;
    let report = done.value.clone();
    answer(done, answers::AutoRetried { kind, report })
}

/// Compact the database.
///
/// Deletes resolved tasks with their drained results, canceled tasks, and the result-cache
/// entries and `Idempotency-Key` records whose window has passed, and the audit rows older than
/// `A2A_MAILBOX_AUDIT_RETENTION_MS` (default 30 days). Never drops queued tasks, in-flight
/// leases, pending results or live result-cache entries. Takes no body. Needs `a2a.compact`.
#[utoipa::path(post, path = "/a2a/compact",
    responses(
        (status = 200, description = "The number of rows dropped.", body = answers::Compacted,
            example = openapi::example_compacted),
    )
)]
async fn compact(state: State, caller: Caller, req: HttpRequest) -> Answer {
    let done = state
        .mailbox
        .compact(Keyed::bodiless(&req)?.by(&caller))
        .await?;
    let kind = answers::CompactedKind::Tag;
    let dropped = done.value;
    Ok(answer(&done, answers::Compacted { kind, dropped }))
}

#[derive(Deserialize)]
struct QueueQuery {
    limit: Option<i64>,
    min_lease_age_ms: Option<i64>,
    deadline_within_ms: Option<i64>,
    state: Option<QueueState>,
}

/// A read-only snapshot of the queue.
///
/// Visibility-filtered: queued tasks first (FIFO), then in-flight ones oldest lease first, and
/// the pending results. `min_lease_age_ms` drops only young in-flight entries;
/// `deadline_within_ms` keeps tasks with `deadline_ms <= now + W` (tasks without a deadline are
/// dropped); `state` keeps one state. The filters never touch `results`; `limit` bounds `tasks`
/// and `results` each.
#[utoipa::path(get, path = "/a2a/queue",
    params(
        LimitQuery,
        ("min_lease_age_ms" = Option<i64>, Query,
            description = "Keep only in-flight entries whose last heartbeat is at least this old \
                (queued entries are kept).",
            minimum = 0, maximum = 9223372036854775807_i64, example = 300000),
        ("deadline_within_ms" = Option<i64>, Query,
            description = "Keep only tasks whose `deadline_ms` is at most now + this many \
                milliseconds.",
            minimum = 0, maximum = 9223372036854775807_i64, example = 60000),
        ("state" = Option<QueueState>, Query, description = "Keep only `queued` or only `in_flight` entries."),
    ),
    responses(
        (status = 200, description = "The snapshot.", body = answers::Queue, example = openapi::example_queue),
    )
)]
async fn queue(state: State, caller: Caller, q: web::Query<QueueQuery>) -> Answer {
    let filter = QueueFilter {
        limit: limit(q.limit),
        min_lease_age_ms: non_negative("min_lease_age_ms", q.min_lease_age_ms)?,
        max_lease_age_ms: None,
        deadline_within_ms: non_negative("deadline_within_ms", q.deadline_within_ms)?,
        state: q.state,
    };
    let snap = state.mailbox.queue(&caller, &filter).await?;
    Ok(HttpResponse::Ok().json(snap))
}

#[derive(Deserialize)]
struct AuditParams {
    limit: Option<i64>,
    since_ms: Option<u64>,
    kind: Option<String>,
}

/// Read the audit feed, newest first.
///
/// The caller's own rows; operators (`a2a.operator`) see every row. Slugs: `capability_check`,
/// `authentication_failed`, `a2a_sender_mismatch`, `a2a_result_rejected`, `a2a_repair_applied`,
/// `a2a_auto_retry_scheduler_scan`, `a2a_compacted`. Refused tokens are one
/// `authentication_failed` row per client address and minute, issuer `anonymous`,
/// `{address, count, reasons: {reason: count}}`, its counts updated as failures come.
#[utoipa::path(get, path = "/audit/recent",
    params(
        ("limit" = Option<i64>, Query,
            description = "How many rows to answer at most. Defaults to 10; any other value is \
                clamped to 1..=1000 (out-of-range values are not refused).",
            minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10),
        ("since_ms" = Option<u64>, Query, description = "Keep rows with `timestamp_ms >= since_ms`.",
            minimum = 0, maximum = 9223372036854775807_u64, example = 1736240000000_u64),
        ("kind" = Option<String>, Query, description = "Keep rows of this slug only.", example = "a2a_repair_applied"),
    ),
    responses(
        (status = 200, description = "Audit rows, newest first.", body = answers::AuditEvents,
            example = openapi::example_audit_events),
    )
)]
async fn audit_recent(state: State, caller: Caller, q: web::Query<AuditParams>) -> Answer {
    let since_ms = match q.since_ms {
        Some(s) if s > crate::domain::MAX_MS => {
            return Err(MailboxError::invalid("since_ms is out of range"))
        }
        s => s.map(|s| s as i64),
    };
    let feed = state
        .mailbox
        .audit_feed(
            &caller,
            &AuditFilter {
                limit: limit(q.limit),
                since_ms,
                kind: q.kind.clone(),
            },
        )
        .await?;
    Ok(HttpResponse::Ok().json(feed))
}
