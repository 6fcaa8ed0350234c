//! Group commit on PostgreSQL for the four fast paths (send, lease claim, result, drain).
//!
//! Concurrent requests of one kind are combined: a request queues its element and, when no batch
//! of its kind is running ([`IN_FLIGHT`]), takes every element queued so far (up to
//! [`MAX_BATCH`]) and runs them as one call of the kind's function (migration 0002): one round
//! trip, one transaction, one commit for all of them. While a batch runs, new requests queue, so
//! the batches grow with the load and shrink to one element when a request is alone (no timer,
//! no added wait). A batch runs in a task of its own, so a request that goes away
//! cannot cut short a batch that carries other requests; a request that goes away while its
//! element is still queued withdraws it.
//!
//! The elements of a batch run one after another inside the function, each the one statement
//! its path runs on SQLite, so the outcome of each is what it would have been alone in that
//! order. No element waits for a row another transaction holds (claims, drains and results skip
//! it and answer nothing, which sends the request down its transaction path, where it waits
//! alone); only a send whose id another transaction is inserting at that moment waits, and its
//! batch with it. If the database refuses a batch (a lock wait past `lock_timeout`, say), the
//! batch rolled back and each element is run again alone (all at once), so one element's
//! trouble is only its own; if the connection fails, whether the batch committed is unknown,
//! and every element answers 503 (retriable) as a request alone would.

use std::sync::{Arc, Mutex};

use futures_util::future::{join_all, BoxFuture};
use sqlx::{FromRow, PgPool};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::now_ms;
use super::rows::{TaskRow, TASK_COLS};
use crate::error::ApiError;
use crate::metrics::{Metrics, BATCH_KINDS};

/// Batches of one kind running at once. One: requests arriving while a batch runs wait for it
/// and then go together. Measured (BENCHMARKS.md, 16 sender/worker pairs, A/B): one batch per
/// kind 3,020-3,816 tasks/s at 1.9 transactions per task life; two 1,510-3,232 at 2.8, because
/// the waiting requests split into smaller batches. The four kinds run beside each other.
pub const IN_FLIGHT: usize = 1;
/// Elements per batch at most.
pub const MAX_BATCH: usize = 64;

type Answer<R> = oneshot::Sender<Result<R, ApiError>>;
/// Binds a batch's elements (one copy, into the argument arrays) and answers the call's future.
type Exec<A, R> =
    Arc<dyn Fn(PgPool, &[A]) -> BoxFuture<'static, Result<Vec<R>, sqlx::Error>> + Send + Sync>;

struct Item<A, R> {
    id: u64,
    arg: A,
    answer: Answer<R>,
}

struct Queue<A, R> {
    next_id: u64,
    items: Vec<Item<A, R>>,
}

/// Combines concurrent calls of one batch function.
pub struct Combiner<A, R> {
    queue: Mutex<Queue<A, R>>,
    slots: Arc<Semaphore>,
    pool: PgPool,
    exec: Exec<A, R>,
    /// Index of this kind in [`BATCH_KINDS`].
    kind: usize,
    metrics: Arc<Metrics>,
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

impl<A: Send + 'static, R: Send + 'static> Combiner<A, R> {
    fn new(pool: PgPool, metrics: Arc<Metrics>, kind: usize, exec: Exec<A, R>) -> Combiner<A, R> {
        Combiner {
            queue: Mutex::new(Queue {
                next_id: 0,
                items: Vec::new(),
            }),
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
            pool,
            exec,
            kind,
            metrics,
        }
    }

    /// Requests waiting for the next batch of this kind.
    pub fn waiting(&self) -> usize {
        self.queue.lock().map_or(0, |q| q.items.len())
    }

    /// Runs `arg` in the next batch of its kind and answers its outcome.
    pub async fn call(&self, arg: A) -> Result<R, ApiError> {
        let (answer, mut answered) = oneshot::channel();
        let id = {
            let mut q = self.queue.lock().expect("batch queue poisoned");
            q.next_id += 1;
            let id = q.next_id;
            q.items.push(Item { id, arg, answer });
            id
        };
        let _withdraw = Withdraw {
            queue: &self.queue,
            id,
        };
        loop {
            tokio::select! {
                biased;
                outcome = &mut answered => {
                    return outcome.unwrap_or_else(|_| {
                        Err(ApiError::internal("a batch ended without answering"))
                    });
                }
                slot = self.slots.clone().acquire_owned() => {
                    let slot = slot.expect("the batch semaphore is never closed");
                    let batch: Vec<Item<A, R>> = {
                        let mut q = self.queue.lock().expect("batch queue poisoned");
                        let n = q.items.len().min(MAX_BATCH);
                        q.items.drain(..n).collect()
                    };
                    if batch.is_empty() {
                        // Another request's batch took this element: its answer is coming.
                        drop(slot);
                        return answered.await.unwrap_or_else(|_| {
                            Err(ApiError::internal("a batch ended without answering"))
                        });
                    }
                    let (pool, exec) = (self.pool.clone(), self.exec.clone());
                    self.metrics.inc(&self.metrics.batches[self.kind]);
                    self.metrics.batched_requests[self.kind]
                        .fetch_add(batch.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    tokio::spawn(async move {
                        run(pool, exec, batch, slot).await;
                    });
                }
            }
        }
    }
}

/// Runs one batch holding its kind's `slot`, which it gives back as soon as the batch is over:
/// requests rerun alone after a refused batch do not hold up the next batch.
async fn run<A, R>(
    pool: PgPool,
    exec: Exec<A, R>,
    batch: Vec<Item<A, R>>,
    slot: OwnedSemaphorePermit,
) {
    let (args, answers): (Vec<A>, Vec<Answer<R>>) = batch
        .into_iter()
        .map(|item| (item.arg, item.answer))
        .unzip();
    let n = args.len();
    let outcome = exec(pool.clone(), &args).await;
    drop(slot);
    match outcome {
        Ok(outcomes) if outcomes.len() == n => {
            for (answer, outcome) in answers.into_iter().zip(outcomes) {
                let _ = answer.send(Ok(outcome));
            }
        }
        Ok(_) => {
            for answer in answers {
                let _ = answer.send(Err(ApiError::internal("a batch answered the wrong count")));
            }
        }
        Err(e) if n == 1 => {
            if let Some(answer) = answers.into_iter().next() {
                let _ = answer.send(Err(e.into()));
            }
        }
        Err(sqlx::Error::Database(e)) => {
            // The database refused the batch, so it rolled back: each element runs alone, all at
            // once, so that the one that made it fail waits for nobody else.
            tracing::debug!(error = %e, elements = n, "batch failed; running its elements alone");
            join_all(args.iter().zip(answers).map(|(arg, answer)| {
                let alone = exec(pool.clone(), std::slice::from_ref(arg));
                async move {
                    let outcome = alone.await.map_err(ApiError::from).and_then(|mut one| {
                        one.pop()
                            .ok_or_else(|| ApiError::internal("a batch answered the wrong count"))
                    });
                    let _ = answer.send(outcome);
                }
            }))
            .await;
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

/// A task to insert (`a2a_send_many`).
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

/// A claim of the head of `recipient`'s queue (`a2a_claim_many`).
pub struct ClaimArgs {
    pub recipient: String,
    pub lease_id: String,
    pub caller: String,
}

/// A result to store (`a2a_store_result_many`).
pub struct ResultArgs {
    pub task_id: String,
    pub status: String,
    pub content: String,
    pub error_message: Option<String>,
    pub caller: String,
    pub lease_guard: Option<String>,
}

/// A drained result (`a2a_drain_many`).
#[derive(Debug, FromRow)]
pub struct Drained {
    pub id: String,
    pub result_status: Option<String>,
    pub result_content: Option<String>,
    pub result_error: Option<String>,
}

#[derive(FromRow)]
struct Ordinal {
    o_ord: i32,
}

#[derive(FromRow)]
struct StoredResult {
    o_ord: i32,
    o_sender: String,
}

#[derive(FromRow)]
struct DrainedAt {
    o_ord: i32,
    #[sqlx(flatten)]
    drained: Drained,
}

/// Places each `(1-based ordinal, value)` at its element; the rest stay `None`.
fn by_ordinal<T>(n: usize, found: impl IntoIterator<Item = (i32, T)>) -> Vec<Option<T>> {
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for (ord, value) in found {
        if let Some(slot) = usize::try_from(ord)
            .ok()
            .and_then(|o| o.checked_sub(1))
            .and_then(|i| out.get_mut(i))
        {
            *slot = Some(value);
        }
    }
    out
}

fn column<A, T>(args: &[A], f: impl Fn(&A) -> T) -> Vec<T> {
    args.iter().map(f).collect()
}

/// The four combiners of a PostgreSQL mailbox.
pub struct PgBatches {
    /// Answers whether each task was inserted (`false`: its id exists).
    pub send: Combiner<SendArgs, bool>,
    /// Answers the leased row, or `None` when the head was missing, expired or locked.
    pub claim: Combiner<ClaimArgs, Option<TaskRow>>,
    /// Answers the task's sender when the result was stored.
    pub result: Combiner<ResultArgs, Option<String>>,
    /// Answers the result drained for each sender, if any.
    pub drain: Combiner<String, Option<Drained>>,
}

impl PgBatches {
    pub fn new(pool: PgPool, metrics: Arc<Metrics>) -> PgBatches {
        let m = || metrics.clone();
        PgBatches {
            send: Combiner::new(pool.clone(), m(), 0, Arc::new(send_many)),
            claim: Combiner::new(pool.clone(), m(), 1, Arc::new(claim_many)),
            result: Combiner::new(pool.clone(), m(), 2, Arc::new(store_result_many)),
            drain: Combiner::new(pool, m(), 3, Arc::new(drain_many)),
        }
    }

    /// `(kind, requests waiting for the next batch)` per kind, in [`BATCH_KINDS`] order.
    pub fn waiting(&self) -> [(&'static str, usize); 4] {
        [
            (BATCH_KINDS[0], self.send.waiting()),
            (BATCH_KINDS[1], self.claim.waiting()),
            (BATCH_KINDS[2], self.result.waiting()),
            (BATCH_KINDS[3], self.drain.waiting()),
        ]
    }
}

type Answers<R> = BoxFuture<'static, Result<Vec<R>, sqlx::Error>>;

fn send_many(pool: PgPool, args: &[SendArgs]) -> Answers<bool> {
    let n = args.len();
    let query =
        sqlx::query_as("SELECT o_ord FROM a2a_send_many($1, $2, $3, $4, $5, $6, $7, $8, $9)")
            .bind(column(args, |a| a.id.clone()))
            .bind(column(args, |a| a.sender.clone()))
            .bind(column(args, |a| a.recipient.clone()))
            .bind(column(args, |a| a.body.clone()))
            .bind(column(args, |a| a.deadline_ms))
            .bind(column(args, |a| a.duplicate_safety.clone()))
            .bind(column(args, |a| a.idem_key.clone()))
            .bind(column(args, |a| a.audit_body.clone()))
            .bind(now_ms());
    Box::pin(async move {
        let inserted: Vec<Ordinal> = query.fetch_all(&pool).await?;
        Ok(by_ordinal(n, inserted.into_iter().map(|r| (r.o_ord, ())))
            .into_iter()
            .map(|o| o.is_some())
            .collect())
    })
}

fn claim_many(pool: PgPool, args: &[ClaimArgs]) -> Answers<Option<TaskRow>> {
    let (recipients, lease_ids, callers) = (
        column(args, |a| a.recipient.clone()),
        column(args, |a| a.lease_id.clone()),
        column(args, |a| a.caller.clone()),
    );
    Box::pin(async move {
        let rows: Vec<TaskRow> = sqlx::query_as(&format!(
            "SELECT {TASK_COLS} FROM a2a_claim_many($1, $2, $3, $4)"
        ))
        .bind(recipients)
        .bind(&lease_ids)
        .bind(callers)
        .bind(now_ms())
        .fetch_all(&pool)
        .await?;
        // Each element's lease id is new: it names the row that element leased.
        let mut out: Vec<Option<TaskRow>> = (0..lease_ids.len()).map(|_| None).collect();
        for row in rows {
            if let Some(i) = lease_ids
                .iter()
                .position(|l| row.lease_id.as_deref() == Some(l.as_str()))
            {
                out[i] = Some(row);
            }
        }
        Ok(out)
    })
}

fn store_result_many(pool: PgPool, args: &[ResultArgs]) -> Answers<Option<String>> {
    let n = args.len();
    let query = sqlx::query_as(
        "SELECT o_ord, o_sender FROM a2a_store_result_many($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(column(args, |a| a.task_id.clone()))
    .bind(column(args, |a| a.status.clone()))
    .bind(column(args, |a| a.content.clone()))
    .bind(column(args, |a| a.error_message.clone()))
    .bind(column(args, |a| a.caller.clone()))
    .bind(column(args, |a| a.lease_guard.clone()))
    .bind(now_ms());
    Box::pin(async move {
        let stored: Vec<StoredResult> = query.fetch_all(&pool).await?;
        Ok(by_ordinal(
            n,
            stored.into_iter().map(|r| (r.o_ord, r.o_sender)),
        ))
    })
}

fn drain_many(pool: PgPool, senders: &[String]) -> Answers<Option<Drained>> {
    let n = senders.len();
    let query = sqlx::query_as(
        "SELECT o_ord, id, result_status, result_content, result_error FROM a2a_drain_many($1, $2)",
    )
    .bind(senders.to_vec())
    .bind(now_ms());
    Box::pin(async move {
        let drained: Vec<DrainedAt> = query.fetch_all(&pool).await?;
        Ok(by_ordinal(
            n,
            drained.into_iter().map(|r| (r.o_ord, r.drained)),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::by_ordinal;

    #[test]
    fn ordinals_place_outcomes_at_their_elements() {
        let placed = by_ordinal(4, [(2, "b"), (4, "d"), (0, "x"), (9, "y")]);
        assert_eq!(placed, vec![None, Some("b"), None, Some("d")]);
    }
}
