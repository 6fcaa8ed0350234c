//! The store's state transitions, pinned on both engines: one script of named operations runs on
//! a real SQLite file and on a fresh PostgreSQL database (created here at
//! `A2A_MAILBOX_TEST_POSTGRES_URL`, dropped after), each step's row is checked against what the
//! transition must write, and the two engines' traces must be equal line for line. A transition
//! changed in one engine's SQL and not the other's fails here.
//!
//! PostgreSQL is found as the black-box suite finds it (the URL, or a local server at the
//! default address) and skipped, loudly on stderr, only when there is none and
//! `A2A_MAILBOX_REQUIRE_POSTGRES` is not `1` ([`harness::postgres_base_url`]).

pub(crate) mod harness;

use sqlx::{Connection, Executor, PgConnection};

use super::{Store, StoredResult, TaskRow};
use harness::{id, open, postgres_base_url, task, with_db, Trace};

/// Runs the body as a write of its own and answers its value (the write commits).
macro_rules! commit {
    ($store:expr, |$tx:ident| $body:expr) => {
        $store
            .transact(Box::new(move |$tx| Box::pin(async move { Ok($body) })))
            .await
            .expect(concat!("a write: ", stringify!($body)))
    };
}

async fn row(store: &Store, n: u8) -> TaskRow {
    store
        .task(&id(n))
        .await
        .expect("reading a task")
        .unwrap_or_else(|| panic!("task {n} is missing"))
}

/// The script: every transition the store performs, each checked, in an order both engines
/// must follow the same way.
async fn transitions(s: &Store) -> Vec<String> {
    let mut trace = Trace(Vec::new());

    // Insert queued: attempt 0, no lease, no result; an existing id is left alone.
    let t1 = task(1, "bob", None);
    assert!(commit!(s, |tx| tx.insert_task(&t1, 1000).await?));
    let r = row(s, 1).await;
    assert_eq!((r.state.as_str(), r.attempt), ("queued", 0));
    assert_eq!(
        (r.lease_id.as_ref(), r.result_status.as_ref()),
        (None, None)
    );
    assert_eq!((r.created_at_ms, r.updated_at_ms), (1000, 1000));
    trace.row("insert", &r);
    let again = task(1, "mallory", None);
    assert!(!commit!(s, |tx| tx.insert_task(&again, 1001).await?));
    assert_eq!(row(s, 1).await.recipient, "bob");
    let t2 = task(2, "bob", Some(5000));
    assert!(commit!(s, |tx| tx.insert_task(&t2, 1002).await?));
    // Several in one statement, in order, an existing id skipped.
    let many = vec![
        task(3, "bob", None),
        task(4, "carol", Some(1500)),
        task(1, "x", None),
    ];
    let mut inserted: Vec<String> = commit!(s, |tx| tx.insert_tasks(&many, 1003).await?)
        .into_iter()
        .collect();
    inserted.sort();
    assert_eq!(inserted, [id(3), id(4)]);
    trace.row("insert_tasks", &row(s, 4).await);

    // Lease: the oldest live head; attempt + 1, the new lease, its instants.
    let c = commit!(s, |tx| tx.claim_head("bob", "lease-1", "bob", 1100).await?)
        .expect("bob's head is live");
    assert_eq!(
        (c.id.as_str(), c.state.as_str(), c.attempt),
        (id(1).as_str(), "in_flight", 1)
    );
    assert_eq!(
        (c.lease_id.as_deref(), c.leased_to.as_deref()),
        (Some("lease-1"), Some("bob"))
    );
    assert_eq!(
        (c.leased_at_ms, c.heartbeat_at_ms, c.updated_at_ms),
        (Some(1100), Some(1100), 1100)
    );
    trace.row("claim_head", &c);

    // Heartbeat: only the heartbeat moves.
    let h = commit!(s, |tx| tx.heartbeat(&id(1), 1200).await?);
    assert_eq!(
        (h.leased_at_ms, h.heartbeat_at_ms, h.updated_at_ms),
        (Some(1100), Some(1200), 1200)
    );
    assert_eq!(h.lease_id.as_deref(), Some("lease-1"));
    trace.row("heartbeat", &h);

    // Requeue is fenced by the lease and the heartbeat it read: a stale read changes nothing.
    let stale = c.clone();
    assert!(!commit!(s, |tx| tx.requeue(&stale, 1300).await?));
    let fresh = h.clone();
    assert!(commit!(s, |tx| tx.requeue(&fresh, 1300).await?));
    let r = row(s, 1).await;
    assert_eq!((r.state.as_str(), r.attempt), ("queued", 1));
    assert_eq!(
        (r.lease_id.as_ref(), r.leased_to.as_ref(), r.heartbeat_at_ms),
        (None, None, None)
    );
    trace.row("requeue", &r);

    // A requeued task goes to the END of its queue: 2, 3, then 1 again (attempt 2).
    let mut order = Vec::new();
    for (n, lease) in ["lease-2", "lease-3", "lease-4"].into_iter().enumerate() {
        let now = 1400 + n as i64;
        let c = commit!(s, |tx| tx.claim_head("bob", lease, "bob", now).await?)
            .expect("bob has a live head");
        trace.row("claim_head", &c);
        order.push((c.id, c.attempt));
    }
    assert_eq!(order, [(id(2), 1), (id(3), 1), (id(1), 2)]);
    assert!(commit!(s, |tx| tx.claim_head("bob", "lease-5", "bob", 1403).await?).is_none());

    // A head past its deadline is not leased; the rule resolves it with an error result.
    assert!(commit!(s, |tx| tx
        .claim_head("carol", "lease-6", "carol", 1600)
        .await?)
    .is_none());
    let head = commit!(s, |tx| tx.queue_head("carol").await?).expect("carol's head");
    assert_eq!(
        (head.id.as_str(), head.deadline_ms),
        (id(4).as_str(), Some(1500))
    );
    commit!(s, |tx| tx.expire(&id(4), 1600).await?);
    let r = row(s, 4).await;
    assert_eq!((r.state.as_str(), r.attempt), ("result_pending", 0));
    assert_eq!(
        (
            r.result_status.as_deref(),
            r.result_content.as_deref(),
            r.result_error.as_deref()
        ),
        (Some("error"), Some("[]"), Some("deadline exceeded"))
    );
    trace.row("expire", &r);

    // A deadline equal to now is still live; the exact path leases the head it read.
    let (t5, t6) = (task(5, "dave", None), task(6, "erin", Some(1700)));
    commit!(s, |tx| tx.insert_task(&t5, 1650).await?
        && tx.insert_task(&t6, 1651).await?);
    let c = commit!(s, |tx| tx
        .claim_head("erin", "lease-7", "erin", 1700)
        .await?)
    .expect("a deadline equal to now is live");
    trace.row("claim_head at deadline", &c);
    let head = commit!(s, |tx| tx.queue_head("dave").await?).expect("dave's head");
    let l = commit!(s, |tx| tx
        .lease_task(&head.id, "lease-8", "dave", 1710)
        .await?);
    assert_eq!(
        (l.state.as_str(), l.attempt, l.lease_id.as_deref()),
        ("in_flight", 1, Some("lease-8"))
    );
    assert_eq!(
        (l.leased_at_ms, l.heartbeat_at_ms),
        (Some(1710), Some(1710))
    );
    trace.row("lease_task", &l);

    // A result: pending for the sender, by its author.
    commit!(s, |tx| {
        let ok = StoredResult {
            status: "completed",
            content: "[1]",
            error_message: None,
            trace: None,
        };
        tx.store_result(&id(2), &ok, "bob", 1800).await?
    });
    let r = row(s, 2).await;
    assert_eq!(
        (r.state.as_str(), r.result_by.as_deref()),
        ("result_pending", Some("bob"))
    );
    assert_eq!(
        (r.result_status.as_deref(), r.result_content.as_deref()),
        (Some("completed"), Some("[1]"))
    );
    trace.row("store_result", &r);

    // force_error: an error result, the lease ended.
    commit!(s, |tx| tx.force_error(&id(1), "worker lost", 1900).await?);
    let r = row(s, 1).await;
    assert_eq!(
        (r.state.as_str(), r.result_status.as_deref()),
        ("result_pending", Some("error"))
    );
    assert_eq!(
        (r.result_error.as_deref(), r.result_by.as_ref()),
        (Some("worker lost"), None)
    );
    assert_eq!(
        (r.lease_id.as_ref(), r.leased_to.as_ref(), r.heartbeat_at_ms),
        (None, None, None)
    );
    trace.row("force_error", &r);

    // Drain: the sender's oldest pending result, then resolved.
    for (n, status) in [(4, "error"), (2, "completed")] {
        let (d, _) = s.drain_or_hold("alice").await;
        let d = d.expect("draining").expect("a pending result");
        assert_eq!(
            (d.id.as_str(), d.result_status.as_deref()),
            (id(n).as_str(), Some(status))
        );
        let r = row(s, n).await;
        assert_eq!(r.state, "resolved");
        trace.row("drain", &r);
    }

    // Cancel: queued or in flight (the lease columns keep the ended lease); once only.
    commit!(s, |tx| tx
        .cancel(&id(3), "alice", Some("changed my mind"), 2000)
        .await?);
    assert!(!commit!(s, |tx| tx
        .cancel(&id(3), "alice", None, 2001)
        .await?));
    let r = row(s, 3).await;
    assert_eq!(
        (r.state.as_str(), r.canceled_from.as_deref()),
        ("canceled", Some("in_flight"))
    );
    assert_eq!(
        (r.lease_id.as_deref(), r.canceled_at_ms),
        (Some("lease-3"), Some(2000))
    );
    trace.row("cancel in flight", &r);
    let t7 = task(7, "bob", None);
    commit!(s, |tx| tx.insert_task(&t7, 2002).await?
        && tx.cancel(&id(7), "alice", None, 2003).await?);
    let r = row(s, 7).await;
    assert_eq!(
        (r.state.as_str(), r.canceled_from.as_deref()),
        ("canceled", Some("queued"))
    );
    trace.row("cancel queued", &r);

    // The one-write paths write the same transitions: a send queues, a claim leases, a result
    // is stored only under the caller's own lease.
    assert!(s
        .send_one(task(8, "frank", None), "{}".to_owned())
        .await
        .expect("send")
        .is_some_and(|sent| !sent.handed));
    assert!(s
        .send_one(task(8, "frank", None), "{}".to_owned())
        .await
        .expect("send")
        .is_none());
    let r = row(s, 8).await;
    assert_eq!(
        (r.state.as_str(), r.attempt, r.created_at_ms),
        ("queued", 0, r.updated_at_ms)
    );
    trace.row("send_one", &r);
    let (claimed, _) = s.claim_or_hold("frank", "lease-9", "frank").await;
    let c = match claimed.expect("a claim") {
        Some(c) => c,
        None => {
            // SQLite only holds the claim (the mailbox's transaction claims); the lane claims.
            assert_ne!(
                s.engine().name(),
                "postgres",
                "the lane's claim found nothing"
            );
            let now = crate::clock::now_ms();
            commit!(s, |tx| tx
                .claim_head("frank", "lease-9", "frank", now)
                .await?)
            .expect("frank's head")
        }
    };
    assert_eq!(
        (c.id.as_str(), c.attempt, c.lease_id.as_deref()),
        (id(8).as_str(), 1, Some("lease-9"))
    );
    trace.row("claim_or_hold", &c);
    let ok = StoredResult {
        status: "completed",
        content: "[8]",
        error_message: None,
        trace: None,
    };
    let halves = || (r#"{"sender":""#.to_owned(), r#""}"#.to_owned());
    for (caller, guard) in [("frank", Some("lease-0")), ("mallory", None)] {
        let stored = s
            .store_result_one(&id(8), &ok, caller, guard, halves())
            .await;
        assert_eq!(stored.expect("result"), None, "{caller} {guard:?}");
    }
    let stored = s
        .store_result_one(&id(8), &ok, "frank", Some("lease-9"), halves())
        .await;
    assert_eq!(
        stored.expect("result").map(|s| s.made).as_deref(),
        Some("alice")
    );
    let r = row(s, 8).await;
    assert_eq!(
        (r.state.as_str(), r.result_by.as_deref()),
        ("result_pending", Some("frank"))
    );
    trace.row("store_result_one", &r);
    for n in [1, 8] {
        let (d, _) = s.drain_or_hold("alice").await;
        assert_eq!(d.expect("draining").expect("a pending result").id, id(n));
    }
    let (d, _) = s.drain_or_hold("alice").await;
    assert!(d.expect("draining").is_none());

    // Compact: resolved and canceled tasks go, with the audit rows before the bound.
    let gone = commit!(s, |tx| tx.compact(crate::clock::now_ms(), i64::MAX).await?);
    assert_eq!(gone.resolved_tasks, 6);
    trace.note(format!(
        "compact: {} tasks, {} audit rows",
        gone.resolved_tasks, gone.audit_rows
    ));
    for n in [1, 2, 3, 4, 7, 8] {
        assert!(s.task(&id(n)).await.expect("reading").is_none(), "task {n}");
    }
    for n in [5, 6] {
        trace.row("kept", &row(s, n).await);
    }
    trace.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_engines_make_the_same_transitions() {
    let dir = std::env::temp_dir().join(format!(
        "a2a-mailbox-conformance-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let sqlite = open(&format!(
        "sqlite://{}?mode=rwc",
        dir.join("mailbox.db").display()
    ))
    .await;
    let sqlite_trace = transitions(&sqlite).await;
    sqlite.close().await;
    let _ = std::fs::remove_dir_all(&dir);

    let Some(base) = postgres_base_url("both_engines_make_the_same_transitions").await else {
        return;
    };
    let name = format!("a2a_conformance_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&base)
        .await
        .expect("connecting to PostgreSQL");
    admin
        .execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
        .await
        .expect("creating the test database");
    let postgres = open(&with_db(&base, &name)).await;
    let postgres_trace = transitions(&postgres).await;
    postgres.close().await;
    let _ = admin
        .execute(format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#).as_str())
        .await;

    for (sqlite, postgres) in sqlite_trace.iter().zip(&postgres_trace) {
        assert_eq!(sqlite, postgres, "the engines made different transitions");
    }
    assert_eq!(sqlite_trace.len(), postgres_trace.len());
}
