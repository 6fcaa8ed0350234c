//! The Unix socket (docs/contract.md#transports): a client and a worker over the socket alone.

use std::time::Duration;

use a2a_mailbox_client::types::ResultStatus;
use a2a_mailbox_client::{Client, Leased, NewTask, Reply, Worker};

use super::{quick, SOON};
use crate::common::{AppConfig, TestApp};

fn tcp_and_socket() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_BIND", "127.0.0.1:0,unix:{dir}/mailbox.sock")
}

both_engines!(
    a_task_goes_round_trip_over_the_unix_socket,
    config = tcp_and_socket
);
async fn a_task_goes_round_trip_over_the_unix_socket(app: TestApp) {
    let socket = app.dir.join("mailbox.sock");
    let alice = a2a_mailbox_client::ClientBuilder::unix(&socket, app.alice())
        .backoff(quick())
        .build()
        .unwrap();
    let bob = Client::unix(&socket, app.bob()).unwrap();
    let version = alice.version().await.unwrap();
    assert_eq!(version.transports[1], format!("unix:{}", socket.display()));

    let sent = alice
        .send(NewTask::new("bob", "over the socket"))
        .await
        .unwrap();
    let worker = Worker::new(bob).poll_wait(Duration::from_secs(1));
    let running = tokio::spawn(async move {
        worker
            .run(|leased: Leased| async move { Reply::text(leased.task.intent_text) })
            .await
    });
    let result = alice.next_result(SOON).await.unwrap().expect("a result");
    assert_eq!(
        (result.task_id, result.status),
        (sent.task_id, ResultStatus::Ok)
    );
    running.abort();

    // A bad token is refused on the socket too.
    let stranger = Client::unix(&socket, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.").unwrap();
    let e = stranger.version().await;
    assert!(e.is_ok(), "/version needs no token");
    let e = stranger.recent_tasks(1).await.unwrap_err();
    assert_eq!(e.status(), Some(401));
}
