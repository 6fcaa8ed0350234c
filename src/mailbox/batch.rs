//! Group commit on PostgreSQL for the four fast paths (send, lease claim, result, drain).
//!
//! Concurrent requests of all four kinds are combined: a request queues its element and, when no
//! lane is running ([`IN_FLIGHT`]), starts one with every element queued so far (up to
//! [`MAX_BATCH`], any mix of kinds), run as ONE call of `a2a_step_many` (migrations 0003 and 0004):
//! one round trip, one transaction, one commit for all of them. While a batch runs, new requests
//! queue, and the lane runs them as its next batch the moment the first one is over, so the batches
//! grow with the load and shrink to one element when a request is alone (no timer, no added wait).
//! A lane is a task of its own, so a request that goes away cannot cut short a batch that carries
//! other requests; a request that goes away while its element is still queued withdraws it.
//!
//! The elements of a batch run one after another inside the function (sends, then results,
//! claims, drains), each the one statement its path runs on SQLite, so the outcome of each is
//! what it would have been alone in that order. No element waits for a row another transaction
//! holds (claims, drains and results skip it and answer nothing, which sends the request down
//! its transaction path, where it waits alone); only a send whose id another transaction is
//! inserting at that moment waits, and its batch with it. If the database refuses a batch (a
//! lock wait past `lock_timeout`, say), the batch rolled back and each element is run again
//! alone (all at once), so one element's trouble is only its own; if the connection fails,
//! whether the batch committed is unknown, and every element answers 503 (retriable) as a
//! request alone would.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::{join_all, BoxFuture};
use sqlx::{Connection, FromRow, PgConnection, PgPool};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::now_ms;
use super::rows::TaskRow;
use crate::error::ApiError;
use crate::metrics::{Metrics, BATCH_KINDS};

/// Lanes (batches running at once). One: requests arriving while a batch runs wait for it and
/// then go together. Measured (BENCHMARKS.md, 16 sender/worker pairs, A/B on one machine): one
/// lane for all kinds costs a third less CPU per task than one lane per kind (0.77 against 2.0
/// transactions per task life) and moves ≈ 7 % more tasks per second; two batches in flight, or
/// a second one only for a backlog, split the waiting requests into smaller batches and gave no
/// more throughput for more CPU (session 5, with self-driving lanes: 1,180-1,630 tasks/s for two
/// against 1,808-1,986 for one).
pub const IN_FLIGHT: usize = 1;
/// Elements per batch at most.
pub const MAX_BATCH: usize = 64;

type Answer<R> = oneshot::Sender<Result<R, ApiError>>;
/// Binds a batch's elements (one copy, into the argument arrays) and runs them on a connection.
type Exec<A, R> =
    for<'c> fn(&'c mut PgConnection, &[A]) -> BoxFuture<'c, Result<Vec<R>, sqlx::Error>>;

struct Item<A, R> {
    id: u64,
    arg: A,
    answer: Answer<R>,
}

struct Queue<A, R> {
    next_id: u64,
    items: Vec<Item<A, R>>,
    /// Lanes running now (at most [`IN_FLIGHT`]).
    running: usize,
}

/// Combines concurrent calls into batches of one batch function.
///
/// A request queues its element and, when fewer than [`IN_FLIGHT`] lanes run, starts one with
/// everything queued so far. A lane drives itself: when its batch is over it takes whatever
/// queued meanwhile and runs that at once, and it stops when nothing is waiting. Lanes run on the
/// runtime the combiner was made on (the server's multi-thread runtime) over connections of
/// their own opened there, never on the HTTP workers: a worker is a single-threaded runtime that
/// would notice a finished batch, and start the next one, only between the HTTP requests it is
/// handling (measured in BENCHMARKS.md, session 5).
pub struct Combiner<A, R> {
    lane: Arc<Lane<A, R>>,
}

/// The queue and what runs its batches: the runtime, the batch function, the lanes' idle
/// connections, and the pool that opens them (its options, `lock_timeout` included) and reruns
/// a refused batch's elements.
struct Lane<A, R> {
    queue: Mutex<Queue<A, R>>,
    runtime: Handle,
    pool: PgPool,
    exec: Exec<A, R>,
    /// The lanes' connections not in use, with the time each was last used.
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    metrics: Arc<Metrics>,
}

/// An element's operation, as an index into [`BATCH_KINDS`].
pub trait Kinded {
    fn kind(&self) -> usize;
}

/// Withdraws a queued element when its request goes away before a batch took it.
struct Withdraw<'a, A, R> {
    queue: &'a Mutex<Queue<A, R>>,
    id: u64,
}

impl<A, R> Drop for Withdraw<'_, A, R> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.items.retain(|item| item.id != self.id);
        }
    }
}

/// A running lane: if it ends without stopping (a panic in a batch), it still counts itself out,
/// so the next request starts a lane for the elements still queued.
struct Running<'a, A, R> {
    queue: &'a Mutex<Queue<A, R>>,
    stopped: bool,
}

impl<A, R> Drop for Running<'_, A, R> {
    fn drop(&mut self) {
        if !self.stopped {
            if let Ok(mut q) = self.queue.lock() {
                q.running -= 1;
            }
        }
    }
}

impl<A, R> Queue<A, R> {
    /// The next batch: up to [`MAX_BATCH`] elements, oldest first.
    fn take(&mut self) -> Vec<Item<A, R>> {
        let n = self.items.len().min(MAX_BATCH);
        self.items.drain(..n).collect()
    }
}

impl<A: Kinded + Send + Sync + 'static, R: Send + 'static> Combiner<A, R> {
    /// Must be called inside the Tokio runtime the batches are to run on.
    fn new(pool: PgPool, metrics: Arc<Metrics>, exec: Exec<A, R>) -> Combiner<A, R> {
        Combiner {
            lane: Arc::new(Lane {
                queue: Mutex::new(Queue {
                    next_id: 0,
                    items: Vec::new(),
                    running: 0,
                }),
                runtime: Handle::current(),
                pool,
                exec,
                idle: Mutex::new(Vec::new()),
                metrics,
            }),
        }
    }

    /// Requests waiting for the next batch, by kind.
    pub fn waiting(&self) -> [usize; 4] {
        let mut n = [0; 4];
        if let Ok(q) = self.lane.queue.lock() {
            for item in &q.items {
                n[item.arg.kind()] += 1;
            }
        }
        n
    }

    /// Runs `arg` in the next batch and answers its outcome.
    pub async fn call(&self, arg: A) -> Result<R, ApiError> {
        let (answer, answered) = oneshot::channel();
        let (id, start) = {
            let mut q = self.lane.queue.lock().expect("batch queue poisoned");
            q.next_id += 1;
            let id = q.next_id;
            q.items.push(Item { id, arg, answer });
            let start = (q.running < IN_FLIGHT).then(|| {
                q.running += 1;
                q.take()
            });
            (id, start)
        };
        let _withdraw = Withdraw {
            queue: &self.lane.queue,
            id,
        };
        if let Some(batch) = start {
            let lane = self.lane.clone();
            self.lane
                .runtime
                .spawn(async move { lane.drive(batch).await });
        }
        answered
            .await
            .unwrap_or_else(|_| Err(ApiError::internal("a batch ended without answering")))
    }
}

impl<A: Kinded + Send + Sync + 'static, R: Send + 'static> Lane<A, R> {
    /// One lane: runs `batch`, then whatever queued meanwhile, until nothing waits. Whether a
    /// lane runs is decided under the queue's lock, so an element is never left queued with no
    /// lane to take it.
    async fn drive(self: Arc<Self>, mut batch: Vec<Item<A, R>>) {
        let mut lane = Running {
            queue: &self.queue,
            stopped: false,
        };
        loop {
            self.count(&batch);
            self.run(batch).await;
            let mut q = self.queue.lock().expect("batch queue poisoned");
            if q.items.is_empty() {
                q.running -= 1;
                lane.stopped = true;
                return;
            }
            batch = q.take();
        }
    }

    fn count(&self, batch: &[Item<A, R>]) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut n = [0u64; 4];
        for item in batch {
            n[item.arg.kind()] += 1;
        }
        self.metrics.inc(&self.metrics.batch_transactions);
        for (kind, &k) in n.iter().enumerate() {
            if k > 0 {
                self.metrics.inc(&self.metrics.batches[kind]);
                self.metrics.batched_requests[kind].fetch_add(k, Relaxed);
            }
        }
    }

    /// Runs one batch and answers its elements. If the database refused it, its elements are
    /// rerun alone in a task of their own, so the lane goes on with the next batch at once.
    async fn run(self: &Arc<Self>, batch: Vec<Item<A, R>>) {
        let (args, answers): (Vec<A>, Vec<Answer<R>>) = batch
            .into_iter()
            .map(|item| (item.arg, item.answer))
            .unzip();
        let n = args.len();
        match self.on_own_connection(&args).await {
            Ok(outcomes) if outcomes.len() == n => {
                for (answer, outcome) in answers.into_iter().zip(outcomes) {
                    let _ = answer.send(Ok(outcome));
                }
            }
            Ok(_) => {
                for answer in answers {
                    let _ =
                        answer.send(Err(ApiError::internal("a batch answered the wrong count")));
                }
            }
            Err(e) if n == 1 => {
                if let Some(answer) = answers.into_iter().next() {
                    let _ = answer.send(Err(e.into()));
                }
            }
            Err(sqlx::Error::Database(e)) => {
                // The database refused the batch, so it rolled back: each element runs alone, all
                // at once (on pooled connections), so that the one that made it fail waits for
                // nobody else.
                tracing::debug!(error = %e, elements = n, "batch failed; running its elements alone");
                let lane = self.clone();
                self.runtime.spawn(async move {
                    join_all(args.iter().zip(answers).map(|(arg, answer)| {
                        let lane = &lane;
                        async move {
                            let outcome = lane.alone(arg).await.map_err(ApiError::from).and_then(
                                |mut one| {
                                    one.pop().ok_or_else(|| {
                                        ApiError::internal("a batch answered the wrong count")
                                    })
                                },
                            );
                            let _ = answer.send(outcome);
                        }
                    }))
                    .await;
                });
            }
            Err(e) => {
                // No connection, or it broke: whether the batch committed is unknown (a claim or a
                // drain run again could take a second row), so every element answers the error.
                let unavailable = matches!(
                    e,
                    sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed
                );
                for answer in answers {
                    let _ = answer.send(Err(if unavailable {
                        ApiError::storage_unavailable(
                            "the database is unreachable or busy; retry later",
                        )
                    } else {
                        ApiError::internal(&e)
                    }));
                }
            }
        }
    }

    /// Runs a batch on one of the lanes' own connections (opened on first use, and again after
    /// one broke). A connection that answered, even with a refusal, is kept for the next batch;
    /// one left unused for longer than the pool's idle timeout is closed and replaced, as the
    /// pool does with its own, so a connection that a firewall or proxy dropped while the
    /// mailbox was quiet does not fail the next batch.
    async fn on_own_connection(&self, args: &[A]) -> Result<Vec<R>, sqlx::Error> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let stale = self.pool.options().get_idle_timeout();
        let mut conn = match idle {
            Some((conn, used)) if stale.is_none_or(|t| used.elapsed() < t) => conn,
            idle => {
                if let Some((old, _)) = idle {
                    self.runtime.spawn(async move {
                        let _ = old.close().await;
                    });
                }
                PgConnection::connect_with(&self.pool.connect_options()).await?
            }
        };
        let outcome = (self.exec)(&mut conn, args).await;
        if matches!(outcome, Ok(_) | Err(sqlx::Error::Database(_))) {
            if let Ok(mut idle) = self.idle.lock() {
                idle.push((conn, Instant::now()));
            }
        }
        outcome
    }

    /// Runs one element alone, on a pooled connection.
    async fn alone(&self, arg: &A) -> Result<Vec<R>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        (self.exec)(&mut conn, std::slice::from_ref(arg)).await
    }
}

/// A task to insert (an `a2a_step_many` send element).
pub struct SendArgs {
    pub id: String,
    pub sender: String,
    pub recipient: String,
    pub body: String,
    pub deadline_ms: Option<i64>,
    pub duplicate_safety: Option<String>,
    pub idem_key: Option<String>,
    pub audit_body: String,
}

/// A claim of the head of `recipient`'s queue (an `a2a_step_many` claim element).
pub struct ClaimArgs {
    pub recipient: String,
    pub lease_id: String,
    pub caller: String,
}

/// A result to store (an `a2a_step_many` result element).
pub struct ResultArgs {
    pub task_id: String,
    pub status: String,
    pub content: String,
    pub error_message: Option<String>,
    pub caller: String,
    pub lease_guard: Option<String>,
}

/// A drained result (an `a2a_step_many` drain element).
#[derive(Debug, FromRow)]
pub struct Drained {
    pub id: String,
    pub result_status: Option<String>,
    pub result_content: Option<String>,
    pub result_error: Option<String>,
}

/// One request's element of a batch.
pub enum Step {
    Send(SendArgs),
    Claim(ClaimArgs),
    Result(ResultArgs),
    Drain(String),
}

impl Kinded for Step {
    fn kind(&self) -> usize {
        match self {
            Step::Send(_) => 0,
            Step::Claim(_) => 1,
            Step::Result(_) => 2,
            Step::Drain(_) => 3,
        }
    }
}

/// What an element did.
pub enum Outcome {
    /// Whether the task was inserted (`false`: its id exists).
    Sent(bool),
    /// The leased row, or `None` when the head was missing, expired or locked.
    Claimed(Option<Box<TaskRow>>),
    /// The task's sender when the result was stored.
    Stored(Option<String>),
    /// The result drained, if any.
    Drained(Option<Drained>),
    /// The element's answer could not be read (a server bug): only its request fails.
    Failed(String),
}

#[derive(FromRow)]
struct StepRow {
    o_kind: i32,
    o_ord: i32,
    o_text: Option<String>,
    o_status: Option<String>,
    o_content: Option<String>,
    o_error: Option<String>,
}

fn column<A, T>(args: &[&A], f: impl Fn(&A) -> T) -> Vec<T> {
    args.iter().map(|a| f(a)).collect()
}

/// The group commit of a PostgreSQL mailbox: one lane for the four kinds.
pub struct PgBatches {
    lane: Combiner<Step, Outcome>,
}

fn mismatch(other: Outcome) -> ApiError {
    match other {
        Outcome::Failed(why) => ApiError::internal(why),
        _ => ApiError::internal("a batch answered another kind of outcome"),
    }
}

impl PgBatches {
    pub fn new(pool: PgPool, metrics: Arc<Metrics>) -> PgBatches {
        PgBatches {
            lane: Combiner::new(pool, metrics, step_many),
        }
    }

    pub async fn send(&self, a: SendArgs) -> Result<bool, ApiError> {
        match self.lane.call(Step::Send(a)).await? {
            Outcome::Sent(b) => Ok(b),
            other => Err(mismatch(other)),
        }
    }

    pub async fn claim(&self, a: ClaimArgs) -> Result<Option<TaskRow>, ApiError> {
        match self.lane.call(Step::Claim(a)).await? {
            Outcome::Claimed(r) => Ok(r.map(|row| *row)),
            other => Err(mismatch(other)),
        }
    }

    pub async fn result(&self, a: ResultArgs) -> Result<Option<String>, ApiError> {
        match self.lane.call(Step::Result(a)).await? {
            Outcome::Stored(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }

    pub async fn drain(&self, sender: String) -> Result<Option<Drained>, ApiError> {
        match self.lane.call(Step::Drain(sender)).await? {
            Outcome::Drained(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }

    /// `(kind, requests waiting for the next batch)` per kind, in [`BATCH_KINDS`] order.
    pub fn waiting(&self) -> [(&'static str, usize); 4] {
        let n = self.lane.waiting();
        [0, 1, 2, 3].map(|k| (BATCH_KINDS[k], n[k]))
    }
}

/// Binds a batch's elements as the argument arrays of `a2a_step_many` (migrations 0003, 0004), each
/// kind's arrays holding that kind's elements in batch order, and maps the answered rows back.
fn step_many<'c>(
    conn: &'c mut PgConnection,
    steps: &[Step],
) -> BoxFuture<'c, Result<Vec<Outcome>, sqlx::Error>> {
    let mut at: [Vec<usize>; 4] = Default::default();
    let (mut sends, mut claims, mut results, mut drains) = (vec![], vec![], vec![], vec![]);
    for (i, step) in steps.iter().enumerate() {
        at[step.kind()].push(i);
        match step {
            Step::Send(a) => sends.push(a),
            Step::Claim(a) => claims.push(a),
            Step::Result(a) => results.push(a),
            Step::Drain(a) => drains.push(a),
        }
    }
    let query = sqlx::query_as(
        "SELECT o_kind, o_ord, o_text, o_status, o_content, o_error FROM a2a_step_many(\
         $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
    )
    .bind(column(&sends, |a| a.id.clone()))
    .bind(column(&sends, |a| a.sender.clone()))
    .bind(column(&sends, |a| a.recipient.clone()))
    .bind(column(&sends, |a| a.body.clone()))
    .bind(column(&sends, |a| a.deadline_ms))
    .bind(column(&sends, |a| a.duplicate_safety.clone()))
    .bind(column(&sends, |a| a.idem_key.clone()))
    .bind(column(&sends, |a| a.audit_body.clone()))
    .bind(column(&claims, |a| a.recipient.clone()))
    .bind(column(&claims, |a| a.lease_id.clone()))
    .bind(column(&claims, |a| a.caller.clone()))
    .bind(column(&results, |a| a.task_id.clone()))
    .bind(column(&results, |a| a.status.clone()))
    .bind(column(&results, |a| a.content.clone()))
    .bind(column(&results, |a| a.error_message.clone()))
    .bind(column(&results, |a| a.caller.clone()))
    .bind(column(&results, |a| a.lease_guard.clone()))
    .bind(column(&drains, |a| (*a).clone()))
    .bind(now_ms());
    let kinds: Vec<usize> = steps.iter().map(Kinded::kind).collect();
    Box::pin(async move {
        let rows: Vec<StepRow> = query.fetch_all(&mut *conn).await?;
        Ok(place(&kinds, rows))
    })
}

/// Maps the rows `a2a_step_many` answered to the batch's elements (`kinds`, in batch order): a
/// row names its kind and its 1-based position among that kind's elements; an element without a
/// row did nothing.
fn place(kinds: &[usize], rows: Vec<StepRow>) -> Vec<Outcome> {
    let mut at: [Vec<usize>; 4] = Default::default();
    for (i, &k) in kinds.iter().enumerate() {
        at[k].push(i);
    }
    let mut out: Vec<Outcome> = kinds
        .iter()
        .map(|k| match k {
            0 => Outcome::Sent(false),
            1 => Outcome::Claimed(None),
            2 => Outcome::Stored(None),
            _ => Outcome::Drained(None),
        })
        .collect();
    for row in rows {
        let element = usize::try_from(row.o_kind)
            .ok()
            .zip(usize::try_from(row.o_ord).ok())
            .and_then(|(k, ord)| at.get(k)?.get(ord.checked_sub(1)?).map(|&i| (k, i)));
        let Some((kind, i)) = element else {
            tracing::error!(
                kind = row.o_kind,
                ord = row.o_ord,
                "a batch row names no element"
            );
            continue;
        };
        out[i] = match kind {
            0 => Outcome::Sent(true),
            1 => match serde_json::from_str::<TaskRow>(row.o_text.as_deref().unwrap_or("")) {
                Ok(task) => Outcome::Claimed(Some(Box::new(task))),
                // The lease is committed; only this request can be told it went wrong.
                Err(e) => Outcome::Failed(format!("the leased row could not be read: {e}")),
            },
            2 => Outcome::Stored(row.o_text),
            _ => Outcome::Drained(row.o_text.map(|id| Drained {
                id,
                result_status: row.o_status,
                result_content: row.o_content,
                result_error: row.o_error,
            })),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{place, Outcome, StepRow};

    fn row(kind: i32, ord: i32, text: Option<&str>) -> StepRow {
        StepRow {
            o_kind: kind,
            o_ord: ord,
            o_text: text.map(str::to_owned),
            o_status: Some("ok".into()),
            o_content: Some("[]".into()),
            o_error: None,
        }
    }

    #[test]
    fn rows_reach_their_elements_by_kind_and_position() {
        // Batch order: send, drain, send, result, claim, claim.
        let kinds = [0, 3, 0, 2, 1, 1];
        let task = r#"{"id":"t1","sender":"a","recipient":"b","body":"{}","state":"in_flight",
            "attempt":1,"lease_id":"l2","leased_to":"b","leased_at_ms":5,"heartbeat_at_ms":5,
            "deadline_ms":null,"duplicate_safety":null,"idem_key":null,"cache_key":null,
            "replayed_from":null,"result_status":null,"result_content":null,"result_error":null,
            "result_by":null,"created_at_ms":1,"updated_at_ms":5,"queue_seq":7,"result_seq":null}"#;
        let out = place(
            &kinds,
            vec![
                row(0, 2, None),       // the second send was inserted
                row(2, 1, Some("a")),  // the result was stored (sender a)
                row(1, 2, Some(task)), // the second claim leased t1
                row(3, 1, Some("t0")), // the drain took t0's result
                row(1, 9, Some(task)), // names no element: ignored
                row(7, 1, None),       // no such kind: ignored
            ],
        );
        assert!(matches!(out[0], Outcome::Sent(false)));
        assert!(matches!(&out[1], Outcome::Drained(Some(d)) if d.id == "t0"));
        assert!(matches!(out[2], Outcome::Sent(true)));
        assert!(matches!(&out[3], Outcome::Stored(Some(s)) if s == "a"));
        assert!(matches!(out[4], Outcome::Claimed(None)));
        assert!(
            matches!(&out[5], Outcome::Claimed(Some(t)) if t.lease_id.as_deref() == Some("l2"))
        );
    }

    #[test]
    fn an_unreadable_claim_fails_only_its_own_element() {
        let out = place(&[1, 0], vec![row(1, 1, Some("not json")), row(0, 1, None)]);
        assert!(matches!(out[0], Outcome::Failed(_)));
        assert!(matches!(out[1], Outcome::Sent(true)));
    }
}
