//! Batches: tasks leased, heartbeated, answered and drained many per request; a lease or a
//! drain retried under its `attempt_id` is answered what the first try took; results split
//! into requests that fit.

use std::collections::HashSet;
use std::time::Duration;

use a2a_mailbox_client::types::{PostResult, ResultStatus, TaskState};
use a2a_mailbox_client::{AgentId, Client, ErrorCode, LeaseRef, Leased, NewTask, Reply};
use serde_json::Value;
use uuid::Uuid;

use super::proxy::{Fault, Proxy};
use super::{connect, connect_to, quick, SOON};
use crate::common::{assert_error, TestApp};

/// Sends `n` tasks from alice to bob (in batches of at most 500); their ids, oldest first.
pub(super) async fn send_many(alice: &Client, n: usize, text: &str) -> Vec<Uuid> {
    let mut ids = Vec::with_capacity(n);
    let tasks: Vec<_> = (0..n)
        .map(|i| NewTask::new("bob", format!("{text} {i}")))
        .collect();
    for chunk in tasks.chunks(500) {
        let sent = alice.send_batch(chunk.to_vec()).await.unwrap();
        ids.extend(sent.iter().map(|s| s.task_id));
    }
    ids
}

fn ids(leased: &[Leased]) -> Vec<Uuid> {
    leased.iter().map(|l| l.task.id).collect()
}

fn reply(l: &Leased, text: &str) -> PostResult {
    Reply::text(text).for_task(l.task.id, Some(l.lease.lease_id))
}

/// The value of `name` in the query of a request's head (`GET /path?a=1&b=2 HTTP/1.1`).
fn query_value(head: &str, name: &str) -> Option<String> {
    let target = head.split(' ').nth(1)?;
    let (_, query) = target.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

both_engines!(tasks_are_leased_heartbeated_answered_and_drained_in_batches);
async fn tasks_are_leased_heartbeated_answered_and_drained_in_batches(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let sent = send_many(&alice, 5, "task").await;

    // Oldest first, each under a lease of its own; a short batch is all there was.
    let first = bob.lease_batch(None, 3, Duration::ZERO).await.unwrap();
    assert_eq!(ids(&first), sent[..3]);
    let me = AgentId::parse("bob").unwrap();
    let rest = bob.lease_batch(Some(&me), 10, SOON).await.unwrap();
    assert_eq!(ids(&rest), sent[3..]);
    assert!(bob
        .lease_batch(None, 10, Duration::ZERO)
        .await
        .unwrap()
        .is_empty());
    assert!(bob.lease_batch(None, 0, SOON).await.unwrap().is_empty());
    let leased = [first, rest].concat();
    let leases: HashSet<_> = leased.iter().map(|l| l.lease.lease_id).collect();
    assert_eq!(leases.len(), 5);

    // Every lease extended in one call; a lease that is not the task's is refused alone.
    let refs: Vec<_> = leased
        .iter()
        .map(|l| LeaseRef {
            task_id: l.task.id,
            lease_id: l.lease.lease_id,
        })
        .collect();
    let extended = bob.heartbeat_leases(&refs).await.unwrap();
    assert_eq!(extended.iter().map(|i| i.task_id).collect::<Vec<_>>(), sent);
    for (item, l) in extended.iter().zip(&leased) {
        assert_eq!((item.status, item.code), (200, None), "{item:?}");
        assert_eq!(item.lease.as_ref().unwrap().lease_id, l.lease.lease_id);
    }
    let stale = LeaseRef {
        task_id: sent[0],
        lease_id: Uuid::now_v7(),
    };
    let refused = bob.heartbeat_leases(&[stale]).await.unwrap();
    assert_eq!(refused[0].status, 409);
    assert_eq!(refused[0].code, Some(ErrorCode::LeaseMismatch));

    // A drain waiting meanwhile is answered once the results are stored.
    let drainer = alice.clone();
    let draining = tokio::spawn(async move { drainer.drain_results(10, SOON).await });
    // One answer is fenced by a lease that is not the task's: refused alone, at its place.
    let mut replies: Vec<_> = leased.iter().map(|l| reply(l, "done")).collect();
    replies[2].lease_id = Some(Uuid::now_v7());
    let posted = bob.post_results(replies.clone()).await.unwrap();
    assert_eq!(posted.iter().map(|i| i.task_id).collect::<Vec<_>>(), sent);
    for (i, item) in posted.iter().enumerate() {
        if i == 2 {
            assert_eq!(
                (item.status, item.code),
                (409, Some(ErrorCode::LeaseMismatch))
            );
        } else {
            assert_eq!((item.status, item.code, item.replayed), (201, None, false));
        }
    }
    // The same answers again: replays.
    replies.remove(2);
    let again = bob.post_results(replies).await.unwrap();
    assert!(
        again.iter().all(|i| i.status == 200 && i.replayed),
        "{again:?}"
    );
    let late = reply(&leased[2], "late");
    assert_eq!(bob.post_results(vec![late]).await.unwrap()[0].status, 201);

    let mut drained = draining.await.unwrap().unwrap();
    assert!(!drained.is_empty());
    while drained.len() < 5 {
        drained.extend(alice.drain_results(10, SOON).await.unwrap());
    }
    let got: HashSet<_> = drained.iter().map(|r| r.task_id).collect();
    assert_eq!(got, sent.iter().copied().collect());
    assert!(drained.iter().all(|r| r.status == ResultStatus::Ok));
    assert!(alice.checkpoint().active_task_ids.is_empty());
    assert!(alice
        .drain_results(10, Duration::ZERO)
        .await
        .unwrap()
        .is_empty());
    let status = alice.get_task(sent[4]).await.unwrap();
    assert_eq!(status.state, TaskState::Resolved);
}

both_engines!(a_retry_with_the_same_attempt_id_answers_the_same_leases_and_results);
async fn a_retry_with_the_same_attempt_id_answers_the_same_leases_and_results(app: TestApp) {
    let alice = connect(&app, app.alice());
    let sent = send_many(&alice, 4, "once").await;
    let bob = app.bob();
    let lease_ids = |b: &Value| -> Vec<(String, String)> {
        b["leases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let task = l["task"]["id"].as_str().unwrap().to_owned();
                (task, l["lease"]["lease_id"].as_str().unwrap().to_owned())
            })
            .collect()
    };

    let attempt = Uuid::new_v4();
    let query = format!("?max=2&wait_ms=0&attempt_id={attempt}");
    let first = app.next(&bob, &query).await.expect(200).clone();
    assert_eq!(first["kind"], "a2a_task_batch");
    let taken = lease_ids(&first);
    let expected: Vec<_> = sent[..2].iter().map(Uuid::to_string).collect();
    assert_eq!(
        taken.iter().map(|t| t.0.clone()).collect::<Vec<_>>(),
        expected
    );
    // The answer was lost: the retry takes nothing new.
    let again = app.next(&bob, &query).await.expect(200).clone();
    assert_eq!(lease_ids(&again), taken);
    // Another attempt takes what is left; the first attempt_id for another request is refused.
    let other = app
        .next(&bob, &format!("?max=2&attempt_id={}", Uuid::new_v4()))
        .await;
    assert_eq!(lease_ids(other.expect(200)).len(), 2);
    let reused = app
        .next(&bob, &format!("?max=3&attempt_id={attempt}"))
        .await;
    assert_error(&reused, 422, "idempotency_key_reused");

    // A single lease, too.
    let single_id = send_many(&alice, 1, "single").await[0];
    let query = format!("?attempt_id={}", Uuid::new_v4());
    let single = app.next(&bob, &query).await.expect(200).clone();
    assert_eq!(single["task"]["id"], single_id.to_string());
    let again = app.next(&bob, &query).await.expect(200).clone();
    assert_eq!(again["lease"]["lease_id"], single["lease"]["lease_id"]);

    // Draining: the same results again, then the rest under another attempt.
    let bob_client = connect(&app, app.bob());
    let answers: Vec<_> = [&first, other.expect(200)]
        .iter()
        .flat_map(|b| lease_ids(b))
        .map(|(task, lease)| {
            Reply::text("ok").for_task(task.parse().unwrap(), Some(lease.parse().unwrap()))
        })
        .collect();
    let posted = bob_client.post_results(answers).await.unwrap();
    assert!(posted.iter().all(|i| i.status == 201), "{posted:?}");
    let alice_token = app.alice();
    let query = format!("/a2a/results/next?max=3&attempt_id={}", Uuid::new_v4());
    let drained = app.get(&query, &alice_token).await.expect(200).clone();
    assert_eq!(drained["kind"], "a2a_result_batch");
    assert_eq!(drained["results"].as_array().unwrap().len(), 3);
    let again = app.get(&query, &alice_token).await.expect(200).clone();
    assert_eq!(again["results"], drained["results"]);
    let rest = alice.drain_results(10, Duration::ZERO).await.unwrap();
    assert_eq!(rest.len(), 1);
}

both_engines!(a_lost_batch_answer_is_retried_under_its_attempt_id);
async fn a_lost_batch_answer_is_retried_under_its_attempt_id(app: TestApp) {
    let alice = connect(&app, app.alice());
    let sent = send_many(&alice, 3, "lost").await;
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start_on(upstream.clone(), Fault::DropAnswer, "GET /a2a/tasks/next").await;
    let bob = connect_to(&proxy.url, app.bob());
    // The mailbox leased two tasks, the answer was lost, the retry is answered the same two.
    let leased = bob.lease_batch(None, 2, Duration::ZERO).await.unwrap();
    assert_eq!(ids(&leased), sent[..2]);
    let tries: Vec<_> = proxy.requests().iter().map(|m| m.head.clone()).collect();
    assert_eq!(tries.len(), 2, "{tries:?}");
    let attempts: Vec<_> = tries.iter().map(|h| query_value(h, "attempt_id")).collect();
    assert!(
        attempts[0].is_some() && attempts[0] == attempts[1],
        "{tries:?}"
    );
    for l in &leased {
        let status = alice.get_task(l.task.id).await.unwrap();
        assert_eq!(status.lease.unwrap().lease_id, l.lease.lease_id);
    }
    // Nothing is stranded: the next call leases the third task, under a new attempt_id.
    let next = bob.lease_batch(None, 2, Duration::ZERO).await.unwrap();
    assert_eq!(ids(&next), sent[2..]);
    let last = proxy.requests().last().unwrap().head.clone();
    assert_ne!(query_value(&last, "attempt_id"), attempts[0]);

    // A drain likewise.
    let replies = [leased, next]
        .concat()
        .iter()
        .map(|l| reply(l, "ok"))
        .collect();
    bob.post_results(replies).await.unwrap();
    let proxy = Proxy::start_on(upstream, Fault::DropAnswer, "GET /a2a/results/next").await;
    let alice = connect_to(&proxy.url, app.alice());
    let drained = alice.drain_results(10, Duration::ZERO).await.unwrap();
    assert_eq!(drained.len(), 3);
    assert_eq!(proxy.requests().len(), 2);
}

both_engines!(results_are_posted_in_requests_that_fit);
async fn results_are_posted_in_requests_that_fit(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let sent = send_many(&alice, 600, "big").await;
    let mut leased = Vec::new();
    while leased.len() < 600 {
        let batch = bob.lease_batch(None, 100, Duration::ZERO).await.unwrap();
        assert!(!batch.is_empty() && batch.len() <= 100);
        leased.extend(batch);
    }
    assert_eq!(ids(&leased), sent);
    // 2 KB a result: 1.2 MB in all, under the default body limit, over 500 items.
    let text = "x".repeat(2000);
    let replies: Vec<_> = leased.iter().map(|l| reply(l, &text)).collect();
    let upstream = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream.clone(), Fault::Nothing).await;
    let posting = connect_to(&proxy.url, app.bob());
    let posted = posting.post_results(replies.clone()).await.unwrap();
    assert_eq!(posted.iter().map(|i| i.task_id).collect::<Vec<_>>(), sent);
    assert!(posted.iter().all(|i| i.status == 201), "{posted:?}");
    let sizes = |p: &Proxy| -> Vec<usize> {
        p.requests()
            .iter()
            .filter(|m| m.head.starts_with("POST /a2a/results/batch "))
            .map(|m| {
                serde_json::from_slice::<Value>(&m.body).unwrap()["results"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .collect()
    };
    assert_eq!(sizes(&proxy), [500, 100]);

    // With a 256 KiB limit, the same results go out in requests of at most 256 KiB each.
    let limit = 256 * 1024;
    let proxy = Proxy::start(upstream, Fault::Nothing).await;
    let small = Client::builder(&proxy.url, app.bob())
        .backoff(quick())
        .batch_body_limit(limit)
        .build()
        .unwrap();
    let again = small.post_results(replies).await.unwrap();
    assert_eq!(again.iter().map(|i| i.task_id).collect::<Vec<_>>(), sent);
    assert!(again.iter().all(|i| i.status == 200 && i.replayed));
    let counts = sizes(&proxy);
    assert_eq!(counts.iter().sum::<usize>(), 600);
    assert!(counts.len() >= 5, "{counts:?}");
    for m in proxy.requests() {
        assert!(m.body.len() <= limit, "{} bytes", m.body.len());
    }

    let mut drained = 0;
    while drained < 600 {
        drained += alice
            .drain_results(100, Duration::ZERO)
            .await
            .unwrap()
            .len();
    }
    assert_eq!(drained, 600);
}
