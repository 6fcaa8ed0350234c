//! `compact`: drop what the mailbox no longer needs.

use a2a_mailbox_client::types::answers::Compacted;
use clap::Args;

use super::args::{pretty, ClientArgs};

#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    #[arg(long)]
    pub json: bool,
}

pub async fn compact(a: CompactArgs) -> anyhow::Result<String> {
    let dropped = a.client.client()?.compact().await?;
    if a.json {
        return pretty(&Compacted {
            kind: Default::default(),
            dropped,
        });
    }
    Ok(format!("compacted: dropped {dropped} row(s)"))
}
