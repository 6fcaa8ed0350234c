//! The fuzzer's world: a real server with a fixture (a task in every state between a sender and
//! a recipient), every kind of bearer, and the sending of one [`FReq`] with its `${name}`s
//! filled in, judged at once: no 5xx but 503, no dropped connection (a timeout only on a route
//! that may wait).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::dashboard::csrf_of;
use super::fuzz_surfaces::FReq;
use super::kit::{short, Tok};
use super::world::{fixture, Fix, Snap};
use crate::common::{b64url, full_ops, now_ms, AppConfig, Engine, TestApp};

/// The server the fuzzer runs: waiting requests end quickly, and no rate limit on failed
/// authentication turns the rest of a run into 429s.
pub fn config() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_A2A_BLOCK_MS", "200")
        .env("A2A_MAILBOX_A2A_STREAM_MS", "1000")
        .env("A2A_MAILBOX_AUTH_FAILURES_PER_MINUTE", "100000000")
}

pub struct World {
    pub app: TestApp,
    pub fix: Fix,
    pub ops: String,
    client: reqwest::Client,
    sessions: HashMap<String, String>,
    /// The operator's snapshot after the last healthy check, and each terminal task as first seen.
    pub last: Snap,
    pub frozen: BTreeMap<String, Value>,
}

/// What one request got; `status` 0 when the connection failed.
pub struct Got {
    pub status: u16,
    pub text: String,
    pub timed_out: bool,
    /// The client could not even write the request (a URL past its limit): nothing was sent.
    pub unsent: bool,
}

/// HS256 by hand, for headers `jsonwebtoken` will not write (`crit`).
pub fn hs256(secret: &[u8], header: &Value, claims: &Value) -> String {
    let signing = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let mut key = [0u8; 64];
    if secret.len() > 64 {
        key[..32].copy_from_slice(&Sha256::digest(secret));
    } else {
        key[..secret.len()].copy_from_slice(secret);
    }
    let pad = |b: u8| key.iter().map(|k| k ^ b).collect::<Vec<u8>>();
    let inner = Sha256::digest([pad(0x36), signing.as_bytes().to_vec()].concat());
    let mac = Sha256::digest([pad(0x5c), inner.to_vec()].concat());
    format!("{signing}.{}", b64url(&mac))
}

impl World {
    pub async fn new(engine: Engine, test: &str) -> Option<World> {
        let app = TestApp::spawn(engine, config(), test).await?;
        let fix = fixture(&app, 0).await;
        let ops = full_ops(&app);
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            // As the contract asks of every client: a connection idle for longer is not reused,
            // so no request meets the mailbox's close of an idle connection.
            .pool_idle_timeout(a2a_mailbox_types::IDLE_CONNECTION_REUSE)
            .build()
            .expect("an HTTP client");
        Some(World {
            app,
            fix,
            ops,
            client,
            sessions: HashMap::new(),
            last: Snap::new(),
            frozen: BTreeMap::new(),
        })
    }

    /// The JWT a kind of bearer presents (`None`: no Authorization header).
    pub fn jwt(&self, kind: &str) -> Option<String> {
        let tok = |t: Tok| t.jwt(&self.app);
        match kind {
            "none" => None,
            "expired" => tok(Tok::Expired),
            "forged" => tok(Tok::Forged),
            "capsless" => tok(Tok::CapsLess),
            "wildcard" => tok(Tok::Wildcard),
            "scoped" => tok(Tok::Scoped),
            "scoped_op" => tok(Tok::ScopedOp),
            "operator" => Some(self.ops.clone()),
            "sender" => Some(self.fix.sender_token.clone()),
            "recipient" => Some(self.fix.recipient_token.clone()),
            "crit" => Some(hs256(
                self.app.secret.as_bytes(),
                &json!({"alg": "HS256", "typ": "JWT", "crit": ["x-unknown"], "x-unknown": 1}),
                &json!({"sub": "ops", "exp": now_ms() / 1000 + 3600,
                        "caps": ["a2a.operator", "a2a.repair.requeue", "a2a.compact"]}),
            )),
            "garbage" => Some("eyJhbGciOiJub25lIn0.e30.".into()),
            other => Some(other.to_owned()),
        }
    }

    /// An MCP session of a kind of bearer, opened on first use ("none" when refused).
    async fn session(&mut self, kind: &str) -> String {
        if let Some(s) = self.sessions.get(kind) {
            return s.clone();
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"}}});
        let req = FReq {
            token: kind.into(),
            method: "POST".into(),
            path: "/mcp".into(),
            content_type: Some("application/json".into()),
            headers: vec![("Accept".into(), "application/json".into())],
            body: Some(init.to_string()),
        };
        let (_, res) = self.send_raw(&req).await;
        let id = res
            .ok()
            .and_then(|h| h.get("mcp-session-id")?.to_str().ok().map(str::to_owned))
            .unwrap_or_else(|| "none".into());
        self.sessions.insert(kind.into(), id.clone());
        id
    }

    /// `s` with every `${name}` of the world filled in.
    async fn fill(&mut self, s: &str, kind: &str) -> String {
        if !s.contains("${") {
            return s.to_owned();
        }
        let f = &self.fix;
        let mut out = s
            .replace("${sender}", &f.sender)
            .replace("${recipient}", &f.recipient)
            .replace("${queued}", &f.queued)
            .replace("${in_flight}", &f.in_flight)
            .replace("${lease}", &f.lease)
            .replace("${pending}", &f.pending)
            .replace("${resolved}", &f.resolved)
            .replace("${canceled}", &f.canceled);
        while out.contains("${new_id}") {
            out = out.replacen("${new_id}", &Uuid::new_v4().to_string(), 1);
        }
        let jwt = self.jwt(kind).unwrap_or_default();
        out = out
            .replace("${csrf}", &csrf_of(&jwt))
            .replace("${jwt}", &jwt);
        if out.contains("${mcp_session}") {
            let s = self.session(kind).await;
            out = out.replace("${mcp_session}", &s);
        }
        out
    }

    /// Sends a request as it is (no `${name}`s left to fill); the response headers or the error.
    ///
    /// A connection that fails under a request is tried once more on a new connection: a
    /// pooled connection can meet the server's idle close on a loaded machine (a race every
    /// HTTP client has), which is not the service dropping a request. A request that fails on
    /// a fresh connection too is the finding, with the whole chain of errors.
    async fn send_raw(&self, r: &FReq) -> (Got, Result<reqwest::header::HeaderMap, ()>) {
        let (got, headers) = self.send_on(&self.client, r).await;
        if got.status != 0 || got.timed_out || got.unsent {
            return (got, headers);
        }
        let fresh = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(0)
            .build()
            .expect("an HTTP client");
        let (again, headers) = self.send_on(&fresh, r).await;
        if again.status != 0 {
            return (again, headers);
        }
        let text = format!("{}; on a new connection too: {}", got.text, again.text);
        (Got { text, ..again }, headers)
    }

    /// [`Self::send_raw`] on one client.
    async fn send_on(
        &self,
        client: &reqwest::Client,
        r: &FReq,
    ) -> (Got, Result<reqwest::header::HeaderMap, ()>) {
        let method = Method::from_bytes(r.method.as_bytes()).unwrap_or(Method::GET);
        let mut b = client.request(method, self.app.url(&r.path));
        let mut headers = reqwest::header::HeaderMap::new();
        let mut put = |k: &str, v: &str| {
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_bytes(v.as_bytes()),
            ) {
                headers.append(k, v);
            }
        };
        for (k, v) in &r.headers {
            put(k, v);
        }
        let jwt = self.jwt(&r.token);
        if let Some(jwt) = &jwt {
            put("authorization", &format!("Bearer {jwt}"));
            let has_cookie = r
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("cookie"));
            if r.path.starts_with("/dashboard") && !has_cookie {
                put("cookie", &format!("a2a_dashboard={jwt}"));
            }
        }
        if let Some(ct) = &r.content_type {
            put("content-type", ct);
        }
        b = b.headers(headers);
        if let Some(body) = &r.body {
            b = b.body(body.clone());
        }
        match b.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let headers = res.headers().clone();
                let (text, timed_out) = match res.text().await {
                    Ok(t) => (t, false),
                    Err(e) if e.is_timeout() => (String::new(), true),
                    Err(e) => (format!("reading the body failed: {e}"), false),
                };
                let got = Got {
                    status,
                    text,
                    timed_out,
                    unsent: false,
                };
                (got, Ok(headers))
            }
            Err(e) => {
                let mut text = format!("transport error: {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    text.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                let got = Got {
                    status: 0,
                    text,
                    timed_out: e.is_timeout(),
                    unsent: e.is_builder(),
                };
                (got, Err(()))
            }
        }
    }

    /// Sends one request and judges its answer alone: the finding, if any.
    pub async fn send(&mut self, r: &FReq) -> (Got, Option<String>) {
        let mut filled = r.clone();
        filled.path = self.fill(&r.path, &r.token).await;
        let mut headers = Vec::new();
        for (k, v) in &r.headers {
            headers.push((k.clone(), self.fill(v, &r.token).await));
        }
        filled.headers = headers;
        if let Some(b) = &r.body {
            filled.body = Some(self.fill(b, &r.token).await);
        }
        let (got, _) = self.send_raw(&filled).await;
        let finding = got.finding(r).map(|f| self.with_panic(f));
        (got, finding)
    }

    /// A finding with the server's panic message, if it logged one.
    pub fn with_panic(&self, finding: String) -> String {
        let log = self.app.server_log();
        match log.lines().rev().find(|l| l.contains("panicked at")) {
            Some(p) => format!("{finding} [server: {}]", short(p.trim())),
            None => finding,
        }
    }
}

/// Routes whose answer may take as long as they wait (long-polls, streams, blocking sends).
pub fn may_wait(path: &str) -> bool {
    [
        "/next",
        ":stream",
        ":subscribe",
        "message:send",
        "/jsonrpc",
        "/mcp",
    ]
    .iter()
    .any(|p| path.contains(p))
}

impl Got {
    /// What is wrong with this answer to `r` on its own.
    pub fn finding(&self, r: &FReq) -> Option<String> {
        let path = r.path.split('?').next().unwrap_or_default();
        let what = format!("{} {}", r.method, short(path));
        if self.unsent || (self.timed_out && may_wait(path)) {
            return None;
        }
        if self.status == 0 || self.timed_out {
            return Some(format!("{what}: dropped: {}", short(&self.text)));
        }
        if self.status >= 500 && self.status != 503 {
            return Some(format!(
                "{what}: answered {} {}",
                self.status,
                short(&self.text)
            ));
        }
        None
    }
}
