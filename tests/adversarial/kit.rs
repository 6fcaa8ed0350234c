//! The attacker's kit: the kinds of token, the outcome each (surface, operation, token) should
//! have, a request that never panics (a 5xx is a finding, not a crash), and the judge that
//! collects every finding of a test before failing it.

use jsonwebtoken::Algorithm;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::Api;
use crate::common::{mint, now_ms, AppConfig, Resp};

/// A server whose scheduler tick would requeue any idempotent in-flight task at once, so that a
/// tick or a scan run by someone who may not run it shows up as a change.
pub fn eager() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER", "1")
        .env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
        .env("A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES", "100")
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS", "0")
}

/// Every kind of bearer a caller can present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// No `Authorization` header at all.
    None,
    /// Every operator capability, an hour past its `exp`.
    Expired,
    /// Every operator capability, signed with another secret.
    Forged,
    /// A valid token without capabilities (`mallory`).
    CapsLess,
    /// `a2a.send.*`, `a2a.respond.*`, `a2a.lease.*`: anyone, but no operator (`wild`).
    Wildcard,
    /// The same three wildcards scoped to the peer `x` (`scoped`).
    Scoped,
    /// `a2a.operator` scoped to the peer `billing`, plus `a2a.repair.requeue` (`sops`).
    ScopedOp,
}

impl Tok {
    pub const ALL: [Tok; 7] = [
        Tok::None,
        Tok::Expired,
        Tok::Forged,
        Tok::CapsLess,
        Tok::Wildcard,
        Tok::Scoped,
        Tok::ScopedOp,
    ];

    /// The token's subject (`nobody` for no token).
    pub fn sub(self) -> &'static str {
        match self {
            Tok::None => "nobody",
            Tok::Expired | Tok::Forged => "ops",
            Tok::CapsLess => "mallory",
            Tok::Wildcard => "wild",
            Tok::Scoped => "scoped",
            Tok::ScopedOp => "sops",
        }
    }

    /// The JWT itself; `None` for [`Tok::None`].
    pub fn jwt(self, api: &Api) -> Option<String> {
        let now = now_ms() / 1000;
        let all = json!([
            "a2a.operator",
            "a2a.repair.requeue",
            "a2a.repair.force_error",
            "a2a.compact",
            "a2a.send.*",
            "a2a.respond.*",
            "a2a.lease.*"
        ]);
        let scoped = |a: &str| json!({"action": a, "scope": {"peer": "x"}});
        Some(match self {
            Tok::None => return None,
            Tok::Expired => api.jwt(
                &json!({"sub": "ops", "exp": now - 3600, "caps": all}),
                Algorithm::HS256,
            ),
            Tok::Forged => mint(
                b"another-secret-entirely",
                &json!({"sub": "ops", "exp": now + 3600, "caps": all}),
                Algorithm::HS256,
            ),
            Tok::CapsLess => api.token("mallory", json!([])),
            Tok::Wildcard => api.token(
                "wild",
                json!(["a2a.send.*", "a2a.respond.*", "a2a.lease.*"]),
            ),
            Tok::Scoped => api.token(
                "scoped",
                json!([
                    scoped("a2a.send.*"),
                    scoped("a2a.respond.*"),
                    scoped("a2a.lease.*")
                ]),
            ),
            Tok::ScopedOp => api.token(
                "sops",
                json!([{"action": "a2a.operator", "scope": {"peer": "billing"}},
                       "a2a.repair.requeue"]),
            ),
        })
    }

    /// `Bearer <jwt>`, or nothing.
    pub fn auth(self, api: &Api) -> Option<String> {
        self.jwt(api).map(|t| format!("Bearer {t}"))
    }
}

/// The outcome class the contract gives a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Allowed, and it may change the mailbox.
    Ok,
    /// Allowed, and it changes nothing (and shows the caller nothing of the fixture).
    Read,
    /// 401 `unauthenticated` (the dashboard: back to its sign-in; the CLI: a failure).
    Unauth,
    /// 403 with this code.
    Deny(&'static str),
    /// 404-as-invisible: exactly what a missing id answers.
    Hidden,
}

pub const CM: Want = Want::Deny("capability_missing");
pub const CSM: Want = Want::Deny("capability_scope_mismatch");
pub const SM: Want = Want::Deny("sender_mismatch");
pub const H: Want = Want::Hidden;
pub const R: Want = Want::Read;
pub const OK: Want = Want::Ok;

/// A row of the table: what each authenticated kind (caps-less, wildcard, scoped, scoped
/// operator) should get; the three unauthenticated kinds always get [`Want::Unauth`].
pub fn want(row: [Want; 4], tok: Tok) -> Want {
    match tok {
        Tok::None | Tok::Expired | Tok::Forged => Want::Unauth,
        Tok::CapsLess => row[0],
        Tok::Wildcard => row[1],
        Tok::Scoped => row[2],
        Tok::ScopedOp => row[3],
    }
}

/// What a request got, in the same classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Got {
    Ok,
    Unauth,
    Deny(String),
    Hidden,
    Other(String),
}

impl Got {
    pub fn matches(&self, want: Want) -> bool {
        match (self, want) {
            (Got::Ok, Want::Ok | Want::Read) => true,
            (Got::Unauth, Want::Unauth) | (Got::Hidden, Want::Hidden) => true,
            (Got::Deny(code), Want::Deny(w)) => code == w,
            _ => false,
        }
    }
}

/// The native API's answer as a class.
pub fn native(r: &Resp) -> Got {
    let code = r.body["code"].as_str().unwrap_or_default().to_owned();
    match r.status {
        200..=299 => Got::Ok,
        401 if code == "unauthenticated" => Got::Unauth,
        403 => Got::Deny(code),
        404 if code == "not_found" || code == "unknown_task" => Got::Hidden,
        s => Got::Other(format!("{s} {}", short(&r.text))),
    }
}

/// A request as the attacker writes it.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: Method,
    pub path: String,
    pub body: Option<Vec<u8>>,
    pub content_type: Option<&'static str>,
    pub headers: Vec<(String, String)>,
}

impl Req {
    pub fn get(path: impl Into<String>) -> Req {
        Req {
            method: Method::GET,
            path: path.into(),
            body: None,
            content_type: None,
            headers: Vec::new(),
        }
    }

    pub fn post(path: impl Into<String>, body: &Value) -> Req {
        Req {
            method: Method::POST,
            path: path.into(),
            body: Some(serde_json::to_vec(body).unwrap()),
            content_type: Some("application/json"),
            headers: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// Sends `req` with `auth` as the whole Authorization header. Unlike the harness's requests it
/// never panics on a 5xx: a transport failure answers status 0.
pub async fn call(api: &Api, req: &Req, auth: Option<&str>) -> Resp {
    let what = format!("{} {}", req.method, short(&req.path));
    let mut b = api.client.request(req.method.clone(), api.url(&req.path));
    for (k, v) in &req.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    if let Some(auth) = auth {
        b = b.header("authorization", auth);
    }
    if let Some(ct) = req.content_type {
        b = b.header("content-type", ct);
    }
    if let Some(body) = &req.body {
        b = b.body(body.clone());
    }
    match b.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            let headers = res.headers().clone();
            let text = res.text().await.unwrap_or_default();
            let body = serde_json::from_str(&text).unwrap_or(Value::Null);
            Resp {
                what,
                status,
                headers,
                text,
                body,
            }
        }
        Err(e) => Resp {
            what,
            status: 0,
            headers: Default::default(),
            text: format!("transport error: {e}"),
            body: Value::Null,
        },
    }
}

/// Percent-encodes a query or form value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The first 300 characters of a text, for messages.
pub fn short(s: &str) -> String {
    if s.chars().count() <= 300 {
        return s.to_owned();
    }
    format!(
        "{}… ({} bytes)",
        s.chars().take(300).collect::<String>(),
        s.len()
    )
}

/// Collects every finding of a test, then fails it once with all of them.
#[derive(Default)]
pub struct Judge {
    pub failures: Vec<String>,
    pub checked: usize,
}

impl Judge {
    pub fn fail(&mut self, case: &str, msg: impl std::fmt::Display) {
        self.failures.push(format!("{case}: {msg}"));
    }

    /// Asserts a condition as one finding.
    pub fn check(&mut self, ok: bool, case: &str, msg: impl std::fmt::Display) {
        self.checked += 1;
        if !ok {
            self.fail(case, msg);
        }
    }

    /// No 5xx, ever, and no broken connection.
    pub fn no_5xx(&mut self, case: &str, r: &Resp) {
        self.check(
            (1..500).contains(&r.status),
            case,
            format!("answered {} {}", r.status, short(&r.text)),
        );
    }

    /// The class of an answer against the table.
    pub fn outcome(&mut self, case: &str, want: Want, got: &Got, r: &Resp) {
        self.no_5xx(case, r);
        self.check(
            got.matches(want),
            case,
            format!(
                "expected {want:?}, got {got:?} ({} {})",
                r.status,
                short(&r.text)
            ),
        );
    }

    #[track_caller]
    pub fn finish(self, what: &str) {
        assert!(
            self.failures.is_empty(),
            "{what}: {} finding(s) in {} checks:\n  {}",
            self.failures.len(),
            self.checked,
            self.failures.join("\n  ")
        );
    }
}

/// Writes `body` as the stored body of task `id`, as a writer that bypasses the API (or a
/// version without today's rules) would have left it.
pub async fn plant_body(app: &crate::common::TestApp, id: &str, body: &str) {
    use sqlx::Connection;
    let sql = "UPDATE tasks SET body = $1 WHERE id = $2";
    match app.engine {
        crate::common::Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            let q = sqlx::query(sql).bind(body).bind(id);
            q.execute(&mut c).await.unwrap();
        }
        crate::common::Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            let q = sqlx::query(sql).bind(body).bind(id);
            q.execute(&mut c).await.unwrap();
        }
    }
}
