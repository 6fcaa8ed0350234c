//! A gateway in front of the mailbox that forwards a request and answers `502 Bad Gateway` in
//! place of the mailbox's answer. The mailbox acted: a send is retried (its id and key make the
//! second try harmless), but a lease or a drain is handed back to the caller, never retried,
//! since a second try would take another task or drain another result while the first one's
//! answer is lost.

use std::time::Duration;

use a2a_mailbox_client::types::TaskState;
use a2a_mailbox_client::{Error, ListQuery, NewTask, Reply};
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

#[track_caller]
fn assert_bad_gateway(e: &Error) {
    assert!(
        matches!(e, Error::UnexpectedAnswer { status: 502, .. }),
        "{e:?}"
    );
}

both_engines!(a_lease_answered_502_by_a_gateway_is_handed_back_not_retried);
async fn a_lease_answered_502_by_a_gateway_is_handed_back_not_retried(app: TestApp) {
    let alice = connect_to(&app.address, app.alice());
    let first = alice.send(NewTask::new("bob", "first")).await.unwrap();
    let second = alice.send(NewTask::new("bob", "second")).await.unwrap();
    let proxy = Proxy::start(upstream(&app), Fault::BadGateway).await;
    let bob = connect_to(&proxy.url, app.bob());

    // The mailbox leased `first` to bob; bob only hears the gateway's 502. A retry would lease
    // `second` and leave `first` in flight with nobody working on it.
    let e = bob.next_task(Duration::ZERO).await.unwrap_err();
    assert_bad_gateway(&e);
    assert!(e.retriable(), "the caller may lease again when it chooses");
    assert_eq!(passed(&proxy, "GET /a2a/tasks/next"), 1, "no second lease");
    let taken = alice.get_task(first.task_id).await.unwrap();
    assert_eq!(taken.state, TaskState::InFlight, "the lease was taken");
    let untouched = alice.get_task(second.task_id).await.unwrap();
    assert_eq!(untouched.state, TaskState::Queued);

    // The next lease is the caller's own call, on a working connection.
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(leased.task.id, second.task_id);
}

both_engines!(a_drain_answered_502_by_a_gateway_is_handed_back_and_stays_readable);
async fn a_drain_answered_502_by_a_gateway_is_handed_back_and_stays_readable(app: TestApp) {
    let proxy = Proxy::start_on(upstream(&app), Fault::BadGateway, "GET /a2a/results/next").await;
    let alice = connect_to(&proxy.url, app.alice());
    let bob = connect_to(&app.address, app.bob());
    let sent = alice.send(NewTask::new("bob", "answer me")).await.unwrap();
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let reply = Reply::text("answered").for_task(sent.task_id, Some(leased.lease.lease_id));
    bob.post_result(&reply).await.unwrap();

    // The mailbox drained the result; alice only hears the gateway's 502. A retry would find
    // nothing (or drain the next result) and the first would be lost to her.
    let e = alice.next_result(Duration::ZERO).await.unwrap_err();
    assert_bad_gateway(&e);
    assert_eq!(
        passed(&proxy, "GET /a2a/results/next"),
        1,
        "no second drain"
    );
    assert_eq!(
        alice.checkpoint().active_task_ids,
        [sent.task_id],
        "no answer came: the task stays in the checkpoint"
    );

    // Reading the task by id finds the drained result.
    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Resolved);
    let result = status.result.expect("the drained result");
    assert_eq!(result.task_id, sent.task_id);
    assert!(alice.checkpoint().active_task_ids.is_empty());
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
