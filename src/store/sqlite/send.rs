//! SQLite's one-write send: one write unit of the next group commit that queues the task and,
//! when a long-poll's claim of its recipient is held (`parked.rs`), leases the head of that queue
//! to it in the same group, so the waiting worker holds its task as soon as the send's commit is
//! durable.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::parked::{Claim, Holds};
use super::statements::SEND_FAST;
use crate::error::MailboxError;
use crate::metrics::{kind, Metrics};
use crate::store::records::{Committed, TaskRow};
use crate::store::runner::{Tx, Val};
use crate::store::unit::{settle, Undo, Unit};

type Sent = Result<Option<Committed<()>>, MailboxError>;

/// A send, and the held claim it leased for, if any.
pub(super) struct SendUnit {
    args: Vec<Val>,
    recipient: String,
    holds: Arc<Holds>,
    metrics: Arc<Metrics>,
    /// Whether the task was inserted (its id was new), once it ran.
    inserted: Option<Result<bool, MailboxError>>,
    /// The held claim it took, and the row it leased for it.
    rider: Option<(Claim, Option<TaskRow>)>,
    answer: Option<oneshot::Sender<Sent>>,
}

impl SendUnit {
    /// A unit that runs `SEND_FAST` with `args` for a task of `recipient`; its outcome arrives on
    /// the receiver once the group has committed.
    pub fn new(
        args: Vec<Val>,
        recipient: String,
        holds: &Arc<Holds>,
        metrics: &Arc<Metrics>,
    ) -> (SendUnit, oneshot::Receiver<Sent>) {
        let (answer, answered) = oneshot::channel();
        let unit = SendUnit {
            args,
            recipient,
            holds: holds.clone(),
            metrics: metrics.clone(),
            inserted: None,
            rider: None,
            answer: Some(answer),
        };
        (unit, answered)
    }
}

impl Unit for SendUnit {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let changed: Vec<(i64,)> = match tx.fetch_all(SEND_FAST, &self.args).await {
                Ok(changed) => changed,
                Err(e) => {
                    self.inserted = Some(Err(e.into()));
                    return false;
                }
            };
            let inserted = changed.first().is_some_and(|r| r.0 > 0);
            self.inserted = Some(Ok(inserted));
            if inserted {
                if let Some(claim) = self.holds.take(&self.recipient) {
                    let now = crate::clock::now_ms();
                    // The unit has no savepoint of its own: a claim that fails fails the group,
                    // and the poll is answered nothing and looks again.
                    match tx
                        .claim_head(&self.recipient, &claim.lease_id, &claim.caller, now)
                        .await
                    {
                        Ok(leased) => self.rider = Some((claim, leased)),
                        Err(e) => {
                            tracing::warn!(error = %e, "a held claim could not ride a send");
                            self.rider = Some((claim, None));
                            return false;
                        }
                    }
                }
            }
            true
        })
    }

    /// `SEND_FAST` and the rider's claim refuse nothing.
    fn undo(&self) -> Undo {
        Undo::WithGroup
    }

    fn done(mut self: Box<Self>, committed: Result<(), String>) {
        let durable = committed.is_ok();
        let handed = match self.rider.take() {
            Some((claim, leased)) => {
                let leased = leased.filter(|_| durable);
                let handed = leased.is_some();
                if handed {
                    self.metrics.inc(&self.metrics.handoffs[kind::CLAIM]);
                }
                claim.answer(leased);
                handed
            }
            None => false,
        };
        let sent = settle(committed, self.inserted.take())
            .map(|inserted| inserted.then_some(Committed { made: (), handed }));
        if let Some(answer) = self.answer.take() {
            let _ = answer.send(sent);
        }
    }
}
