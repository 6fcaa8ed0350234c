//! How a lane runs its batches: one after another, each on one of the lane's own connections,
//! answering every element and parking the polls that found nothing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use futures_util::future::join_all;
use sqlx::{Connection, PgConnection};
use tokio::runtime::{Handle, RuntimeFlavor};

use super::queue::{Element, Home, Item, Lane, Queue};
use crate::error::MailboxError;
use crate::store::backend::Responder;
use std::sync::atomic::Ordering;

/// A running lane: if it ends without stopping (a panic in a batch), it still counts itself out,
/// so the next request starts a lane for the elements still queued.
struct Running<'a, A: Element> {
    queue: &'a Mutex<Queue<A>>,
    stopped: bool,
}

impl<A: Element> Drop for Running<'_, A> {
    fn drop(&mut self) {
        if !self.stopped {
            if let Ok(mut q) = self.queue.lock() {
                q.running = q.running.saturating_sub(1);
            }
        }
    }
}

impl<A: Element> Lane<A> {
    /// Where a lane started now runs: the caller's own single-threaded runtime when the lanes
    /// run on the HTTP worker, else the combiner's runtime.
    pub(super) fn home(&self) -> (Handle, Home) {
        if self.on_caller.load(Ordering::Relaxed) {
            if let Ok(here) = Handle::try_current() {
                if here.runtime_flavor() == RuntimeFlavor::CurrentThread {
                    return (here, Some(std::thread::current().id()));
                }
            }
        }
        (self.runtime.clone(), None)
    }

    /// One lane: runs `batch`, then whatever queued meanwhile, until nothing waits. Whether a
    /// lane runs is decided under the queue's lock, so an element is never left queued with no
    /// lane to take it.
    pub(super) async fn drive(self: Arc<Self>, mut batch: Vec<Item<A>>, home: Home) {
        let mut lane = Running {
            queue: &self.queue,
            stopped: false,
        };
        loop {
            self.count(&batch);
            self.run(batch, home).await;
            let mut q = locked(&self.queue);
            if q.items.is_empty() {
                q.running = q.running.saturating_sub(1);
                lane.stopped = true;
                return;
            }
            batch = q.take();
        }
    }

    /// Unparks poll `id`: `true` if it was parked (now it is not), `false` if it rides in the
    /// running batch (it is marked as gone, so that batch answers whatever it finds) or was
    /// already answered.
    pub(super) fn unpark(&self, id: u64) -> bool {
        let Ok(mut q) = self.queue.lock() else {
            return false;
        };
        if q.parked.remove(&id).is_some() {
            return true;
        }
        if let Some(r) = q.riding.iter_mut().find(|(r, _)| *r == id) {
            r.1 = true;
        }
        false
    }

    fn count(&self, batch: &[Item<A>]) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut n = [0usize; 4];
        for item in batch {
            tally(&mut n, item.arg.kind());
        }
        let counters = &self.counters;
        counters.transactions.fetch_add(1, Relaxed);
        let kinds = counters.batches.iter().zip(&counters.requests);
        for ((batches, requests), &k) in kinds.zip(n.iter()) {
            if k > 0 {
                batches.fetch_add(1, Relaxed);
                requests.fetch_add(k as u64, Relaxed);
            }
        }
    }

    /// Answers a batch's outcomes, parks the polls that found nothing and puts back the riders
    /// that found nothing, all under the queue's lock, before the next batch is taken.
    fn settle(&self, batch: Vec<(Tail<A>, A)>, outcomes: Vec<A::Outcome>) {
        let mut q = locked(&self.queue);
        for ((tail, mut arg), outcome) in batch.into_iter().zip(outcomes) {
            let found = A::found(&outcome);
            if tail.rider {
                let gone = q.unride(tail.id);
                if found {
                    if let Some(handoffs) = self.metrics.handoffs.get(arg.kind()) {
                        self.metrics.inc(handoffs);
                    }
                }
                if found || gone {
                    let _ = tail.answer.send(Ok(outcome));
                } else {
                    q.park(tail.id, arg, tail.answer);
                }
                continue;
            }
            // A poll whose request went away meanwhile (its hold dropped) is not parked.
            if let (false, Some(park)) = (found, tail.park.filter(|p| !p.is_closed())) {
                arg.ride();
                q.park(tail.id, arg, park);
            }
            let _ = tail.answer.send(Ok(outcome));
        }
    }

    /// After a failed batch: its riders go back to waiting parked (or, if their request stopped
    /// waiting, are told nothing came); the others are answered by the caller.
    fn unride_failed(&self, riders: Vec<(Tail<A>, A)>) {
        let mut q = locked(&self.queue);
        for (tail, arg) in riders {
            if !q.unride(tail.id) {
                q.park(tail.id, arg, tail.answer);
            }
        }
    }

    /// Runs one batch and answers its elements. If the database refused it, its elements are
    /// rerun alone in a task of their own, so the lane goes on with the next batch at once.
    async fn run(self: &Arc<Self>, batch: Vec<Item<A>>, home: Home) {
        let (args, tails): (Vec<A>, Vec<Tail<A>>) = batch
            .into_iter()
            .map(|item| {
                (
                    item.arg,
                    Tail {
                        id: item.id,
                        answer: item.answer,
                        park: item.park,
                        rider: item.rider,
                    },
                )
            })
            .unzip();
        let n = args.len();
        let outcome = self.on_own_connection(&args, home).await;
        if let Ok(outcomes) = outcome.as_ref().map(Vec::len) {
            if outcomes == n {
                let outcomes = outcome.unwrap_or_default();
                self.settle(tails.into_iter().zip(args).collect(), outcomes);
                return;
            }
        }
        // The batch failed: riders wait on; the others are answered below (a poll's parked
        // answer is dropped, so it waits for a wake-up instead).
        let (riders, own): (Vec<_>, Vec<_>) = tails
            .into_iter()
            .zip(args)
            .partition(|(tail, _)| tail.rider);
        self.unride_failed(riders);
        let n = own.len();
        let (answers, args): (Vec<Responder<A::Outcome>>, Vec<A>) = own
            .into_iter()
            .map(|(tail, arg)| (tail.answer, arg))
            .unzip();
        match outcome {
            Ok(_) => {
                for answer in answers {
                    let _ = answer.send(Err(MailboxError::internal(
                        "a batch answered the wrong count",
                    )));
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
                            let outcome = lane
                                .alone(arg)
                                .await
                                .map_err(MailboxError::from)
                                .and_then(|mut one| {
                                    one.pop().ok_or_else(|| {
                                        MailboxError::internal("a batch answered the wrong count")
                                    })
                                });
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
                        MailboxError::storage_unavailable(
                            "the database is unreachable or busy; retry later",
                        )
                    } else {
                        MailboxError::internal(&e)
                    }));
                }
            }
        }
    }

    /// Runs a batch on one of the lanes' own connections (opened on first use, and again after
    /// one broke). A connection that answered, even with a refusal, is kept for the next batch;
    /// one left unused for longer than the pool's idle timeout is closed and replaced, as the
    /// pool does with its own, so a connection that a firewall or proxy dropped while the
    /// mailbox was quiet does not fail the next batch. A connection opened at another home than
    /// the lane's ([`Home`]) is closed and replaced too.
    async fn on_own_connection(
        &self,
        args: &[A],
        home: Home,
    ) -> Result<Vec<A::Outcome>, sqlx::Error> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let stale = self.pool.options().get_idle_timeout();
        let mut conn = match idle {
            Some((conn, at, used)) if at == home && stale.is_none_or(|t| used.elapsed() < t) => {
                conn
            }
            idle => {
                if let Some((old, _, _)) = idle {
                    self.runtime.spawn(async move {
                        let _ = old.close().await;
                    });
                }
                PgConnection::connect_with(&self.pool.connect_options()).await?
            }
        };
        let mut outcome = (self.exec)(&mut conn, args).await;
        if let Ok(outcomes) = outcome.as_mut() {
            A::handed(args, outcomes);
        }
        if matches!(outcome, Ok(_) | Err(sqlx::Error::Database(_))) {
            if let Ok(mut idle) = self.idle.lock() {
                idle.push((conn, home, Instant::now()));
            }
        }
        outcome
    }

    /// Runs one element alone, on a pooled connection.
    async fn alone(&self, arg: &A) -> Result<Vec<A::Outcome>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        (self.exec)(&mut conn, std::slice::from_ref(arg)).await
    }
}

/// What a batch keeps of an element besides its argument, to answer it.
struct Tail<A: Element> {
    id: u64,
    answer: Responder<A::Outcome>,
    park: Option<Responder<A::Outcome>>,
    rider: bool,
}

/// Counts one more of `kind` (an [`Element::kind`], below 4; another is not counted).
pub(super) fn tally(counts: &mut [usize; 4], kind: usize) {
    if let Some(n) = counts.get_mut(kind) {
        *n = n.saturating_add(1);
    }
}

/// The lane's queue, locked: a panic while it was held (none is known) leaves it as it was, so
/// the lane goes on rather than panicking in every request after.
pub(super) fn locked<T>(queue: &Mutex<T>) -> MutexGuard<'_, T> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}
