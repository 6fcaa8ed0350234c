//! The careless operator and the impatient client: the same action fired many times at once.
//! Ten scans at once (retry-stale and ticks mixed) never requeue more than `max_requeues`
//! together; a double-clicked repair applies once; a cancel racing a result, and two workers
//! racing for one task, each have exactly one winner.

use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::kit::*;
use super::world::{audit_bounded, audit_rows};
use crate::common::{full_ops, result, task, Api, AppConfig, Resp, TestApp};

const MAX_REQUEUES: usize = 3;

/// [`eager`], each scan bounded by [`MAX_REQUEUES`], and scans spaced as a deployment spaces
/// them: scans that start within the spacing share one bound.
fn bounded_scheduler() -> AppConfig {
    eager()
        .env(
            "A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES",
            &MAX_REQUEUES.to_string(),
        )
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS", "60000")
}

/// Sends `n` idempotent tasks `s` → `r` and leases them as `r`: their ids.
async fn stale_leases(api: &Api, s: &str, r: &str, n: usize) -> Vec<String> {
    let st = api.token(s, json!([format!("a2a.send.{r}")]));
    let rt = api.token(r, json!([]));
    let mut ids = Vec::new();
    for i in 0..n {
        let mut t = task(s, r);
        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": format!("{r}-{i}")});
        ids.push(api.send_ok(&st, &t).await);
        api.lease_some(&rt).await;
    }
    ids
}

/// Fires every request at once, spread over the instances `apis`; the answers in any order.
async fn at_once_on(apis: &[&Api], reqs: Vec<(Req, String)>) -> Vec<Resp> {
    let mut set = JoinSet::new();
    for (i, (req, token)) in reqs.into_iter().enumerate() {
        let api = apis[i % apis.len()].clone();
        set.spawn(async move { call(&api, &req, Some(&format!("Bearer {token}"))).await });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.push(r.expect("a request panicked"));
    }
    out
}

async fn at_once(api: &Api, reqs: Vec<(Req, String)>) -> Vec<Resp> {
    at_once_on(&[api], reqs).await
}

both_engines!(
    many_things_at_once_have_one_outcome,
    config = bounded_scheduler
);
async fn many_things_at_once_have_one_outcome(mut app: TestApp) {
    let mut judge = Judge::default();
    let ops = full_ops(&app);
    let other = app.second_instance().await;

    // Ten scans at once on two instances of one database: enabled retry-stale calls and ticks
    // mixed, all bounded by the same max_requeues, which bounds them together.
    let ids = stale_leases(&app, "c-s", "c-r", MAX_REQUEUES + 5).await;
    let policy = json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": MAX_REQUEUES});
    let tick = Req {
        body: None,
        content_type: None,
        ..Req::post("/a2a/scheduler/tick", &Value::Null)
    };
    let reqs = (0..10)
        .map(|i| match i % 4 {
            0 | 1 => (Req::post("/a2a/retry-stale", &policy), ops.clone()),
            _ => (tick.clone(), ops.clone()),
        })
        .collect();
    let answers = at_once_on(&[&app.api, &other.api], reqs).await;
    let mut requeued: Vec<String> = Vec::new();
    for r in &answers {
        judge.outcome("ten scans at once", OK, &native(r), r);
        for e in r.body["report"]["requeued"]
            .as_array()
            .into_iter()
            .flatten()
        {
            requeued.push(e["task_id"].as_str().unwrap_or_default().to_owned());
        }
    }
    let mut distinct = requeued.clone();
    distinct.sort();
    distinct.dedup();
    judge.check(
        requeued.len() <= MAX_REQUEUES && distinct.len() == requeued.len(),
        "ten scans at once",
        format!(
            "{} requeues in all (max {MAX_REQUEUES}), {} distinct",
            requeued.len(),
            distinct.len()
        ),
    );
    let mut queued = 0;
    for id in &ids {
        queued += usize::from(app.status_ok(id).await["state"] == "queued");
    }
    judge.check(
        queued == requeued.len(),
        "ten scans at once",
        format!("{queued} tasks queued"),
    );

    // A double-clicked repair: the same requeue, with the same lease guard, twice at once.
    let (id, lease) = {
        let st = app.token("d-s", json!(["a2a.send.d-r"]));
        let id = app.send_ok(&st, &task("d-s", "d-r")).await;
        let (_, lease) = app.lease_some(&app.token("d-r", json!([]))).await;
        (id, lease["lease_id"].as_str().unwrap().to_owned())
    };
    let body = json!({"task_id": id, "reason": "stuck", "command": {"action": "requeue",
        "lease_id": lease, "duplicate_risk": "operator_accepted"}});
    let answers = at_once(
        &app,
        vec![(Req::post("/a2a/repair", &body), ops.clone()); 2],
    )
    .await;
    let won = answers.iter().filter(|r| r.status == 200).count();
    let lost = answers.iter().filter(|r| r.status == 409).count();
    judge.check(
        won == 1 && lost == 1,
        "a double-clicked requeue",
        format!(
            "answers {:?}",
            answers.iter().map(|r| r.status).collect::<Vec<_>>()
        ),
    );
    let rows = audit_rows(&app).await;
    let applied = rows
        .iter()
        .filter(|r| {
            r["kind"]["type"] == "a2a_repair_applied" && r["kind"]["task_id"] == id.as_str()
        })
        .count();
    judge.check(
        applied == 1,
        "a double-clicked requeue",
        format!("{applied} repair rows"),
    );
    let s = app.status_ok(&id).await;
    judge.check(
        s["state"] == "queued" && s["attempt"] == 1,
        "a double-clicked requeue",
        format!("the task is {} attempt {}", s["state"], s["attempt"]),
    );

    // A cancel racing a result: exactly one of them wins, and the loser says why.
    for round in 0..4 {
        let (s, r) = (format!("x{round}-s"), format!("x{round}-r"));
        let st = app.token(&s, json!([format!("a2a.send.{r}")]));
        let rt = app.token(&r, json!([format!("a2a.respond.{s}")]));
        let id = app.send_ok(&st, &task(&s, &r)).await;
        let (_, lease) = app.lease_some(&rt).await;
        let mut answer = result(&id, "ok", "done");
        answer["lease_id"] = lease["lease_id"].clone();
        let cancel = Req::post(
            format!("/a2a/tasks/{id}/cancel"),
            &json!({"reason": "race"}),
        );
        let answers = at_once(
            &app,
            vec![
                (cancel, st.clone()),
                (Req::post("/a2a/results", &answer), rt),
            ],
        )
        .await;
        let state = app.status_ok(&id).await["state"].clone();
        let codes: Vec<(u16, Value)> = answers
            .iter()
            .map(|r| (r.status, r.body["code"].clone()))
            .collect();
        let ok = match state.as_str() {
            Some("canceled") => {
                codes.contains(&(200, Value::Null))
                    && codes.contains(&(409, json!("task_canceled")))
            }
            Some("result_pending") => {
                codes.contains(&(201, Value::Null))
                    && codes.contains(&(409, json!("not_cancelable")))
            }
            _ => false,
        };
        judge.check(
            ok,
            "a cancel racing a result",
            format!("ended {state} with {codes:?}"),
        );
    }

    // Two workers racing for one task: the recipient and a holder of a2a.lease.* for it.
    let st = app.token("l-s", json!(["a2a.send.l-r"]));
    let id = app.send_ok(&st, &task("l-s", "l-r")).await;
    let next = Req::get("/a2a/tasks/next?recipient=l-r");
    let helper = app.token("helper", json!(["a2a.lease.*"]));
    let answers = at_once(
        &app,
        vec![(next.clone(), app.token("l-r", json!([]))), (next, helper)],
    )
    .await;
    let got: Vec<&Value> = answers
        .iter()
        .map(|r| &r.body["task"]["id"])
        .filter(|v| !v.is_null())
        .collect();
    judge.check(
        got == [&json!(id)],
        "two workers racing for one task",
        format!("handed out {got:?}"),
    );
    audit_bounded(&app, &mut judge).await;
    judge.finish("many things at once");
}
