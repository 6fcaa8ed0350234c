//! `compact`: drop what the mailbox no longer needs.

use anyhow::anyhow;
use clap::Args;
use serde_json::json;

use super::{pretty, Api, ClientArgs};

#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    #[arg(long)]
    pub json: bool,
}

pub async fn compact(a: CompactArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let body = api.post("/a2a/compact", &json!({})).await?;
    if a.json {
        return pretty(&body);
    }
    let dropped = body["dropped"]
        .as_u64()
        .ok_or_else(|| anyhow!("unexpected answer {body}"))?;
    Ok(format!("compacted: dropped {dropped} row(s)"))
}
