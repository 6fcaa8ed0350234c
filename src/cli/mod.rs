//! Operator commands: they talk to a running server through the Rust client
//! (`a2a-mailbox-client`) with a bearer token.
//!
//! Every command prints its result on stdout (human text, or the server's JSON with `--json`);
//! on any failure it prints the error on stderr, nothing on stdout, and exits non-zero.

mod cancel;
mod compact;
mod repair;
mod retry;
mod status;
mod tasks;

use a2a_mailbox_client::Client;
use clap::Args;
use serde::Serialize;

pub use cancel::{cancel, CancelArgs};
pub use compact::{compact, CompactArgs};
pub use repair::{force_error, requeue, ForceErrorArgs, RequeueArgs};
pub use retry::{retry_stale, RetryStaleArgs};
pub use status::{status, StatusArgs};
pub use tasks::{children, tasks, ChildrenArgs, TasksArgs};

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
