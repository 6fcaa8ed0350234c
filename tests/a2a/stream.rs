//! A2A streams on the wire (docs/contract.md#a2a-streaming): the events and their order on both
//! bindings, keep-alive comments, the time limit, a client that goes away, and many streams at
//! once.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::rpc::*;
use super::sse::{update_state, Frame, Sse};
use crate::common::*;

/// bob leases the next task natively and answers it with `outcome` (a result body without its
/// task and lease ids); answers the task id.
async fn answer(app: &Api, outcome: Value) -> String {
    let (id, lease) = app.lease_some(&app.bob()).await;
    let mut body = outcome;
    body["task_id"] = json!(id);
    body["lease_id"] = lease["lease_id"].clone();
    app.post_result(&app.bob(), &body).await.expect(201);
    id
}

fn ok(text: &str) -> Value {
    json!({"status": "ok", "content": [{"type": "text", "text": text}]})
}

/// The events after the first of a task that is leased and answered with "done": WORKING, the
/// artifact, COMPLETED.
async fn worked_and_completed(app: &Api, s: &mut Sse, next: impl AsyncFn(&mut Sse) -> Value) {
    let (id, lease) = app.lease_some(&app.bob()).await;
    let working = next(s).await;
    assert_eq!(update_state(&working), "TASK_STATE_WORKING", "{working}");
    assert_eq!(working["statusUpdate"]["taskId"], id.as_str());
    let body = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
        "content": [{"type": "text", "text": "done"}]});
    app.post_result(&app.bob(), &body).await.expect(201);
    let artifact = next(s).await;
    let update = &artifact["artifactUpdate"];
    assert_eq!(update["taskId"], id.as_str(), "{artifact}");
    assert_eq!(update["lastChunk"], true, "{artifact}");
    assert_eq!(update["artifact"]["parts"][0]["text"], "done", "{artifact}");
    let done = next(s).await;
    assert_eq!(update_state(&done), "TASK_STATE_COMPLETED", "{done}");
    s.ends().await;
    // Read through the stream, the result is delivered, as GetTask would.
    assert_eq!(app.status_ok(&id).await["state"], "resolved");
}

both_engines!(a_stream_shows_the_task_submitted_working_then_completed_on_both_bindings);
async fn a_stream_shows_the_task_submitted_working_then_completed_on_both_bindings(app: TestApp) {
    let alice = app.alice();
    let params = json!({"message": message("refund order 1")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    let first = s.result().await;
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(
        first["task"]["history"][0]["parts"][0]["text"],
        "refund order 1"
    );
    worked_and_completed(&app, &mut s, async |s: &mut Sse| s.result().await).await;

    let body = json!({"message": message("refund order 2")});
    let mut s = Sse::rest(
        &app,
        Method::POST,
        "bob",
        "/message:stream",
        &alice,
        Some(body),
    )
    .await;
    let first = s.event().await.expect("the first event");
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    worked_and_completed(&app, &mut s, async |s: &mut Sse| {
        s.event().await.expect("an event")
    })
    .await;
}

both_engines!(the_same_streaming_message_again_lands_on_the_same_task_and_shows_it_as_it_is);
async fn the_same_streaming_message_again_lands_on_the_same_task_and_shows_it_as_it_is(
    app: TestApp,
) {
    let alice = app.alice();
    let params = json!({"message": message("ship parcel 7")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params.clone()).await;
    let id = s.result().await["task"]["id"].clone();
    drop(s);
    answer(&app, ok("shipped")).await;
    // A reconnect with the same message: the same task, now terminal; its result, and the end.
    let mut again = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    let task = again.result().await["task"].clone();
    assert_eq!(task["id"], id);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "shipped");
    again.ends().await;
    assert_eq!(
        app.status_ok(id.as_str().unwrap()).await["state"],
        "resolved"
    );
}

both_engines!(a_subscription_sees_a_requeue_and_a_cancel_from_another_connection);
async fn a_subscription_sees_a_requeue_and_a_cancel_from_another_connection(app: TestApp) {
    let alice = app.alice();
    let task = send_task(&app, "bob", &alice, "charge card 9").await;
    let id = task["id"].as_str().unwrap().to_owned();
    let path = format!("/tasks/{id}:subscribe");
    let mut s = Sse::rest(&app, Method::GET, "bob", &path, &alice, None).await;
    let first = s.event().await.unwrap();
    assert_eq!(first["task"]["id"], id.as_str());
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_SUBMITTED");

    let (_, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(
        update_state(&s.event().await.unwrap()),
        "TASK_STATE_WORKING"
    );
    let requeue = json!({"task_id": id, "reason": "worker died", "command":
        {"action": "requeue", "duplicate_risk": "operator_accepted", "lease_id": lease["lease_id"]}});
    app.post("/a2a/repair", &full_ops(&app), &requeue)
        .await
        .expect(200);
    assert_eq!(
        update_state(&s.event().await.unwrap()),
        "TASK_STATE_SUBMITTED"
    );

    let r = rpc(&app, "bob", &alice, "CancelTask", json!({"id": id})).await;
    rpc_result(&r);
    let canceled = s.event().await.unwrap();
    assert_eq!(update_state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    s.ends().await;

    // A terminal task has nothing to stream: -32004; an invisible one -32001.
    let r = rpc(&app, "bob", &alice, "SubscribeToTask", json!({"id": id})).await;
    rpc_error(&r, -32004, "UNSUPPORTED_OPERATION");
    let r = rpc(
        &app,
        "bob",
        &app.carol(),
        "SubscribeToTask",
        json!({"id": id}),
    )
    .await;
    rpc_error(&r, -32001, "TASK_NOT_FOUND");
    let r = rest(&app, Method::POST, "bob", &path, &alice, None).await;
    rest_error(&r, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
}

both_engines!(a_failed_task_ends_its_stream_with_the_error_text);
async fn a_failed_task_ends_its_stream_with_the_error_text(app: TestApp) {
    let alice = app.alice();
    let params = json!({"message": message("charge card 10")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    s.result().await;
    // WORKING is awaited before the answer: a stream reports the state it finds when a commit
    // wakes it, so a lease answered at once may show only FAILED (docs/decisions.md, Streams).
    let (id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(update_state(&s.result().await), "TASK_STATE_WORKING");
    let body = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "error",
        "error_message": "card declined"});
    app.post_result(&app.bob(), &body).await.expect(201);
    let failed = s.result().await;
    assert_eq!(update_state(&failed), "TASK_STATE_FAILED", "{failed}");
    assert_eq!(
        failed["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        "card declined"
    );
    s.ends().await;
}

fn quick_streams() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_A2A_KEEP_ALIVE_MS", "100")
        .env("A2A_MAILBOX_A2A_STREAM_MS", "1000")
}

both_engines!(
    a_quiet_stream_sends_keep_alives_and_ends_at_its_time_limit,
    config = quick_streams
);
async fn a_quiet_stream_sends_keep_alives_and_ends_at_its_time_limit(app: TestApp) {
    let alice = app.alice();
    let started = Instant::now();
    let params = json!({"message": message("wait for me")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    let (mut comments, mut events) = (0, Vec::new());
    while let Some(frame) = s.frame().await {
        match frame {
            Frame::Comment(_) => comments += 1,
            Frame::Event { data, .. } => events.push(data["result"].clone()),
        }
    }
    let lasted = started.elapsed();
    assert!(lasted >= Duration::from_millis(1000), "{lasted:?}");
    assert!(
        comments >= 5,
        "{comments} keep-alive comments in {lasted:?}"
    );
    // The Task first, and at the end the task as it is so far.
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(events[1]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
}

both_engines!(a_client_that_goes_away_frees_its_waiting_place_at_once);
async fn a_client_that_goes_away_frees_its_waiting_place_at_once(app: TestApp) {
    let alice = app.alice();
    let task = send_task(&app, "bob", &alice, "follow me").await;
    let path = format!("/tasks/{}:subscribe", task["id"].as_str().unwrap());
    let mut s = Sse::rest(&app, Method::GET, "bob", &path, &alice, None).await;
    s.event().await.unwrap();
    app.until_metric("a2a_waiters", 1.0).await;
    // Gone long before the next keep-alive (15 s): the server notices the closed connection.
    drop(s);
    app.until_metric("a2a_waiters", 0.0).await;
}

fn two_streams_each() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_MAX_WAITING_PER_CALLER", "2")
}

both_engines!(
    a_stream_counts_as_a_waiting_request_of_its_caller,
    config = two_streams_each
);
async fn a_stream_counts_as_a_waiting_request_of_its_caller(app: TestApp) {
    let alice = app.alice();
    let mut open = Vec::new();
    for _ in 0..2 {
        let params = json!({"message": message("hold")});
        let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
        s.result().await;
        open.push(s);
    }
    let params = json!({"message": message("one too many")});
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params});
    let r = app
        .post_with(
            "/a2a/agents/bob/jsonrpc",
            &alice,
            &body,
            &[("A2A-Version", "1.0")],
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.body["code"], "too_many_waiting", "{}", r.text);
    assert_eq!(r.body["retriable"], true, "{}", r.text);
    assert_eq!(r.header("retry-after"), Some("1"));
    // Refused before anything was written: only the two streamed tasks are queued.
    let queued = app.queue(&app.ops(), "?recipient=bob").await;
    assert_eq!(queue_ids(&queued).len(), 2, "{queued}");
}

both_engines!(two_hundred_streams_on_one_recipient_each_end_with_their_own_result);
async fn two_hundred_streams_on_one_recipient_each_end_with_their_own_result(app: TestApp) {
    const N: usize = 200;
    let alice = app.alice();
    let mut streams = Vec::new();
    for i in 0..N {
        let api = app.api.clone();
        let alice = alice.clone();
        streams.push(tokio::spawn(async move {
            let params = json!({"message": message(&format!("job {i}"))});
            let mut s = Sse::rpc(&api, "bob", &alice, "SendStreamingMessage", params).await;
            let id = s.result().await["task"]["id"].as_str().unwrap().to_owned();
            let mut states = Vec::new();
            let mut text = None;
            while let Some(e) = s.event().await {
                let r = &e["result"];
                if let Some(a) = r.get("artifactUpdate") {
                    text = a["artifact"]["parts"][0]["text"]
                        .as_str()
                        .map(str::to_owned);
                } else {
                    states.push(update_state(r).to_owned());
                }
            }
            (id, states, text)
        }));
    }
    app.until_metric("a2a_waiters", N as f64).await;
    // bob works through the queue, answering each task with its own id.
    for _ in 0..N {
        let (id, lease) = app.lease_some(&app.bob()).await;
        let body = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
            "content": [{"type": "text", "text": id}]});
        app.post_result(&app.bob(), &body).await.expect(201);
    }
    for s in streams {
        let (id, states, text) = s.await.unwrap();
        assert_eq!(text.as_deref(), Some(id.as_str()), "{id}: its own result");
        assert_eq!(
            states.last().map(String::as_str),
            Some("TASK_STATE_COMPLETED"),
            "{id}: {states:?}"
        );
        assert!(
            states.len() <= 2,
            "{id}: WORKING at most once, then COMPLETED: {states:?}"
        );
    }
    app.until_metric("a2a_waiters", 0.0).await;
}

fn looks_every_2_s() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_A2A_KEEP_ALIVE_MS", "2000")
}

both_engines!(
    a_stream_on_one_instance_follows_work_done_through_another,
    config = looks_every_2_s
);
async fn a_stream_on_one_instance_follows_work_done_through_another(mut app: TestApp) {
    let other = app.second_instance().await;
    let alice = app.alice();
    let params = json!({"message": message("across instances")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    s.result().await;
    // bob works through the other instance.
    let started = Instant::now();
    let (id, lease) = other.lease_some(&other.bob()).await;
    let working = s.result().await;
    assert_eq!(update_state(&working), "TASK_STATE_WORKING");
    if app.engine == Engine::Postgres {
        // Told by the other instance's notification, not by the stream's own look every 2 s.
        let took = started.elapsed();
        assert!(took < Duration::from_millis(1500), "{took:?}");
    }
    let body = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
        "content": [{"type": "text", "text": "done elsewhere"}]});
    other.post_result(&other.bob(), &body).await.expect(201);
    let artifact = s.result().await;
    assert_eq!(
        artifact["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "done elsewhere"
    );
    assert_eq!(update_state(&s.result().await), "TASK_STATE_COMPLETED");
    s.ends().await;
}
