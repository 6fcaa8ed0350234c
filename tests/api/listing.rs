//! Listing and the task graph (docs/contract.md#listing): every filter, visibility, keyset cursors (also while
//! other clients insert), `children` with its `counts`, bad input, and the plan of a page.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// `GET {path}` as `token`: the page's task ids in order and its `next_cursor`.
async fn page(api: &Api, token: &str, path: &str) -> (Vec<String>, Option<String>, Value) {
    let r = api.get(path, token).await;
    let b = r.expect(200).clone();
    let ids = b["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no tasks in {}", r.what, r.text))
        .iter()
        .map(|t| t["task"]["id"].as_str().unwrap().to_owned())
        .collect();
    (ids, b["next_cursor"].as_str().map(str::to_owned), b)
}

/// Every task id of a list, following its cursors.
async fn walk(api: &Api, token: &str, query: &str) -> Vec<String> {
    let sep = if query.is_empty() { "?" } else { "&" };
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => format!("/a2a/tasks{query}"),
            Some(c) => format!("/a2a/tasks{query}{sep}cursor={c}"),
        };
        let (ids, next, _) = page(api, token, &path).await;
        out.extend(ids);
        match next {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn set(ids: &[String]) -> HashSet<String> {
    ids.iter().cloned().collect()
}

both_engines!(every_filter_of_a_list);
async fn every_filter_of_a_list(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.bob", "a2a.send.dave"]));
    let dave = app.token("dave", json!(["a2a.send.alice"]));
    let parent = Uuid::new_v4().to_string();
    let mut t1 = task("alice", "bob");
    t1["task_kind"] = json!("refund");
    t1["context_id"] = json!("conv-1");
    t1["parent"] = json!(parent);
    let a1 = app.send_ok(&alice, &t1).await;
    clock_tick().await;
    let mut t2 = task("alice", "dave");
    t2["context_id"] = json!("conv-2");
    let a2 = app.send_ok(&alice, &t2).await;
    clock_tick().await;
    let d1 = app.send_ok(&dave, &task("dave", "alice")).await;
    clock_tick().await;
    let b1 = app
        .send_ok(
            &app.token("bob", json!(["a2a.send.carol"])),
            &task("bob", "carol"),
        )
        .await;
    // `between` lies strictly after b1's creation and strictly before a3's.
    clock_tick().await;
    let between = now_ms();
    clock_tick().await;
    let a3 = app.send_ok(&alice, &task("alice", "bob")).await;
    // a1 is leased and answered; a3 is leased; d1 is canceled.
    let bob = app.token("bob", json!(["a2a.respond.alice"]));
    let (first, lease) = app.lease_some(&bob).await;
    assert_eq!(first, a1);
    let mut res = result(&a1, "ok", "done");
    res["lease_id"] = lease["lease_id"].clone();
    app.post_result(&bob, &res).await.expect(201);
    app.lease_some(&bob).await;
    app.post(&format!("/a2a/tasks/{d1}/cancel"), &dave, &json!({}))
        .await
        .expect(200);

    let ops = app.ops();
    let all = walk(&app, &ops, "").await;
    assert_eq!(
        all,
        vec![a3.clone(), b1.clone(), d1.clone(), a2.clone(), a1.clone()],
        "newest first"
    );
    let (_, _, body) = page(&app, &ops, "/a2a/tasks").await;
    assert_keys(&body, &["kind", "tasks", "next_cursor"], "page");
    assert_eq!(body["kind"], "a2a_task_page");
    assert_eq!(body["tasks"][0]["state"], "in_flight");
    assert!(body["tasks"][0]["lease"].is_object());

    let (carol, nobody) = (app.carol(), app.token("nobody", json!([])));
    let cases: Vec<(&str, String, Vec<&String>)> = vec![
        // Visibility: alice sees what she sent and what was sent to her.
        (&alice, String::new(), vec![&a3, &d1, &a2, &a1]),
        (&alice, "?role=sender".into(), vec![&a3, &a2, &a1]),
        (&alice, "?role=recipient".into(), vec![&d1]),
        (&alice, "?role=any".into(), vec![&a3, &d1, &a2, &a1]),
        (&ops, "?state=canceled".into(), vec![&d1]),
        (&ops, "?state=queued,in_flight".into(), vec![&a3, &b1, &a2]),
        (&ops, "?state=result_pending".into(), vec![&a1]),
        (&ops, "?sender=alice".into(), vec![&a3, &a2, &a1]),
        (&ops, "?recipient=bob".into(), vec![&a3, &a1]),
        (&ops, "?sender=alice&recipient=dave".into(), vec![&a2]),
        (&ops, format!("?parent={parent}"), vec![&a1]),
        (&ops, "?context_id=conv-2".into(), vec![&a2]),
        (&ops, "?task_kind=refund".into(), vec![&a1]),
        (&ops, format!("?created_after_ms={between}"), vec![&a3]),
        (
            &ops,
            format!("?created_before_ms={between}"),
            vec![&b1, &d1, &a2, &a1],
        ),
        (&ops, "?role=sender".into(), vec![]),
        (&carol, String::new(), vec![&b1]),
        (&nobody, String::new(), vec![]),
    ];
    for (token, query, want) in cases {
        let got = walk(&app, token, &query).await;
        let want: Vec<String> = want.into_iter().cloned().collect();
        assert_eq!(got, want, "GET /a2a/tasks{query}");
    }
    // Pages of one: the same order, one cursor after another.
    let ones = walk(&app, &ops, "?limit=1").await;
    assert_eq!(ones, all);
    let (ids, next, _) = page(&app, &ops, "/a2a/tasks?limit=5").await;
    assert_eq!(
        (ids.len(), next),
        (5, None),
        "a full last page has no cursor"
    );
}

both_engines!(a_cursor_walk_sees_each_existing_task_once_while_others_insert);
async fn a_cursor_walk_sees_each_existing_task_once_while_others_insert(app: TestApp) {
    let alice = app.alice();
    let mut existing = Vec::new();
    for _ in 0..60 {
        existing.push(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    let stop = Arc::new(tokio::sync::Notify::new());
    let writer = {
        let (api, stop, alice) = (app.api.clone(), stop.clone(), alice.clone());
        tokio::spawn(async move {
            let mut added = 0;
            loop {
                let t = task("alice", "bob");
                tokio::select! {
                    _ = stop.notified() => return added,
                    _ = api.send_ok(&alice, &t) => added += 1,
                }
            }
        })
    };
    // Give the writer a head start so that the walk overlaps it.
    while app.get("/a2a/tasks?limit=1", &alice).await.body["tasks"][0]["task"]["id"]
        == json!(existing.last().unwrap())
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let seen = walk(&app, &alice, "?limit=7").await;
    stop.notify_one();
    let added = writer.await.unwrap();
    assert!(added > 0, "the walk should overlap new sends");
    let mut count: HashMap<&String, usize> = HashMap::new();
    for id in &seen {
        *count.entry(id).or_default() += 1;
    }
    for id in &existing {
        assert_eq!(
            count.get(id),
            Some(&1),
            "task {id} was seen {:?} times",
            count.get(id)
        );
    }
    assert_eq!(set(&seen).len(), seen.len(), "a task appeared twice");
}

both_engines!(children_are_listed_and_counted_by_state);
async fn children_are_listed_and_counted_by_state(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let parent = app.send_ok(&alice, &task("alice", "bob")).await;
    let mut kids = Vec::new();
    for _ in 0..4 {
        let mut t = task("alice", "bob");
        t["parent"] = json!(parent);
        kids.push(app.send_ok(&alice, &t).await);
        clock_tick().await;
    }
    // The parent is the oldest queued task: lease and answer it first, then the first child.
    app.lease_some(&bob).await;
    app.post_result(&bob, &result(&parent, "ok", "p"))
        .await
        .expect(201);
    let (k0, _) = app.lease_some(&bob).await;
    assert_eq!(k0, kids[0]);
    app.post_result(&bob, &result(&k0, "ok", "k0"))
        .await
        .expect(201);
    app.lease_some(&bob).await; // kids[1] in flight
    app.post(
        &format!("/a2a/tasks/{}/cancel", kids[2]),
        &alice,
        &json!({}),
    )
    .await
    .expect(200);
    let r = app
        .get(
            &format!("/a2a/tasks/{parent}/children?state=queued"),
            &alice,
        )
        .await;
    let b = r.expect(200).clone();
    assert_keys(
        &b,
        &["kind", "parent", "counts", "tasks", "next_cursor"],
        "children",
    );
    assert_eq!(b["kind"], "a2a_task_children");
    assert_eq!(b["parent"], json!(parent));
    assert_eq!(
        b["counts"],
        json!({"queued": 1, "in_flight": 1, "result_pending": 1, "resolved": 0, "canceled": 1}),
        "counts ignore the state filter"
    );
    assert_eq!(b["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(b["tasks"][0]["task"]["id"], json!(kids[3]));
    let (ids, _, _) = page(
        &app,
        &alice,
        &format!("/a2a/tasks/{parent}/children?limit=1000"),
    )
    .await;
    let mut newest_first = kids.clone();
    newest_first.reverse();
    assert_eq!(ids, newest_first);
    // Paged: the counts stay whole.
    let b = app
        .get(&format!("/a2a/tasks/{parent}/children?limit=1"), &alice)
        .await
        .expect(200)
        .clone();
    assert_eq!(b["tasks"].as_array().unwrap().len(), 1);
    assert!(b["next_cursor"].is_string());
    assert_eq!(b["counts"]["canceled"], 1);
    // An invisible or missing parent is 404; a parent that lives elsewhere still lists its
    // children through `?parent=`.
    let r = app
        .get(&format!("/a2a/tasks/{parent}/children"), &app.carol())
        .await;
    assert_error(&r, 404, "not_found");
    let elsewhere = Uuid::new_v4().to_string();
    let r = app
        .get(&format!("/a2a/tasks/{elsewhere}/children"), &alice)
        .await;
    assert_error(&r, 404, "not_found");
    let mut orphan = task("alice", "bob");
    orphan["parent"] = json!(elsewhere);
    let o = app.send_ok(&alice, &orphan).await;
    assert_eq!(
        walk(&app, &alice, &format!("?parent={elsewhere}")).await,
        vec![o]
    );
}

both_engines!(bad_list_input_is_refused);
async fn bad_list_input_is_refused(app: TestApp) {
    let alice = app.alice();
    app.send_ok(&alice, &task("alice", "bob")).await;
    for query in [
        "?cursor=nonsense",
        "?cursor=12.not-a-uuid",
        "?state=done",
        "?state=queued,,resolved",
        "?role=owner",
        "?sender=not%20an%20agent",
        "?parent=42",
        "?created_after_ms=-1",
        "?created_before_ms=18446744073709551615",
        "?limit=many",
        "?context_id=a%00b",
        "?task_kind=a%00b",
    ] {
        let r = app.get(&format!("/a2a/tasks{query}"), &alice).await;
        assert_error(&r, 400, "invalid_request");
    }
    let r = app.get("/a2a/tasks/nope/children", &alice).await;
    assert_error(&r, 400, "invalid_request");
    // An empty cursor is the first page.
    let (ids, _, _) = page(&app, &alice, "/a2a/tasks?cursor=").await;
    assert_eq!(ids.len(), 1);
    let r = app
        .raw(
            reqwest::Method::DELETE,
            "/a2a/tasks",
            Some(&format!("Bearer {alice}")),
            None,
            None,
        )
        .await;
    assert_error(&r, 405, "method_not_allowed");
    assert_eq!(r.header("allow"), Some("POST, GET"));
}

both_engines!(a_page_is_an_index_range_scan);
async fn a_page_is_an_index_range_scan(app: TestApp) {
    use a2a_mailbox::store::{ListColumn, PageAfter, TaskFilter};
    let store = crate::common::store::open_store(&app.db_url).await;
    let after = PageAfter {
        created_at_ms: 1_736_240_000_000,
        id: Uuid::new_v4().to_string(),
    };
    let by = |c: ListColumn, v: &str| TaskFilter {
        equal: vec![(c, v.to_owned())],
        ..TaskFilter::default()
    };
    let filters = [
        ("every task", TaskFilter::default(), "tasks_newest"),
        (
            "sender",
            by(ListColumn::Sender, "alice"),
            "tasks_by_sender_newest",
        ),
        (
            "recipient",
            by(ListColumn::Recipient, "bob"),
            "tasks_by_recipient_newest",
        ),
        (
            "parent",
            by(ListColumn::Parent, &after.id),
            "tasks_by_parent_newest",
        ),
        (
            "context",
            by(ListColumn::ContextId, "c"),
            "tasks_by_context_newest",
        ),
        (
            "kind",
            by(ListColumn::TaskKind, "refund"),
            "tasks_by_kind_newest",
        ),
    ];
    for (what, filter, index) in filters {
        for cursor in [None, Some(&after)] {
            let plan = store.explain_task_page(&filter, cursor, 11).await.unwrap();
            assert!(
                plan.contains(index),
                "{what}: the page does not walk {index}:\n{plan}"
            );
            for bad in ["TEMP B-TREE", "Sort", "Seq Scan"] {
                assert!(
                    !plan.contains(bad),
                    "{what}: the page needs `{bad}`:\n{plan}"
                );
            }
            assert!(
                !plan.lines().any(|l| l.trim() == "SCAN tasks"),
                "{what}: the page scans the table:\n{plan}"
            );
            if app.engine == Engine::Sqlite {
                assert!(
                    plan.contains("SEARCH") || plan.contains("SCAN tasks USING"),
                    "{plan}"
                );
            }
        }
    }
    // The new indexes lead with sender and recipient: the reads a long-poll repeats must still
    // walk their state's partial index, not every task of the agent.
    let plan = store.explain_wakeup_checks().await.unwrap();
    // (PostgreSQL keeps a sender's queued tasks and pending results in one index.)
    let by_sender = match app.engine {
        Engine::Postgres => "tasks_waiting_by_sender",
        Engine::Sqlite => "tasks_pending_by_sender",
    };
    for index in ["tasks_queued_by_recipient", by_sender] {
        assert!(
            plan.contains(index),
            "the wake-up checks do not walk {index}:\n{plan}"
        );
    }
    store.close().await;
}
