//! A gateway in front of the mailbox that forwards a request and answers `502 Bad Gateway` in
//! place of the mailbox's answer. The mailbox acted, and every call is retried: a send's id and
//! key make the second try harmless, and a lease's or a drain's `attempt_id` makes the mailbox
//! answer what the first try took instead of taking another task or result.

use std::time::Duration;

use a2a_mailbox_client::types::TaskState;
use a2a_mailbox_client::{ListQuery, NewTask, Reply};
use serde_json::Value;

use super::connect_to;
use super::proxy::{Fault, Proxy};
use crate::common::TestApp;

/// The mailbox's `host:port`, for the proxy.
fn upstream(app: &TestApp) -> String {
    app.address.trim_start_matches("http://").to_owned()
}

/// The requests that passed the proxy whose request line starts with `target`.
fn passed(proxy: &Proxy, target: &str) -> usize {
    let requests = proxy.requests();
    requests
        .iter()
        .filter(|m| m.head.starts_with(target))
        .count()
}

both_engines!(a_lease_answered_502_by_a_gateway_is_retried_and_answered_the_same_lease);
async fn a_lease_answered_502_by_a_gateway_is_retried_and_answered_the_same_lease(app: TestApp) {
    let alice = connect_to(&app.address, app.alice());
    let first = alice.send(NewTask::new("bob", "first")).await.unwrap();
    let second = alice.send(NewTask::new("bob", "second")).await.unwrap();
    let proxy = Proxy::start(upstream(&app), Fault::BadGateway).await;
    let bob = connect_to(&proxy.url, app.bob());

    // The mailbox leased `first` to bob; bob only heard the gateway's 502. The retry carries
    // the same attempt_id, so the mailbox answers that lease again instead of leasing `second`.
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(leased.task.id, first.task_id);
    assert_eq!(passed(&proxy, "GET /a2a/tasks/next"), 2, "one retry");
    let taken = alice.get_task(first.task_id).await.unwrap();
    assert_eq!(taken.lease.unwrap().lease_id, leased.lease.lease_id);
    let untouched = alice.get_task(second.task_id).await.unwrap();
    assert_eq!(untouched.state, TaskState::Queued);

    // The next lease is a new call: it takes `second`.
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(leased.task.id, second.task_id);
}

both_engines!(a_drain_answered_502_by_a_gateway_is_retried_and_answered_the_same_result);
async fn a_drain_answered_502_by_a_gateway_is_retried_and_answered_the_same_result(app: TestApp) {
    let proxy = Proxy::start_on(upstream(&app), Fault::BadGateway, "GET /a2a/results/next").await;
    let alice = connect_to(&proxy.url, app.alice());
    let bob = connect_to(&app.address, app.bob());
    let sent = alice.send(NewTask::new("bob", "answer me")).await.unwrap();
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let reply = Reply::text("answered").for_task(sent.task_id, Some(leased.lease.lease_id));
    bob.post_result(&reply).await.unwrap();

    // The mailbox drained the result; alice only heard the gateway's 502. The retry, under the
    // same attempt_id, is answered the result drained then.
    let result = alice.next_result(Duration::ZERO).await.unwrap();
    assert_eq!(result.expect("the drained result").task_id, sent.task_id);
    assert_eq!(passed(&proxy, "GET /a2a/results/next"), 2, "one retry");
    assert!(alice.checkpoint().active_task_ids.is_empty());
    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Resolved);
}

both_engines!(a_send_answered_502_by_a_gateway_is_retried_and_makes_one_task);
async fn a_send_answered_502_by_a_gateway_is_retried_and_makes_one_task(app: TestApp) {
    let proxy = Proxy::start(upstream(&app), Fault::BadGateway).await;
    let alice = connect_to(&proxy.url, app.alice());
    let sent = alice.send(NewTask::new("bob", "once")).await.unwrap();
    assert!(sent.replayed, "the retry is answered with the first answer");
    let sends: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|m| m.head.starts_with("POST /a2a/tasks "))
        .collect();
    assert_eq!(sends.len(), 2, "{sends:?}");
    let ids: Vec<Value> = sends
        .iter()
        .map(|m| serde_json::from_slice::<Value>(&m.body).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids[0], ids[1]);
    let page = alice.list_tasks(&ListQuery::default()).await.unwrap();
    let listed: Vec<_> = page.tasks.iter().map(|s| s.task.id).collect();
    assert_eq!(listed, [sent.task_id]);
}
