//! The world the attacker aims at: a fixture of tasks in every state between fresh agents, a
//! snapshot of the whole mailbox read through an operator, and the bound on every audit row.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sqlx::Connection;

use super::kit::{call, enc, short, Got, Judge, Req, Want};
use crate::common::{full_ops, result, task, Api, Engine, Resp, TestApp};

/// One task in each state, between a fresh sender and a fresh recipient (`s<n>` → `r<n>`).
pub struct Fix {
    pub sender: String,
    pub recipient: String,
    pub sender_token: String,
    pub recipient_token: String,
    pub queued: String,
    /// In flight, declared idempotent with a key: the retry gate would requeue it.
    pub in_flight: String,
    pub lease: String,
    pub pending: String,
    pub resolved: String,
    pub canceled: String,
}

impl Fix {
    pub fn ids(&self) -> [&str; 5] {
        [
            &self.queued,
            &self.in_flight,
            &self.pending,
            &self.resolved,
            &self.canceled,
        ]
    }

    /// Whether a text shows any of the fixture's task ids.
    pub fn leaks_into(&self, text: &str) -> bool {
        self.ids().iter().any(|id| text.contains(id))
    }
}

fn id_of(v: &Value) -> String {
    v.as_str().expect("an id").to_owned()
}

/// Builds a fixture; `n` makes its agents unique on a server shared by many fixtures.
pub async fn fixture(api: &Api, n: usize) -> Fix {
    let (sender, recipient) = (format!("s{n}"), format!("r{n}"));
    let st = api.token(&sender, json!([format!("a2a.send.{recipient}")]));
    let rt = api.token(&recipient, json!([format!("a2a.respond.{sender}")]));
    let new = || {
        let mut t = task(&sender, &recipient);
        t["context_id"] = json!(format!("ctx-{n}"));
        t
    };
    // Leases are FIFO: each task is sent when the ones before it have left the queue.
    let resolved = api.send_ok(&st, &new()).await;
    let (_, l) = api.lease_some(&rt).await;
    let mut body = result(&resolved, "ok", "done");
    body["lease_id"] = l["lease_id"].clone();
    api.post_result(&rt, &body).await.expect(201);
    assert!(api.drain(&st).await.is_some(), "the fixture's drain");

    let pending = api.send_ok(&st, &new()).await;
    let (_, l) = api.lease_some(&rt).await;
    let mut body = result(&pending, "ok", "waiting");
    body["lease_id"] = l["lease_id"].clone();
    api.post_result(&rt, &body).await.expect(201);

    let mut idem = new();
    idem["idempotency"] = json!({"duplicate_safety": "idempotent", "key": format!("k-{n}")});
    let in_flight = api.send_ok(&st, &idem).await;
    let (_, l) = api.lease_some(&rt).await;
    let lease = id_of(&l["lease_id"]);

    let queued = api.send_ok(&st, &new()).await;
    let canceled = api.send_ok(&st, &new()).await;
    api.post(&format!("/a2a/tasks/{canceled}/cancel"), &st, &json!({}))
        .await
        .expect(200);
    Fix {
        sender,
        recipient,
        sender_token: st,
        recipient_token: rt,
        queued,
        in_flight,
        lease,
        pending,
        resolved,
        canceled,
    }
}

/// Every task's state as an operator reads it: id → state, attempt, lease, result,
/// cancellation and last update. Audit rows are left out on purpose.
pub type Snap = BTreeMap<String, Value>;

pub async fn snapshot(api: &Api) -> Snap {
    try_snapshot(api).await.unwrap_or_else(|e| panic!("{e}"))
}

/// [`snapshot`], or what the listing answered instead of a page.
pub async fn try_snapshot(api: &Api) -> Result<Snap, String> {
    let ops = Some(format!("Bearer {}", full_ops(api)));
    let mut snap = Snap::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/a2a/tasks?limit=1000&cursor={}", enc(c)),
            None => "/a2a/tasks?limit=1000".to_owned(),
        };
        let page = call(api, &Req::get(&path), ops.as_deref()).await;
        let Some(tasks) = page.body["tasks"].as_array().filter(|_| page.status == 200) else {
            return Err(format!(
                "the operator's listing answered {} {}",
                page.status,
                short(&page.text)
            ));
        };
        for t in tasks {
            snap.insert(
                t["task"]["id"].as_str().unwrap_or_default().to_owned(),
                json!({
                    "state": t["state"], "attempt": t["attempt"],
                    "lease": t["lease"]["lease_id"], "result": t["result"],
                    "cancellation": t["cancellation"], "updated_at_ms": t["updated_at_ms"],
                }),
            );
        }
        match page.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return Ok(snap),
        }
    }
}

/// Records, as one finding, every task a refused request changed.
pub fn unchanged(judge: &mut Judge, case: &str, before: &Snap, after: &Snap) {
    judge.checked += 1;
    if before == after {
        return;
    }
    let mut diffs = Vec::new();
    for (id, b) in before {
        match after.get(id) {
            Some(a) if a == b => {}
            Some(a) => diffs.push(short(&format!("{id}: {b} -> {a}"))),
            None => diffs.push(format!("{id}: {b} -> gone")),
        }
    }
    for (id, a) in after {
        if !before.contains_key(id) {
            diffs.push(short(&format!("{id}: new {a}")));
        }
    }
    judge.fail(
        case,
        format!("a refusal changed the mailbox: {}", diffs.join("; ")),
    );
}

/// Every audit row as the feed would serve it (`AuditEvent`), read from the database itself so
/// that none is missed however many there are.
pub async fn audit_rows(app: &TestApp) -> Vec<Value> {
    const SQL: &str = "SELECT event_id, timestamp_ms, issuer, kind, body FROM audit ORDER BY id";
    type Row = (String, i64, String, String, String);
    let rows: Vec<Row> = match app.engine {
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url)
                .await
                .expect("opening the test's SQLite file");
            let rows = sqlx::query_as(SQL).fetch_all(&mut c).await.expect("audit");
            let _ = c.close().await;
            rows
        }
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url)
                .await
                .expect("connecting to the test's database");
            let rows = sqlx::query_as(SQL).fetch_all(&mut c).await.expect("audit");
            let _ = c.close().await;
            rows
        }
    };
    rows.into_iter()
        .map(|(id, ts, issuer, kind, body)| {
            let mut k: Value = serde_json::from_str(&body).unwrap_or(json!({"unparsed": body}));
            if let Some(o) = k.as_object_mut() {
                o.insert("type".into(), json!(kind));
            }
            json!({"id": id, "timestamp_ms": ts, "issuer": issuer, "kind": k})
        })
        .collect()
}

/// No audit row is larger than 4 KiB, whoever asked for what.
pub async fn audit_bounded(app: &TestApp, judge: &mut Judge) {
    for row in audit_rows(app).await {
        let size = row.to_string().len();
        judge.check(
            size <= 4096,
            "audit rows are at most 4 KiB",
            format!(
                "a {} row of {size} bytes: {}",
                row["kind"]["type"],
                short(&row.to_string())
            ),
        );
    }
}

/// A walk through a table of attacks, each on a fixture: after each request its outcome is
/// judged, a refusal must have changed nothing, an allowed read must show nothing of the
/// fixture, and a request that changed the mailbox leaves the next one a fresh fixture.
pub struct Sweep<'a> {
    app: &'a TestApp,
    pub judge: Judge,
    n: usize,
    pub fix: Fix,
    before: Snap,
}

impl<'a> Sweep<'a> {
    pub async fn new(app: &'a TestApp) -> Sweep<'a> {
        Sweep {
            app,
            judge: Judge::default(),
            n: 0,
            fix: fixture(app, 0).await,
            before: snapshot(app).await,
        }
    }

    /// Judges one request: `want` is what the table says, `got` and `r` what came back.
    pub async fn judge_one(&mut self, case: &str, want: Want, got: &Got, r: &Resp) {
        self.judge.outcome(case, want, got, r);
        let after = snapshot(self.app).await;
        if want != Want::Ok {
            unchanged(&mut self.judge, case, &self.before, &after);
        }
        if want == Want::Read && *got == Got::Ok {
            self.judge.check(
                !self.fix.leaks_into(&r.text),
                case,
                format!("the list shows the fixture: {}", short(&r.text)),
            );
        }
        if want == Want::Ok || self.before != after {
            self.n += 1;
            self.fix = fixture(self.app, self.n).await;
            self.before = snapshot(self.app).await;
        } else {
            self.before = after;
        }
    }

    /// Checks every audit row's size, and fails the test with every finding.
    pub async fn finish(mut self, what: &str) {
        audit_bounded(self.app, &mut self.judge).await;
        self.judge.finish(what);
    }
}
