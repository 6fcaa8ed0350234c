//! `a2a.operator` is all or nothing: a grant of it with a scope is not an operator grant
//! anywhere, not even for the peer its scope names. Every action that requires `a2a.operator`
//! answers such a caller 403 `capability_scope_mismatch` and changes nothing, on every surface;
//! a scoped `a2a.repair.requeue` held by a real operator narrows what an enabled scan requeues.

use serde_json::{json, Value};

use super::dashboard::{csrf_of, form, with_session};
use super::facade::{a2a_got, a2a_request, Binding};
use super::kit::*;
use super::world::{audit_bounded, audit_rows, snapshot, unchanged};
use crate::common::{task, Api, TestApp, BIN};

/// Sends an idempotent task `sender` → `recipient` and leases it: (task id, lease id).
async fn stale(api: &Api, sender: &str, recipient: &str, key: &str) -> (String, String) {
    let st = api.token(sender, json!([format!("a2a.send.{recipient}")]));
    let mut t = task(sender, recipient);
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
    let id = api.send_ok(&st, &t).await;
    let (leased, lease) = api.lease_some(&api.token(recipient, json!([]))).await;
    assert_eq!(leased, id, "{recipient} leased another task");
    (id, lease["lease_id"].as_str().unwrap().to_owned())
}

both_engines!(a_scoped_operator_is_no_operator_anywhere, config = eager);
async fn a_scoped_operator_is_no_operator_anywhere(app: TestApp) {
    let mut judge = Judge::default();
    let sops = Tok::ScopedOp.jwt(&app).unwrap();
    let bearer = format!("Bearer {sops}");
    // Stale, idempotent leases of the very peer the scope names, and of another: any scan or
    // tick that runs would requeue them at once.
    let (billing, _) = stale(&app, "payer", "billing", "b-1").await;
    let (other, _) = stale(&app, "payer", "shipping", "s-1").await;
    // The control first: a real operator whose requeue grant is scoped to billing requeues
    // billing's stale task only, and skips the other as capability_scope_mismatch.
    let narrowed = app.token(
        "ops-billing",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"peer": "billing"}}]),
    );
    let body = json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 100});
    let r = app.post("/a2a/retry-stale", &narrowed, &body).await;
    let report = &r.body["report"];
    let requeued: Vec<&Value> = report["requeued"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    judge.check(
        r.status == 200 && requeued.len() == 1 && requeued[0]["task_id"] == billing,
        "a requeue grant scoped to billing",
        format!("requeued {}", short(&r.text)),
    );
    let skipped = report["skipped"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s["task_id"] == other && s["reason"] == "capability_scope_mismatch");
    judge.check(
        skipped,
        "a requeue grant scoped to billing",
        "the other task was not skipped",
    );
    // Billing leases its task again: both are stale leases again.
    let (again, lease) = app.lease_some(&app.token("billing", json!([]))).await;
    assert_eq!(again, billing, "billing leased another task");
    let lease = lease["lease_id"].as_str().unwrap().to_owned();
    let mut before = snapshot(&app).await;
    let operator_only: Vec<(&str, Req)> = vec![
        (
            "retry-stale, dry, defaults",
            Req::post("/a2a/retry-stale", &json!({})),
        ),
        (
            "retry-stale, dry",
            Req::post("/a2a/retry-stale", &json!({"min_lease_age_ms": 0})),
        ),
        (
            "retry-stale, enabled",
            Req::post(
                "/a2a/retry-stale",
                &json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 100}),
            ),
        ),
        (
            "scheduler tick",
            Req {
                body: None,
                content_type: None,
                ..Req::post("/a2a/scheduler/tick", &Value::Null)
            },
        ),
    ];
    for (what, req) in operator_only {
        let case = format!("scoped operator: {what}");
        let r = call(&app, &req, Some(&bearer)).await;
        judge.outcome(&case, CSM, &native(&r), &r);
        let after = snapshot(&app).await;
        unchanged(&mut judge, &case, &before, &after);
        before = after;
    }
    // What an operator would see is not shown, not even for the scope's own peer.
    let reads = [
        format!("/a2a/tasks/{billing}"),
        format!("/a2a/tasks/{billing}/children"),
    ];
    for path in reads {
        let r = call(&app, &Req::get(&path), Some(&bearer)).await;
        judge.outcome(&format!("scoped operator: GET {path}"), H, &native(&r), &r);
    }
    for path in [
        "/a2a/tasks?role=any&recipient=billing",
        "/a2a/queue",
        "/a2a/tasks/recent",
    ] {
        let r = call(&app, &Req::get(path), Some(&bearer)).await;
        let case = format!("scoped operator: GET {path}");
        judge.outcome(&case, R, &native(&r), &r);
        judge.check(!r.text.contains(&billing), &case, "shows the billing task");
    }
    let r = call(&app, &Req::get("/audit/recent?limit=1000"), Some(&bearer)).await;
    let foreign = r.body["events"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|e| e["issuer"] != "sops");
    judge.check(
        !foreign,
        "scoped operator: audit feed",
        "shows others' rows",
    );
    // Its repair capability reaches no task it cannot see.
    let repair = json!({"task_id": billing, "reason": "mine", "command": {"action": "requeue",
        "lease_id": lease, "duplicate_risk": "idempotent"}});
    let r = call(&app, &Req::post("/a2a/repair", &repair), Some(&bearer)).await;
    judge.outcome("scoped operator: repair a billing task", H, &native(&r), &r);
    // The facade: an operator would see every task of the agent.
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        let r = call(
            &app,
            &a2a_request(b, "billing", "ListTasks", json!({})),
            Some(&bearer),
        )
        .await;
        let case = format!("scoped operator: ListTasks over {b:?}");
        judge.outcome(&case, R, &a2a_got(b, &r), &r);
        judge.check(!r.text.contains(&billing), &case, "shows the billing task");
        let get = a2a_request(b, "billing", "GetTask", json!({"id": billing}));
        let r = call(&app, &get, Some(&bearer)).await;
        judge.outcome(
            &format!("scoped operator: GetTask over {b:?}"),
            H,
            &a2a_got(b, &r),
            &r,
        );
    }
    // The dashboard: no session, no preview, no scan.
    for req in [
        form("/dashboard/login", &[("token", &sops)]),
        with_session(Req::get("/dashboard/retry"), Some(&sops)),
        with_session(Req::get("/dashboard/leases?min_age_ms=0"), Some(&sops)),
        with_session(
            form("/dashboard/retry", &[("csrf", &csrf_of(&sops))]),
            Some(&sops),
        ),
    ] {
        let case = format!("scoped operator: dashboard {} {}", req.method, req.path);
        let r = call(&app, &req, None).await;
        judge.check(r.status == 403, &case, format!("answered {}", r.status));
        judge.check(!r.text.contains(&billing), &case, "shows the billing task");
    }
    // The CLI.
    for args in [
        vec!["retry-stale", "--min-lease-age-ms", "0"],
        vec![
            "retry-stale",
            "--enable",
            "--min-lease-age-ms",
            "0",
            "--max-requeues",
            "100",
        ],
    ] {
        let out = tokio::process::Command::new(BIN)
            .args(&args)
            .env("A2A_MAILBOX_URL", &app.address)
            .env("A2A_MAILBOX_TOKEN", &sops)
            .output()
            .await
            .expect("running the CLI");
        let stderr = String::from_utf8_lossy(&out.stderr);
        judge.check(
            !out.status.success() && stderr.contains("capability_scope_mismatch"),
            &format!("scoped operator: CLI {}", args.join(" ")),
            format!("exit {:?}: {}", out.status.code(), short(&stderr)),
        );
    }
    let after = snapshot(&app).await;
    unchanged(&mut judge, "scoped operator, all of it", &before, &after);
    let applied = audit_rows(&app)
        .await
        .into_iter()
        .filter(|r| r["issuer"] == "sops" && r["kind"]["type"] == "a2a_repair_applied")
        .count();
    judge.check(
        applied == 0,
        "scoped operator",
        format!("{applied} repairs applied by sops"),
    );

    audit_bounded(&app, &mut judge).await;
    judge.finish("a scoped operator");
}
