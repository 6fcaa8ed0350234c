//! Waiting ends with the token (docs/contract.md#waiting): a long-poll never outlives its
//! token's expiry plus the 30 s of leeway; it then answers its empty answer and takes nothing.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// Long enough that a long-poll still waiting when it ends was not ended by its token.
const LONGEST: Duration = Duration::from_secs(15);

both_engines!(a_long_poll_answers_empty_when_its_token_expires_and_takes_nothing_after);
async fn a_long_poll_answers_empty_when_its_token_expires_and_takes_nothing_after(app: TestApp) {
    let bob = app.expiring_token("bob", json!([]));
    let alice = app.expiring_token("alice", json!(["a2a.send.bob"]));
    let start = Instant::now();
    let (lease, drain) = tokio::join!(
        app.next(&bob, "?wait_ms=30000"),
        app.get("/a2a/results/next?wait_ms=30000", &alice),
    );
    let waited = start.elapsed();
    let lease = lease.expect(200);
    assert_eq!(
        (&lease["kind"], &lease["task"], &lease["lease"]),
        (&json!("a2a_task_opt"), &json!(null), &json!(null)),
        "{lease}"
    );
    let drain = drain.expect(200);
    assert_eq!(drain["kind"], "a2a_result_opt", "{drain}");
    assert_eq!(drain["result"], json!(null), "{drain}");
    assert!(
        waited < LONGEST,
        "the long-polls outlived their tokens: {waited:?}"
    );
    // The tokens are refused now, and what is sent after waits for a live one.
    app.until_refused(&bob).await;
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    assert_eq!(app.status_ok(&id).await["state"], "queued");
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id);
}
