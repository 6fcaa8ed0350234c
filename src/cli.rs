//! Operator commands: they talk to a running server over HTTP with a bearer token.
//!
//! Every command prints its result on stdout (human text, or the server's JSON with `--json`);
//! on any failure it prints the error on stderr, nothing on stdout, and exits non-zero.

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::domain::QueueEntry;
use crate::mailbox::retry::{Candidate, RetryPolicy};

#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Base URL of a running a2a-mailbox.
    #[arg(long, env = "A2A_MAILBOX_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Bearer token (mint one with `a2a-mailbox token`).
    #[arg(long, env = "A2A_MAILBOX_TOKEN", hide_env_values = true)]
    pub token: String,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print one JSON object `{"kind":"a2a_status",…}` (for supervisors).
    #[arg(long)]
    pub json: bool,
    #[arg(long, default_value_t = 10)]
    pub limit: u32,
    /// Show only in-flight leases idle at least this long (queued tasks are kept).
    #[arg(long)]
    pub min_lease_age_ms: Option<u64>,
    /// Keep only tasks whose deadline falls within this many milliseconds.
    #[arg(long)]
    pub deadline_within_ms: Option<u64>,
    #[arg(long, value_enum)]
    pub state: Option<StateArg>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum StateArg {
    Queued,
    InFlight,
}

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

#[derive(Args, Debug)]
pub struct RetryStaleArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Actually requeue. Without it the command only says what it would do.
    #[arg(long)]
    pub enable: bool,
    #[arg(long, default_value_t = 300_000)]
    pub min_lease_age_ms: u64,
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    #[arg(long, default_value_t = 1)]
    pub max_requeues: u32,
    #[arg(long, default_value_t = 100)]
    pub scan_limit: u32,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    #[arg(long)]
    pub json: bool,
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    fn new(a: &ClientArgs) -> anyhow::Result<Api> {
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

    async fn get(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<Value> {
        self.call(self.http.get(format!("{}{path}", self.base)).query(query))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.call(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }
}

fn pretty(v: &Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v)?)
}

fn entries(v: &Value) -> anyhow::Result<Vec<QueueEntry>> {
    serde_json::from_value(v["tasks"].clone()).context("the server sent an unexpected queue")
}

fn now_ms() -> i64 {
    crate::mailbox::now_ms()
}

pub async fn status(a: StatusArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let mut q = vec![("limit", a.limit.to_string())];
    if let Some(v) = a.min_lease_age_ms {
        q.push(("min_lease_age_ms", v.to_string()));
    }
    if let Some(v) = a.deadline_within_ms {
        q.push(("deadline_within_ms", v.to_string()));
    }
    let state = a.state.map(|s| match s {
        StateArg::Queued => "queued",
        StateArg::InFlight => "in_flight",
    });
    if let Some(s) = state {
        q.push(("state", s.to_owned()));
    }
    let snap = api.get("/a2a/queue", &q).await?;
    if a.json {
        return pretty(&json!({
            "kind": "a2a_status",
            "limit": a.limit,
            "min_lease_age_ms": a.min_lease_age_ms,
            "deadline_within_ms": a.deadline_within_ms,
            "state": state,
            "tasks": snap["tasks"],
            "results": snap["results"],
        }));
    }
    let now = now_ms();
    let tasks = entries(&snap)?;
    let results = snap["results"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "{} task(s), {} pending result(s)\n",
        tasks.len(),
        results.len()
    );
    for e in &tasks {
        let t = &e.task;
        match (&e.lease_id, &e.leased_to, e.heartbeat_at_ms) {
            (Some(lease), Some(to), Some(hb)) => out.push_str(&format!(
                "in_flight  {}  {} -> {}  attempt {}  lease {} held by {}  idle {:.1}s  {}\n",
                t.id,
                t.sender,
                t.recipient,
                e.attempt,
                lease,
                to,
                (now - hb as i64).max(0) as f64 / 1000.0,
                safety(t)
            )),
            _ => out.push_str(&format!(
                "queued     {}  {} -> {}  attempt {}  {}\n",
                t.id,
                t.sender,
                t.recipient,
                e.attempt,
                safety(t)
            )),
        }
    }
    for r in &results {
        out.push_str(&format!(
            "result     {}  {}{}\n",
            r["task_id"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?"),
            r["error_message"]
                .as_str()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ));
    }
    Ok(out.trim_end().to_owned())
}

fn safety(t: &crate::domain::A2ATask) -> String {
    match &t.idempotency {
        Some(i) => format!("{} key={}", i.duplicate_safety.as_str(), i.key),
        None => "unsafe (no idempotency metadata)".to_owned(),
    }
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
        o["state"].as_str().unwrap_or("?")
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

pub async fn retry_stale(a: RetryStaleArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let policy = RetryPolicy {
        enabled: a.enable,
        min_lease_age_ms: a.min_lease_age_ms,
        max_attempts: a.max_attempts,
        max_requeues: a.max_requeues,
        scan_limit: a.scan_limit,
    };
    let body = api
        .post("/a2a/retry-stale", &serde_json::to_value(&policy)?)
        .await?;
    let report = &body["report"];
    if a.enable {
        if a.json {
            return pretty(&body);
        }
        let mut out = format!(
            "considered {} in-flight task(s); requeued {}, skipped {}\n",
            report["considered"],
            report["requeued"].as_array().map_or(0, Vec::len),
            report["skipped"].as_array().map_or(0, Vec::len)
        );
        for r in report["requeued"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "requeued  {}  lease {}  attempt {}  key {}\n",
                r["task_id"].as_str().unwrap_or("?"),
                r["lease_id"].as_str().unwrap_or("?"),
                r["attempt"],
                r["idempotency_key"].as_str().unwrap_or("?")
            ));
        }
        for s in report["skipped"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "skipped   {}  {}\n",
                s["task_id"].as_str().unwrap_or("?"),
                s["reason"].as_str().unwrap_or("?")
            ));
        }
        return Ok(out.trim_end().to_owned());
    }
    // Dry run: the server changed nothing. Say what an enabled scan would do, applying the same
    // rules to the same oldest-lease-first snapshot.
    let snap = api
        .get(
            "/a2a/queue",
            &[
                ("state", "in_flight".to_owned()),
                ("limit", a.scan_limit.to_string()),
            ],
        )
        .await?;
    let enabled = RetryPolicy {
        enabled: true,
        ..policy.clone()
    };
    let now = now_ms();
    let mut would_requeue = vec![];
    let mut would_skip = vec![];
    for e in entries(&snap)? {
        let lease = e.lease_id.map(|l| l.to_string());
        let c = Candidate {
            in_flight: true,
            lease_id: lease.as_deref(),
            lease_age_ms: now - e.heartbeat_at_ms.unwrap_or(0) as i64,
            idempotency_key: e.task.idempotency.as_ref().map(|i| i.key.as_str()),
            duplicate_safety: e
                .task
                .idempotency
                .as_ref()
                .map(|i| i.duplicate_safety.as_str()),
            attempt: e.attempt,
        };
        match enabled.verdict(&c, would_requeue.len() as u32) {
            Ok(()) => would_requeue.push(json!({
                "task_id": e.task.id, "lease_id": e.lease_id, "attempt": e.attempt,
                "idempotency_key": c.idempotency_key,
            })),
            Err((reason, age)) => would_skip.push(json!({
                "task_id": e.task.id, "reason": reason, "attempt": e.attempt, "lease_age_ms": age,
            })),
        }
    }
    if a.json {
        return pretty(&json!({
            "kind": "a2a_retry_dry_run",
            "changed": false,
            "report": report,
            "would_requeue": would_requeue,
            "would_skip": would_skip,
        }));
    }
    let mut out = format!(
        "dry run: nothing changed. With --enable this scan would requeue {} of {} in-flight task(s):\n",
        would_requeue.len(),
        would_requeue.len() + would_skip.len()
    );
    for r in &would_requeue {
        out.push_str(&format!(
            "would requeue  {}  lease {}  attempt {}\n",
            r["task_id"].as_str().unwrap_or("?"),
            r["lease_id"].as_str().unwrap_or("?"),
            r["attempt"]
        ));
    }
    for s in &would_skip {
        out.push_str(&format!(
            "would skip     {}  {}\n",
            s["task_id"].as_str().unwrap_or("?"),
            s["reason"].as_str().unwrap_or("?")
        ));
    }
    Ok(out.trim_end().to_owned())
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
