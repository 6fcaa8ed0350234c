//! Group commit on PostgreSQL for the four fast paths (send, lease claim, result, drain): the
//! lane that combines concurrent requests into batches of one batch function (`steps.rs`).
//!
//! Concurrent requests of all four kinds are combined: a request queues its element and, when no
//! lane is running ([`IN_FLIGHT`]), starts one with every element queued so far (up to
//! [`MAX_BATCH`], any mix of kinds), run as ONE call of `a2a_step_many` (`step_many.sql`):
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
//!
//! A long-poll (`GET /a2a/tasks/next`, `GET /a2a/results/next`) whose claim or drain found
//! nothing stays parked in the lane while it waits, and rides along in the batches that may have
//! made work for it: a parked claim in a batch that sends its recipient a task, a parked drain in
//! a batch that stores a result (`step_many.sql` runs a rider only when its batch did). So a
//! waiting worker is leased its task in the transaction that queued it, and a waiting sender
//! drains its result in the transaction that stored it: one batch per hand-off instead of two
//! and a wake-up. A rider that committed is always answered, even when its request stopped
//! waiting while the batch ran ([`ElementHold::leave`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sqlx::PgPool;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::metrics::LaneCounters;
use crate::error::MailboxError;
use crate::metrics::Metrics;
use crate::store::backend::{Awaiting, Responder};

mod queue;
mod run;
pub use queue::{Element, IN_FLIGHT, MAX_DRAIN_RIDERS};
use queue::{Exec, Item, Lane, Queue};
use run::{locked, tally};
#[cfg(test)]
mod tests;

/// Combines concurrent calls into batches of one batch function.
///
/// A request queues its element and, when fewer than [`IN_FLIGHT`] lanes run, starts one with
/// everything queued so far. A lane drives itself: when its batch is over it takes whatever
/// queued meanwhile and runs that at once, and it stops when nothing is waiting. Lanes run on the
/// runtime the combiner was made on (the server's multi-thread runtime) over connections of
/// their own opened there: with several HTTP workers, a lane on one of them would notice a
/// finished batch, and start the next one, only between the HTTP requests that worker is
/// handling, while the others' requests wait. With ONE HTTP worker
/// ([`Combiner::run_on_the_http_worker`]) every request already runs on that thread, and the lane
/// runs there too: its answers wake their requests without crossing threads.
///
/// A long-poll's claim or drain that found nothing stays parked ([`Combiner::call_parking`]):
/// the batches that may make work for it (a send to its recipient, a stored result) take it
/// along as a rider, and the first one in which it finds something answers its [`ElementHold`]. It
/// is parked in the same step that answers its empty outcome, before the next batch is formed,
/// so no batch after its first can miss it.
pub struct Combiner<A: Element> {
    lane: Arc<Lane<A>>,
}

/// Withdraws a queued element when its request goes away before a batch took it.
struct Withdraw<'a, A: Element> {
    queue: &'a Mutex<Queue<A>>,
    id: u64,
}

impl<A: Element> Drop for Withdraw<'_, A> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.items.retain(|item| item.id != self.id);
        }
    }
}

/// A parked poll: answers the outcome of the batch in which it found something.
pub struct ElementHold<A: Element> {
    lane: Arc<Lane<A>>,
    id: u64,
    /// `None` once answered or given up.
    rx: Option<Awaiting<A::Outcome>>,
}

impl<A: Element> ElementHold<A> {
    /// The outcome of the batch in which the parked poll found something; never ready when it
    /// was not parked (its element found something at once, or failed).
    pub async fn answered(&mut self) -> Result<A::Outcome, MailboxError> {
        if let Some(rx) = self.rx.as_mut() {
            if let Ok(outcome) = rx.await {
                self.rx = None;
                return outcome;
            }
            self.rx = None;
        }
        std::future::pending().await
    }

    /// Stops waiting. A parked poll is unparked at once (`None`); one riding in the running
    /// batch waits for that batch and answers its outcome, whatever it is: a claim or drain that
    /// committed is never dropped.
    pub async fn leave(mut self) -> Option<Result<A::Outcome, MailboxError>> {
        let rx = self.rx.take()?;
        if self.lane.unpark(self.id) {
            return None;
        }
        rx.await.ok()
    }
}

impl<A: Element> Drop for ElementHold<A> {
    fn drop(&mut self) {
        // The request went away: a riding element's outcome, if it finds something, goes to
        // nobody, like that of a request that went away while its element was in a batch.
        // The receiver goes first, so that a batch settling this poll at the same moment sees
        // it closed and does not park it, or parks it before the unpark below removes it.
        if let Some(rx) = self.rx.take() {
            drop(rx);
            self.lane.unpark(self.id);
        }
    }
}

impl<A: Element> Combiner<A> {
    /// Must be called inside the Tokio runtime the batches are to run on.
    pub(crate) fn new(
        pool: PgPool,
        metrics: Arc<Metrics>,
        exec: Exec<A, A::Outcome>,
    ) -> Combiner<A> {
        Combiner {
            lane: Arc::new(Lane {
                queue: Mutex::new(Queue::default()),
                runtime: Handle::current(),
                on_caller: AtomicBool::new(false),
                pool,
                exec,
                idle: Mutex::new(Vec::new()),
                metrics,
                counters: LaneCounters::default(),
            }),
        }
    }

    /// Runs the lanes from now on on the HTTP worker whose request starts them (when it is a
    /// single-threaded runtime; otherwise still on the combiner's own runtime). For a server with
    /// one HTTP worker only: with several, a lane on one worker waits for that worker's HTTP
    /// requests between batches while the other workers' requests wait for the lane.
    pub fn run_on_the_http_worker(&self) {
        self.lane.on_caller.store(true, Ordering::Relaxed);
    }

    /// The lane's counters (`metrics.rs`).
    pub fn counters(&self) -> &LaneCounters {
        &self.lane.counters
    }

    /// Requests waiting for the next batch, and polls parked (not riding in the running batch),
    /// by kind.
    pub fn waiting(&self) -> ([usize; 4], [usize; 4]) {
        let (mut waiting, mut parked) = ([0; 4], [0; 4]);
        if let Ok(q) = self.lane.queue.lock() {
            for item in &q.items {
                tally(&mut waiting, item.arg.kind());
            }
            for item in q.parked.values() {
                tally(&mut parked, item.arg.kind());
            }
        }
        (waiting, parked)
    }

    /// Runs `arg` in the next batch and answers its outcome.
    pub async fn call(&self, arg: A) -> Result<A::Outcome, MailboxError> {
        let (id, answered) = self.enqueue(arg, None);
        self.answer(id, answered).await
    }

    /// Like [`Combiner::call`], for a long-poll's claim or drain: if the element finds nothing,
    /// it stays parked, and the hold answers the first later batch in which it finds
    /// something (see [`Element::riders`]). The hold unparks it when dropped, also while the
    /// element is still on its way (a request that goes away leaves nothing parked).
    pub async fn call_parking(&self, arg: A) -> (Result<A::Outcome, MailboxError>, ElementHold<A>) {
        let (park, parked) = oneshot::channel();
        let (id, answered) = self.enqueue(arg, Some(park));
        let hold = ElementHold {
            lane: self.lane.clone(),
            id,
            rx: Some(parked),
        };
        (self.answer(id, answered).await, hold)
    }

    /// Queues `arg` and, when no lane runs, starts one.
    fn enqueue(&self, arg: A, park: Option<Responder<A::Outcome>>) -> (u64, Awaiting<A::Outcome>) {
        let (answer, answered) = oneshot::channel();
        let (id, start) = {
            let mut q = locked(&self.lane.queue);
            q.next_id = q.next_id.wrapping_add(1);
            let id = q.next_id;
            q.items.push(Item {
                id,
                arg,
                answer,
                park,
                rider: false,
            });
            let start = (q.running < IN_FLIGHT).then(|| {
                q.running = q.running.saturating_add(1);
                q.take()
            });
            (id, start)
        };
        if let Some(batch) = start {
            let lane = self.lane.clone();
            let (runtime, home) = self.lane.home();
            runtime.spawn(async move { lane.drive(batch, home).await });
        }
        (id, answered)
    }

    /// Waits for element `id`'s outcome; withdraws it if the request goes away first.
    async fn answer(
        &self,
        id: u64,
        answered: Awaiting<A::Outcome>,
    ) -> Result<A::Outcome, MailboxError> {
        let _withdraw = Withdraw {
            queue: &self.lane.queue,
            id,
        };
        answered
            .await
            .unwrap_or_else(|_| Err(MailboxError::internal("a batch ended without answering")))
    }
}
