//! What every command shares: the flags naming the mailbox, and how an answer is printed as JSON.

use a2a_mailbox_client::Client;
use clap::Args;
use serde::Serialize;

#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Base URL of a running a2a-mailbox.
    #[arg(long, env = "A2A_MAILBOX_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Bearer token (mint one with `a2a-mailbox token`).
    #[arg(long, env = "A2A_MAILBOX_TOKEN", hide_env_values = true)]
    pub token: String,
}

impl ClientArgs {
    /// The client of the mailbox these flags name.
    pub(crate) fn client(&self) -> anyhow::Result<Client> {
        Ok(Client::new(self.url.clone(), self.token.clone())?)
    }
}

/// An answer as indented JSON, each object's keys sorted.
pub(crate) fn pretty(answer: &impl Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&serde_json::to_value(
        answer,
    )?)?)
}
