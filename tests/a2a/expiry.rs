//! Waiting ends with the token (docs/contract.md#waiting): an A2A stream whose token is no
//! longer accepted ends with one error event (-32603 naming `unauthenticated`, no task data) and
//! delivers nothing after; a blocking SendMessage answers its task as it is.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::rpc::*;
use super::sse::{Frame, Sse};
use crate::common::*;

fn done() -> Value {
    json!({"status": "ok", "content": [{"type": "text", "text": "done"}]})
}

/// After the stream's token expired, bob answers the task: the stream must not carry it, and
/// the answer waits, undelivered, for its sender's next drain.
async fn answered_after_the_token(app: &Api, id: &str, short: &str) {
    app.until_refused(short).await;
    assert_eq!(answer(app, &app.bob(), done()).await, id);
}

async fn still_pending_for_the_sender(app: &Api, id: &str) {
    assert_eq!(app.status_ok(id).await["state"], "result_pending");
    let drained = app.drain(&app.alice()).await.expect("the result");
    assert_eq!(drained["task_id"], id, "{drained}");
}

both_engines!(a_subscription_ends_with_its_token_and_delivers_nothing_after);
async fn a_subscription_ends_with_its_token_and_delivers_nothing_after(app: TestApp) {
    let sent = send_task(&app, "bob", &app.alice(), "refund order 9").await;
    let id = sent["id"].as_str().unwrap().to_owned();
    let short = app.expiring_token("alice", json!(["a2a.send.bob"]));
    let mut s = Sse::rpc(&app, "bob", &short, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(s.result().await["task"]["id"], id.as_str());
    answered_after_the_token(&app, &id, &short).await;
    let last = s.event().await.expect("the stream's last event");
    assert_eq!(last["id"], "req-1", "{last}");
    assert!(last.get("result").is_none(), "no task data: {last}");
    assert_eq!(last["error"]["code"], -32603, "{last}");
    let info = &last["error"]["data"][0];
    assert_eq!(
        info["metadata"]["mailboxError"], "unauthenticated",
        "{last}"
    );
    s.ends().await;
    still_pending_for_the_sender(&app, &id).await;
}

both_engines!(a_streaming_message_ends_with_its_token_on_http_json);
async fn a_streaming_message_ends_with_its_token_on_http_json(app: TestApp) {
    let short = app.expiring_token("alice", json!(["a2a.send.bob"]));
    let body = json!({"message": message("ship parcel 9")});
    let mut s = Sse::rest(
        &app,
        Method::POST,
        "bob",
        "/message:stream",
        &short,
        Some(body),
    )
    .await;
    let first = s.event().await.expect("the first event");
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    answered_after_the_token(&app, &id, &short).await;
    let last = loop {
        match s.frame().await.expect("the stream's last event") {
            Frame::Comment(_) => continue,
            Frame::Event { name, data } => break (name, data),
        }
    };
    assert_eq!(last.0.as_deref(), Some("error"), "{last:?}");
    let details = &last.1["error"]["details"][0];
    assert_eq!(
        details["metadata"]["mailboxError"], "unauthenticated",
        "{last:?}"
    );
    s.ends().await;
    still_pending_for_the_sender(&app, &id).await;
}

both_engines!(a_blocking_send_answers_its_task_as_it_is_when_its_token_expires);
async fn a_blocking_send_answers_its_task_as_it_is_when_its_token_expires(app: TestApp) {
    let short = app.expiring_token("alice", json!(["a2a.send.bob"]));
    let start = Instant::now();
    // The service blocks a SendMessage for 30 s by default.
    let params = json!({"message": message("wait for me")});
    let r = rpc(&app, "bob", &short, "SendMessage", params).await;
    let waited = start.elapsed();
    let task = &rpc_result(&r)["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{task}");
    assert!(
        waited < Duration::from_secs(15),
        "the blocking send outlived its token: {waited:?}"
    );
}
