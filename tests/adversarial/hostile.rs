//! Hostile values: oversized claims in a refused send, values of the wrong type where an id
//! belongs, huge values on every audited route, and reasons one character over the limit.
//! Every audit row stays within 4 KiB and copies at most 256 bytes of any value.

use serde_json::{json, Value};

use super::dashboard::{csrf_of, form, with_session};
use super::kit::*;
use super::world::{audit_bounded, audit_rows, fixture, snapshot, unchanged};
use crate::common::outcome::follow_outcome;
use crate::common::{full_ops, TestApp, BIN};

/// 100 KB of one character (ASCII, two-byte or three-byte, to cut at a character boundary).
fn huge(c: char) -> String {
    std::iter::repeat_n(c, 100_000 / c.len_utf8()).collect()
}

/// Checks one copied field of an audit row: `None` when the request had no such string;
/// otherwise the value is a prefix of what was sent, at most 256 bytes, and marked truncated
/// when it was cut.
fn copied(judge: &mut Judge, case: &str, row: &Value, field: &str, sent: &str) {
    let kind = &row["kind"];
    let Some(v) = kind[field].as_str() else {
        judge.fail(
            case,
            format!("{field} is not a string in {}", short(&row.to_string())),
        );
        return;
    };
    judge.check(
        v.len() <= 256 && sent.starts_with(v),
        case,
        format!("{field} is {} bytes, or not what was sent", v.len()),
    );
    let cut = v.len() < sent.len();
    judge.check(
        kind[format!("{field}_truncated")] == json!(true) || !cut,
        case,
        format!("{field} was cut without {field}_truncated: true"),
    );
}

both_engines!(oversized_claims_are_audited_within_bounds);
async fn oversized_claims_are_audited_within_bounds(app: TestApp) {
    let mut judge = Judge::default();
    let mallory = app.token("mallory", json!([]));
    let (sender, recipient, id) = (huge('x'), huge('é'), huge('€'));
    let claim = json!({"id": id, "sender": sender, "recipient": recipient, "intent_text": "x"});
    let before = snapshot(&app).await;
    for (case, path, body) in [
        ("oversized send", "/a2a/tasks", claim.clone()),
        (
            "oversized batch",
            "/a2a/tasks/batch",
            json!({"tasks": [claim.clone()]}),
        ),
    ] {
        let r = app.post(path, &mallory, &body).await;
        judge.outcome(case, SM, &native(&r), &r);
    }
    let rows: Vec<Value> = audit_rows(&app)
        .await
        .into_iter()
        .filter(|r| r["kind"]["type"] == "a2a_sender_mismatch")
        .collect();
    judge.check(
        rows.len() == 2,
        "oversized claims",
        format!("{} sender-mismatch rows", rows.len()),
    );
    for row in &rows {
        let case = "the oversized claim's audit row";
        judge.check(
            row.to_string().len() <= 4096,
            case,
            format!("{} bytes", row.to_string().len()),
        );
        copied(&mut judge, case, row, "sender", &sender);
        copied(&mut judge, case, row, "recipient", &recipient);
        copied(&mut judge, case, row, "task_id", &id);
    }
    // Values of the wrong type where an id belongs are recorded as null.
    for (what, wrong) in [
        ("an object", json!({"nested": huge('o')})),
        ("an array", json!([1, 2, huge('a')])),
        ("a number", json!(12345)),
    ] {
        let case = format!("{what} as the id of a refused send");
        let t = json!({"id": wrong, "sender": "alice", "recipient": "bob", "intent_text": "x"});
        let r = app.post("/a2a/tasks", &mallory, &t).await;
        judge.outcome(&case, SM, &native(&r), &r);
        let rows = audit_rows(&app).await;
        let last = rows
            .iter()
            .rev()
            .find(|r| r["kind"]["type"] == "a2a_sender_mismatch");
        judge.check(
            last.is_some_and(|r| r["kind"]["task_id"].is_null()),
            &case,
            format!(
                "recorded as {:?}",
                last.map(|r| short(&r["kind"].to_string()))
            ),
        );
    }
    unchanged(
        &mut judge,
        "refused oversized claims",
        &before,
        &snapshot(&app).await,
    );

    // Huge values on every other route that audits what it is given: refused, never 5xx.
    let ops = full_ops(&app);
    let fix = fixture(&app, 0).await;
    let big = huge('ß');
    let real = fix.in_flight.clone();
    let bodies: Vec<(&str, &str, &str, Value)> = vec![
        (
            "result",
            "/a2a/results",
            &mallory,
            json!({"task_id": big, "status": "ok"}),
        ),
        (
            "result with a huge message",
            "/a2a/results",
            &fix.recipient_token,
            json!({"task_id": real, "status": "error", "error_message": big, "lease_id": big}),
        ),
        (
            "repair of a huge id",
            "/a2a/repair",
            &mallory,
            json!({"task_id": big, "reason": big,
         "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}}),
        ),
        (
            "repair with a huge reason",
            "/a2a/repair",
            &ops,
            json!({"task_id": real, "reason": big,
         "command": {"action": "force_error", "message": big}}),
        ),
        (
            "retry-stale with huge values",
            "/a2a/retry-stale",
            &ops,
            json!({"enabled": big, "min_lease_age_ms": big}),
        ),
    ];
    for (case, path, token, body) in bodies {
        let before = snapshot(&app).await;
        let r = app.post(path, token, &body).await;
        judge.no_5xx(case, &r);
        judge.check(
            (400..500).contains(&r.status),
            case,
            format!("answered {}", r.status),
        );
        unchanged(&mut judge, case, &before, &snapshot(&app).await);
    }
    let before = snapshot(&app).await;
    let cancel = format!("/a2a/tasks/{}/cancel", fix.queued);
    let r = app
        .post(&cancel, &fix.sender_token, &json!({"reason": big}))
        .await;
    judge.no_5xx("cancel with a huge reason", &r);
    judge.check(
        r.status == 400,
        "cancel with a huge reason",
        format!("answered {}", r.status),
    );
    unchanged(
        &mut judge,
        "cancel with a huge reason",
        &before,
        &snapshot(&app).await,
    );
    audit_bounded(&app, &mut judge).await;
    judge.finish("oversized values");
}

both_engines!(reasons_over_1024_characters_are_refused);
/// A reason (cancel, repair) or a force_error message is at most 1,024 characters: one more is
/// 400 and changes nothing, on the API, the CLI and the dashboard (each case on a fixture of its
/// own). Exactly 1,024 characters of a two-byte character is still fine, and its audit row keeps
/// at most 256 bytes of it.
async fn reasons_over_1024_characters_are_refused(app: TestApp) {
    let mut judge = Judge::default();
    let ops = full_ops(&app);
    let over = "r".repeat(1025);
    let at_limit: String = "é".repeat(1024);
    let repair = |id: &str, reason: &str, command: Value| json!({"task_id": id, "reason": reason, "command": command});
    let requeue = json!({"action": "requeue", "duplicate_risk": "operator_accepted"});
    let force = |m: &str| json!({"action": "force_error", "message": m});
    for (n, case) in [
        "cancel reason",
        "requeue reason",
        "force_error reason",
        "force_error message",
    ]
    .into_iter()
    .enumerate()
    {
        let fix = fixture(&app, n).await;
        let (path, token, body) = match case {
            "cancel reason" => (
                format!("/a2a/tasks/{}/cancel", fix.queued),
                &fix.sender_token,
                json!({"reason": over}),
            ),
            "requeue reason" => (
                "/a2a/repair".into(),
                &ops,
                repair(&fix.in_flight, &over, requeue.clone()),
            ),
            "force_error reason" => (
                "/a2a/repair".into(),
                &ops,
                repair(&fix.in_flight, &over, force("m")),
            ),
            _ => (
                "/a2a/repair".into(),
                &ops,
                repair(&fix.in_flight, "stuck", force(&over)),
            ),
        };
        let case = format!("{case} of 1,025 characters");
        let before = snapshot(&app).await;
        let r = app.post(&path, token, &body).await;
        judge.no_5xx(&case, &r);
        judge.check(
            r.status == 400 && r.body["code"] == "invalid_request",
            &case,
            format!(
                "expected 400 invalid_request, got {} {}",
                r.status,
                short(&r.text)
            ),
        );
        unchanged(&mut judge, &case, &before, &snapshot(&app).await);
    }
    // The CLI says the same.
    for (n, command) in ["cancel", "requeue", "force-error"].into_iter().enumerate() {
        let fix = fixture(&app, 10 + n).await;
        let (f, q) = (fix.in_flight.as_str(), fix.queued.as_str());
        let (args, token) = match command {
            "cancel" => (vec!["cancel", q, "--reason", &over], &fix.sender_token),
            "requeue" => (
                vec![
                    "requeue",
                    f,
                    "--reason",
                    &over,
                    "--duplicate-risk",
                    "operator-accepted",
                ],
                &ops,
            ),
            _ => (
                vec!["force-error", f, "--reason", "stuck", "--message", &over],
                &ops,
            ),
        };
        let case = format!("CLI {command} with 1,025 characters");
        let before = snapshot(&app).await;
        let out = tokio::process::Command::new(BIN)
            .args(&args)
            .env("A2A_MAILBOX_URL", &app.address)
            .env("A2A_MAILBOX_TOKEN", token)
            .output()
            .await
            .expect("running the CLI");
        let stderr = String::from_utf8_lossy(&out.stderr);
        judge.check(
            !out.status.success() && stderr.contains("invalid_request"),
            &case,
            format!("exit {:?}: {}", out.status.code(), short(&stderr)),
        );
        unchanged(&mut judge, &case, &before, &snapshot(&app).await);
    }
    // And the dashboard's forms refuse it.
    let csrf = csrf_of(&ops);
    for (n, what) in ["cancel reason", "force_error message"]
        .into_iter()
        .enumerate()
    {
        let fix = fixture(&app, 20 + n).await;
        let target = format!("{}:{}", fix.in_flight, fix.lease);
        let req = match what {
            "cancel reason" => form(
                &format!("/dashboard/tasks/{}/cancel", fix.queued),
                &[("csrf", &csrf), ("reason", &over)],
            ),
            _ => form(
                "/dashboard/leases/act",
                &[
                    ("csrf", &csrf),
                    ("action", "force_error"),
                    ("message", &over),
                    ("task", &target),
                ],
            ),
        };
        let case = format!("dashboard {what} of 1,025 characters");
        let before = snapshot(&app).await;
        let r = call(&app, &with_session(req, Some(&ops)), None).await;
        let r = follow_outcome(&app, r, &format!("a2a_dashboard={ops}")).await;
        judge.no_5xx(&case, &r);
        judge.check(
            (400..500).contains(&r.status),
            &case,
            format!("answered {}", r.status),
        );
        unchanged(&mut judge, &case, &before, &snapshot(&app).await);
    }

    // Exactly 1,024 characters (2,048 bytes) is a valid reason; its rows copy at most 256 bytes.
    let fix = fixture(&app, 30).await;
    let cancel = format!("/a2a/tasks/{}/cancel", fix.queued);
    let r = app
        .post(&cancel, &fix.sender_token, &json!({"reason": at_limit}))
        .await;
    judge.outcome("cancel reason of 1,024 characters", OK, &native(&r), &r);
    let r = app
        .post(
            "/a2a/repair",
            &ops,
            &repair(&fix.in_flight, &at_limit, requeue),
        )
        .await;
    judge.outcome("requeue reason of 1,024 characters", OK, &native(&r), &r);
    for row in audit_rows(&app).await {
        let (t, id) = (&row["kind"]["type"], &row["kind"]["task_id"]);
        let mine = *id == json!(fix.queued) || *id == json!(fix.in_flight);
        if mine && (*t == "a2a_task_canceled" || *t == "a2a_repair_applied") {
            copied(
                &mut judge,
                &format!("the {t} row"),
                &row,
                "reason",
                &at_limit,
            );
        }
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("reasons over 1,024 characters");
}
