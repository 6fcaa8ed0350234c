//! The worker loop in batches: up to n handlers at once, their leases taken, extended and
//! answered many per request.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::task::{AbortHandle, JoinError, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

use crate::batches::refusal;
use crate::worker::ended;
use crate::{Client, Error, LeaseItem, LeaseRef, Leased, Outcome, Reply, ResultItem};
use a2a_mailbox_types::answers::{MAX_ITEMS, MAX_TAKE};
use a2a_mailbox_types::{AgentId, PostResult};

/// How long a reply waits for others to go out in the same request: at most this after the
/// first of them is ready, it is posted.
pub(crate) const LINGER: Duration = Duration::from_millis(2);

/// Works on up to `slots` tasks at once ([`Worker::slots`](crate::Worker::slots)), with the
/// batch calls: it leases `max =` its free slots per request, so that it never holds more
/// leases than slots (a lease is held until its reply is posted); leases again at once when a
/// batch came back full, and long-polls when it came back short; extends every lease it holds
/// in one `POST /a2a/tasks/heartbeat` per heartbeat period; and posts the replies in
/// `POST /a2a/results/batch` requests, each fenced by its lease, at most a couple of
/// milliseconds after the first of them is ready.
///
/// Each task ends as with [`Worker`](crate::Worker) (see [`Outcome`]): a handler whose
/// heartbeat item answers `task_canceled`, or that its lease is gone, is stopped (its task
/// aborted) and nothing is posted for it. Handlers run as tasks of the caller's tokio runtime,
/// so they run in parallel on a multi-threaded one; a handler that panics makes
/// [`run`](BatchWorker::run) panic. Dropping the future of `run` stops every handler.
///
/// ```no_run
/// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
/// use a2a_mailbox_client::{Leased, Reply, Worker};
///
/// Worker::new(client)
///     .slots(8) // up to 8 tasks at once
///     .run(|leased: Leased| async move {
///         Reply::text(format!("done: {}", leased.task.intent_text))
///     })
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BatchWorker {
    client: Client,
    recipient: Option<AgentId>,
    poll: Duration,
    heartbeat: Duration,
    slots: u32,
}

/// A request on its way, owned by the loop and polled by reference.
type Flight<T> = Option<Pin<Box<dyn Future<Output = T> + Send>>>;

/// Replies posted, and the answer.
type Posted = (Vec<PostResult>, Result<Vec<ResultItem>, Error>);

/// Leases extended, and the answer.
type Extended = (Vec<LeaseRef>, Result<Vec<LeaseItem>, Error>);

/// Where a held lease is.
enum Phase {
    /// Its handler runs.
    Running(AbortHandle),
    /// Its reply waits to be posted.
    Ready,
    /// Its reply is being posted: the post's answer settles it.
    Posting,
}

struct Held {
    lease_id: Uuid,
    phase: Phase,
}

impl BatchWorker {
    pub(crate) fn new(
        client: Client,
        recipient: Option<AgentId>,
        poll: Duration,
        heartbeat: Duration,
        slots: u32,
    ) -> BatchWorker {
        BatchWorker {
            client,
            recipient,
            poll,
            heartbeat,
            slots: slots.max(1),
        }
    }

    /// Works until an error that retrying cannot cure (a refused token, a missing capability):
    /// then it leases no more, lets the handlers it runs finish, posts their replies, and
    /// returns the error. Waits and goes on after a mailbox that stays unreachable, keeping the
    /// replies it could not post yet.
    pub async fn run<H, F>(&self, handler: H) -> Result<(), Error>
    where
        H: Fn(Leased) -> F,
        F: Future<Output = Reply> + Send + 'static,
    {
        self.run_with(handler, |_| {}).await
    }

    /// [`run`](BatchWorker::run), calling `on_outcome` with how each task ended.
    pub async fn run_with<H, F, O>(&self, handler: H, mut on_outcome: O) -> Result<(), Error>
    where
        H: Fn(Leased) -> F,
        F: Future<Output = Reply> + Send + 'static,
        O: FnMut(Outcome),
    {
        let mut run = Run {
            worker: self,
            held: HashMap::new(),
            handlers: JoinSet::new(),
            leasing: None,
            asked: 0,
            lease_wait: self.poll,
            lease_at: Instant::now(),
            ready: Vec::new(),
            flush_at: None,
            posting: JoinSet::new(),
            beating: None,
            fatal: None,
        };
        let mut ticks = tokio::time::interval_at(Instant::now() + self.heartbeat, self.heartbeat);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let now = Instant::now();
            run.lease(now);
            run.flush(now);
            if run.held.is_empty() && run.leasing.is_none() && run.posting.is_empty() {
                if let Some(e) = run.fatal.take() {
                    return Err(e);
                }
            }
            let wake = run.wake();
            tokio::select! {
                leased = land(&mut run.leasing) => run.leased(leased, &handler),
                Some(joined) = run.handlers.join_next() => run.handled(joined),
                Some(posted) = run.posting.join_next() => {
                    run.posted(posted, &mut on_outcome);
                }
                beaten = land(&mut run.beating) => run.beaten(beaten, &mut on_outcome),
                _ = ticks.tick() => run.beat(),
                _ = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => {}
            }
        }
    }
}

/// The answer of a request on its way, once; never, when there is none.
async fn land<T>(flight: &mut Flight<T>) -> T {
    match flight {
        Some(request) => {
            let answer = request.await;
            *flight = None;
            answer
        }
        None => std::future::pending().await,
    }
}

/// The state of one [`BatchWorker::run_with`].
struct Run<'w> {
    worker: &'w BatchWorker,
    /// Every lease held, by task id: at most `slots`.
    held: HashMap<Uuid, Held>,
    handlers: JoinSet<(Uuid, Reply)>,
    leasing: Flight<Result<Vec<Leased>, Error>>,
    /// The `max` of the last lease asked.
    asked: u32,
    /// The wait of the next lease: none after a full batch, the poll wait after a short one.
    lease_wait: Duration,
    /// No lease before then (after the mailbox failed one).
    lease_at: Instant,
    /// Replies to post.
    ready: Vec<PostResult>,
    /// When `ready` goes out.
    flush_at: Option<Instant>,
    posting: JoinSet<Posted>,
    beating: Flight<Extended>,
    /// The error `run` returns once every lease held is settled; no lease is taken meanwhile.
    fatal: Option<Error>,
}

impl Run<'_> {
    fn free(&self) -> u32 {
        let held = u32::try_from(self.held.len()).unwrap_or(u32::MAX);
        self.worker.slots.saturating_sub(held)
    }

    /// Leases as many tasks as there are free slots, when no lease is on its way.
    fn lease(&mut self, now: Instant) {
        let free = self.free().min(MAX_TAKE);
        if self.fatal.is_some() || self.leasing.is_some() || free == 0 || now < self.lease_at {
            return;
        }
        let (client, recipient) = (self.worker.client.clone(), self.worker.recipient.clone());
        let wait = self.lease_wait;
        self.asked = free;
        self.leasing = Some(Box::pin(async move {
            client.lease_batch(recipient.as_ref(), free, wait).await
        }));
    }

    /// Posts the ready replies when their time has come, or when they fill a request.
    fn flush(&mut self, now: Instant) {
        let due = self.flush_at.is_some_and(|at| at <= now) || self.ready.len() >= MAX_ITEMS;
        if self.ready.is_empty() || !due {
            return;
        }
        self.flush_at = None;
        let batch = std::mem::take(&mut self.ready);
        for r in &batch {
            if let Some(held) = self.held.get_mut(&r.task_id) {
                held.phase = Phase::Posting;
            }
        }
        let client = self.worker.client.clone();
        self.posting.spawn(async move {
            let posted = client.post_results(batch.clone()).await;
            (batch, posted)
        });
    }

    /// When the loop has something to do without a request or a handler having ended.
    fn wake(&self) -> Option<Instant> {
        let lease = (self.fatal.is_none() && self.leasing.is_none() && self.free() > 0)
            .then_some(self.lease_at);
        let flush = self.flush_at.filter(|_| !self.ready.is_empty());
        flush.into_iter().chain(lease).min()
    }

    /// Extends every lease not being answered, in one request, unless one is on its way.
    fn beat(&mut self) {
        if self.beating.is_some() {
            return;
        }
        let leases: Vec<LeaseRef> = self
            .held
            .iter()
            .filter(|(_, h)| !matches!(h.phase, Phase::Posting))
            .map(|(&task_id, h)| LeaseRef {
                task_id,
                lease_id: h.lease_id,
            })
            .collect();
        if leases.is_empty() {
            return;
        }
        let client = self.worker.client.clone();
        self.beating = Some(Box::pin(async move {
            let extended = client.heartbeat_leases(&leases).await;
            (leases, extended)
        }));
    }

    fn leased<H, F>(&mut self, leased: Result<Vec<Leased>, Error>, handler: &H)
    where
        H: Fn(Leased) -> F,
        F: Future<Output = Reply> + Send + 'static,
    {
        let leased = match leased {
            Ok(leased) => leased,
            Err(e) if e.retriable() => {
                self.lease_at = Instant::now() + self.worker.heartbeat;
                return;
            }
            Err(e) => return self.fail(e),
        };
        let full = u32::try_from(leased.len()).is_ok_and(|n| n >= self.asked);
        self.lease_wait = if full {
            Duration::ZERO
        } else {
            self.worker.poll
        };
        for leased in leased {
            let task_id = leased.task.id;
            let lease_id = leased.lease.lease_id;
            let processing = crate::otel::processing(&leased.task);
            let work = processing.run(handler(leased));
            let abort = self.handlers.spawn(async move { (task_id, work.await) });
            let phase = Phase::Running(abort);
            self.held.insert(task_id, Held { lease_id, phase });
        }
    }

    fn handled(&mut self, joined: Result<(Uuid, Reply), JoinError>) {
        let (task_id, reply) = match joined {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Stopped here, its end already told.
            Err(_) => return,
        };
        let Some(held) = self.held.get_mut(&task_id) else {
            return;
        };
        held.phase = Phase::Ready;
        self.ready
            .push(reply.for_task(task_id, Some(held.lease_id)));
        let soon = Instant::now() + LINGER;
        self.flush_at = Some(self.flush_at.map_or(soon, |at| at.min(soon)));
    }

    fn posted(&mut self, joined: Result<Posted, JoinError>, on_outcome: &mut impl FnMut(Outcome)) {
        let (batch, posted) = match joined {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return,
        };
        let items = match posted {
            Ok(items) => items,
            Err(e) if e.retriable() => {
                // Kept, and tried again a heartbeat period later (or with the next reply).
                for r in batch {
                    if self.posting_now(&r) {
                        if let Some(held) = self.held.get_mut(&r.task_id) {
                            held.phase = Phase::Ready;
                        }
                        self.ready.push(r);
                    }
                }
                let later = Instant::now() + self.worker.heartbeat;
                self.flush_at = Some(self.flush_at.map_or(later, |at| at.min(later)));
                return;
            }
            Err(e) => {
                for r in &batch {
                    if self.posting_now(r) {
                        self.held.remove(&r.task_id);
                    }
                }
                return self.fail(e);
            }
        };
        for (r, item) in batch.iter().zip(items) {
            if !self.posting_now(r) {
                continue;
            }
            self.held.remove(&r.task_id);
            let refused = refusal(item.status, item.code, item.message.as_deref());
            let task_id = r.task_id;
            match refused.map_or(Ok(Outcome::Answered { task_id }), |e| ended(task_id, e)) {
                Ok(outcome) => on_outcome(outcome),
                Err(e) => self.fail(e),
            }
        }
    }

    fn beaten(&mut self, (leases, extended): Extended, on_outcome: &mut impl FnMut(Outcome)) {
        // A mailbox that stays unreachable is no reason to stop: try again next time.
        let Ok(items) = extended else { return };
        for (lease, item) in leases.iter().zip(items) {
            let Some(e) = refusal(item.status, item.code, item.message.as_deref()) else {
                continue;
            };
            // A lease whose reply is being posted is settled by the post's answer.
            let current = self.held.get(&lease.task_id).is_some_and(|h| {
                h.lease_id == lease.lease_id && !matches!(h.phase, Phase::Posting)
            });
            if !current {
                continue;
            }
            if let Ok(stop) = ended(lease.task_id, e) {
                self.stop(lease.task_id);
                on_outcome(stop);
            }
        }
    }

    /// Whether `r` is the reply being posted for a lease still held (not stopped meanwhile).
    fn posting_now(&self, r: &PostResult) -> bool {
        self.held
            .get(&r.task_id)
            .is_some_and(|h| Some(h.lease_id) == r.lease_id && matches!(h.phase, Phase::Posting))
    }

    /// Lets go of a lease that is over: stops its handler, forgets its reply.
    fn stop(&mut self, task_id: Uuid) {
        if let Some(Phase::Running(abort)) = self.held.remove(&task_id).map(|h| h.phase) {
            abort.abort();
        }
        self.ready.retain(|r| r.task_id != task_id);
    }

    /// Leases no more; `run` returns `e` once every lease held is settled.
    fn fail(&mut self, e: Error) {
        self.fatal.get_or_insert(e);
    }
}
