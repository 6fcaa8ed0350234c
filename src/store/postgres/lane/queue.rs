//! What the lane's combiner and its runner share: the elements a batch is made of, the queue
//! they wait in, and the lane that runs them.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Instant;

use futures_util::future::BoxFuture;
use sqlx::{PgConnection, PgPool};
use tokio::runtime::Handle;

use crate::metrics::Metrics;
use crate::store::backend::Responder;
use crate::store::postgres::metrics::LaneCounters;

/// Lanes (batches running at once). One: requests arriving while a batch runs wait for it and
/// then go together. One lane for all kinds measured less CPU per task and more tasks per second
/// than one lane per kind, or than a second batch in flight (BENCHMARKS.md, "Design choices").
/// Parked polls (below) rely on it: a poll is parked or riding in THE running batch, never in
/// two.
pub const IN_FLIGHT: usize = 1;
/// Elements per batch at most, riders aside.
pub const MAX_BATCH: usize = 64;
/// Parked drains that ride in one batch at most (see [`Step::riders`]).
pub const MAX_DRAIN_RIDERS: usize = 64;

/// Binds a batch's elements (one copy, into the argument arrays) and runs them on a connection.
pub(super) type Exec<A, R> =
    for<'c> fn(&'c mut PgConnection, &[A]) -> BoxFuture<'c, Result<Vec<R>, sqlx::Error>>;

/// An element of a batch, and how a poll that found nothing waits parked for the batches that
/// may make work for it.
pub trait Element: Send + Sync + Sized + 'static {
    type Outcome: Send + 'static;
    /// The element's operation, as an index into [`BATCH_KINDS`].
    fn kind(&self) -> usize;
    /// Whether the outcome found something; a riding element that found nothing stays parked.
    fn found(outcome: &Self::Outcome) -> bool;
    /// Marks, once a batch has run, the outcomes of the elements whose work a rider took.
    fn handed(batch: &[Self], outcomes: &mut [Self::Outcome]);
    /// Makes a parked element a rider: in a batch, it runs only if that batch made work for it.
    fn ride(&mut self);
    /// Which of the `parked` elements (oldest first) ride along in a batch of `batch`.
    fn riders(batch: &[&Self], parked: &[&Self]) -> Vec<bool>;
}

pub(super) struct Item<A: Element> {
    pub(super) id: u64,
    pub(super) arg: A,
    pub(super) answer: Responder<A::Outcome>,
    /// A poll's parked answer: if this element finds nothing, it parks, and this answers the
    /// batch in which it finally finds something.
    pub(super) park: Option<Responder<A::Outcome>>,
    /// A parked element riding along (it answers only when it found something).
    pub(super) rider: bool,
}

pub(super) struct Queue<A: Element> {
    pub(super) next_id: u64,
    pub(super) items: Vec<Item<A>>,
    /// Lanes running now (at most [`IN_FLIGHT`]).
    pub(super) running: usize,
    /// Polls that found nothing and wait for a batch that may make work for them, by id (the
    /// order they first asked in). A map: thousands park and leave one by one.
    pub(super) parked: BTreeMap<u64, Item<A>>,
    /// Parked polls riding in the running batch, with whether their request stopped waiting
    /// (then their outcome is answered whatever it is, since no later batch will take them).
    pub(super) riding: Vec<(u64, bool)>,
}

/// The queue and what runs its batches: the runtime, the batch function, the lanes' idle
/// connections, and the pool that opens them (its options, `lock_timeout` included) and reruns
/// a refused batch's elements.
pub(super) struct Lane<A: Element> {
    pub(super) queue: Mutex<Queue<A>>,
    pub(super) runtime: Handle,
    /// Whether a lane runs on the single-threaded runtime (an HTTP worker) of the request that
    /// starts it, rather than on `runtime`.
    pub(super) on_caller: AtomicBool,
    pub(super) pool: PgPool,
    pub(super) exec: Exec<A, A::Outcome>,
    /// The lanes' connections not in use: where each was opened and when it was last used.
    pub(super) idle: Mutex<Vec<(PgConnection, Home, Instant)>>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) counters: LaneCounters,
}

/// Where a lane runs, and so where its connection's socket is watched: `None` for the
/// multi-thread runtime the combiner was made on, or the thread of a single-threaded runtime.
/// A connection is reused only at its own home, so its wake-ups never cross threads and never
/// depend on a runtime the lane has left.
pub(super) type Home = Option<ThreadId>;

impl<A: Element> Default for Queue<A> {
    fn default() -> Self {
        Queue {
            next_id: 0,
            items: Vec::new(),
            running: 0,
            parked: BTreeMap::new(),
            riding: Vec::new(),
        }
    }
}

impl<A: Element> Queue<A> {
    /// The next batch: up to [`MAX_BATCH`] elements, oldest first, and the parked polls that
    /// ride along in it.
    pub(super) fn take(&mut self) -> Vec<Item<A>> {
        let n = self.items.len().min(MAX_BATCH);
        let mut batch: Vec<Item<A>> = self.items.drain(..n).collect();
        // A burst of thousands of requests leaves no large queue behind once it is served.
        if self.items.capacity() > 4 * MAX_BATCH && self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to(self.items.len().saturating_mul(2));
        }
        if !self.parked.is_empty() {
            let rides = {
                let args: Vec<&A> = batch.iter().map(|i| &i.arg).collect();
                let parked: Vec<&A> = self.parked.values().map(|i| &i.arg).collect();
                A::riders(&args, &parked)
            };
            let riders: Vec<u64> = (self.parked.keys().zip(rides))
                .filter_map(|(&id, rides)| rides.then_some(id))
                .collect();
            for id in riders {
                if let Some(item) = self.parked.remove(&id) {
                    self.riding.push((id, false));
                    batch.push(item);
                }
            }
        }
        batch
    }

    /// Parks poll `id` as a rider answered by `answer`, in id order (the order the polls first
    /// asked in).
    pub(super) fn park(&mut self, id: u64, arg: A, answer: Responder<A::Outcome>) {
        let item = Item {
            id,
            arg,
            answer,
            park: None,
            rider: true,
        };
        self.parked.insert(id, item);
    }

    /// Takes a rider back from the running batch: whether its request stopped waiting.
    pub(super) fn unride(&mut self, id: u64) -> bool {
        match self.riding.iter().position(|(r, _)| *r == id) {
            Some(at) => self.riding.swap_remove(at).1,
            None => true,
        }
    }
}
