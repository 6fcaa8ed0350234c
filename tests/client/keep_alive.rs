//! Idle connections (docs/contract.md#transports): the mailbox closes a connection idle for 5 s,
//! so the client never sends a request on one that has been idle that long.

use std::time::Duration;

use a2a_mailbox_client::NewTask;

use super::connect_to;
use super::proxy::{Fault, Proxy};
use crate::common::TestApp;

/// Longer than the mailbox keeps an idle connection open.
const PAST_KEEP_ALIVE: Duration = Duration::from_millis(5_500);

both_engines!(a_lease_after_an_idle_spell_is_served);
async fn a_lease_after_an_idle_spell_is_served(app: TestApp) {
    let alice = connect_to(&app.address, app.alice());
    let sent = alice
        .send(NewTask::new("bob", "after a pause"))
        .await
        .unwrap();
    // Through the proxy, the mailbox's close of an idle connection reaches the client only when
    // the client next writes on it: the moment a client that reused it would lose its request.
    // A gateway that keeps the client's side open behaves so, and so does any connection whose
    // close crosses the client's next request on the wire.
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream, Fault::Nothing).await;
    let bob = connect_to(&proxy.url, app.bob());
    bob.version().await.unwrap();
    tokio::time::sleep(PAST_KEEP_ALIVE).await;
    // A lease goes out on a fresh connection: on the idle one, the mailbox would never read
    // it, and the call would lean on a retry.
    let leased = bob
        .next_task(Duration::ZERO)
        .await
        .unwrap()
        .expect("the task");
    assert_eq!(leased.task.id, sent.task_id);
    assert_eq!(proxy.requests().len(), 2);
}
