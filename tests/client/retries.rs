//! Safe retries: a send whose answer is lost is sent again with the same task id and the same
//! `Idempotency-Key`, and the mailbox keeps one task; a send waits out a mailbox that is down; a
//! lease whose answer is lost is retried under its `attempt_id` and answered the same lease.

use std::time::Duration;

use a2a_mailbox_client::types::TaskState;
use a2a_mailbox_client::{Backoff, Client, Error, ListQuery, NewTask};
use serde_json::Value;

use super::connect_to;
use super::proxy::{Fault, Proxy};
use crate::common::{AppConfig, TestApp};

both_engines!(a_send_retried_after_a_dropped_connection_makes_one_task);
async fn a_send_retried_after_a_dropped_connection_makes_one_task(app: TestApp) {
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream, Fault::DropAnswer).await;
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

both_engines!(a_lease_whose_answer_is_lost_is_answered_again_on_retry);
async fn a_lease_whose_answer_is_lost_is_answered_again_on_retry(app: TestApp) {
    let alice = connect_to(&app.address, app.alice());
    let sent = alice.send(NewTask::new("bob", "lease me")).await.unwrap();
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream, Fault::DropAnswer).await;
    let bob = connect_to(&proxy.url, app.bob());
    // Leasing consumes: the retry carries the first try's attempt_id, so the mailbox answers
    // the lease it gave then instead of leasing another task (here: none).
    let leased = bob
        .next_task(Duration::ZERO)
        .await
        .unwrap()
        .expect("the lease");
    assert_eq!(leased.task.id, sent.task_id);
    let tries = proxy.requests();
    assert_eq!(tries.len(), 2);
    let attempt = |head: &str| {
        head.split(['?', '&', ' '])
            .find_map(|p| p.strip_prefix("attempt_id="))
            .map(str::to_owned)
    };
    assert!(attempt(&tries[0].head).is_some());
    assert_eq!(attempt(&tries[0].head), attempt(&tries[1].head));
    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::InFlight);
    assert_eq!(status.lease.unwrap().lease_id, leased.lease.lease_id);
}

/// The mailbox on a port of its own, so that it comes back where clients expect it.
fn fixed_port() -> AppConfig {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    AppConfig::default().env("A2A_MAILBOX_BIND", &format!("127.0.0.1:{port}"))
}

both_engines!(a_send_waits_out_a_mailbox_that_is_down, config = fixed_port);
async fn a_send_waits_out_a_mailbox_that_is_down(mut app: TestApp) {
    let base = app.address.clone();
    app.kill();
    // Without retries, the refused connection comes back at once, marked retriable.
    let impatient = Client::builder(&base, app.alice())
        .backoff(Backoff::none())
        .build()
        .unwrap();
    let e = impatient
        .send(NewTask::new("bob", "now"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Transport {
                before_sending: true,
                ..
            }
        ) && e.retriable(),
        "{e:?}"
    );
    // A patient client keeps trying while the mailbox starts again.
    let patient = Client::builder(&base, app.alice())
        .backoff(Backoff {
            retries: 200,
            initial: Duration::from_millis(20),
            max: Duration::from_millis(100),
        })
        .build()
        .unwrap();
    let sending = tokio::spawn({
        let patient = patient.clone();
        async move { patient.send(NewTask::new("bob", "when you are back")).await }
    });
    app.start().await;
    assert_eq!(app.address, base);
    let sent = sending.await.unwrap().unwrap();
    let page = patient.list_tasks(&ListQuery::default()).await.unwrap();
    let ids: Vec<_> = page.tasks.iter().map(|s| s.task.id).collect();
    assert_eq!(ids, [sent.task_id]);
}
