//! `status`: the queue at a glance.

use a2a_mailbox_client::types::QueueState;
use a2a_mailbox_client::QueueQuery;
use clap::{Args, ValueEnum};
use serde_json::json;

use super::args::{pretty, ClientArgs};
use crate::clock::now_ms;

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print one JSON object `{"kind":"a2a_status",…}` (for supervisors).
    #[arg(long)]
    pub json: bool,
    #[arg(long, default_value_t = 10)]
    pub limit: u32,
    /// Show only in-flight leases idle at least this long (queued tasks are kept).
    #[arg(long)]
    pub min_lease_age_ms: Option<u64>,
    /// Keep only tasks whose deadline falls within this many milliseconds.
    #[arg(long)]
    pub deadline_within_ms: Option<u64>,
    #[arg(long, value_enum)]
    pub state: Option<StateArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum StateArg {
    Queued,
    InFlight,
}

pub async fn status(a: StatusArgs) -> anyhow::Result<String> {
    let state = a.state.map(|s| match s {
        StateArg::Queued => QueueState::Queued,
        StateArg::InFlight => QueueState::InFlight,
    });
    let query = QueueQuery {
        limit: Some(a.limit),
        min_lease_age_ms: a.min_lease_age_ms,
        deadline_within_ms: a.deadline_within_ms,
        state,
    };
    let snap = a.client.client()?.queue(&query).await?;
    if a.json {
        return pretty(&json!({
            "kind": "a2a_status",
            "limit": a.limit,
            "min_lease_age_ms": a.min_lease_age_ms,
            "deadline_within_ms": a.deadline_within_ms,
            "state": state,
            "tasks": snap.tasks,
            "results": snap.results,
        }));
    }
    let now = now_ms();
    let mut out = format!(
        "{} task(s), {} pending result(s)\n",
        snap.tasks.len(),
        snap.results.len()
    );
    for e in &snap.tasks {
        let t = &e.task;
        match (&e.lease_id, &e.leased_to, e.heartbeat_at_ms) {
            (Some(lease), Some(to), Some(hb)) => out.push_str(&format!(
                "in_flight  {}  {} -> {}  attempt {}  lease {} held by {}  idle {:.1}s  {}\n",
                t.id,
                t.sender,
                t.recipient,
                e.attempt,
                lease,
                to,
                now.saturating_sub(hb as i64).max(0) as f64 / 1000.0,
                safety(t)
            )),
            _ => out.push_str(&format!(
                "queued     {}  {} -> {}  attempt {}  {}\n",
                t.id,
                t.sender,
                t.recipient,
                e.attempt,
                safety(t)
            )),
        }
    }
    for r in &snap.results {
        out.push_str(&format!(
            "result     {}  {}{}\n",
            r.task_id,
            r.status.as_str(),
            r.error_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ));
    }
    Ok(out.trim_end().to_owned())
}

fn safety(t: &crate::domain::A2ATask) -> String {
    match &t.idempotency {
        Some(i) => format!("{} key={}", i.duplicate_safety.as_str(), i.key),
        None => "unsafe (no idempotency metadata)".to_owned(),
    }
}
