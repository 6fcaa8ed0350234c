//! The key `urn:a2a-mailbox:v1:a2a` of a task's `metadata` belongs to the A2A facade: a native
//! send (single or batch) drops it, so forwarding a received task natively keeps working, and
//! the facade reads whatever it finds there without trusting its shape.

use serde_json::{json, Value};

use super::facade::{a2a_request, message, Binding};
use super::kit::{call, plant_body};
use crate::common::*;

const KEY: &str = "urn:a2a-mailbox:v1:a2a";

/// A2A GetTask of `id` on bob's agent and ListTasks (as `token`), on both bindings: each
/// answers (the harness's `call` reports a dropped connection as status 0).
async fn the_facade_reads(app: &TestApp, token: &str, id: &str) {
    let auth = format!("Bearer {token}");
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        for (method, params) in [
            ("GetTask", json!({"id": id})),
            ("ListTasks", json!({"pageSize": 100})),
        ] {
            let r = call(app, &a2a_request(b, "bob", method, params), Some(&auth)).await;
            assert_eq!(r.status, 200, "{b:?} {method}: {}", r.text);
            assert!(r.body.get("error").is_none(), "{b:?} {method}: {}", r.text);
        }
    }
}

both_engines!(a_native_send_drops_the_facades_key);
async fn a_native_send_drops_the_facades_key(app: TestApp) {
    let alice = app.alice();
    let poisoned = json!({KEY: {"message": "not an object"}, "ticket": "SUP-1"});
    let mut single = task("alice", "bob");
    single["metadata"] = poisoned.clone();
    let mut batched = task("alice", "bob");
    batched["metadata"] = poisoned;
    let single = app.send_ok(&alice, &single).await;
    let r = app
        .post("/a2a/tasks/batch", &alice, &json!({"tasks": [batched]}))
        .await;
    let batched = r.expect(201)["tasks"][0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for id in [&single, &batched] {
        let status = app.status_ok(id).await;
        assert_eq!(
            status["task"]["metadata"],
            json!({"ticket": "SUP-1"}),
            "{id}"
        );
        for token in [&alice, &full_ops(&app)] {
            the_facade_reads(&app, token, id).await;
        }
    }
}

both_engines!(a_worker_forwards_a_task_it_received_through_the_facade);
async fn a_worker_forwards_a_task_it_received_through_the_facade(app: TestApp) {
    let params = json!({"message": message("from the facade"),
        "configuration": {"returnImmediately": true}});
    let req = a2a_request(Binding::JsonRpc, "bob", "SendMessage", params);
    let r = call(&app, &req, Some(&format!("Bearer {}", app.alice()))).await;
    assert!(r.body["result"]["task"].is_object(), "{}", r.text);
    let (received, _) = app.lease(&app.bob()).await.expect("the facade's task");
    assert!(
        received["metadata"][KEY]["message"].is_object(),
        "{received}"
    );
    // Bob forwards it to himself natively, as it came: a new id, the same metadata.
    let bob = app.token("bob", json!(["a2a.send.bob"]));
    let mut forwarded = received.clone();
    forwarded["id"] = json!(uuid::Uuid::new_v4());
    forwarded["sender"] = json!("bob");
    let id = app.send_ok(&bob, &forwarded).await;
    let status = app.status_ok(&id).await;
    assert!(status["task"]["metadata"].get(KEY).is_none(), "{status}");
    the_facade_reads(&app, &full_ops(&app), &id).await;
    // The facade answers it from its content: the text sent.
    let req = a2a_request(Binding::HttpJson, "bob", "GetTask", json!({"id": id}));
    let r = call(&app, &req, Some(&format!("Bearer {}", full_ops(&app)))).await;
    let text = &r.body["history"][0]["parts"][0]["text"];
    assert_eq!(text, "from the facade", "{}", r.text);
}

both_engines!(a_wrong_shape_under_the_key_reads_as_absent);
async fn a_wrong_shape_under_the_key_reads_as_absent(app: TestApp) {
    let shapes: [Value; 5] = [
        json!({"message": "not an object"}),
        json!({"message": [1, 2]}),
        json!({"message": null}),
        json!("a string"),
        json!(7),
    ];
    let mut ids = Vec::new();
    for shape in shapes {
        let mut t = task("alice", "bob");
        let id = app.send_ok(&app.alice(), &t).await;
        // Planted as a writer bypassing the API would leave it.
        t["metadata"] = json!({KEY: shape});
        let body = serde_json::to_string(&t).unwrap();
        plant_body(&app, &id, &body).await;
        ids.push(id);
    }
    for id in &ids {
        the_facade_reads(&app, &app.alice(), id).await;
        the_facade_reads(&app, &full_ops(&app), id).await;
    }
}
