//! `cancel`: take back a queued or in-flight task (its sender, or an operator).

use anyhow::anyhow;
use clap::Args;
use serde_json::json;

use super::{pretty, Api, ClientArgs};

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
    let api = Api::new(&a.client)?;
    let body = match &a.reason {
        Some(r) => json!({"reason": r}),
        None => json!({}),
    };
    let answer = api
        .post(&format!("/a2a/tasks/{}/cancel", a.task_id), &body)
        .await?;
    if a.json {
        return pretty(&answer);
    }
    let c = &answer["cancellation"];
    let from = c["previous_state"]
        .as_str()
        .ok_or_else(|| anyhow!("unexpected answer {answer}"))?;
    let lease = match c["lease_id"].as_str() {
        Some(l) => format!("; lease {l} ended"),
        None => String::new(),
    };
    Ok(format!("canceled {} (was {from}{lease})", a.task_id))
}
