//! Long-polls: a lease or a drain that waits for work, without holding a connection.

use std::pin::Pin;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::Mailbox;
use crate::error::MailboxError;
use crate::store::LaneOutcome;

impl Mailbox {
    /// Waits until `probe` finds something or `wait` has passed. Holds no connection while it
    /// waits: it sleeps on the wake-up signal (local commits and, on PostgreSQL, `NOTIFY` from
    /// other instances), re-probing at least once a second as a safety net. On PostgreSQL a
    /// probe that found nothing leaves its claim or drain parked in the batch lane, which
    /// answers it from the batch that queued its task or stored its result (see `src/store/postgres/lane.rs`); any
    /// other wake-up unparks it first, and a parked claim or drain that was riding in a batch
    /// at that moment is waited for, so what it took is never dropped.
    pub(crate) async fn long_poll<T, F, Fut>(
        &self,
        wait: Duration,
        (kind, who): (WaitFor, &str),
        mut probe: F,
    ) -> Result<Option<T>, MailboxError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Polled<T>, MailboxError>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let mut woken = self.wakeups.listen(kind, who);
            let mut parked = match probe().await? {
                Polled::Found(found) => return Ok(Some(found)),
                Polled::Empty => None,
                Polled::Waiting(p) => Some(p),
            };
            let now = tokio::time::Instant::now();
            if now < deadline {
                let nap = (deadline - now).min(Duration::from_secs(1));
                let handed = async {
                    match parked.as_mut() {
                        Some(p) => p.ticket.answered().await,
                        None => std::future::pending().await,
                    }
                };
                let handed = tokio::select! {
                    biased;
                    outcome = handed => Some(outcome),
                    () = woken.wait(nap) => None,
                };
                if let Some(outcome) = handed {
                    // A ride that found something: the ticket is spent.
                    if let Some(p) = parked.take() {
                        if let Some(found) = (p.settle)(self, outcome?)? {
                            return Ok(Some(found));
                        }
                    }
                }
            }
            if let Some(found) = Waiting::leave(parked, self).await? {
                return Ok(Some(found));
            }
            if now >= deadline {
                return Ok(None);
            }
        }
    }
}

/// What one probe of a long-poll found.
pub(crate) enum Polled<T> {
    Found(T),
    Empty,
    /// Nothing, and its claim or drain waits parked in the batch lane (PostgreSQL).
    Waiting(Waiting<T>),
}

/// A parked claim or drain, and how its outcome becomes what the long-poll answers.
pub(crate) struct Waiting<T> {
    pub ticket: crate::store::LaneTicket,
    pub settle: fn(&Mailbox, LaneOutcome) -> Result<Option<T>, MailboxError>,
}

impl<T> Waiting<T> {
    /// Stops waiting (if parked at all): what its claim or drain took meanwhile, if anything.
    /// One riding in the running batch is waited for, so a lease or drain it committed is kept.
    pub(crate) async fn leave(
        parked: Option<Self>,
        mailbox: &Mailbox,
    ) -> Result<Option<T>, MailboxError> {
        let Some(p) = parked else {
            return Ok(None);
        };
        match p.ticket.leave().await {
            Some(outcome) => (p.settle)(mailbox, outcome?),
            None => Ok(None),
        }
    }
}

/// What a long-poll waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WaitFor {
    /// A task queued for the recipient named with it.
    Task,
    /// A result for the sender named with it.
    Result,
}

/// The signals one waiter listens to: everyone's, and its own shard's.
pub(crate) struct Woken<'a> {
    anything: Pin<Box<Notified<'a>>>,
    for_me: Pin<Box<Notified<'a>>>,
}

impl Woken<'_> {
    /// Returns once either signal fires or `nap` has passed.
    pub(crate) async fn wait(&mut self, nap: Duration) {
        tokio::select! {
            _ = &mut self.anything => {}
            _ = &mut self.for_me => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

/// The wake-up signals of this instance's long-polls: one for everyone, and a fixed set of
/// shards that a recipient's or sender's waiters share by hash, so a commit wakes the waiters
/// it concerns (and the rare waiter that shares their shard) rather than all of them.
pub struct Wakeups {
    pub all: Notify,
    shards: Box<[Notify]>,
}

const WAKE_SHARDS: usize = 256;

impl Wakeups {
    pub(crate) fn new() -> Wakeups {
        Wakeups {
            all: Notify::new(),
            shards: (0..WAKE_SHARDS).map(|_| Notify::new()).collect(),
        }
    }

    /// Starts listening for what wakes a waiter for `(kind, who)`: from now on, no signal is
    /// missed until [`Woken::wait`] returns.
    pub(crate) fn listen(&self, kind: WaitFor, who: &str) -> Woken<'_> {
        let mut anything = Box::pin(self.all.notified());
        let mut for_me = Box::pin(self.key(kind, who).notified());
        anything.as_mut().enable();
        for_me.as_mut().enable();
        Woken { anything, for_me }
    }

    pub(crate) fn key(&self, kind: WaitFor, who: &str) -> &Notify {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (kind, who).hash(&mut h);
        &self.shards[(h.finish() as usize) % WAKE_SHARDS]
    }
}
