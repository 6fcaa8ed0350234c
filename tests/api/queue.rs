//! GET /a2a/queue: ordering, lease fields, filters, limits and visibility (docs/contract.md#conventions, docs/contract.md#capabilities, docs/contract.md#endpoints, docs/contract.md#details).

use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

const LEASE_FIELDS: [&str; 4] = ["lease_id", "leased_to", "leased_at_ms", "heartbeat_at_ms"];

fn states(q: &Value) -> Vec<String> {
    q["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap().to_owned())
        .collect()
}

both_engines!(queue_lists_queued_fifo_then_in_flight_oldest_lease_first);
async fn queue_lists_queued_fifo_then_in_flight_oldest_lease_first(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    let (_, lease0) = app.lease_some(&bob).await;
    clock_tick().await;
    let (_, lease1) = app.lease_some(&bob).await;

    let q = app.queue(&app.ops(), "").await;
    assert_eq!(
        queue_ids(&q),
        vec![&ids[2], &ids[3], &ids[4], &ids[0], &ids[1]]
            .into_iter()
            .cloned()
            .collect::<Vec<_>>(),
        "queued FIFO first, then in-flight oldest lease first: {q}"
    );
    assert_eq!(
        states(&q),
        ["queued", "queued", "queued", "in_flight", "in_flight"]
    );
    for e in &q["tasks"].as_array().unwrap()[..3] {
        assert_eq!(e["attempt"], 0, "{e}");
        for k in LEASE_FIELDS {
            assert!(e.get(k).is_none(), "queued entry carries `{k}`: {e}");
        }
        assert!(
            e["task"]["intent_text"].is_string(),
            "entry carries the task: {e}"
        );
    }
    for (e, lease) in q["tasks"].as_array().unwrap()[3..]
        .iter()
        .zip([&lease0, &lease1])
    {
        assert_eq!(e["attempt"], 1, "{e}");
        for k in LEASE_FIELDS {
            assert_eq!(&e[k], &lease[k], "in-flight entry `{k}`: {e}");
        }
    }
    assert_eq!(q["results"], json!([]));
}

both_engines!(queue_results_show_pending_results_and_ignore_filters);
async fn queue_results_show_pending_results_and_ignore_filters(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let answered = app.send_ok(&alice, &task("alice", "bob")).await;
    let open = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    app.post_result(&bob, &result(&answered, "ok", "fine"))
        .await
        .expect(201);

    for query in [
        "",
        "?state=queued",
        "?state=in_flight",
        "?min_lease_age_ms=3600000",
        "?deadline_within_ms=1000",
    ] {
        let q = app.queue(&alice, query).await;
        let results = q["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{query}: results are never filtered: {q}");
        assert_eq!(results[0]["task_id"], json!(answered));
        assert!(results[0].get("lease_id").is_none());
    }
    let q = app.queue(&alice, "").await;
    assert_eq!(
        queue_ids(&q),
        vec![open.clone()],
        "result_pending tasks are not entries"
    );

    app.drain(&alice).await.expect("drain");
    let q = app.queue(&alice, "").await;
    assert_eq!(q["results"], json!([]), "drained results leave the queue");
}

both_engines!(queue_state_filter);
async fn queue_state_filter(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let a = app.send_ok(&alice, &task("alice", "bob")).await;
    let b = app.send_ok(&alice, &task("alice", "bob")).await;
    let c = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    let ops = app.ops();
    assert_eq!(
        queue_ids(&app.queue(&ops, "?state=queued").await),
        vec![b.clone(), c.clone()]
    );
    assert_eq!(
        queue_ids(&app.queue(&ops, "?state=in_flight").await),
        vec![a.clone()]
    );
    assert_eq!(queue_ids(&app.queue(&ops, "").await), vec![b, c, a]);
}

both_engines!(min_lease_age_drops_only_young_in_flight_entries);
async fn min_lease_age_drops_only_young_in_flight_entries(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let old = app.send_ok(&alice, &task("alice", "bob")).await;
    assert_eq!(app.lease_some(&bob).await.0, old);

    // Let the lease age (this measures age; it synchronises nothing).
    tokio::time::sleep(Duration::from_millis(900)).await;
    let young = app.send_ok(&alice, &task("alice", "bob")).await;
    assert_eq!(app.lease_some(&bob).await.0, young);
    let queued = app.send_ok(&alice, &task("alice", "bob")).await;

    let ops = app.ops();
    let all = app.queue(&ops, "?min_lease_age_ms=0").await;
    assert_eq!(
        queue_ids(&all),
        vec![queued.clone(), old.clone(), young],
        "W=0 keeps all"
    );

    let q = app.queue(&ops, "?min_lease_age_ms=600").await;
    assert_eq!(
        queue_ids(&q),
        vec![queued.clone(), old],
        "W=600ms keeps the queued entry and the lease older than 600 ms, drops the new lease: {q}"
    );
    let q = app.queue(&ops, "?min_lease_age_ms=3600000").await;
    assert_eq!(
        queue_ids(&q),
        vec![queued],
        "W=1h keeps only the queued entry"
    );
}

both_engines!(a_heartbeat_makes_a_lease_young_again);
async fn a_heartbeat_makes_a_lease_young_again(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let old = app.send_ok(&alice, &task("alice", "bob")).await;
    let refreshed = app.send_ok(&alice, &task("alice", "bob")).await;
    assert_eq!(app.lease_some(&bob).await.0, old);
    let (_, lease) = app.lease_some(&bob).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    // Lease age is measured from heartbeat_at_ms (docs/contract.md#endpoints, heartbeat).
    app.post(
        &format!("/a2a/tasks/{refreshed}/heartbeat"),
        &bob,
        &json!({"lease_id": lease["lease_id"]}),
    )
    .await
    .expect(200);
    let q = app.queue(&app.ops(), "?min_lease_age_ms=600").await;
    assert_eq!(
        queue_ids(&q),
        vec![old],
        "the refreshed lease is young again: {q}"
    );
}

both_engines!(deadline_within_keeps_only_tasks_due_within_the_window);
async fn deadline_within_keeps_only_tasks_due_within_the_window(app: TestApp) {
    let alice = app.alice();
    let now = now_ms();
    let with_deadline = |d: u64| {
        let mut t = task("alice", "bob");
        t["deadline_ms"] = json!(d);
        t
    };
    let leased_due = app.send_ok(&alice, &with_deadline(now + 60_000)).await;
    let no_deadline = app.send_ok(&alice, &task("alice", "bob")).await;
    let later = app.send_ok(&alice, &with_deadline(now + 3_600_000)).await;
    let queued_due = app.send_ok(&alice, &with_deadline(now + 30_000)).await;
    assert_eq!(app.lease_some(&app.bob()).await.0, leased_due);
    let ops = app.ops();

    let q = app.queue(&ops, "").await;
    assert_eq!(
        queue_ids(&q),
        vec![
            no_deadline,
            later.clone(),
            queued_due.clone(),
            leased_due.clone()
        ]
    );
    let q = app.queue(&ops, "?deadline_within_ms=600000").await;
    assert_eq!(
        queue_ids(&q),
        vec![queued_due.clone(), leased_due.clone()],
        "10 min window: the tasks due within a minute (queued and in flight), never the one \
         without a deadline: {q}"
    );
    let q = app.queue(&ops, "?deadline_within_ms=7200000").await;
    assert_eq!(queue_ids(&q), vec![later, queued_due, leased_due]);
    let q = app.queue(&ops, "?deadline_within_ms=0").await;
    assert_eq!(
        queue_ids(&q),
        Vec::<String>::new(),
        "nothing is due now: {q}"
    );
}

both_engines!(filters_apply_before_the_limit);
async fn filters_apply_before_the_limit(app: TestApp) {
    let alice = app.alice();
    for _ in 0..4 {
        app.send_ok(&alice, &task("alice", "bob")).await;
    }
    let mut due = task("alice", "bob");
    due["deadline_ms"] = json!(now_ms() + 60_000);
    let due = app.send_ok(&alice, &due).await;
    let ops = app.ops();
    let q = app.queue(&ops, "?deadline_within_ms=600000&limit=1").await;
    assert_eq!(
        queue_ids(&q),
        vec![due],
        "the filter runs before the limit: {q}"
    );

    // Queued entries come first in the view: a limit applied before the filter would see none.
    let (leased, _) = app.lease_some(&app.bob()).await;
    let q = app.queue(&ops, "?state=in_flight&limit=1").await;
    assert_eq!(queue_ids(&q), vec![leased]);
}

both_engines!(limit_defaults_to_10_and_clamps_to_at_least_1);
async fn limit_defaults_to_10_and_clamps_to_at_least_1(app: TestApp) {
    let alice = app.alice();
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    let ops = app.ops();
    let count = |q: Value| q["tasks"].as_array().unwrap().len();
    assert_eq!(count(app.queue(&ops, "").await), 10, "default limit 10");
    assert_eq!(
        count(app.queue(&ops, "?limit=0").await),
        1,
        "limit=0 is clamped to 1"
    );
    assert_eq!(count(app.queue(&ops, "?limit=1").await), 1);
    assert_eq!(count(app.queue(&ops, "?limit=11").await), 11);
    assert_eq!(
        count(app.queue(&ops, "?limit=5000").await),
        12,
        "limit=5000 is clamped, not refused"
    );
    assert_eq!(
        queue_ids(&app.queue(&ops, "?limit=3").await),
        ids[..3].to_vec()
    );

    let bob = app.bob();
    let recent = |b: &Value| b["tasks"].as_array().unwrap().len();
    for (q, n) in [("", 10), ("?limit=0", 1), ("?limit=5000", 12)] {
        let r = app.get(&format!("/a2a/tasks/recent{q}"), &bob).await;
        assert_eq!(recent(r.expect(200)), n, "/a2a/tasks/recent{q}");
    }
}

both_engines!(a_third_agent_sees_none_of_alices_tasks_for_bob);
async fn a_third_agent_sees_none_of_alices_tasks_for_bob(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let leased = app.send_ok(&alice, &task("alice", "bob")).await;
    let answered = app.send_ok(&alice, &task("alice", "bob")).await;
    let queued = app.send_ok(&alice, &task("alice", "bob")).await;
    assert_eq!(app.lease_some(&bob).await.0, leased);
    assert_eq!(app.lease_some(&bob).await.0, answered);
    app.post_result(&bob, &result(&answered, "ok", "x"))
        .await
        .expect(201);

    let carol = app.carol();
    let q = app.queue(&carol, "?limit=1000").await;
    assert_eq!(q["tasks"], json!([]), "carol sees no task: {q}");
    assert_eq!(q["results"], json!([]), "carol sees no result: {q}");
    let r = app.get("/a2a/tasks/recent", &carol).await;
    assert_eq!(r.expect(200)["tasks"], json!([]));
    let r = app.get("/a2a/results/recent", &carol).await;
    assert_eq!(r.expect(200)["results"], json!([]));
    assert!(app.lease(&carol).await.is_none());
    assert!(app.drain(&carol).await.is_none());

    let random = Uuid::new_v4().to_string();
    let missing = app.status(&carol, &random).await;
    assert_error(&missing, 404, "not_found");
    assert_error(&app.status(&app.ops(), &random).await, 404, "not_found");
    let blank = |b: &Value, id: &str| {
        let mut b = b.clone();
        b["message"] = json!(b["message"]
            .as_str()
            .unwrap_or_default()
            .replace(id, "<id>"));
        b
    };
    for id in [&queued, &leased, &answered] {
        let invisible = app.status(&carol, id).await;
        assert_error(&invisible, 404, "not_found");
        assert_eq!(
            blank(&invisible.body, id),
            blank(&missing.body, &random),
            "an invisible task answers exactly like a missing one"
        );
    }

    // Sender, recipient and operator see them.
    for viewer in [&alice, &bob, &app.ops()] {
        let q = app.queue(viewer, "").await;
        assert_eq!(queue_ids(&q), vec![queued.clone(), leased.clone()], "{q}");
        for id in [&queued, &leased, &answered] {
            app.status(viewer, id).await.expect(200);
        }
    }
    for viewer in [&alice, &app.ops()] {
        let q = app.queue(viewer, "").await;
        assert_eq!(q["results"].as_array().unwrap().len(), 1, "{q}");
    }
}
