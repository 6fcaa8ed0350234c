//! What every command shares: the flags naming the mailbox, and how an answer is printed as JSON.

use a2a_mailbox_client::{Client, Trace};
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
    /// The client of the mailbox these flags name. A command run under `TRACEPARENT` (and
    /// `TRACESTATE`), OpenTelemetry's environment carriers, sends that trace context with each
    /// request, so the mailbox's spans of an operator's action join the trace that ran it.
    pub(crate) fn client(&self) -> anyhow::Result<Client> {
        let mut builder = Client::builder(self.url.clone(), self.token.clone());
        let var = |name| std::env::var(name).ok();
        if let Some(trace) =
            var("TRACEPARENT").and_then(|p| Trace::parse(&p, var("TRACESTATE").as_deref()))
        {
            builder = builder.trace(trace);
        }
        Ok(builder.build()?)
    }
}

/// An answer as indented JSON, each object's keys sorted.
pub(crate) fn pretty(answer: &impl Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&serde_json::to_value(
        answer,
    )?)?)
}
