//! Long-polls: a lease or a drain that waits for work, without holding a connection.

use std::time::Duration;

use super::{Mailbox, WaitFor};
use crate::auth::Caller;
use crate::error::MailboxError;
use crate::store::{Held, Hold};

impl Mailbox {
    /// Waits until `probe` finds something or `wait` has passed. With a `wait`, the request is
    /// parked for its duration (docs/contract.md#waiting): registered under what it waits for,
    /// bounded per caller and in all, holding no connection; it looks again only when a commit
    /// that concerns it wakes it (on this instance or, on PostgreSQL, another one), and once
    /// more when `wait` runs out. A probe that found nothing may also leave its claim or drain
    /// held by the store ([`Hold`]: a claim on both engines, a drain on PostgreSQL), which
    /// answers it from the commit that queued its task or stored its result
    /// (`src/store/postgres/lane.rs`, `src/store/sqlite/parked.rs`); any other wake-up leaves
    /// the hold first, and a claim or drain that was riding in a commit at that moment is
    /// waited for, so what it took is never dropped.
    ///
    /// It never outlives the caller's token: once the token is no longer accepted it answers
    /// nothing, and looks no more (docs/contract.md#waiting).
    pub(crate) async fn long_poll<T, F, Fut>(
        &self,
        wait: Duration,
        (kind, who, caller): (WaitFor, &str, &Caller),
        mut probe: F,
    ) -> Result<Option<T>, MailboxError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Polled<T>, MailboxError>>,
    {
        if wait.is_zero() {
            return match probe().await? {
                Polled::Found(found) => Ok(Some(found)),
                Polled::Empty => Ok(None),
                Polled::Waiting(p) => PollHold::leave(Some(p), self).await,
            };
        }
        let me = self.wakeups.park(kind, who, caller)?;
        let deadline = me.bound(crate::clock::deadline_after(wait));
        loop {
            me.arm();
            if me.expired() {
                return Ok(None);
            }
            // Boxed: a parked request keeps only the small state of its wait, not the probe's.
            let polled = Box::pin(probe()).await;
            me.looked();
            let mut parked = match polled? {
                Polled::Found(found) => return Ok(Some(found)),
                Polled::Empty => None,
                Polled::Waiting(p) => Some(p),
            };
            let now = tokio::time::Instant::now();
            if now < deadline {
                let handed = async {
                    match parked.as_mut() {
                        Some(p) => p.hold.answered().await,
                        None => std::future::pending().await,
                    }
                };
                let handed = tokio::select! {
                    biased;
                    outcome = handed => Some(outcome),
                    () = me.wait(deadline.saturating_duration_since(now)) => None,
                };
                if let Some(outcome) = handed {
                    // A ride that found something: the hold is spent.
                    if let Some(p) = parked.take() {
                        if let Some(found) = (p.settle)(self, outcome?)? {
                            self.wakeups.handed();
                            return Ok(Some(found));
                        }
                    }
                }
            }
            if let Some(found) = Box::pin(PollHold::leave(parked, self)).await? {
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
    /// Nothing, and its claim or drain is held in the store for the commit that serves it.
    Waiting(PollHold<T>),
}

/// A claim or drain the store holds, and how its outcome becomes what the long-poll answers.
pub(crate) struct PollHold<T> {
    pub hold: Hold,
    pub settle: fn(&Mailbox, Held) -> Result<Option<T>, MailboxError>,
}

impl<T> PollHold<T> {
    /// Stops waiting (if parked at all): what its claim or drain took meanwhile, if anything.
    /// One riding in the running batch is waited for, so a lease or drain it committed is kept.
    pub(crate) async fn leave(
        parked: Option<Self>,
        mailbox: &Mailbox,
    ) -> Result<Option<T>, MailboxError> {
        let Some(p) = parked else {
            return Ok(None);
        };
        match p.hold.leave().await {
            Some(outcome) => (p.settle)(mailbox, outcome?),
            None => Ok(None),
        }
    }
}
