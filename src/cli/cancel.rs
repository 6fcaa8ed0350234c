//! `cancel`: take back a queued or in-flight task (its sender, or an operator).

use clap::Args;

use super::args::{pretty, ClientArgs};

#[derive(Args, Debug)]
pub struct CancelArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The task to cancel.
    pub task_id: uuid::Uuid,
    /// Why (kept in the task's cancellation and the audit feed).
    #[arg(long)]
    pub reason: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub async fn cancel(a: CancelArgs) -> anyhow::Result<String> {
    let answer = a
        .client
        .client()?
        .cancel(a.task_id, a.reason.as_deref())
        .await?;
    if a.json {
        return pretty(&answer);
    }
    let c = &answer.cancellation;
    let lease = match c.lease_id {
        Some(l) => format!("; lease {l} ended"),
        None => String::new(),
    };
    Ok(format!(
        "canceled {} (was {}{lease})",
        a.task_id,
        c.previous_state.as_str()
    ))
}
