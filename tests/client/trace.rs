//! The client carries W3C trace context both ways: a task sent with `NewTask::trace` reaches the
//! worker in the leased task's `trace`, a reply sent with `Reply::trace` reaches the sender in the
//! drained result's, and a retry of the same task under another trace is the same task.

use std::time::Duration;

use a2a_mailbox_client::{NewTask, Reply, Trace};
use serde_json::json;

use super::connect;
use crate::common::TestApp;

const SENDER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const WORKER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

both_engines!(trace_context_goes_to_the_worker_and_back_to_the_sender);
async fn trace_context_goes_to_the_worker_and_back_to_the_sender(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.token("bob", json!(["a2a.respond.alice"])));
    let sent_under = Trace::parse(SENDER, Some("congo=t61rcWkgMzE")).unwrap();
    let sent = alice
        .send(NewTask::new("bob", "summarise the Q3 report").trace(sent_under.clone()))
        .await
        .unwrap();

    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(leased.task.id, sent.task_id);
    assert_eq!(leased.task.trace.as_ref(), Some(&sent_under));
    assert_eq!(
        leased.task.trace.as_ref().unwrap().trace_id(),
        &SENDER[3..35]
    );

    let reply = Reply::text("revenue up 4%").trace(Trace::parse(WORKER, None).unwrap());
    let post = reply.for_task(sent.task_id, Some(leased.lease.lease_id));
    bob.post_result(&post).await.unwrap();
    let drained = alice.next_result(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(drained.task_id, sent.task_id);
    assert_eq!(
        drained.trace.map(|t| t.traceparent),
        Some(WORKER.to_owned())
    );
}
