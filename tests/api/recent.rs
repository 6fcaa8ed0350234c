//! GET /a2a/tasks/recent: queued tasks visible to the caller, oldest first, never consuming.

use serde_json::{json, Value};

use crate::common::*;

fn ids(b: &Value) -> Vec<String> {
    b["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks list in {b}"))
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

both_engines!(recent_tasks_lists_queued_tasks_oldest_first_without_consuming);
async fn recent_tasks_lists_queued_tasks_oldest_first_without_consuming(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let bob = app.bob();
    let mut for_bob = Vec::new();
    for i in 0..4 {
        for_bob.push(app.send_ok(&alice, &task("alice", "bob")).await);
        if i == 1 {
            app.send_ok(&alice, &task("alice", "carol")).await;
        }
    }

    for _ in 0..2 {
        let r = app.get("/a2a/tasks/recent", &bob).await;
        let b = r.expect(200);
        assert_eq!(b["kind"], "a2a_tasks");
        assert_eq!(ids(b), for_bob, "bob's queued tasks, oldest first: {b}");
        assert_eq!(
            b["tasks"][0]["sender"], "alice",
            "entries are A2ATask objects"
        );
        assert_eq!(b["tasks"][0]["recipient"], "bob");
    }
    let r = app.get("/a2a/tasks/recent?limit=2", &bob).await;
    assert_eq!(ids(r.expect(200)), for_bob[..2].to_vec());

    // Listing consumed nothing: the first lease still gets the oldest task.
    let (first, _) = app.lease_some(&bob).await;
    assert_eq!(first, for_bob[0]);
    let r = app.get("/a2a/tasks/recent", &bob).await;
    assert_eq!(
        ids(r.expect(200)),
        for_bob[1..].to_vec(),
        "in-flight tasks are not listed"
    );

    // The sender sees her queued tasks too (bob's three and carol's one).
    let r = app.get("/a2a/tasks/recent", &alice).await;
    assert_eq!(ids(r.expect(200)).len(), 4);
    // A bystander sees nothing.
    let r = app
        .get("/a2a/tasks/recent", &app.token("dave", json!([])))
        .await;
    assert_eq!(ids(r.expect(200)), Vec::<String>::new());
}
