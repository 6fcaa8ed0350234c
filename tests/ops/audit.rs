//! `GET /audit/recent` (docs/contract.md#audit) and the atomicity of audit rows with their changes.

use serde_json::{json, Value};

use super::{full_ops, idem_task, send_and_lease};
use crate::common::{result, task, TestApp};

async fn feed(app: &TestApp, token: &str, query: &str) -> Vec<Value> {
    let r = app.get(&format!("/audit/recent{query}"), token).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "audit_events", "{}", r.text);
    b["events"].as_array().unwrap().clone()
}

async fn callers_see_their_own_rows_and_operators_see_all(app: TestApp) {
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    // A refused send is audited too, with the missing action.
    let refused = app.send(&app.alice(), &task("alice", "carol")).await;
    assert_eq!(refused.status, 403);
    let mine = feed(&app, &app.alice(), "?limit=100").await;
    assert!(!mine.is_empty());
    assert!(mine.iter().all(|e| e["issuer"] == "alice"), "{mine:?}");
    let checks: Vec<&Value> = mine
        .iter()
        .filter(|e| e["kind"]["type"] == "capability_check")
        .collect();
    assert_eq!(checks.len(), 2, "{mine:?}");
    // Newest first.
    assert_eq!(
        checks[0]["kind"],
        json!({"type": "capability_check", "scope_id": "a2a-send:carol",
               "required_actions": ["a2a.send.carol"], "missing_actions": ["a2a.send.carol"], "passed": false})
    );
    assert_eq!(checks[1]["kind"]["passed"], true);
    for e in &mine {
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(
            keys.len(),
            4,
            "AuditEvent has id, timestamp_ms, issuer, kind: {e}"
        );
        assert!(e["id"].is_string() && e["timestamp_ms"].is_u64(), "{e}");
    }
    assert!(
        feed(&app, &app.carol(), "").await.is_empty(),
        "carol sees nobody else's rows"
    );
    let all = feed(&app, &app.ops(), "?limit=1000").await;
    assert!(all.len() >= mine.len());
    // kind and since_ms filters, and limit.
    let only = feed(&app, &app.ops(), "?kind=capability_check&limit=1000").await;
    assert!(only.iter().all(|e| e["kind"]["type"] == "capability_check"));
    let newest = only[0]["timestamp_ms"].as_u64().unwrap();
    let since = feed(
        &app,
        &app.ops(),
        &format!("?since_ms={newest}&kind=capability_check"),
    )
    .await;
    assert!(since
        .iter()
        .all(|e| e["timestamp_ms"].as_u64().unwrap() >= newest));
    assert!(!since.is_empty());
    assert_eq!(feed(&app, &app.ops(), "?limit=1").await.len(), 1);
    for bad in ["?limit=x", "?since_ms=-1"] {
        let r = app.get(&format!("/audit/recent{bad}"), &app.ops()).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
    }
}
both_engines!(callers_see_their_own_rows_and_operators_see_all);

/// A kind other than `capability_check` is read through its own (partial) index, the common
/// kind by walking the table newest first; either way the filters combine: an agent sees only
/// its own rows of the kind, an operator everyone's, and `since_ms` still applies.
async fn a_rarer_kind_filters_alone_and_with_the_callers_own_rows(app: TestApp) {
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let unknown = json!({"task_id": uuid::Uuid::new_v4(), "status": "ok", "content": []});
    for token in [app.bob(), app.alice()] {
        let r = app.post("/a2a/results", &token, &unknown).await;
        assert_eq!(r.status, 404, "{}", r.text);
    }
    let rejected = |events: &[Value]| -> Vec<String> {
        assert!(
            events
                .iter()
                .all(|e| e["kind"]["type"] == "a2a_result_rejected"),
            "{events:?}"
        );
        events
            .iter()
            .map(|e| e["issuer"].as_str().unwrap().to_owned())
            .collect()
    };
    let bobs = feed(&app, &app.bob(), "?kind=a2a_result_rejected").await;
    assert_eq!(rejected(&bobs), ["bob"]);
    let all = feed(&app, &app.ops(), "?kind=a2a_result_rejected").await;
    assert_eq!(rejected(&all), ["alice", "bob"], "newest first");
    let after = all[0]["timestamp_ms"].as_u64().unwrap() + 1;
    let none = feed(
        &app,
        &app.ops(),
        &format!("?kind=a2a_result_rejected&since_ms={after}"),
    )
    .await;
    assert!(none.is_empty(), "{none:?}");
    // The common kind: alice's send check, not her rejection.
    let checks = feed(&app, &app.alice(), "?kind=capability_check").await;
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0]["issuer"], "alice");
    assert!(feed(&app, &app.carol(), "?kind=a2a_result_rejected")
        .await
        .is_empty());
}
both_engines!(a_rarer_kind_filters_alone_and_with_the_callers_own_rows);

/// The server stores a send or a result along one of several paths (PostgreSQL: a single
/// statement for the common case, a transaction otherwise; an `Idempotency-Key` always takes the
/// transaction). Whichever it took, the write's `capability_check` row is the same.
async fn every_path_writes_the_same_capability_row(app: TestApp) {
    let keyed = |k: &'static str| [("Idempotency-Key", k)];
    let plain = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let with_key = app
        .post_with(
            "/a2a/tasks",
            &app.alice(),
            &task("alice", "bob"),
            &keyed("s-1"),
        )
        .await
        .expect(201)["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let third = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let sends: Vec<Value> = feed(&app, &app.alice(), "?kind=capability_check&limit=100")
        .await
        .iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(sends.len(), 3, "{sends:?}");
    for k in &sends {
        assert_eq!(
            k,
            &json!({"type": "capability_check", "scope_id": "a2a-send:bob",
                    "required_actions": ["a2a.send.bob"], "missing_actions": [], "passed": true})
        );
    }
    // bob answers: with a grant naming alice, with a wildcard grant, and under a key.
    let wildcard = app.token("bob", json!(["a2a.respond.*"]));
    let mut answered = vec![];
    for (token, headers) in [
        (app.bob(), &[][..]),
        (wildcard.clone(), &[][..]),
        (app.bob(), &keyed("r-1")[..]),
    ] {
        let (id, lease) = app.lease_some(&app.bob()).await;
        let body = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
                          "content": [{"type": "text", "text": "ok"}]});
        app.post_with("/a2a/results", &token, &body, headers)
            .await
            .expect(201);
        answered.push(id);
    }
    let mut expected_ids = vec![plain, with_key, third];
    expected_ids.sort();
    let mut got_ids = answered.clone();
    got_ids.sort();
    assert_eq!(got_ids, expected_ids);
    let rows = feed(&app, &app.ops(), "?kind=capability_check&limit=100").await;
    let mut results: Vec<Value> = rows
        .iter()
        .filter(|e| e["issuer"] == "bob")
        .map(|e| e["kind"].clone())
        .collect();
    results.reverse(); // oldest first, as answered
    let expected: Vec<Value> = answered
        .iter()
        .map(|id| {
            json!({"type": "capability_check", "scope_id": format!("a2a-respond:{id}"),
                   "required_actions": ["a2a.respond.alice"], "missing_actions": [], "passed": true})
        })
        .collect();
    assert_eq!(results, expected);
    for id in &answered {
        assert!(app.drain(&app.alice()).await.is_some(), "result of {id}");
    }
}
both_engines!(every_path_writes_the_same_capability_row);

async fn a_killed_server_never_leaves_a_repair_without_its_row(mut app: TestApp) {
    let ops = full_ops(&app);
    let mut leases = vec![];
    for i in 0..40 {
        leases.push(send_and_lease(&app, &idem_task(&format!("a{i}"))).await);
    }
    // Fire the repairs concurrently and kill -9 the server while they run.
    let api = app.api.clone();
    let ops2 = ops.clone();
    let firing = tokio::spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for (id, lease) in leases {
            let api = api.clone();
            let ops = ops2.clone();
            set.spawn(async move {
                let body = json!({"task_id": id, "reason": "crash test",
                    "command": {"action": "requeue", "duplicate_risk": "idempotent", "lease_id": lease}});
                let _ = api
                    .client
                    .post(api.url("/a2a/repair"))
                    .bearer_auth(&ops)
                    .json(&body)
                    .send()
                    .await;
            });
        }
        while set.join_next().await.is_some() {}
    });
    // Kill as soon as the first repair is visible as applied.
    loop {
        let q = app.queue(&app.ops(), "?state=queued&limit=1000").await;
        if !q["tasks"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    app.kill();
    let _ = firing.await;
    app.start().await;
    // A COMMIT the killed server sent just before dying may still land (PostgreSQL finishes it
    // for the dead connection), so compare snapshots until two agree; with atomic audit rows
    // they must then match exactly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let before = requeued_ids(&app).await;
        let mut audited: Vec<String> = super::audit_rows(&app, "a2a_repair_applied")
            .await
            .iter()
            .map(|r| r["kind"]["task_id"].as_str().unwrap().to_owned())
            .collect();
        audited.sort();
        let after = requeued_ids(&app).await;
        assert!(!after.is_empty(), "no repair landed before the kill");
        if before == after && after == audited {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "requeued tasks and their audit rows differ: requeued {after:?}, audited {audited:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
both_engines!(a_killed_server_never_leaves_a_repair_without_its_row);

async fn requeued_ids(app: &TestApp) -> Vec<String> {
    let q = app.queue(&app.ops(), "?state=queued&limit=1000").await;
    let mut ids: Vec<String> = q["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["task"]["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

both_engines!(every_audit_row_is_identified_by_a_uuid_v7);
async fn every_audit_row_is_identified_by_a_uuid_v7(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    // Rows from every way an audit row is written: a send and a result (the fast paths, and on
    // PostgreSQL the group-commit function), a refused send, a batch (one row: its one check).
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let mut r = result(&id, "ok", "done");
    r["lease_id"] = lease["lease_id"].clone();
    app.post_result(&bob, &r).await.expect(201);
    app.send(&alice, &task("alice", "carol")).await;
    let batch = json!({"tasks": [task("alice", "bob"), task("alice", "bob")]});
    app.post("/a2a/tasks/batch", &alice, &batch)
        .await
        .expect(201);
    let all = feed(&app, &app.ops(), "?limit=1000").await;
    assert_eq!(all.len(), 4, "{all:?}");
    let mut seen = std::collections::HashSet::new();
    for e in &all {
        let text = e["id"]
            .as_str()
            .unwrap_or_else(|| panic!("id is not a string: {e}"));
        let u = uuid::Uuid::parse_str(text).unwrap_or_else(|_| panic!("not a UUID: {e}"));
        assert_eq!(text, u.hyphenated().to_string(), "lower-case, hyphenated");
        assert_eq!(u.get_version_num(), 7, "{e}");
        // Time-ordered: its first 48 bits are the Unix time in ms of the row's writing.
        let b = u.as_bytes();
        let ms = b[..6]
            .iter()
            .fold(0u64, |acc, x| (acc << 8) | u64::from(*x));
        let at = e["timestamp_ms"].as_u64().unwrap();
        assert!(ms.abs_diff(at) < 5_000, "{ms} vs {at}: {e}");
        assert!(seen.insert(text.to_owned()), "two rows share {text}");
    }
}
