//! `retry-stale`: the retry gate, as a dry run or for real.

use a2a_mailbox_client::types::answers::AutoRetried;
use a2a_mailbox_client::types::QueueState;
use a2a_mailbox_client::QueueQuery;
use clap::Args;
use serde_json::json;

use super::args::{pretty, ClientArgs};
use crate::clock::now_ms;
use crate::mailbox::retry::{Candidate, Gate, RetryPolicy};

#[derive(Args, Debug)]
pub struct RetryStaleArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Actually requeue. Without it the command only says what it would do.
    #[arg(long)]
    pub enable: bool,
    #[arg(long, default_value_t = 300_000)]
    pub min_lease_age_ms: u64,
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    #[arg(long, default_value_t = 1)]
    pub max_requeues: u32,
    #[arg(long, default_value_t = 100)]
    pub scan_limit: u32,
    #[arg(long)]
    pub json: bool,
}

pub async fn retry_stale(a: RetryStaleArgs) -> anyhow::Result<String> {
    let client = a.client.client()?;
    let policy = RetryPolicy {
        enabled: a.enable,
        min_lease_age_ms: a.min_lease_age_ms,
        max_attempts: a.max_attempts,
        max_requeues: a.max_requeues,
        scan_limit: a.scan_limit,
    };
    let report = client.retry_stale(&policy).await?;
    if a.enable {
        if a.json {
            return pretty(&AutoRetried {
                kind: Default::default(),
                report,
            });
        }
        let mut out = format!(
            "considered {} in-flight task(s); requeued {}, skipped {}\n",
            report.considered,
            report.requeued.len(),
            report.skipped.len()
        );
        for r in &report.requeued {
            out.push_str(&format!(
                "requeued  {}  lease {}  attempt {}  key {}\n",
                r.task_id, r.lease_id, r.attempt, r.idempotency_key
            ));
        }
        for s in &report.skipped {
            out.push_str(&format!("skipped   {}  {}\n", s.task_id, s.reason.as_str()));
        }
        return Ok(out.trim_end().to_owned());
    }
    // Dry run: the server changed nothing. Say what an enabled scan would do, applying the same
    // rules to the same oldest-lease-first snapshot.
    let snap = client
        .queue(&QueueQuery {
            state: Some(QueueState::InFlight),
            limit: Some(a.scan_limit),
            ..QueueQuery::default()
        })
        .await?;
    let enabled = RetryPolicy {
        enabled: true,
        ..policy.clone()
    };
    let now = now_ms();
    let mut would_requeue = vec![];
    let mut would_skip = vec![];
    for e in &snap.tasks {
        let lease = e.lease_id.map(|l| l.to_string());
        let c = Candidate {
            in_flight: true,
            lease_id: lease.as_deref(),
            lease_age_ms: now.saturating_sub(e.heartbeat_at_ms.unwrap_or(0) as i64),
            idempotency_key: e.task.idempotency.as_ref().map(|i| i.key.as_str()),
            duplicate_safety: e
                .task
                .idempotency
                .as_ref()
                .map(|i| i.duplicate_safety.as_str()),
            attempt: e.attempt,
        };
        match enabled.verdict(&c, would_requeue.len() as u32) {
            Ok(()) => would_requeue.push(json!({
                "task_id": e.task.id, "lease_id": e.lease_id, "attempt": e.attempt,
                "idempotency_key": c.idempotency_key,
            })),
            Err((reason, age)) => would_skip.push(json!({
                "task_id": e.task.id, "reason": reason, "attempt": e.attempt, "lease_age_ms": age,
            })),
        }
    }
    if a.json {
        return pretty(&json!({
            "kind": "a2a_retry_dry_run",
            "changed": false,
            "report": report,
            "would_requeue": would_requeue,
            "would_skip": would_skip,
        }));
    }
    let mut out = format!(
        "dry run: nothing changed. With --enable this scan would requeue {} of {} in-flight task(s):\n",
        would_requeue.len(),
        would_requeue.len().saturating_add(would_skip.len())
    );
    for r in &would_requeue {
        out.push_str(&format!(
            "would requeue  {}  lease {}  attempt {}\n",
            text(r, "task_id"),
            text(r, "lease_id"),
            r["attempt"]
        ));
    }
    for s in &would_skip {
        out.push_str(&format!(
            "would skip     {}  {}\n",
            text(s, "task_id"),
            text(s, "reason")
        ));
    }
    Ok(out.trim_end().to_owned())
}

/// The string at `key` of a JSON object, or `?` when it is missing.
fn text<'a>(v: &'a serde_json::Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("?")
}
