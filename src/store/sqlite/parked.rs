//! Long-poll claims held beside SQLite's writer, so that a send leases its task to a waiting
//! worker in the very commit that queues it: one commit per hand-off instead of two and a
//! wake-up (PostgreSQL's lane does the same in its batches, `postgres/lane.rs`).
//!
//! A long-poll's claim registers here first ([`Holds::park`]) and then reads whether anything
//! is queued; a send that commits before the registration is seen by that read, one that runs
//! after it finds the claim here. The send's write unit takes the oldest held claim of its
//! recipient ([`Holds::take`]) and leases the head of the queue for it in the same group (`send.rs`);
//! the claim is answered by the writer once the group committed (never by the sending request,
//! which may go away): the leased row, or nothing if the commit failed or the head was not live,
//! and then the poll looks again. A poll that stops waiting while its claim rides in a group waits
//! for that answer ([`ClaimHold`]'s `leave`), so a lease that committed is never dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use crate::error::MailboxError;
use crate::store::backend::{Awaiting, Held, Hold, Holding, Responder};
use crate::store::records::TaskRow;

/// The claims held now, by recipient, oldest first.
#[derive(Default)]
pub(super) struct Holds {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    by_recipient: HashMap<String, VecDeque<Claim>>,
}

/// A held claim: the lease it would take, and whom to answer.
pub(super) struct Claim {
    id: u64,
    pub lease_id: String,
    pub caller: String,
    answer: Responder<Held>,
}

impl Claim {
    /// Answers the poll: the row leased for it in a commit that succeeded, or nothing (it looks
    /// again).
    pub fn answer(self, leased: Option<TaskRow>) {
        let _ = self.answer.send(Ok(Held::Claimed(leased.map(Box::new))));
    }
}

impl Holds {
    /// Holds a claim of `recipient`'s next task for `caller` under `lease_id`.
    pub fn park(self: &Arc<Self>, recipient: &str, lease_id: &str, caller: &str) -> Hold {
        let (answer, answered) = oneshot::channel();
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.next_id = inner.next_id.wrapping_add(1);
        let id = inner.next_id;
        inner
            .by_recipient
            .entry(recipient.to_owned())
            .or_default()
            .push_back(Claim {
                id,
                lease_id: lease_id.to_owned(),
                caller: caller.to_owned(),
                answer,
            });
        Hold::new(ClaimHold {
            holds: self.clone(),
            recipient: recipient.to_owned(),
            id,
            answered: Some(answered),
        })
    }

    /// Takes the oldest claim of `recipient` whose poll still waits, for a send to answer.
    pub fn take(&self, recipient: &str) -> Option<Claim> {
        let mut inner = self.inner.lock().ok()?;
        let queue = inner.by_recipient.get_mut(recipient)?;
        let mut taken = None;
        while let Some(claim) = queue.pop_front() {
            if !claim.answer.is_closed() {
                taken = Some(claim);
                break;
            }
        }
        if queue.is_empty() {
            inner.by_recipient.remove(recipient);
        }
        taken
    }

    /// Removes claim `id` if it is still held: `false` when a send took it.
    fn unpark(&self, recipient: &str, id: u64) -> bool {
        let Ok(mut inner) = self.inner.lock() else {
            return false;
        };
        let Some(queue) = inner.by_recipient.get_mut(recipient) else {
            return false;
        };
        let found = queue.iter().position(|c| c.id == id).map(|at| {
            queue.remove(at);
        });
        if queue.is_empty() {
            inner.by_recipient.remove(recipient);
        }
        found.is_some()
    }
}

/// A long-poll's held claim.
struct ClaimHold {
    holds: Arc<Holds>,
    recipient: String,
    id: u64,
    /// `None` once answered or given up.
    answered: Option<Awaiting<Held>>,
}

impl Holding for ClaimHold {
    fn answered(&mut self) -> BoxFuture<'_, Result<Held, MailboxError>> {
        Box::pin(async move {
            if let Some(rx) = self.answered.as_mut() {
                let outcome = rx.await;
                self.answered = None;
                if let Ok(outcome) = outcome {
                    return outcome;
                }
            }
            std::future::pending().await
        })
    }

    fn leave(mut self: Box<Self>) -> BoxFuture<'static, Option<Result<Held, MailboxError>>> {
        let rx = self.answered.take();
        let still_held = rx.is_some() && self.holds.unpark(&self.recipient, self.id);
        Box::pin(async move {
            if still_held {
                return None;
            }
            // A send took it: its group's answer is on its way (the writer always answers).
            rx?.await.ok()
        })
    }
}

impl Drop for ClaimHold {
    fn drop(&mut self) {
        // The request went away: the receiver goes first, so a send that takes it meanwhile
        // sees it closed and passes it over.
        if let Some(rx) = self.answered.take() {
            drop(rx);
            self.holds.unpark(&self.recipient, self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    fn claimed(outcome: Option<Result<Held, MailboxError>>) -> Option<bool> {
        match outcome? {
            Ok(Held::Claimed(row)) => Some(row.is_some()),
            _ => panic!("a held claim answered something else"),
        }
    }

    #[tokio::test]
    async fn a_poll_that_leaves_while_a_send_holds_its_claim_waits_for_the_send() {
        let holds = Arc::new(Holds::default());
        let hold = holds.park("bob", "lease-1", "bob");
        let claim = holds.take("bob").expect("the parked claim");
        assert_eq!(
            (claim.lease_id.as_str(), claim.caller.as_str()),
            ("lease-1", "bob")
        );
        let mut leaving = Box::pin(hold.leave());
        assert!(
            (&mut leaving).now_or_never().is_none(),
            "the poll left while the send that took its claim had not answered"
        );
        claim.answer(None);
        assert_eq!(claimed(leaving.await), Some(false));
        assert!(holds.take("bob").is_none(), "nothing is left parked");
    }

    #[tokio::test]
    async fn a_poll_that_leaves_before_any_send_took_its_claim_is_unparked_at_once() {
        let holds = Arc::new(Holds::default());
        let hold = holds.park("bob", "lease-1", "bob");
        assert_eq!(claimed(hold.leave().await), None);
        assert!(
            holds.take("bob").is_none(),
            "a send finds nobody to lease to"
        );
    }

    #[tokio::test]
    async fn a_send_takes_the_oldest_claim_whose_poll_still_waits() {
        let holds = Arc::new(Holds::default());
        let gone = holds.park("bob", "lease-1", "bob");
        let mut second = holds.park("bob", "lease-2", "bob");
        let _third = holds.park("bob", "lease-3", "bob");
        let _carol = holds.park("carol", "lease-4", "carol");
        drop(gone);
        let claim = holds.take("bob").expect("a waiting claim of bob's");
        assert_eq!(claim.lease_id, "lease-2", "the oldest waiting claim");
        claim.answer(None);
        assert!(matches!(second.answered().await, Ok(Held::Claimed(None))));
        assert_eq!(
            holds.take("bob").map(|c| c.lease_id),
            Some("lease-3".into())
        );
        assert!(holds.take("bob").is_none());
        assert_eq!(
            holds.take("carol").map(|c| c.lease_id),
            Some("lease-4".into())
        );
    }
}
