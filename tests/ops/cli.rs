//! The operator commands of the binary, run as real processes against a real server.

use serde_json::{json, Value};

use super::{full_ops, idem_task, send_and_lease};
use crate::common::{task, TestApp, BIN};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn cli(app: &TestApp, token: &str, args: &[&str]) -> Out {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .env("A2A_MAILBOX_URL", &app.address)
        .env("A2A_MAILBOX_TOKEN", token)
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("running the CLI");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(o: &Out, what: &str) -> String {
    assert_eq!(o.code, 0, "{what} failed: stderr {}", o.stderr);
    o.stdout.clone()
}

async fn status_json_is_one_a2a_status_object(app: TestApp) {
    let ops = full_ops(&app);
    let (leased, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let queued = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let out = ok(
        &cli(&app, &ops, &["status", "--json"]).await,
        "status --json",
    );
    let v: Value = serde_json::from_str(&out).expect("status --json prints one JSON object");
    assert_eq!(v["kind"], "a2a_status");
    assert_eq!(v["limit"], 10);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["task"]["id"], queued.as_str());
    assert_eq!(tasks[1]["task"]["id"], leased.as_str());
    assert_eq!(tasks[1]["lease_id"], lease.as_str());
    let filtered = ok(
        &cli(
            &app,
            &ops,
            &[
                "status",
                "--json",
                "--state",
                "in-flight",
                "--min-lease-age-ms",
                "3600000",
            ],
        )
        .await,
        "status filtered",
    );
    let v: Value = serde_json::from_str(&filtered).unwrap();
    assert_eq!(v["tasks"], json!([]), "no lease is an hour old");
    let human = ok(&cli(&app, &ops, &["status"]).await, "status");
    assert!(human.contains(&leased) && human.contains(&lease), "{human}");
}
both_engines!(status_json_is_one_a2a_status_object);

async fn a_stale_requeue_fails_with_both_lease_ids_and_a_real_one_succeeds(app: TestApp) {
    let ops = full_ops(&app);
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let stale = uuid::Uuid::new_v4().to_string();
    let o = cli(
        &app,
        &ops,
        &[
            "requeue",
            &id,
            "--reason",
            "stuck",
            "--duplicate-risk",
            "operator-accepted",
            "--lease-id",
            &stale,
        ],
    )
    .await;
    assert_ne!(o.code, 0, "a stale lease id must fail");
    assert!(
        o.stdout.is_empty(),
        "errors leave stdout empty: {:?}",
        o.stdout
    );
    assert!(
        o.stderr.contains(&stale) && o.stderr.contains(&lease),
        "stderr names both leases: {}",
        o.stderr
    );
    assert!(o.stderr.contains("lease_mismatch"), "{}", o.stderr);
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");

    let out = ok(
        &cli(
            &app,
            &ops,
            &[
                "requeue",
                &id,
                "--reason",
                "stuck",
                "--duplicate-risk",
                "operator-accepted",
                "--lease-id",
                &lease,
            ],
        )
        .await,
        "requeue",
    );
    assert!(out.contains("requeued"), "{out}");
    assert_eq!(app.status_ok(&id).await["state"], "queued");
    let (_, lease2) = app.lease_some(&app.bob()).await;
    assert_eq!(lease2["attempt"], 2);
}
both_engines!(a_stale_requeue_fails_with_both_lease_ids_and_a_real_one_succeeds);

async fn force_error_then_the_sender_drains_it(app: TestApp) {
    let ops = full_ops(&app);
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let out = ok(
        &cli(
            &app,
            &ops,
            &[
                "force-error",
                &id,
                "--reason",
                "poison",
                "--message",
                "cannot be done",
                "--lease-id",
                &lease,
                "--json",
            ],
        )
        .await,
        "force-error",
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"]["action"], "forced_error");
    let drained = app.drain(&app.alice()).await.expect("the forced error");
    assert_eq!(drained["status"], "error");
    assert_eq!(drained["error_message"], "cannot be done");
}
both_engines!(force_error_then_the_sender_drains_it);

async fn retry_stale_dry_run_says_what_it_would_do_and_changes_nothing(app: TestApp) {
    let ops = full_ops(&app);
    let (id, _) = send_and_lease(&app, &idem_task("k")).await;
    let out = ok(
        &cli(&app, &ops, &["retry-stale", "--min-lease-age-ms", "0"]).await,
        "retry-stale",
    );
    assert!(out.contains("nothing changed"), "{out}");
    assert!(out.contains(&format!("would requeue  {id}")), "{out}");
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
    let out = ok(
        &cli(
            &app,
            &ops,
            &[
                "retry-stale",
                "--enable",
                "--min-lease-age-ms",
                "0",
                "--json",
            ],
        )
        .await,
        "retry-stale --enable",
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["report"]["requeued"][0]["task_id"], id.as_str());
    assert_eq!(app.status_ok(&id).await["state"], "queued");
    let out = ok(&cli(&app, &ops, &["compact", "--json"]).await, "compact");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "a2a_compacted");
    // Without the right capability: non-zero, stderr, empty stdout.
    let o = cli(&app, &app.bob(), &["compact"]).await;
    assert_ne!(o.code, 0);
    assert!(
        o.stdout.is_empty() && o.stderr.contains("capability_missing"),
        "{}",
        o.stderr
    );
}
both_engines!(retry_stale_dry_run_says_what_it_would_do_and_changes_nothing);

async fn cancel_takes_back_an_in_flight_task(app: TestApp) {
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let out = ok(
        &cli(
            &app,
            &app.alice(),
            &["cancel", &id, "--reason", "withdrawn"],
        )
        .await,
        "cancel",
    );
    assert_eq!(
        out.trim(),
        format!("canceled {id} (was in_flight; lease {lease} ended)")
    );
    assert_eq!(app.status_ok(&id).await["state"], "canceled");
    let again = ok(
        &cli(&app, &app.alice(), &["cancel", &id, "--json"]).await,
        "cancel again",
    );
    let v: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(v["cancellation"]["reason"], "withdrawn");
    // Not the sender: non-zero, the refusal on stderr.
    let o = cli(&app, &app.bob(), &["cancel", &id]).await;
    assert_ne!(o.code, 0);
    assert!(
        o.stdout.is_empty() && o.stderr.contains("sender_mismatch"),
        "{}",
        o.stderr
    );
}
both_engines!(cancel_takes_back_an_in_flight_task);

async fn tasks_and_children_list_with_filters_and_cursors(app: TestApp) {
    let alice = app.alice();
    let parent = app.send_ok(&alice, &task("alice", "bob")).await;
    let mut kids = Vec::new();
    for _ in 0..3 {
        let mut t = task("alice", "bob");
        t["parent"] = json!(parent);
        kids.push(app.send_ok(&alice, &t).await);
    }
    app.post(
        &format!("/a2a/tasks/{}/cancel", kids[0]),
        &alice,
        &json!({}),
    )
    .await
    .expect(200);
    // Pages of one, followed to the end.
    let out = ok(
        &cli(&app, &alice, &["tasks", "--limit", "1", "--all", "--json"]).await,
        "tasks --all",
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tasks"].as_array().unwrap().len(), 4, "{out}");
    let out = ok(
        &cli(&app, &alice, &["tasks", "--state", "canceled"]).await,
        "tasks --state",
    );
    assert!(
        out.starts_with(&kids[0]) && out.contains("canceled"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    let out = ok(&cli(&app, &alice, &["children", &parent]).await, "children");
    assert!(
        out.starts_with(&format!(
            "children of {parent}: queued 2, in_flight 0, result_pending 0, resolved 0, canceled 1"
        )),
        "{out}"
    );
    assert_eq!(out.lines().count(), 4, "{out}");
    let o = cli(&app, &alice, &["tasks", "--state", "done"]).await;
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("invalid_request"), "{}", o.stderr);
}
both_engines!(tasks_and_children_list_with_filters_and_cursors);
