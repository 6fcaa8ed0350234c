//! Safe retries: a send whose answer is lost is sent again with the same task id and the same
//! `Idempotency-Key`, and the mailbox keeps one task.

use a2a_mailbox_client::types::TaskState;
use a2a_mailbox_client::{ListQuery, NewTask};
use serde_json::Value;

use super::connect_to;
use super::proxy::Proxy;
use crate::common::TestApp;

both_engines!(a_send_retried_after_a_dropped_connection_makes_one_task);
async fn a_send_retried_after_a_dropped_connection_makes_one_task(app: TestApp) {
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream, true).await;
    let alice = connect_to(&proxy.url, app.alice());
    let sent = alice
        .send(NewTask::new("bob", "exactly once"))
        .await
        .unwrap();
    assert!(
        sent.replayed,
        "the second try is answered with the first answer"
    );

    // The mailbox saw the same request twice: the same task id, the same key.
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
    assert_eq!(ids[0], serde_json::json!(sent.task_id));
    let keys: Vec<_> = sends.iter().map(|m| m.header("idempotency-key")).collect();
    assert!(keys[0].is_some() && keys[0] == keys[1], "{keys:?}");

    // One task.
    let page = alice.list_tasks(&ListQuery::default()).await.unwrap();
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.tasks[0].task.id, sent.task_id);
    assert_eq!(page.tasks[0].state, TaskState::Queued);
}

both_engines!(a_lease_whose_answer_is_lost_is_not_retried);
async fn a_lease_whose_answer_is_lost_is_not_retried(app: TestApp) {
    let alice = connect_to(&app.address, app.alice());
    let sent = alice.send(NewTask::new("bob", "lease me")).await.unwrap();
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream, true).await;
    let bob = connect_to(&proxy.url, app.bob());
    // Leasing consumes: a second try could lease another task while the first stays in
    // flight with nobody working on it, so a broken connection is handed back instead.
    let e = bob.next_task(std::time::Duration::ZERO).await.unwrap_err();
    assert!(
        matches!(
            e,
            a2a_mailbox_client::Error::Transport {
                before_sending: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(proxy.requests().len(), 1);
    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::InFlight);
}
