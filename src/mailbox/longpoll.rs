//! Long-polls: a lease or a drain that waits for work, without holding a connection.

use std::time::Duration;

use super::{Mailbox, WaitFor};
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
