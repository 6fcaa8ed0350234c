//! Black-box harness: every test starts the real `a2a-mailbox serve` binary on a fresh database
//! (a temp SQLite file, or a fresh PostgreSQL database) and talks to it over HTTP.
//!
//! Start-up contract with the server: it is configured by environment variables and prints
//! exactly one line `a2a-mailbox listening on http://127.0.0.1:PORT` on stdout once it serves.

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection};
use uuid::Uuid;

pub mod jwks;
pub mod otlp;
pub mod outcome;
pub mod python;
pub mod store;

pub const BIN: &str = env!("CARGO_BIN_EXE_a2a-mailbox");
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const LISTENING_PREFIX: &str = "a2a-mailbox listening on ";
pub const PG_URL_VAR: &str = "A2A_MAILBOX_TEST_POSTGRES_URL";
pub const REQUIRE_PG_VAR: &str = "A2A_MAILBOX_REQUIRE_POSTGRES";

/// Generates `mod $name { async fn sqlite(); async fn postgres(); }` running `async fn $name(app)`
/// on both storage engines. `config = f` passes `AppConfig` from `fn f() -> AppConfig`.
macro_rules! both_engines {
    ($name:ident) => {
        both_engines!(@inner $name, $crate::common::AppConfig::default());
    };
    ($name:ident, config = $cfg:ident) => {
        both_engines!(@inner $name, super::$cfg());
    };
    (@inner $name:ident, $cfg:expr) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $crate::common::run(
                    $crate::common::Engine::Sqlite,
                    concat!(module_path!(), "::sqlite"),
                    $cfg,
                    super::$name,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $crate::common::run(
                    $crate::common::Engine::Postgres,
                    concat!(module_path!(), "::postgres"),
                    $cfg,
                    super::$name,
                )
                .await;
            }
        }
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// Extra environment for the server (e.g. a JWT audience or a small body limit); `{dir}` in a
/// value stands for the test's own temporary directory.
#[derive(Clone, Debug, Default)]
pub struct AppConfig {
    env: Vec<(String, String)>,
}

impl AppConfig {
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// Runs one test body on one engine; skips (or panics, when required) without PostgreSQL.
pub async fn run<F, Fut>(engine: Engine, test: &str, config: AppConfig, body: F)
where
    F: FnOnce(TestApp) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(app) = TestApp::spawn(engine, config, test).await else {
        return;
    };
    body(app).await;
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock before 1970")
        .as_millis() as u64
}

/// Waits until the wall clock has moved on by at least 2 ms, so that two server-side
/// timestamps taken before and after this call differ. Not a synchronisation device.
pub async fn clock_tick() {
    let start = now_ms();
    while now_ms() < start + 2 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP side: a cheap, cloneable handle (base URL, client, JWT secret).
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
pub struct Api {
    pub address: String,
    pub client: reqwest::Client,
    pub secret: String,
}

/// A response with everything a test may look at; `body` is `Null` when not JSON.
#[derive(Debug)]
pub struct Resp {
    pub what: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `Idempotent-Replayed: true` is present.
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed")
            .map(|v| v.eq_ignore_ascii_case("true"))
            .unwrap_or(false)
    }

    /// Asserts the status and returns the JSON body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(
            self.status, status,
            "{}: expected HTTP {status}, got {} with body {}",
            self.what, self.status, self.text
        );
        &self.body
    }
}

impl Api {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// Low-level request: `auth` is the whole Authorization header value.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        auth: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Resp {
        self.raw_with(method, path, auth, content_type, body, &[])
            .await
    }

    /// POST JSON with extra request headers (e.g. `Idempotency-Key`).
    pub async fn post_with(
        &self,
        path: &str,
        token: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> Resp {
        self.raw_with(
            Method::POST,
            path,
            Some(&format!("Bearer {token}")),
            Some("application/json"),
            Some(serde_json::to_vec(body).unwrap()),
            headers,
        )
        .await
    }

    pub async fn raw_with(
        &self,
        method: Method,
        path: &str,
        auth: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let what = format!("{method} {path}");
        let mut req = self.client.request(method, self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(body) = body {
            req = req.body(body);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: request failed: {e}"));
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res
            .text()
            .await
            .unwrap_or_else(|e| panic!("{what}: reading body failed: {e}"));
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_ne!(status, 500, "{what}: the server answered 500: {text}");
        Resp {
            what,
            status,
            headers,
            text,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Resp {
        self.raw(
            Method::GET,
            path,
            Some(&format!("Bearer {token}")),
            None,
            None,
        )
        .await
    }

    pub async fn get_anon(&self, path: &str) -> Resp {
        self.raw(Method::GET, path, None, None, None).await
    }

    /// The value of one sample line of `/metrics` (`name{labels}`), 0 when absent.
    pub async fn metric(&self, sample: &str) -> f64 {
        let text = self.get_anon("/metrics").await.text;
        text.lines()
            .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0.0)
    }

    /// Waits until the sample reads `want` (at most 15 s, re-reading every 10 ms).
    pub async fn until_metric(&self, sample: &str, want: f64) {
        self.until_metric_is(sample, &format!("{want}"), |now| now == want)
            .await
    }

    /// Waits until the sample reads at least `least` (at most 15 s).
    #[allow(dead_code)] // tests/otel only
    pub async fn until_metric_at_least(&self, sample: &str, least: f64) {
        self.until_metric_is(sample, &format!("at least {least}"), |now| now >= least)
            .await
    }

    async fn until_metric_is(&self, sample: &str, wanted: &str, good: impl Fn(f64) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let now = self.metric(sample).await;
            if good(now) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{sample} reads {now}, waited 15 s for {wanted}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn post(&self, path: &str, token: &str, body: &Value) -> Resp {
        self.raw(
            Method::POST,
            path,
            Some(&format!("Bearer {token}")),
            Some("application/json"),
            Some(serde_json::to_vec(body).unwrap()),
        )
        .await
    }

    // ----- tokens ------------------------------------------------------------------------------

    /// HS256 token for `sub` with `caps` (a JSON array), valid for an hour.
    pub fn token(&self, sub: &str, caps: Value) -> String {
        self.jwt(
            &json!({"sub": sub, "exp": now_ms() / 1000 + 3600, "caps": caps}),
            Algorithm::HS256,
        )
    }

    pub fn jwt(&self, claims: &Value, alg: Algorithm) -> String {
        mint(self.secret.as_bytes(), claims, alg)
    }

    /// A token for `sub` with `caps` that the mailbox accepts for one to two more seconds: its
    /// `exp` is 28 s past, within the 30 s of validation leeway.
    pub fn expiring_token(&self, sub: &str, caps: Value) -> String {
        let exp = now_ms() / 1000 - 28;
        self.jwt(
            &json!({"sub": sub, "exp": exp, "caps": caps}),
            Algorithm::HS256,
        )
    }

    /// Waits until the mailbox refuses `token` (at most 10 s): its expiry and leeway have passed.
    pub async fn until_refused(&self, token: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.get("/a2a/results/recent", token).await.status != 401 {
            assert!(Instant::now() < deadline, "the token is still accepted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// alice may send to bob.
    pub fn alice(&self) -> String {
        self.token("alice", json!(["a2a.send.bob"]))
    }

    /// bob may answer alice's tasks.
    pub fn bob(&self) -> String {
        self.token("bob", json!(["a2a.respond.alice"]))
    }

    /// carol: a bystander with no capabilities.
    pub fn carol(&self) -> String {
        self.token("carol", json!([]))
    }

    /// An operator sees everything.
    pub fn ops(&self) -> String {
        self.token("ops", json!(["a2a.operator"]))
    }

    // ----- mailbox shortcuts -------------------------------------------------------------------

    pub async fn send(&self, token: &str, task: &Value) -> Resp {
        self.post("/a2a/tasks", token, task).await
    }

    /// Sends and asserts 201; returns the task id.
    pub async fn send_ok(&self, token: &str, task: &Value) -> String {
        let r = self.send(token, task).await;
        let body = r.expect(201);
        assert_eq!(
            body["task_id"], task["id"],
            "send answer names another task"
        );
        body["task_id"].as_str().unwrap().to_owned()
    }

    /// `GET /a2a/tasks/next{query}`; query like `""` or `"?recipient=bob&wait_ms=0"`.
    pub async fn next(&self, token: &str, query: &str) -> Resp {
        self.get(&format!("/a2a/tasks/next{query}"), token).await
    }

    /// Leases for the token's own subject; `None` when the mailbox answers null/null.
    pub async fn lease(&self, token: &str) -> Option<(Value, Value)> {
        let r = self.next(token, "").await;
        let b = r.expect(200).clone();
        assert_eq!(b["kind"], "a2a_task_opt", "{}: {}", r.what, r.text);
        if b["task"].is_null() {
            assert!(b["lease"].is_null(), "task null but lease not: {}", r.text);
            None
        } else {
            assert!(b["lease"].is_object(), "task without lease: {}", r.text);
            Some((b["task"].clone(), b["lease"].clone()))
        }
    }

    /// Leases and asserts a task came back; returns (task id, lease).
    pub async fn lease_some(&self, token: &str) -> (String, Value) {
        let (task, lease) = self
            .lease(token)
            .await
            .expect("expected a task from GET /a2a/tasks/next, got null");
        (task["id"].as_str().unwrap().to_owned(), lease)
    }

    pub async fn post_result(&self, token: &str, result: &Value) -> Resp {
        self.post("/a2a/results", token, result).await
    }

    /// Drains one result as the token's subject (`None` when null).
    pub async fn drain(&self, token: &str) -> Option<Value> {
        let r = self.get("/a2a/results/next", token).await;
        let b = r.expect(200);
        assert_eq!(b["kind"], "a2a_result_opt", "{}: {}", r.what, r.text);
        if b["result"].is_null() {
            None
        } else {
            Some(b["result"].clone())
        }
    }

    pub async fn status(&self, token: &str, id: &str) -> Resp {
        self.get(&format!("/a2a/tasks/{id}"), token).await
    }

    /// Task status as seen by an operator (asserts 200).
    pub async fn status_ok(&self, id: &str) -> Value {
        let r = self.status(&self.ops(), id).await;
        let b = r.expect(200).clone();
        assert_eq!(b["kind"], "a2a_task_status", "{}", r.text);
        b
    }

    /// `GET /a2a/queue{query}` (asserts 200 and the kind).
    pub async fn queue(&self, token: &str, query: &str) -> Value {
        let r = self.get(&format!("/a2a/queue{query}"), token).await;
        let b = r.expect(200).clone();
        assert_eq!(b["kind"], "a2a_queue", "{}", r.text);
        assert!(
            b["tasks"].is_array() && b["results"].is_array(),
            "{}",
            r.text
        );
        b
    }

    /// Asserts that the mailbox holds no task and no result at all (operator view).
    pub async fn assert_empty(&self, ctx: &str) {
        let q = self.queue(&self.ops(), "?limit=1000").await;
        assert_eq!(
            q["tasks"].as_array().unwrap().len(),
            0,
            "{ctx}: the mailbox should hold no task, queue = {q}"
        );
        assert_eq!(
            q["results"].as_array().unwrap().len(),
            0,
            "{ctx}: the mailbox should hold no result, queue = {q}"
        );
    }
}

/// Ids of the queue entries, in order.
/// An operator holding every operator capability.
pub fn full_ops(api: &Api) -> String {
    api.token(
        "ops",
        json!([
            "a2a.operator",
            "a2a.repair.requeue",
            "a2a.repair.force_error",
            "a2a.compact"
        ]),
    )
}

pub fn queue_ids(q: &Value) -> Vec<String> {
    q["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["task"]["id"].as_str().unwrap().to_owned())
        .collect()
}

pub fn mint(secret: &[u8], claims: &Value, alg: Algorithm) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, &EncodingKey::from_secret(secret))
        .expect("encoding a JWT")
}

/// base64url without padding (for hand-crafted tokens).
pub fn b64url(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A minimal valid task `sender` → `recipient` with a fresh id.
pub fn task(sender: &str, recipient: &str) -> Value {
    let id = Uuid::new_v4();
    json!({
        "id": id.to_string(),
        "sender": sender,
        "recipient": recipient,
        "intent_text": format!("please handle {}", &id.simple().to_string()[..8]),
    })
}

/// A result for `task_id` with a text content.
pub fn result(task_id: &str, status: &str, text: &str) -> Value {
    json!({
        "task_id": task_id,
        "status": status,
        "content": [{"type": "text", "text": text}],
    })
}

/// Asserts the exact key set of a JSON object.
#[track_caller]
pub fn assert_keys(v: &Value, keys: &[&str], ctx: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{ctx}: expected an object, got {v}"));
    let mut got: Vec<&str> = obj.keys().map(String::as_str).collect();
    got.sort_unstable();
    let mut want = keys.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "{ctx}: wrong key set in {v}");
}

/// Asserts a storage fault's answer: 503 `storage_unavailable`, retriable, with `Retry-After`.
#[track_caller]
pub fn assert_unavailable(r: &Resp) {
    assert_eq!(r.status, 503, "{}: {}", r.what, r.text);
    assert_eq!(r.body["code"], "storage_unavailable", "{}", r.text);
    assert_eq!(r.body["retriable"], true, "{}", r.text);
    assert!(r.header("retry-after").is_some(), "503 carries Retry-After");
}

/// Asserts an error answer: status, `{"kind":"error","code","message","retriable"}`.
#[track_caller]
pub fn assert_error(r: &Resp, status: u16, code: &str) {
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (status, Some(code)),
        "{}: expected {status} `{code}`, got {} with body {}",
        r.what,
        r.status,
        r.text
    );
    assert_keys(
        &r.body,
        &["kind", "code", "message", "retriable"],
        &format!("{}: error body", r.what),
    );
    assert_eq!(r.body["kind"], "error", "{}: {}", r.what, r.text);
    assert!(r.body["message"].is_string(), "{}: {}", r.what, r.text);
    assert_eq!(
        r.body["retriable"],
        Value::Bool(false),
        "{}: a {status} `{code}` must not be retriable: {}",
        r.what,
        r.text
    );
}

// ---------------------------------------------------------------------------------------------
// Process side.
// ---------------------------------------------------------------------------------------------

struct PgDb {
    admin_url: String,
    name: String,
}

pub struct TestApp {
    pub api: Api,
    pub engine: Engine,
    pub db_url: String,
    pub dir: PathBuf,
    config: AppConfig,
    child: Option<Child>,
    pg: Option<PgDb>,
    starts: u32,
}

impl Deref for TestApp {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

/// Where a local PostgreSQL usually is (the README's and CI's default).
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The PostgreSQL server the PostgreSQL half runs on: `A2A_MAILBOX_TEST_POSTGRES_URL`, or else
/// a local server at [`DEFAULT_PG_URL`] if one answers (so a plain `cargo test` covers both
/// engines on a machine with PostgreSQL). `None` (the test is skipped, loudly) when there is
/// none, unless `A2A_MAILBOX_REQUIRE_POSTGRES=1`, which makes that a failure.
pub async fn postgres_base_url(test: &str) -> Option<String> {
    static PROBE: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
    if let Ok(v) = std::env::var(PG_URL_VAR) {
        if !v.trim().is_empty() {
            return Some(v);
        }
    }
    let found = PROBE
        .get_or_init(|| async {
            if let Some(url) = container::postgres().await {
                return Some(url);
            }
            let probe = tokio::time::timeout(
                Duration::from_secs(3),
                PgConnection::connect(DEFAULT_PG_URL),
            )
            .await;
            match probe {
                Ok(Ok(conn)) => {
                    let _ = conn.close().await;
                    Some(DEFAULT_PG_URL.to_owned())
                }
                _ => None,
            }
        })
        .await
        .clone();
    if found.is_none() {
        if std::env::var(REQUIRE_PG_VAR).as_deref() == Ok("1") {
            panic!(
                "{test}: {REQUIRE_PG_VAR}=1 but {PG_URL_VAR} is not set and no PostgreSQL \
                 answers at {DEFAULT_PG_URL}"
            );
        }
        // Written to the real stderr, bypassing the test harness's capture, so that CI logs
        // always show skipped tests.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED (no {PG_URL_VAR} and no PostgreSQL at {DEFAULT_PG_URL}): {test}"
        );
    }
    found
}

/// With `--features testcontainers` and a Docker socket: one PostgreSQL container for this test
/// binary, started on first use and left to testcontainers' reaper at exit.
#[cfg(feature = "testcontainers")]
mod container {
    use testcontainers_modules::postgres::Postgres;
    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::ContainerAsync;

    static RUNNING: std::sync::OnceLock<ContainerAsync<Postgres>> = std::sync::OnceLock::new();

    pub async fn postgres() -> Option<String> {
        let socket = std::env::var("DOCKER_HOST")
            .ok()
            .and_then(|h| h.strip_prefix("unix://").map(std::path::PathBuf::from))
            .unwrap_or_else(|| "/var/run/docker.sock".into());
        if !socket.exists() {
            return None;
        }
        let node = Postgres::default()
            .start()
            .await
            .unwrap_or_else(|e| panic!("starting a PostgreSQL container: {e}"));
        let port = node
            .get_host_port_ipv4(5432)
            .await
            .unwrap_or_else(|e| panic!("the PostgreSQL container's port: {e}"));
        let _ = RUNNING.set(node);
        Some(format!(
            "postgres://postgres:postgres@127.0.0.1:{port}/postgres"
        ))
    }
}

/// Without `--features testcontainers`, the running server only.
#[cfg(not(feature = "testcontainers"))]
mod container {
    pub async fn postgres() -> Option<String> {
        None
    }
}

/// `postgres://u@h:p/db?x` with the database replaced by `db`.
pub fn pg_url_with_db(base: &str, db: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (base, None),
    };
    let scheme_end = head.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = head[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(head.len());
    let mut url = format!("{}/{}", &head[..authority_end], db);
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

impl TestApp {
    /// Starts a server on a fresh database; `None` when the engine is skipped.
    pub async fn spawn(engine: Engine, config: AppConfig, test: &str) -> Option<TestApp> {
        let dir =
            std::env::temp_dir().join(format!("a2a-mailbox-test-{}", Uuid::new_v4().simple()));
        let (db_url, pg) = match engine {
            Engine::Sqlite => {
                std::fs::create_dir_all(&dir).expect("creating the test temp dir");
                (
                    format!("sqlite://{}?mode=rwc", dir.join("mailbox.db").display()),
                    None,
                )
            }
            Engine::Postgres => {
                let base = postgres_base_url(test).await?;
                std::fs::create_dir_all(&dir).expect("creating the test temp dir");
                let name = format!("a2a_t_{}", Uuid::new_v4().simple());
                let mut conn = PgConnection::connect(&base).await.unwrap_or_else(|e| {
                    panic!("{test}: cannot connect to PostgreSQL at {PG_URL_VAR}={base}: {e}")
                });
                conn.execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
                    .await
                    .unwrap_or_else(|e| panic!("{test}: CREATE DATABASE {name} failed: {e}"));
                let _ = conn.close().await;
                (
                    pg_url_with_db(&base, &name),
                    Some(PgDb {
                        admin_url: base,
                        name,
                    }),
                )
            }
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            // A redirect (the dashboard's) is an answer a test looks at.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(60))
            .build()
            .expect("building the HTTP client");
        let mut app = TestApp {
            api: Api {
                address: String::new(),
                client,
                secret: format!("test-secret-{}", Uuid::new_v4().simple()),
            },
            engine,
            db_url,
            dir,
            config,
            child: None,
            pg,
            starts: 0,
        };
        app.start().await;
        Some(app)
    }

    /// Starts the server on this app's database and waits for its listening line.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "start() while a server is running");
        self.starts += 1;
        let (child, address) = self.launch(&self.starts.to_string()).await;
        self.api.address = address;
        self.child = Some(child);
    }

    /// Starts one more server process on the same database (several instances may serve one
    /// database). It is killed when the returned handle is dropped.
    pub async fn second_instance(&mut self) -> Instance {
        self.starts += 1;
        let tag = format!("{}-extra", self.starts);
        let (child, address) = self.launch(&tag).await;
        Instance {
            api: Api {
                address,
                ..self.api.clone()
            },
            child,
        }
    }

    /// Spawns `a2a-mailbox serve` on this app's database; returns it and its base URL once it
    /// printed its listening line. Logs go to `server-<tag>.{stdout,stderr}.log` in the temp dir.
    async fn launch(&self, tag: &str) -> (Child, String) {
        let stdout_log = self.dir.join(format!("server-{tag}.stdout.log"));
        let stderr_log = self.dir.join(format!("server-{tag}.stderr.log"));
        let stderr_file = std::fs::File::create(&stderr_log).expect("creating the stderr log");

        let mut cmd = Command::new(BIN);
        cmd.arg("serve");
        for (k, _) in std::env::vars() {
            if k.starts_with("A2A_MAILBOX_") || k == "DATABASE_URL" {
                cmd.env_remove(k);
            }
        }
        cmd.env("DATABASE_URL", &self.db_url)
            .env("A2A_MAILBOX_BIND", "127.0.0.1:0")
            .env("A2A_MAILBOX_JWT_SECRET", &self.api.secret)
            .env(
                "RUST_LOG",
                std::env::var("A2A_MAILBOX_TEST_LOG").unwrap_or_else(|_| "info".into()),
            );
        for (k, v) in &self.config.env {
            cmd.env(k, v.replace("{dir}", &self.dir.display().to_string()));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr_file));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {BIN} serve: {e}"));

        // A thread reads stdout: it reports the listening line, then keeps draining into a log.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        std::thread::spawn(move || {
            let mut log = std::fs::File::create(&stdout_log).ok();
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(log) = log.as_mut() {
                    let _ = writeln!(log, "{line}");
                }
                if let Some(rest) = line.trim().strip_prefix(LISTENING_PREFIX) {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(rest.trim().trim_end_matches('/').to_owned());
                    }
                }
            }
        });

        let started = Instant::now();
        let address = match tokio::time::timeout(STARTUP_TIMEOUT, rx).await {
            Ok(Ok(addr)) => addr,
            Ok(Err(_)) => {
                let status = child.wait().ok();
                panic!(
                    "the server exited ({status:?}) before printing `{LISTENING_PREFIX}...` \
                     (DATABASE_URL={}); stderr:\n{}",
                    self.db_url,
                    read_tail(&stderr_log)
                );
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server did not print `{LISTENING_PREFIX}...` within {:?}; stderr:\n{}",
                    started.elapsed(),
                    read_tail(&stderr_log)
                );
            }
        };
        assert!(
            address.starts_with("http://"),
            "unexpected listening line address {address:?}"
        );
        (child, address)
    }

    /// SIGKILL (Unix `Child::kill`) the server, without any chance to clean up.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL the server");
            let _ = child.wait();
        }
    }

    /// kill -9, then start again on the same database (the port changes).
    pub async fn restart(&mut self) {
        self.kill();
        self.start().await;
    }

    /// The last lines of every server's stderr log of this test.
    pub fn server_log(&self) -> String {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        logs.retain(|p| p.to_string_lossy().ends_with(".stderr.log"));
        logs.sort();
        logs.iter()
            .map(|p| format!("== {} ==\n{}", p.display(), read_tail(p)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Another server process on a test app's database; killed on drop.
pub struct Instance {
    pub api: Api,
    child: Child,
}

impl Deref for Instance {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(60);
    lines[from..].join("\n")
}

/// Drops a test's PostgreSQL database. Callable from `Drop` (inside the test's runtime, also
/// while a failed test unwinds): the async clean-up runs on a thread of its own.
pub fn drop_database(admin_url: String, name: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            let mut conn = PgConnection::connect(&admin_url).await.ok()?;
            let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
            let _ = conn.execute(sql.as_str()).await;
            let _ = conn.close().await;
            Some(())
        })
    })
    .join();
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.kill();
        if let Some(pg) = self.pg.take() {
            drop_database(pg.admin_url, pg.name);
        }
        if std::thread::panicking() {
            let _ = writeln!(
                std::io::stderr(),
                "--- server logs kept in {} ({:?}); last stderr lines:\n{}",
                self.dir.display(),
                self.engine,
                self.server_log()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b64url_matches_known_vectors() {
        assert_eq!(b64url(b""), "");
        assert_eq!(b64url(b"f"), "Zg");
        assert_eq!(b64url(b"fo"), "Zm8");
        assert_eq!(b64url(b"foo"), "Zm9v");
        assert_eq!(b64url(b"foob"), "Zm9vYg");
        assert_eq!(b64url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn pg_url_gets_its_database_replaced() {
        assert_eq!(
            pg_url_with_db("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            pg_url_with_db("postgres://postgres@127.0.0.1:5432", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            pg_url_with_db("postgres://u:p@h/db?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
    }
}
