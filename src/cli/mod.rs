//! Operator commands: they talk to a running server over HTTP with a bearer token.
//!
//! Every command prints its result on stdout (human text, or the server's JSON with `--json`);
//! on any failure it prints the error on stderr, nothing on stdout, and exits non-zero.

mod cancel;
mod compact;
mod repair;
mod retry;
mod status;
mod tasks;

use anyhow::{bail, Context};
use clap::Args;
use serde_json::Value;

use crate::domain::QueueEntry;

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

pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    pub(crate) fn new(a: &ClientArgs) -> anyhow::Result<Api> {
        Ok(Api {
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()?,
            base: a.url.trim_end_matches('/').to_owned(),
            token: a.token.clone(),
        })
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let res = req
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach the mailbox at {}", self.base))?;
        let status = res.status();
        let body: Value = res.json().await.with_context(|| {
            format!("the server answered {status} with a body that is not JSON")
        })?;
        if !status.is_success() {
            let code = body["code"].as_str().unwrap_or("unknown");
            let msg = body["message"].as_str().unwrap_or("");
            bail!("{status} {code}: {msg}");
        }
        Ok(body)
    }

    pub(crate) async fn get(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<Value> {
        self.call(self.http.get(format!("{}{path}", self.base)).query(query))
            .await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.call(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }
}

pub(crate) fn pretty(v: &Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v)?)
}

/// The string at `key` of an answer's object, or `?` when it is missing.
pub(crate) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("?")
}

pub(crate) fn entries(v: &Value) -> anyhow::Result<Vec<QueueEntry>> {
    serde_json::from_value(v["tasks"].clone()).context("the server sent an unexpected queue")
}
