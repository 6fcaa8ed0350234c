//! PostgreSQL's group commit (src/mailbox/batch.rs, migration 0003): concurrent requests share a
//! batch (one transaction), whatever their kinds, and a request that must wait for a row another
//! transaction holds waits alone. PostgreSQL only: SQLite's single writer batches everything
//! by design, and nothing outside it can hold one row.

use std::time::{Duration, Instant};

use sqlx::{Connection, Executor, PgConnection};
use tokio::task::JoinSet;

use crate::common::*;

/// Waits until some session of this database waits for a lock.
async fn a_lock_wait(db_url: &str) {
    let mut c = PgConnection::connect(db_url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE NOT l.granted AND a.datname = current_database()",
        )
        .fetch_one(&mut c)
        .await
        .unwrap();
        if n > 0 {
            let _ = c.close().await;
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no request ever waited for the lock"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn metric(api: &Api, sample: &str) -> f64 {
    api.metric(sample).await
}

/// Runs `body` on PostgreSQL only; with `two_http_workers`, on a server with two HTTP workers,
/// whose lane runs on the main runtime rather than on the one HTTP worker of a server with one
/// (the default on 2 cores), so both placements of the lane are tested on a 2-core machine.
macro_rules! postgres_only {
    ($name:ident) => {
        postgres_only!($name, $name, AppConfig::default());
    };
    ($name:ident, two_http_workers: $body:ident) => {
        postgres_only!(
            $name,
            $body,
            AppConfig::default().env("A2A_MAILBOX_HTTP_WORKERS", "2")
        );
    };
    ($name:ident, $body:ident, $config:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            run(
                Engine::Postgres,
                concat!(module_path!(), "::", stringify!($name)),
                $config,
                bodies::$body,
            )
            .await;
        }
    };
}

postgres_only!(concurrent_sends_share_one_transaction);
postgres_only!(
    concurrent_sends_share_one_transaction_with_two_http_workers,
    two_http_workers: concurrent_sends_share_one_transaction
);
postgres_only!(
    a_send_a_lease_a_result_and_a_drain_share_one_transaction_with_two_http_workers,
    two_http_workers: a_send_a_lease_a_result_and_a_drain_share_one_transaction
);
postgres_only!(
    a_waiting_lease_is_leased_in_the_transaction_that_queued_it_with_two_http_workers,
    two_http_workers: a_waiting_lease_is_leased_its_task_in_the_transaction_that_queued_it
);
postgres_only!(a_send_a_lease_a_result_and_a_drain_share_one_transaction);
postgres_only!(a_result_waiting_for_a_locked_task_holds_up_no_other_result);
postgres_only!(a_batch_the_database_refuses_runs_its_requests_alone);
postgres_only!(a_waiting_lease_is_leased_its_task_in_the_transaction_that_queued_it);
postgres_only!(a_waiting_drain_takes_its_result_in_the_transaction_that_stored_it);
postgres_only!(a_poll_whose_wait_ends_while_it_rides_in_a_batch_gets_what_the_batch_took);

mod bodies {
    use super::*;

    /// Starts a transaction on a new connection that inserts `ids` as tasks and does not commit:
    /// a send of one of those ids must wait for it.
    async fn hold_ids(db_url: &str, ids: &[&str]) -> PgConnection {
        let mut holder = PgConnection::connect(db_url).await.unwrap();
        holder.execute("BEGIN").await.unwrap();
        for id in ids {
            sqlx::query(
                "INSERT INTO tasks (id, sender, recipient, body, state, queue_seq, created_at_ms, \
                 updated_at_ms) VALUES ($1, 'alice', 'bob', '{}', 'queued', 0, 0, 0)",
            )
            .bind(id)
            .execute(&mut holder)
            .await
            .unwrap();
        }
        holder
    }

    /// Another transaction inserts a task and does not commit; alice then sends a task under the
    /// same id, which waits for it (it may yet commit), and with it the batch it is in. Answers
    /// the holding connection (ROLLBACK it to let the batch go) and alice's pending send.
    async fn a_held_send(app: &TestApp) -> (PgConnection, tokio::task::JoinHandle<Resp>) {
        let held = task("alice", "bob");
        let holder = hold_ids(&app.db_url, &[held["id"].as_str().unwrap()]).await;
        let (api, alice) = (app.api.clone(), app.alice());
        let first = tokio::spawn(async move { api.send(&alice, &held).await });
        a_lock_wait(&app.db_url).await;
        (holder, first)
    }

    async fn waiting(app: &TestApp, kind: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let sample = format!("a2a_pg_batch_waiting{{kind=\"{kind}\"}}");
        while metric(app, &sample).await < n as f64 {
            assert!(
                Instant::now() < deadline,
                "the {kind} requests never queued for a batch"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn waiting_sends(app: &TestApp, n: usize) {
        waiting(app, "send", n).await;
    }

    /// Waits until `n` long-polls of `kind` are parked in the batch lane.
    async fn parked(app: &TestApp, kind: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let sample = format!("a2a_pg_parked_polls{{kind=\"{kind}\"}}");
        while metric(app, &sample).await < n as f64 {
            assert!(Instant::now() < deadline, "the {kind} poll never parked");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The transaction id that last wrote the row `sql` selects (its `xmin`).
    async fn writer_of(db_url: &str, sql: &str, id: &str) -> String {
        let mut c = PgConnection::connect(db_url).await.unwrap();
        let (xmin,): (String,) = sqlx::query_as(sql)
            .bind(id)
            .fetch_one(&mut c)
            .await
            .unwrap_or_else(|e| panic!("{sql} ({id}): {e}"));
        let _ = c.close().await;
        xmin
    }

    const TASK_WRITER: &str = "SELECT xmin::text FROM tasks WHERE id = $1";
    /// The transaction of the `capability_check` audit row of task `$1`'s send.
    const SEND_WRITER: &str =
        "SELECT a.xmin::text FROM audit a JOIN tasks t ON a.issuer = t.sender \
         WHERE t.id = $1 AND a.kind = 'capability_check' \
         AND a.body::jsonb ->> 'scope_id' = 'a2a-send:' || t.recipient \
         ORDER BY a.id DESC LIMIT 1";
    /// The transaction of the `capability_check` audit row of task `$1`'s result.
    const RESULT_WRITER: &str = "SELECT xmin::text FROM audit WHERE kind = 'capability_check' \
         AND body::jsonb ->> 'scope_id' = 'a2a-respond:' || $1";

    pub async fn a_waiting_lease_is_leased_its_task_in_the_transaction_that_queued_it(
        app: TestApp,
    ) {
        let (alice, bob) = (app.alice(), app.bob());
        let poll = {
            let (api, bob) = (app.api.clone(), bob.clone());
            tokio::spawn(async move { api.next(&bob, "?wait_ms=20000").await })
        };
        parked(&app, "claim", 1).await;
        let before = metric(&app, "a2a_pg_batch_transactions_total").await;
        let t = app.send_ok(&alice, &task("alice", "bob")).await;
        let r = poll.await.unwrap();
        assert_eq!(r.expect(200)["task"]["id"].as_str(), Some(t.as_str()));
        assert_eq!(r.body["lease"]["attempt"], 1);
        // One transaction queued the task and leased it: the send's audit row and the leased
        // row were written by it, and no batch ran after it.
        assert_eq!(
            writer_of(&app.db_url, TASK_WRITER, &t).await,
            writer_of(&app.db_url, SEND_WRITER, &t).await,
            "the lease was not taken in the send's transaction"
        );
        assert_eq!(
            metric(&app, "a2a_pg_batch_transactions_total").await,
            before + 1.0
        );
        assert_eq!(
            metric(&app, "a2a_handoffs_total{kind=\"claim\"}").await,
            1.0
        );
        assert_eq!(
            metric(&app, "a2a_pg_parked_polls{kind=\"claim\"}").await,
            0.0
        );
        let status = app.status_ok(&t).await;
        assert_eq!(status["state"], "in_flight");
        assert_eq!(status["lease"]["leased_to"], "bob");
    }

    pub async fn a_waiting_drain_takes_its_result_in_the_transaction_that_stored_it(app: TestApp) {
        let (alice, bob) = (app.alice(), app.bob());
        let t = app.send_ok(&alice, &task("alice", "bob")).await;
        let (_, lease) = app.lease_some(&bob).await;
        let drain = {
            let (api, alice) = (app.api.clone(), alice.clone());
            tokio::spawn(async move { api.get("/a2a/results/next?wait_ms=20000", &alice).await })
        };
        parked(&app, "drain", 1).await;
        let before = metric(&app, "a2a_pg_batch_transactions_total").await;
        let mut answer = result(&t, "ok", "done");
        answer["lease_id"] = lease["lease_id"].clone();
        app.post_result(&bob, &answer).await.expect(201);
        let r = drain.await.unwrap();
        let drained = &r.expect(200)["result"];
        assert_eq!(drained["task_id"].as_str(), Some(t.as_str()));
        assert_eq!(drained["content"][0]["text"], "done");
        assert_eq!(
            writer_of(&app.db_url, TASK_WRITER, &t).await,
            writer_of(&app.db_url, RESULT_WRITER, &t).await,
            "the drain did not take the result in the result's transaction"
        );
        assert_eq!(
            metric(&app, "a2a_pg_batch_transactions_total").await,
            before + 1.0
        );
        assert_eq!(
            metric(&app, "a2a_handoffs_total{kind=\"drain\"}").await,
            1.0
        );
        assert_eq!(app.status_ok(&t).await["state"], "resolved");
    }

    pub async fn a_poll_whose_wait_ends_while_it_rides_in_a_batch_gets_what_the_batch_took(
        app: TestApp,
    ) {
        let bob = app.bob();
        const WAIT: Duration = Duration::from_millis(500);
        let started = Instant::now();
        let poll = {
            let (api, bob) = (app.api.clone(), bob.clone());
            let query = format!("?wait_ms={}", WAIT.as_millis());
            tokio::spawn(async move { api.next(&bob, &query).await })
        };
        parked(&app, "claim", 1).await;
        // A send to bob is held up in its batch by another transaction's insert of its id; bob's
        // parked claim rides in that batch. Bob's wait ends while the batch is held.
        let (mut holder, send) = a_held_send(&app).await;
        assert!(
            started.elapsed() < WAIT,
            "the batch was held only after the poll's wait had ended; nothing was tested"
        );
        tokio::time::sleep_until((started + WAIT + Duration::from_millis(300)).into()).await;
        assert!(
            !poll.is_finished(),
            "the poll answered while its claim rode in a batch that had not committed"
        );
        holder.execute("ROLLBACK").await.unwrap();
        let _ = holder.close().await;
        let t = send.await.unwrap().expect(201)["task_id"]
            .as_str()
            .unwrap()
            .to_owned();
        // The batch leased the task to bob's claim: bob's poll answers it, late, rather than
        // null with the task leased to nobody who knows.
        let r = poll.await.unwrap();
        assert_eq!(
            r.expect(200)["task"]["id"].as_str(),
            Some(t.as_str()),
            "the poll did not answer the task its claim leased"
        );
        let status = app.status_ok(&t).await;
        assert_eq!(status["state"], "in_flight");
        assert_eq!(status["lease"]["lease_id"], r.body["lease"]["lease_id"]);
    }

    pub async fn a_send_a_lease_a_result_and_a_drain_share_one_transaction(app: TestApp) {
        let (alice, bob) = (app.alice(), app.bob());
        // t1 answered (its result waits for alice), t2 leased by bob, t3 queued.
        let t1 = app.api.send_ok(&alice, &task("alice", "bob")).await;
        let t2 = app.api.send_ok(&alice, &task("alice", "bob")).await;
        let t3 = app.api.send_ok(&alice, &task("alice", "bob")).await;
        assert_eq!(app.api.lease_some(&bob).await.0, t1);
        app.api
            .post_result(&bob, &result(&t1, "ok", "first"))
            .await
            .expect(201);
        let (leased, lease) = app.api.lease_some(&bob).await;
        assert_eq!(leased, t2);
        let before = metric(&app, "a2a_pg_batch_transactions_total").await;
        // A batch is held up by a send whose id another transaction is inserting; one request of
        // each kind arrives meanwhile.
        let (mut holder, first) = a_held_send(&app).await;
        let t4 = task("alice", "bob");
        let send = {
            let (api, alice, t4) = (app.api.clone(), alice.clone(), t4.clone());
            tokio::spawn(async move { api.send(&alice, &t4).await })
        };
        let claim = {
            let (api, bob) = (app.api.clone(), bob.clone());
            tokio::spawn(async move { api.lease(&bob).await })
        };
        let answer = {
            let (api, bob) = (app.api.clone(), bob.clone());
            let mut r = result(&t2, "ok", "second");
            r["lease_id"] = lease["lease_id"].clone();
            tokio::spawn(async move { api.post_result(&bob, &r).await })
        };
        let drain = {
            let (api, alice) = (app.api.clone(), alice.clone());
            tokio::spawn(async move { api.drain(&alice).await })
        };
        for kind in ["send", "claim", "result", "drain"] {
            waiting(&app, kind, 1).await;
        }
        holder.execute("ROLLBACK").await.unwrap();
        let _ = holder.close().await;
        first.await.unwrap().expect(201);
        send.await.unwrap().expect(201);
        // The claim takes the oldest queued task, not the one sent in its own batch.
        let (claimed, _) = claim.await.unwrap().expect("the lease found no task");
        assert_eq!(claimed["id"].as_str(), Some(t3.as_str()));
        answer.await.unwrap().expect(201);
        let drained = drain.await.unwrap().expect("the drain found no result");
        assert_eq!(drained["task_id"].as_str(), Some(t1.as_str()));
        // Two transactions: the held send's batch, then one batch carrying all four requests.
        assert_eq!(
            metric(&app, "a2a_pg_batch_transactions_total").await,
            before + 2.0
        );
        assert_eq!(app.status_ok(&t2).await["state"], "result_pending");
        let t4_id = t4["id"].as_str().unwrap();
        assert_eq!(app.status_ok(t4_id).await["state"], "queued");
    }

    pub async fn concurrent_sends_share_one_transaction(app: TestApp) {
        const N: usize = 20;
        let alice = app.alice();
        let (mut holder, first) = a_held_send(&app).await;
        // Meanwhile N more sends arrive: they wait for the batch in flight, together.
        let mut sends = JoinSet::new();
        for _ in 0..N {
            let (api, alice) = (app.api.clone(), alice.clone());
            sends.spawn(async move { api.send_ok(&alice, &task("alice", "bob")).await });
        }
        waiting_sends(&app, N).await;
        holder.execute("ROLLBACK").await.unwrap();
        let _ = holder.close().await;
        first.await.unwrap().expect(201);
        let mut sent = 0;
        while let Some(r) = sends.join_next().await {
            r.expect("a sender panicked");
            sent += 1;
        }
        assert_eq!(sent, N);
        // Two batches carried the N + 1 sends: the one that waited, and the N that queued.
        assert_eq!(
            metric(&app, "a2a_pg_batches_total{kind=\"send\"}").await,
            2.0
        );
        assert_eq!(
            metric(&app, "a2a_pg_batched_requests_total{kind=\"send\"}").await,
            (N + 1) as f64
        );
        // Each task exists once, with its audit row.
        let bob = app.bob();
        let mut leased = std::collections::HashSet::new();
        while let Some((t, _)) = app.lease(&bob).await {
            assert!(leased.insert(t["id"].as_str().unwrap().to_owned()));
        }
        assert_eq!(leased.len(), N + 1);
        let mut c = PgConnection::connect(&app.db_url).await.unwrap();
        let (audited,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM audit WHERE kind = 'capability_check' AND issuer = 'alice'",
        )
        .fetch_one(&mut c)
        .await
        .unwrap();
        assert_eq!(audited, (N + 1) as i64, "one capability_check row per send");
        let _ = c.close().await;
    }

    pub async fn a_result_waiting_for_a_locked_task_holds_up_no_other_result(app: TestApp) {
        let (alice, bob) = (app.alice(), app.bob());
        for _ in 0..4 {
            app.send_ok(&alice, &task("alice", "bob")).await;
        }
        let mut ids = Vec::new();
        for _ in 0..4 {
            ids.push(app.lease_some(&bob).await.0);
        }
        // Another transaction (an operator's repair, say) holds the first task's row.
        let mut holder = PgConnection::connect(&app.db_url).await.unwrap();
        holder.execute("BEGIN").await.unwrap();
        sqlx::query("SELECT id FROM tasks WHERE id = $1 FOR UPDATE")
            .bind(&ids[0])
            .execute(&mut holder)
            .await
            .unwrap();
        let waiting = {
            let (api, bob, id) = (app.api.clone(), bob.clone(), ids[0].clone());
            tokio::spawn(async move { api.post_result(&bob, &result(&id, "ok", "one")).await })
        };
        a_lock_wait(&app.db_url).await;
        // The others are stored at once, well inside the lock timeout (5 s) the first waits.
        let mut others = JoinSet::new();
        for id in &ids[1..] {
            let (api, bob, id) = (app.api.clone(), bob.clone(), id.clone());
            others.spawn(async move {
                api.post_result(&bob, &result(&id, "ok", "other"))
                    .await
                    .expect(201);
            });
        }
        let stored = tokio::time::timeout(Duration::from_secs(3), async {
            while let Some(r) = others.join_next().await {
                r.expect("a result poster panicked");
            }
        })
        .await;
        assert!(
            stored.is_ok(),
            "results waited behind a locked task's result"
        );
        assert!(
            !waiting.is_finished(),
            "the locked task's result did not wait"
        );
        holder.execute("ROLLBACK").await.unwrap();
        let _ = holder.close().await;
        waiting.await.unwrap().expect(201);
        let mut drained = 0;
        while app.drain(&alice).await.is_some() {
            drained += 1;
        }
        assert_eq!(drained, 4);
    }

    pub async fn a_batch_the_database_refuses_runs_its_requests_alone(app: TestApp) {
        const N: usize = 5;
        let alice = app.alice();
        // Another transaction inserts tasks `x` and `y` and holds them past the lock timeout.
        let (x, y) = (task("alice", "bob"), task("alice", "bob"));
        let mut holder = hold_ids(
            &app.db_url,
            &[x["id"].as_str().unwrap(), y["id"].as_str().unwrap()],
        )
        .await;
        let send = |t: serde_json::Value| {
            let (api, alice) = (app.api.clone(), alice.clone());
            tokio::spawn(async move { api.send(&alice, &t).await })
        };
        // `x` goes alone and waits; `y` and N others queue behind it and go together next.
        let first = send(x.clone());
        a_lock_wait(&app.db_url).await;
        let second = send(y.clone());
        let others: Vec<_> = (0..N).map(|_| send(task("alice", "bob"))).collect();
        waiting_sends(&app, N + 1).await;
        // `x`'s wait ends at the lock timeout: it alone is refused, retriable.
        let r = first.await.unwrap();
        assert_eq!(r.status, 503, "{}", r.text);
        assert_eq!(r.body["code"], "storage_unavailable", "{}", r.text);
        assert_eq!(r.body["retriable"], true, "{}", r.text);
        // Then `y` makes the database refuse the whole second batch the same way; each of its
        // requests then runs alone, and the N others are stored while `y` still waits.
        for other in others {
            other.await.unwrap().expect(201);
        }
        // ... and while `y` waits alone, later sends are not held up behind it.
        let later = task("alice", "bob");
        let r = tokio::time::timeout(Duration::from_secs(3), app.send(&alice, &later)).await;
        r.expect("a send waited behind a request rerun alone")
            .expect(201);
        assert!(!second.is_finished(), "y did not wait for the held insert");
        holder.execute("ROLLBACK").await.unwrap();
        let _ = holder.close().await;
        // Released, `y`'s own transaction goes through.
        second.await.unwrap().expect(201);
        app.send_ok(&alice, &x).await;
        let bob = app.bob();
        let mut leased = 0;
        while app.lease(&bob).await.is_some() {
            leased += 1;
        }
        assert_eq!(
            leased,
            N + 3,
            "every task stored once: x, y, the others and the later one"
        );
    }
}
