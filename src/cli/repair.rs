//! `requeue` and `force-error`: an operator repairs a stale lease.

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use super::{pretty, text, Api, ClientArgs};

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum RiskArg {
    Idempotent,
    OperatorAccepted,
}

#[derive(Args, Debug)]
pub struct RequeueArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The in-flight task to requeue.
    pub task_id: uuid::Uuid,
    #[arg(long)]
    pub reason: String,
    /// Your duplicate-work posture: the task may run again.
    #[arg(long, value_enum)]
    pub duplicate_risk: RiskArg,
    /// Refuse unless this is still the task's current lease.
    #[arg(long)]
    pub lease_id: Option<uuid::Uuid>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ForceErrorArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    pub task_id: uuid::Uuid,
    #[arg(long)]
    pub reason: String,
    /// The error message the sender will drain.
    #[arg(long)]
    pub message: String,
    #[arg(long)]
    pub lease_id: Option<uuid::Uuid>,
    #[arg(long)]
    pub json: bool,
}

/// `POST /a2a/repair` with `command`, guarded by `lease_id` when given.
async fn repair(
    api: &Api,
    task_id: uuid::Uuid,
    reason: &str,
    mut command: Value,
    lease_id: Option<uuid::Uuid>,
) -> anyhow::Result<Value> {
    if let Some(l) = lease_id {
        command["lease_id"] = json!(l);
    }
    api.post(
        "/a2a/repair",
        &json!({"task_id": task_id, "reason": reason, "command": command}),
    )
    .await
}

pub async fn requeue(a: RequeueArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let risk = match a.duplicate_risk {
        RiskArg::Idempotent => "idempotent",
        RiskArg::OperatorAccepted => "operator_accepted",
    };
    let command = json!({"action": "requeue", "duplicate_risk": risk});
    let body = repair(&api, a.task_id, &a.reason, command, a.lease_id).await?;
    if a.json {
        return pretty(&body);
    }
    let o = &body["outcome"];
    Ok(format!(
        "requeued task {} (attempt {} so far; the next lease makes it {}); state {}",
        a.task_id,
        o["attempt"],
        o["attempt"].as_u64().unwrap_or(0) + 1,
        text(o, "state")
    ))
}

pub async fn force_error(a: ForceErrorArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let command = json!({"action": "force_error", "message": a.message});
    let body = repair(&api, a.task_id, &a.reason, command, a.lease_id).await?;
    if a.json {
        return pretty(&body);
    }
    Ok(format!(
        "forced an error result for task {} (attempt {}); the sender can now drain it",
        a.task_id, body["outcome"]["attempt"]
    ))
}
