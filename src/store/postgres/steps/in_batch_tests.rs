//! `a2a_step_many` on a fresh PostgreSQL database: a claim or a drain of a batch that would take
//! what a send or a result of the same batch makes gets it from that one statement, and what it
//! answers is what the two statements in turn would have answered. Each batch runs in a
//! transaction of the test's own; the session's statistics (`pg_stat_xact_user_tables`) before
//! and after the call count the rows of `tasks` it inserted and updated.
//!
//! Skipped, loudly, only when no PostgreSQL is found and `A2A_MAILBOX_REQUIRE_POSTGRES` is not
//! `1` (`conformance/harness.rs`, `postgres_base_url`).

use sqlx::{Connection, Executor, PgConnection};

use super::{step_many, ClaimArgs, DrainArgs, Outcome, ResultArgs, SendArgs, Step};
use crate::store::conformance::harness::{id, open, task, with_db};

/// A fresh migrated database (with the group-commit function installed), a connection to it,
/// and the admin connection and name to drop it with.
async fn fresh() -> Option<(PgConnection, PgConnection, String)> {
    let base = crate::store::conformance::harness::postgres_base_url("step_many").await?;
    let name = format!("a2a_step_many_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&base).await.expect("PostgreSQL");
    admin
        .execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
        .await
        .expect("creating the test database");
    let url = with_db(&base, &name);
    open(&url).await.close().await;
    let conn = PgConnection::connect(&url)
        .await
        .expect("the test database");
    Some((conn, admin, name))
}

async fn drop_db(conn: PgConnection, mut admin: PgConnection, name: &str) {
    let _ = conn.close().await;
    let _ = admin
        .execute(format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#).as_str())
        .await;
}

fn send(n: u8, recipient: &str) -> Step {
    Step::Send(SendArgs {
        task: task(n, recipient, None),
        audit_body: "{}".to_owned(),
    })
}

fn claim(recipient: &str, riding: bool) -> Step {
    Step::Claim(ClaimArgs {
        recipient: recipient.to_owned(),
        lease_id: uuid::Uuid::new_v4().to_string(),
        caller: recipient.to_owned(),
        if_sent: riding,
    })
}

fn answer(n: u8, by: &str) -> Step {
    Step::Result(ResultArgs {
        task_id: id(n),
        status: "ok".to_owned(),
        content: format!(r#"[{{"n":{n}}}]"#),
        error_message: None,
        caller: by.to_owned(),
        lease_guard: None,
        audit_pre: "{}".to_owned(),
        audit_post: String::new(),
    })
}

fn drain(sender: &str, riding: bool) -> Step {
    Step::Drain(DrainArgs {
        sender: sender.to_owned(),
        if_stored: riding,
    })
}

/// Runs one batch in a transaction of its own: its outcomes, and the rows of `tasks` it
/// inserted and updated.
async fn batch(conn: &mut PgConnection, steps: &[Step]) -> (Vec<Outcome>, (i64, i64)) {
    conn.execute("BEGIN").await.unwrap();
    let before = written(conn).await;
    let out = step_many(conn, steps).await.expect("the batch");
    let after = written(conn).await;
    conn.execute("COMMIT").await.unwrap();
    (out, (after.0 - before.0, after.1 - before.1))
}

/// The rows of `tasks` this session inserted and updated and has not reported yet (its
/// transaction's, and earlier ones' until their statistics are flushed).
async fn written(conn: &mut PgConnection) -> (i64, i64) {
    sqlx::query_as(
        "SELECT n_tup_ins, n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'tasks'",
    )
    .fetch_one(conn)
    .await
    .unwrap()
}

fn leased(o: &Outcome) -> (String, String, i64) {
    match o {
        Outcome::Claimed(Some(r)) => (r.id.clone(), r.state.clone(), r.attempt),
        _ => panic!("the claim leased nothing"),
    }
}

fn drained(o: &Outcome) -> String {
    match o {
        Outcome::Drained(Some(d)) => d.id.clone(),
        _ => panic!("the drain took nothing"),
    }
}

async fn state(conn: &mut PgConnection, n: u8) -> String {
    let (s,): (String,) = sqlx::query_as("SELECT state::text FROM tasks WHERE id = $1")
        .bind(id(n))
        .fetch_one(conn)
        .await
        .unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_a_send_of_its_batch_and_a_drain_a_result_in_one_write_each() {
    let Some((mut c, admin, name)) = fresh().await else {
        return;
    };
    // Two sends to bob and one riding claim: the claim leases the first, inserted leased (one
    // insert per task, no update); the second is queued. Carol's claim finds nothing.
    let (out, written) = batch(
        &mut c,
        &[
            send(1, "bob"),
            send(2, "bob"),
            claim("bob", true),
            claim("carol", false),
        ],
    )
    .await;
    assert!(matches!(out[0], Outcome::Sent(Some(_))));
    assert!(matches!(out[1], Outcome::Sent(Some(_))));
    assert_eq!(leased(&out[2]), (id(1), "in_flight".to_owned(), 1));
    assert!(matches!(out[3], Outcome::Claimed(None)));
    assert_eq!(written, (2, 0), "(inserted, updated) rows of tasks");
    assert_eq!(state(&mut c, 2).await, "queued");

    // A claim of bob's and a third send: the queue holds task 2, so the claim takes it, by an
    // update, and task 3 is queued behind.
    let (out, written) = batch(&mut c, &[send(3, "bob"), claim("bob", false)]).await;
    assert_eq!(leased(&out[1]), (id(2), "in_flight".to_owned(), 1));
    assert_eq!(written, (1, 1));
    assert_eq!(state(&mut c, 3).await, "queued");

    // Bob answers task 1 while a drain of alice's rides: stored delivered, one update.
    let (out, written) = batch(&mut c, &[answer(1, "bob"), drain("alice", true)]).await;
    assert!(matches!(&out[0], Outcome::Stored(Some(s)) if s.made == "alice"));
    assert_eq!(drained(&out[1]), id(1));
    assert_eq!(written, (0, 1));
    assert_eq!(state(&mut c, 1).await, "resolved");

    // Task 2's result is stored pending with no drain in its batch; then task 3 is leased and
    // answered in a batch with a drain: the drain takes the older result (task 2's), and
    // task 3's stays pending.
    let (_, written) = batch(&mut c, &[answer(2, "bob")]).await;
    assert_eq!(written, (0, 1));
    let (out, _) = batch(&mut c, &[claim("bob", false)]).await;
    assert_eq!(leased(&out[0]).0, id(3));
    let (out, written) = batch(&mut c, &[answer(3, "bob"), drain("alice", false)]).await;
    assert_eq!(drained(&out[1]), id(2));
    assert_eq!(written, (0, 2));
    assert_eq!(state(&mut c, 3).await, "result_pending");
    drop_db(c, admin, &name).await;
}

/// The audit rows of a batch, after the first `from` rows: (issuer, task id, body) in order.
async fn audits(conn: &mut PgConnection, from: usize) -> Vec<(String, Option<String>, String)> {
    let rows: Vec<(String, Option<String>, String)> =
        sqlx::query_as("SELECT issuer, task_id, body FROM audit ORDER BY id")
            .fetch_all(conn)
            .await
            .unwrap();
    rows.into_iter().skip(from).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_audits_each_send_and_result_that_did_something_in_its_order() {
    let Some((mut c, admin, name)) = fresh().await else {
        return;
    };
    // Two sends that insert (one of them handed to a riding claim) and one whose id exists:
    // two rows, in the sends' order, issued by the sender, naming no task.
    let (out, _) = batch(
        &mut c,
        &[
            send(1, "bob"),
            send(1, "bob"),
            send(2, "carol"),
            claim("bob", true),
        ],
    )
    .await;
    assert!(matches!(out[1], Outcome::Sent(None)));
    assert_eq!(
        audits(&mut c, 0).await,
        vec![
            ("alice".to_owned(), None, "{}".to_owned()),
            ("alice".to_owned(), None, "{}".to_owned()),
        ]
    );
    // A result for a task that does not exist, one by a caller that does not hold the task's
    // lease, and one stored (delivered to a riding drain): one row, issued by the worker,
    // naming the task, its body the server's halves around the task's sender.
    let mut stored = answer(1, "bob");
    if let Step::Result(r) = &mut stored {
        r.audit_pre = "<".to_owned();
        r.audit_post = ">".to_owned();
    }
    let (out, _) = batch(
        &mut c,
        &[
            answer(9, "bob"),
            answer(1, "carol"),
            stored,
            drain("alice", true),
        ],
    )
    .await;
    assert!(matches!(out[0], Outcome::Stored(None)));
    assert!(matches!(out[1], Outcome::Stored(None)));
    assert!(matches!(&out[2], Outcome::Stored(Some(s)) if s.made == "alice"));
    assert_eq!(
        audits(&mut c, 2).await,
        vec![("bob".to_owned(), Some(id(1)), "<alice>".to_owned())]
    );
    // A batch of claims and drains only writes no audit row.
    batch(&mut c, &[claim("carol", false), drain("alice", false)]).await;
    assert_eq!(audits(&mut c, 3).await, vec![]);
    drop_db(c, admin, &name).await;
}

/// The listing keys of every task (`task_keys`), in id order.
async fn keys(conn: &mut PgConnection) -> Vec<(String, String, String, Option<String>, bool)> {
    sqlx::query_as(
        "SELECT k.id, k.sender, k.recipient, k.parent, k.created_at_ms = t.created_at_ms \
         FROM task_keys k JOIN tasks t USING (id) ORDER BY k.id",
    )
    .fetch_all(conn)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_writes_the_keys_of_the_tasks_its_sends_insert_and_the_trigger_every_other() {
    let Some((mut c, admin, name)) = fresh().await else {
        return;
    };
    // A queued send naming a parent, the same id again (inserts nothing), and a send handed to
    // a riding claim: one row of keys for each task inserted, the batch's own.
    let mut child = send(1, "bob");
    if let Step::Send(s) = &mut child {
        s.task.parent = Some(id(7));
    }
    batch(
        &mut c,
        &[
            child,
            send(1, "bob"),
            send(2, "carol"),
            claim("carol", true),
        ],
    )
    .await;
    let row = |n: u8, to: &str, parent: Option<String>| {
        (id(n), "alice".to_owned(), to.to_owned(), parent, true)
    };
    assert_eq!(
        keys(&mut c).await,
        vec![row(1, "bob", Some(id(7))), row(2, "carol", None)]
    );
    // A task inserted by another statement after a batch, in the batch's transaction: the
    // trigger writes its keys (the batch hands them back once its sends are done).
    c.execute("BEGIN").await.unwrap();
    step_many(&mut c, &[send(3, "bob")]).await.unwrap();
    c.execute(
        format!(
            "INSERT INTO tasks (id, sender, recipient, body, state, queue_seq, created_at_ms, \
             updated_at_ms) VALUES ('{}', 'alice', 'dave', '{{}}', 'queued', 0, 1, 1)",
            id(4)
        )
        .as_str(),
    )
    .await
    .unwrap();
    c.execute("COMMIT").await.unwrap();
    assert_eq!(
        keys(&mut c).await,
        vec![
            row(1, "bob", Some(id(7))),
            row(2, "carol", None),
            row(3, "bob", None),
            row(4, "dave", None)
        ]
    );
    // The batches' audit rows carry the event ids the server made: distinct UUIDv7s.
    let events: Vec<(String,)> = sqlx::query_as("SELECT event_id FROM audit ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(events.len(), 3);
    for (e,) in &events {
        let u = uuid::Uuid::parse_str(e).unwrap();
        assert_eq!(u.get_version_num(), 7, "{e}");
    }
    assert!(events.windows(2).all(|w| w[0].0 != w[1].0), "{events:?}");
    drop_db(c, admin, &name).await;
}

/// The lane answers a leased task as `leased_row!` (its columns as a JSON array, read by
/// `TaskRow` field by field): with every column set, and each column's value its own, it reads
/// as the same task as the row's JSON object read by column name.
#[tokio::test]
async fn a_leased_row_is_read_as_the_row_its_columns_name() {
    use crate::store::postgres::statements::leased_row;
    use crate::store::records::TaskRow;
    let Some((mut c, admin, name)) = fresh().await else {
        return;
    };
    c.execute(
        "INSERT INTO tasks (id, sender, recipient, body, state, attempt, lease_id, leased_to, \
         leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, \
         replayed_from, result_status, result_content, result_error, result_by, created_at_ms, \
         updated_at_ms, canceled_by, cancel_reason, canceled_from, canceled_at_ms, queue_seq) \
         VALUES ('t', 's', 'r', 'b', 'in_flight', 2, 'l', 'w', 3, 4, 5, 'd', 'i', 'c', 'p', \
         'ok', '[]', 'e', 'by', 6, 7, 'cb', 'cr', 'cf', 8, 9)",
    )
    .await
    .unwrap();
    let (array, object): (String, String) = sqlx::query_as(concat!(
        "SELECT ",
        leased_row!(),
        ", row_to_json(tasks)::text FROM tasks"
    ))
    .fetch_one(&mut c)
    .await
    .unwrap();
    let by_order: TaskRow = serde_json::from_str(&array).unwrap();
    let by_name: TaskRow = serde_json::from_str(&object).unwrap();
    assert_eq!(format!("{by_order:?}"), format!("{by_name:?}"), "{array}");
    drop_db(c, admin, &name).await;
}
