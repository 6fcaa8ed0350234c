//! `requeue` and `force-error`: an operator repairs a stale lease.

use a2a_mailbox_client::types::answers::Repaired;
use a2a_mailbox_client::types::{DuplicateRisk, RepairOutcome, RepairedState};
use clap::{Args, ValueEnum};

use super::args::{pretty, ClientArgs};

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
    /// Your duplicate-work posture: the task may run again. `idempotent` only for a task its
    /// sender declared idempotent with a key (else 409 duplicate_risk_mismatch);
    /// `operator-accepted`: you accept that it may run twice.
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

/// The answer `{"kind":"a2a_repaired","outcome":…}` as JSON.
fn repaired(outcome: RepairOutcome) -> anyhow::Result<String> {
    pretty(&Repaired {
        kind: Default::default(),
        outcome,
    })
}

pub async fn requeue(a: RequeueArgs) -> anyhow::Result<String> {
    let risk = match a.duplicate_risk {
        RiskArg::Idempotent => DuplicateRisk::Idempotent,
        RiskArg::OperatorAccepted => DuplicateRisk::OperatorAccepted,
    };
    let outcome = a
        .client
        .client()?
        .requeue(a.task_id, &a.reason, risk, a.lease_id)
        .await?;
    if a.json {
        return repaired(outcome);
    }
    Ok(format!(
        "requeued task {} (attempt {} so far; the next lease makes it {}); state {}",
        a.task_id,
        outcome.attempt,
        outcome.attempt.saturating_add(1),
        match outcome.state {
            RepairedState::Queued => "queued",
            RepairedState::ResultPending => "result_pending",
        }
    ))
}

pub async fn force_error(a: ForceErrorArgs) -> anyhow::Result<String> {
    let outcome = a
        .client
        .client()?
        .force_error(a.task_id, &a.reason, &a.message, a.lease_id)
        .await?;
    if a.json {
        return repaired(outcome);
    }
    Ok(format!(
        "forced an error result for task {} (attempt {}); the sender can now drain it",
        a.task_id, outcome.attempt
    ))
}
