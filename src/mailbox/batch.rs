//! Group commit on PostgreSQL for the four fast paths (send, lease claim, result, drain).
//!
//! Concurrent requests of all four kinds are combined: a request queues its element and, when no
//! lane is running ([`IN_FLIGHT`]), starts one with every element queued so far (up to
//! [`MAX_BATCH`], any mix of kinds), run as ONE call of `a2a_step_many` (migrations 0003 to 0005):
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
//! a batch that stores a result (migration 0005 runs a rider only when its batch did). So a
//! waiting worker is leased its task in the transaction that queued it, and a waiting sender
//! drains its result in the transaction that stored it: one batch per hand-off instead of two
//! and a wake-up. A rider that committed is always answered, even when its request stopped
//! waiting while the batch ran ([`Ticket::leave`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Instant;

use futures_util::future::{join_all, BoxFuture};
use sqlx::{Connection, FromRow, PgConnection, PgPool};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

use super::now_ms;
use super::rows::TaskRow;
use crate::error::MailboxError;
use crate::metrics::{Metrics, BATCH_KINDS};

/// Lanes (batches running at once). One: requests arriving while a batch runs wait for it and
/// then go together. Measured (BENCHMARKS.md, 16 sender/worker pairs, A/B on one machine): one
/// lane for all kinds costs a third less CPU per task than one lane per kind (0.77 against 2.0
/// transactions per task life) and moves ≈ 7 % more tasks per second; two batches in flight, or
/// a second one only for a backlog, split the waiting requests into smaller batches and gave no
/// more throughput for more CPU (session 5, with self-driving lanes: 1,180-1,630 tasks/s for two
/// against 1,808-1,986 for one; session 11, with the lane on the HTTP worker: 1,759-2,168
/// against 2,438-2,623). Parked polls (below) rely on it: a poll is parked or riding in
/// THE running batch, never in two.
pub const IN_FLIGHT: usize = 1;
/// Elements per batch at most, riders aside.
pub const MAX_BATCH: usize = 64;
/// Parked drains that ride in one batch at most (see [`Step::riders`]).
pub const MAX_DRAIN_RIDERS: usize = 64;

type Answer<R> = oneshot::Sender<Result<R, MailboxError>>;
type Answered<R> = oneshot::Receiver<Result<R, MailboxError>>;
/// Binds a batch's elements (one copy, into the argument arrays) and runs them on a connection.
type Exec<A, R> =
    for<'c> fn(&'c mut PgConnection, &[A]) -> BoxFuture<'c, Result<Vec<R>, sqlx::Error>>;

/// An element of a batch, and how a poll that found nothing waits parked for the batches that
/// may make work for it.
pub trait Element: Send + Sync + Sized + 'static {
    type Outcome: Send + 'static;
    /// The element's operation, as an index into [`BATCH_KINDS`].
    fn kind(&self) -> usize;
    /// Whether the outcome found something; a riding element that found nothing stays parked.
    fn found(outcome: &Self::Outcome) -> bool;
    /// Makes a parked element a rider: in a batch, it runs only if that batch made work for it.
    fn ride(&mut self);
    /// Which of the `parked` elements (oldest first) ride along in a batch of `batch`.
    fn riders(batch: &[&Self], parked: &[&Self]) -> Vec<bool>;
}

struct Item<A: Element> {
    id: u64,
    arg: A,
    answer: Answer<A::Outcome>,
    /// A poll's parked answer: if this element finds nothing, it parks, and this answers the
    /// batch in which it finally finds something.
    park: Option<Answer<A::Outcome>>,
    /// A parked element riding along (it answers only when it found something).
    rider: bool,
}

struct Queue<A: Element> {
    next_id: u64,
    items: Vec<Item<A>>,
    /// Lanes running now (at most [`IN_FLIGHT`]).
    running: usize,
    /// Polls that found nothing and wait for a batch that may make work for them, by id.
    parked: Vec<Item<A>>,
    /// Parked polls riding in the running batch, with whether their request stopped waiting
    /// (then their outcome is answered whatever it is, since no later batch will take them).
    riding: Vec<(u64, bool)>,
}

/// Combines concurrent calls into batches of one batch function.
///
/// A request queues its element and, when fewer than [`IN_FLIGHT`] lanes run, starts one with
/// everything queued so far. A lane drives itself: when its batch is over it takes whatever
/// queued meanwhile and runs that at once, and it stops when nothing is waiting. Lanes run on the
/// runtime the combiner was made on (the server's multi-thread runtime) over connections of
/// their own opened there: with several HTTP workers, a lane on one of them would notice a
/// finished batch, and start the next one, only between the HTTP requests that worker is
/// handling, while the others' requests wait (measured in BENCHMARKS.md, session 5). With ONE
/// HTTP worker ([`Combiner::run_on_the_http_worker`]) every request already runs on that thread,
/// and the lane runs there too: its answers wake their requests without crossing threads
/// (BENCHMARKS.md, session 10).
///
/// A long-poll's claim or drain that found nothing stays parked ([`Combiner::call_parking`]):
/// the batches that may make work for it (a send to its recipient, a stored result) take it
/// along as a rider, and the first one in which it finds something answers its [`Ticket`]. It
/// is parked in the same step that answers its empty outcome, before the next batch is formed,
/// so no batch after its first can miss it.
pub struct Combiner<A: Element> {
    lane: Arc<Lane<A>>,
}

/// The queue and what runs its batches: the runtime, the batch function, the lanes' idle
/// connections, and the pool that opens them (its options, `lock_timeout` included) and reruns
/// a refused batch's elements.
struct Lane<A: Element> {
    queue: Mutex<Queue<A>>,
    runtime: Handle,
    /// Whether a lane runs on the single-threaded runtime (an HTTP worker) of the request that
    /// starts it, rather than on `runtime`.
    on_caller: AtomicBool,
    pool: PgPool,
    exec: Exec<A, A::Outcome>,
    /// The lanes' connections not in use: where each was opened and when it was last used.
    idle: Mutex<Vec<(PgConnection, Home, Instant)>>,
    metrics: Arc<Metrics>,
}

/// Where a lane runs, and so where its connection's socket is watched: `None` for the
/// multi-thread runtime the combiner was made on, or the thread of a single-threaded runtime.
/// A connection is reused only at its own home, so its wake-ups never cross threads and never
/// depend on a runtime the lane has left.
type Home = Option<ThreadId>;

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
                q.running -= 1;
            }
        }
    }
}

/// A parked poll: answers the outcome of the batch in which it found something.
pub struct Ticket<A: Element> {
    lane: Arc<Lane<A>>,
    id: u64,
    /// `None` once answered or given up.
    rx: Option<oneshot::Receiver<Result<A::Outcome, MailboxError>>>,
}

impl<A: Element> Ticket<A> {
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

impl<A: Element> Drop for Ticket<A> {
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

impl<A: Element> Queue<A> {
    /// The next batch: up to [`MAX_BATCH`] elements, oldest first, and the parked polls that
    /// ride along in it.
    fn take(&mut self) -> Vec<Item<A>> {
        let n = self.items.len().min(MAX_BATCH);
        let mut batch: Vec<Item<A>> = self.items.drain(..n).collect();
        if !self.parked.is_empty() {
            let rides = {
                let args: Vec<&A> = batch.iter().map(|i| &i.arg).collect();
                let parked: Vec<&A> = self.parked.iter().map(|i| &i.arg).collect();
                A::riders(&args, &parked)
            };
            let parked = std::mem::take(&mut self.parked);
            for (item, rides) in parked
                .into_iter()
                .zip(rides.into_iter().chain(std::iter::repeat(false)))
            {
                if rides {
                    self.riding.push((item.id, false));
                    batch.push(item);
                } else {
                    self.parked.push(item);
                }
            }
        }
        batch
    }

    /// Parks poll `id` as a rider answered by `answer`, in id order (the order the polls first
    /// asked in).
    fn park(&mut self, id: u64, arg: A, answer: Answer<A::Outcome>) {
        let at = self.parked.partition_point(|p| p.id < id);
        let item = Item {
            id,
            arg,
            answer,
            park: None,
            rider: true,
        };
        self.parked.insert(at, item);
    }

    /// Takes a rider back from the running batch: whether its request stopped waiting.
    fn unride(&mut self, id: u64) -> bool {
        match self.riding.iter().position(|(r, _)| *r == id) {
            Some(at) => self.riding.swap_remove(at).1,
            None => true,
        }
    }
}

impl<A: Element> Combiner<A> {
    /// Must be called inside the Tokio runtime the batches are to run on.
    fn new(pool: PgPool, metrics: Arc<Metrics>, exec: Exec<A, A::Outcome>) -> Combiner<A> {
        Combiner {
            lane: Arc::new(Lane {
                queue: Mutex::new(Queue {
                    next_id: 0,
                    items: Vec::new(),
                    running: 0,
                    parked: Vec::new(),
                    riding: Vec::new(),
                }),
                runtime: Handle::current(),
                on_caller: AtomicBool::new(false),
                pool,
                exec,
                idle: Mutex::new(Vec::new()),
                metrics,
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

    /// Requests waiting for the next batch, and polls parked (not riding in the running batch),
    /// by kind.
    pub fn waiting(&self) -> ([usize; 4], [usize; 4]) {
        let (mut waiting, mut parked) = ([0; 4], [0; 4]);
        if let Ok(q) = self.lane.queue.lock() {
            for item in &q.items {
                waiting[item.arg.kind()] += 1;
            }
            for item in &q.parked {
                parked[item.arg.kind()] += 1;
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
    /// it stays parked, and the ticket answers the first later batch in which it finds
    /// something (see [`Element::riders`]). The ticket unparks it when dropped, also while the
    /// element is still on its way (a request that goes away leaves nothing parked).
    pub async fn call_parking(&self, arg: A) -> (Result<A::Outcome, MailboxError>, Ticket<A>) {
        let (park, parked) = oneshot::channel();
        let (id, answered) = self.enqueue(arg, Some(park));
        let ticket = Ticket {
            lane: self.lane.clone(),
            id,
            rx: Some(parked),
        };
        (self.answer(id, answered).await, ticket)
    }

    /// Queues `arg` and, when no lane runs, starts one.
    fn enqueue(&self, arg: A, park: Option<Answer<A::Outcome>>) -> (u64, Answered<A::Outcome>) {
        let (answer, answered) = oneshot::channel();
        let (id, start) = {
            let mut q = self.lane.queue.lock().expect("batch queue poisoned");
            q.next_id += 1;
            let id = q.next_id;
            q.items.push(Item {
                id,
                arg,
                answer,
                park,
                rider: false,
            });
            let start = (q.running < IN_FLIGHT).then(|| {
                q.running += 1;
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
        answered: Answered<A::Outcome>,
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

impl<A: Element> Lane<A> {
    /// Where a lane started now runs: the caller's own single-threaded runtime when the lanes
    /// run on the HTTP worker, else the combiner's runtime.
    fn home(&self) -> (Handle, Home) {
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
    async fn drive(self: Arc<Self>, mut batch: Vec<Item<A>>, home: Home) {
        let mut lane = Running {
            queue: &self.queue,
            stopped: false,
        };
        loop {
            self.count(&batch);
            self.run(batch, home).await;
            let mut q = self.queue.lock().expect("batch queue poisoned");
            if q.items.is_empty() {
                q.running -= 1;
                lane.stopped = true;
                return;
            }
            batch = q.take();
        }
    }

    /// Unparks poll `id`: `true` if it was parked (now it is not), `false` if it rides in the
    /// running batch (it is marked as gone, so that batch answers whatever it finds) or was
    /// already answered.
    fn unpark(&self, id: u64) -> bool {
        let Ok(mut q) = self.queue.lock() else {
            return false;
        };
        if let Some(at) = q.parked.iter().position(|p| p.id == id) {
            q.parked.remove(at);
            return true;
        }
        if let Some(r) = q.riding.iter_mut().find(|(r, _)| *r == id) {
            r.1 = true;
        }
        false
    }

    fn count(&self, batch: &[Item<A>]) {
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

    /// Answers a batch's outcomes, parks the polls that found nothing and puts back the riders
    /// that found nothing, all under the queue's lock, before the next batch is taken.
    fn settle(&self, batch: Vec<(Tail<A>, A)>, outcomes: Vec<A::Outcome>) {
        let mut q = self.queue.lock().expect("batch queue poisoned");
        for ((tail, mut arg), outcome) in batch.into_iter().zip(outcomes) {
            let found = A::found(&outcome);
            if tail.rider {
                let gone = q.unride(tail.id);
                if found {
                    self.metrics.inc(&self.metrics.handoffs[arg.kind()]);
                }
                if found || gone {
                    let _ = tail.answer.send(Ok(outcome));
                } else {
                    q.park(tail.id, arg, tail.answer);
                }
                continue;
            }
            // A poll whose request went away meanwhile (its ticket dropped) is not parked.
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
        let mut q = self.queue.lock().expect("batch queue poisoned");
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
        let (answers, args): (Vec<Answer<A::Outcome>>, Vec<A>) = own
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
        let outcome = (self.exec)(&mut conn, args).await;
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
    answer: Answer<A::Outcome>,
    park: Option<Answer<A::Outcome>>,
    rider: bool,
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
    /// A parked poll riding along: claims only if its batch queued a task for `recipient`.
    pub if_sent: bool,
}

/// A drain of `sender`'s oldest pending result (an `a2a_step_many` drain element).
pub struct DrainArgs {
    pub sender: String,
    /// A parked poll riding along: drains only if its batch stored a result for `sender`.
    pub if_stored: bool,
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
    Drain(DrainArgs),
}

impl Element for Step {
    type Outcome = Outcome;

    fn kind(&self) -> usize {
        match self {
            Step::Send(_) => 0,
            Step::Claim(_) => 1,
            Step::Result(_) => 2,
            Step::Drain(_) => 3,
        }
    }

    fn found(outcome: &Outcome) -> bool {
        !matches!(outcome, Outcome::Claimed(None) | Outcome::Drained(None))
    }

    fn ride(&mut self) {
        match self {
            Step::Claim(a) => a.if_sent = true,
            Step::Drain(a) => a.if_stored = true,
            Step::Send(_) | Step::Result(_) => {}
        }
    }

    /// A parked claim rides in a batch that sends a task to its recipient, at most as many
    /// parked claims per recipient as the batch sends it tasks (the oldest first); a parked
    /// drain rides in a batch that stores a result, since a result's sender is known only once
    /// the batch has run (`a2a_step_many` skips the drains whose sender got none, at the cost
    /// of one array lookup each), at most [`MAX_DRAIN_RIDERS`] of them, the oldest first: with
    /// more senders waiting than that, the others are woken after the commit as before.
    fn riders(batch: &[&Step], parked: &[&Step]) -> Vec<bool> {
        let mut sends: Vec<(&str, usize)> = Vec::new();
        let mut results = false;
        let mut drains = 0;
        for step in batch {
            match step {
                Step::Send(a) => match sends.iter_mut().find(|(r, _)| *r == a.recipient) {
                    Some((_, n)) => *n += 1,
                    None => sends.push((&a.recipient, 1)),
                },
                Step::Result(_) => results = true,
                Step::Claim(_) | Step::Drain(_) => {}
            }
        }
        parked
            .iter()
            .map(|step| match step {
                Step::Claim(a) => match sends.iter_mut().find(|(r, _)| *r == a.recipient) {
                    Some((_, n)) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                },
                Step::Drain(_) if results && drains < MAX_DRAIN_RIDERS => {
                    drains += 1;
                    true
                }
                Step::Drain(_) | Step::Send(_) | Step::Result(_) => false,
            })
            .collect()
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
    lane: Combiner<Step>,
}

fn mismatch(other: Outcome) -> MailboxError {
    match other {
        Outcome::Failed(why) => MailboxError::internal(why),
        _ => MailboxError::internal("a batch answered another kind of outcome"),
    }
}

impl PgBatches {
    pub fn new(pool: PgPool, metrics: Arc<Metrics>) -> PgBatches {
        PgBatches {
            lane: Combiner::new(pool, metrics, step_many),
        }
    }

    /// See [`Combiner::run_on_the_http_worker`].
    pub fn run_on_the_http_worker(&self) {
        self.lane.run_on_the_http_worker();
    }

    pub async fn send(&self, a: SendArgs) -> Result<bool, MailboxError> {
        match self.lane.call(Step::Send(a)).await? {
            Outcome::Sent(b) => Ok(b),
            other => Err(mismatch(other)),
        }
    }

    /// A long-poll's claim: if it finds nothing, it stays parked, and the ticket answers the
    /// batch that leases it a task sent later ([`Outcome::claimed`] reads its outcome).
    pub async fn claim(&self, a: ClaimArgs) -> (Result<Option<TaskRow>, MailboxError>, Parked) {
        let (outcome, ticket) = self.lane.call_parking(Step::Claim(a)).await;
        (outcome.and_then(Outcome::claimed), ticket)
    }

    pub async fn result(&self, a: ResultArgs) -> Result<Option<String>, MailboxError> {
        match self.lane.call(Step::Result(a)).await? {
            Outcome::Stored(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }

    /// A long-poll's drain: if it finds nothing, it stays parked, and the ticket answers the
    /// batch that drains it a result stored later ([`Outcome::drained`] reads its outcome).
    pub async fn drain(&self, sender: String) -> (Result<Option<Drained>, MailboxError>, Parked) {
        let (outcome, ticket) = self
            .lane
            .call_parking(Step::Drain(DrainArgs {
                sender,
                if_stored: false,
            }))
            .await;
        (outcome.and_then(Outcome::drained), ticket)
    }

    /// `(kind, requests waiting for the next batch, polls parked)` per kind, in [`BATCH_KINDS`]
    /// order.
    pub fn waiting(&self) -> [(&'static str, usize, usize); 4] {
        let (waiting, parked) = self.lane.waiting();
        [0, 1, 2, 3].map(|k| (BATCH_KINDS[k], waiting[k], parked[k]))
    }
}

/// A long-poll's claim or drain parked in the batch lane.
pub type Parked = Ticket<Step>;

impl Outcome {
    /// A claim's outcome: the leased row, if any.
    pub fn claimed(self) -> Result<Option<TaskRow>, MailboxError> {
        match self {
            Outcome::Claimed(r) => Ok(r.map(|row| *row)),
            other => Err(mismatch(other)),
        }
    }

    /// A drain's outcome: the drained result, if any.
    pub fn drained(self) -> Result<Option<Drained>, MailboxError> {
        match self {
            Outcome::Drained(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }
}

/// Binds a batch's elements as the argument arrays of `a2a_step_many` (migrations 0003 to 0005), each
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
         $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
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
    .bind(column(&claims, |a| a.if_sent))
    .bind(column(&results, |a| a.task_id.clone()))
    .bind(column(&results, |a| a.status.clone()))
    .bind(column(&results, |a| a.content.clone()))
    .bind(column(&results, |a| a.error_message.clone()))
    .bind(column(&results, |a| a.caller.clone()))
    .bind(column(&results, |a| a.lease_guard.clone()))
    .bind(column(&drains, |a| a.sender.clone()))
    .bind(column(&drains, |a| a.if_stored))
    .bind(now_ms());
    let kinds: Vec<usize> = steps.iter().map(Element::kind).collect();
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
    use super::{place, ClaimArgs, DrainArgs, Element, Outcome, SendArgs, Step, StepRow};

    fn send(to: &str) -> Step {
        Step::Send(SendArgs {
            id: "t".into(),
            sender: "a".into(),
            recipient: to.into(),
            body: "{}".into(),
            deadline_ms: None,
            duplicate_safety: None,
            idem_key: None,
            audit_body: "{}".into(),
        })
    }

    fn claim(of: &str) -> Step {
        Step::Claim(ClaimArgs {
            recipient: of.into(),
            lease_id: "l".into(),
            caller: of.into(),
            if_sent: true,
        })
    }

    fn drain() -> Step {
        Step::Drain(DrainArgs {
            sender: "a".into(),
            if_stored: true,
        })
    }

    #[test]
    fn parked_claims_ride_only_with_sends_to_their_recipient_one_per_send() {
        let batch = [send("b"), send("c"), send("b"), claim("b")];
        let parked = [
            claim("b"),
            claim("c"),
            claim("d"),
            claim("b"),
            claim("b"),
            claim("c"),
        ];
        let rides = Step::riders(
            &batch.iter().collect::<Vec<_>>(),
            &parked.iter().collect::<Vec<_>>(),
        );
        // Two sends to b: the two oldest parked claims of b; one send to c: the oldest of c.
        assert_eq!(rides, [true, true, false, true, false, false]);
        // No result in the batch: no parked drain rides.
        assert_eq!(Step::riders(&[&send("b")], &[&drain()]), [false]);
    }

    #[test]
    fn parked_drains_ride_with_any_result() {
        let result = Step::Result(super::ResultArgs {
            task_id: "t".into(),
            status: "ok".into(),
            content: "[]".into(),
            error_message: None,
            caller: "w".into(),
            lease_guard: None,
        });
        assert_eq!(
            Step::riders(&[&result], &[&drain(), &claim("b"), &drain()]),
            [true, false, true]
        );
        // Many senders waiting: the oldest MAX_DRAIN_RIDERS ride, the others wait for a wake-up.
        let many: Vec<Step> = (0..super::MAX_DRAIN_RIDERS + 10).map(|_| drain()).collect();
        let rides = Step::riders(&[&result], &many.iter().collect::<Vec<_>>());
        assert!(rides[..super::MAX_DRAIN_RIDERS].iter().all(|&r| r));
        assert!(rides[super::MAX_DRAIN_RIDERS..].iter().all(|&r| !r));
        assert!(!Step::found(&Outcome::Claimed(None)));
        assert!(!Step::found(&Outcome::Drained(None)));
        assert!(Step::found(&Outcome::Failed("x".into())));
    }

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
