//! Where waiting requests park (docs/contract.md#waiting), and whom a commit wakes: a registry of
//! the parked requests of this instance by what they wait for, bounded per caller and in all.
//!
//! A parked request holds a registration here and nothing else: no connection, transaction or
//! thread. A commit names whom it concerns ([`Wake`]): a queued task wakes ONE request waiting
//! for its recipient's tasks, a stored result ONE drain of its sender, and any change of a task
//! every request following that task; nobody else is woken, and every other instance sharing the database is told
//! whom the commit concerns (see [`PeerLines`]): every result and changed task, and a queued task
//! that no request here takes (none waits for its recipient, or each of them was woken already
//! and takes one task of its own), so with waiters on several instances every task sent wakes
//! one of them at once. A request that goes away after it was woken and before it took anything
//! passes its wake-up on: to another request here, or else to the other instances.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use self::slots::{Signal, Slots};
use super::wake::{PeerLines, Peers, Wake};
use crate::auth::Caller;
use crate::error::{ErrorCode, MailboxError};
use crate::metrics::Metrics;

pub(crate) use self::slots::WaitFor;

/// The limits of [`Wakeups`]: parked requests per caller and in all (docs/contract.md#waiting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitingLimits {
    pub per_caller: usize,
    pub total: usize,
}

impl Default for WaitingLimits {
    fn default() -> Self {
        WaitingLimits {
            per_caller: 1000,
            total: 50_000,
        }
    }
}

type Key = (WaitFor, Box<str>);

#[derive(Default)]
struct Registry {
    /// The parked requests of each agent (looked up by name, without a copy of it).
    slots: HashMap<Box<str>, Slots>,
    /// Parked requests per caller (`sub`).
    callers: HashMap<Box<str>, usize>,
    total: usize,
    /// Parked requests that have begun to wait (`a2a_waiters`); the others are still looking.
    waiting: usize,
}

/// The parked requests of this instance.
pub struct Wakeups {
    registry: Mutex<Registry>,
    limits: WaitingLimits,
    metrics: Arc<Metrics>,
    /// The other instances sharing the database.
    peers: Box<dyn Peers>,
}

impl Wakeups {
    pub(crate) fn new(
        limits: WaitingLimits,
        metrics: Arc<Metrics>,
        peers: Box<dyn Peers>,
    ) -> Wakeups {
        Wakeups {
            registry: Mutex::default(),
            limits,
            metrics,
            peers,
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Parks a request of `caller` waiting for `(kind, who)`, or refuses it at once: 429
    /// `too_many_waiting` past the caller's limit, 503 `overloaded` past the instance's.
    ///
    /// The parked request ends when its caller's token stops being accepted
    /// ([`Caller::time_left`]): no wait lasts longer (docs/contract.md#waiting).
    pub(crate) fn park(
        &self,
        kind: WaitFor,
        who: &str,
        by: &Caller,
    ) -> Result<Waiter<'_>, MailboxError> {
        let caller = by.sub.as_str();
        let ends = by
            .time_left()
            .and_then(|left| Instant::now().checked_add(left));
        let signal = Arc::new(Signal::default());
        let mut r = self.registry();
        if r.total >= self.limits.total {
            return Err(MailboxError::new(
                ErrorCode::Overloaded,
                format!(
                    "this instance already holds {} waiting requests, its limit; retry in a second",
                    self.limits.total
                ),
            )
            .retry_after(Duration::from_secs(1)));
        }
        let mine = r.callers.entry(caller.into()).or_default();
        if *mine >= self.limits.per_caller {
            return Err(MailboxError::new(
                ErrorCode::TooManyWaiting,
                format!(
                    "{caller} already has {} waiting requests on this instance, its limit; \
                     retry in a second or wait in fewer requests",
                    self.limits.per_caller
                ),
            )
            .retry_after(Duration::from_secs(1)));
        }
        *mine = mine.saturating_add(1);
        r.total = r.total.saturating_add(1);
        let key: Key = (kind, who.into());
        r.slots
            .entry(key.1.clone())
            .or_default()
            .of(kind)
            .push_back(signal.clone());
        Ok(Waiter {
            wakeups: self,
            key,
            caller: caller.into(),
            signal,
            ends,
        })
    }

    /// A commit made a task or a result available: wakes the requests here that wait for it, and
    /// tells the other instances what nobody here takes (see [`Wakeups::wake`]).
    pub(crate) fn woke(&self, wake: &Wake) {
        if *wake == Wake::Nobody {
            return;
        }
        if !self.peers.present() {
            return self.wake(wake, None);
        }
        let mut others = PeerLines::default();
        self.wake(wake, Some(&mut others));
        if !others.is_empty() {
            self.peers.tell(others);
        }
    }

    /// Wakes what a commit concerns on this instance, and adds to `out` (`None` when no other
    /// instance is there) the lines the other instances must be told: a task's recipient when
    /// nobody here takes it, every result's sender and every changed task (their drains and
    /// followers may be anywhere); a changed task's line is for its followers only.
    fn wake(&self, wake: &Wake, mut out: Option<&mut PeerLines>) {
        let told = match wake {
            Wake::Nobody => false,
            Wake::Everyone => {
                self.wake_everyone();
                false
            }
            Wake::Recipient(who) => !self.wake_one(WaitFor::Task, who),
            Wake::Result { sender, task } => {
                self.wake_one(WaitFor::Result, sender);
                self.wake_all(WaitFor::Follow, task);
                true
            }
            Wake::Followers(task) => {
                self.wake_all(WaitFor::Follow, task);
                true
            }
            Wake::Many(all) => {
                all.iter().for_each(|w| self.wake(w, out.as_deref_mut()));
                false
            }
        };
        if let (true, Some(out)) = (told, out) {
            out.add(wake);
        }
    }

    /// Wakes the longest-parked request of the key that is not woken already; whether one was.
    /// One that is woken already takes one piece of work when it looks, the one it was woken
    /// for: it is no taker of another.
    fn wake_one(&self, kind: WaitFor, who: &str) -> bool {
        let mut r = self.registry();
        let Some(queue) = r.slots.get_mut(who).map(|s| s.of(kind)) else {
            return false;
        };
        let Some(at) = queue.iter().position(|s| !s.woken.load(Ordering::Acquire)) else {
            return false;
        };
        if let Some(signal) = queue.remove(at) {
            signal.set();
            // The next task goes to another one.
            queue.push_back(signal);
            self.metrics.inc(&self.metrics.wakeups);
        }
        true
    }

    fn wake_all(&self, kind: WaitFor, who: &str) {
        let r = self.registry();
        if let Some(queue) = r.slots.get(who).map(|s| s.get(kind)) {
            let n = queue.iter().filter(|s| s.set()).count();
            self.metrics.add(&self.metrics.wakeups, n as u64);
        }
    }

    fn wake_everyone(&self) {
        let r = self.registry();
        let n = r
            .slots
            .values()
            .flat_map(|s| s.0.iter().flatten())
            .filter(|s| s.set())
            .count();
        self.metrics.add(&self.metrics.wakeups, n as u64);
    }

    /// The wake-up of a request that went away before it took anything: to another request here
    /// waiting for the same, or else (a task) to the other instances. A result's drains
    /// elsewhere were told by the commit that stored it.
    fn pass_on(&self, kind: WaitFor, who: &str) {
        if self.wake_one(kind, who) || kind != WaitFor::Task || !self.peers.present() {
            return;
        }
        let mut others = PeerLines::default();
        others.add(&Wake::Recipient(who.to_owned()));
        self.peers.tell(others);
    }

    /// A parked request answered by the very commit that made its work (a hand-off in the
    /// engine's lane) is woken too.
    pub(crate) fn handed(&self) {
        self.metrics.inc(&self.metrics.wakeups);
    }

    /// Wakes what another instance's note names, as that instance's commits would have here
    /// (nothing is told on: that instance told every other one).
    pub(crate) fn heard_from_peer(&self, note: &str) {
        for wake in note.lines().filter_map(Wake::from_line) {
            self.wake(&wake, None);
        }
    }
}

/// A parked request's registration; dropping it unparks the request.
pub(crate) struct Waiter<'a> {
    wakeups: &'a Wakeups,
    key: Key,
    caller: Box<str>,
    signal: Arc<Signal>,
    /// When the caller's token stops being accepted (`None`: never).
    ends: Option<Instant>,
}

impl Waiter<'_> {
    /// Before each look: a wake-up from now on is not missed. The wake-up it clears is owed
    /// until the look ends ([`Waiter::looked`]).
    pub(crate) fn arm(&self) {
        let woken = self.signal.woken.swap(false, Ordering::AcqRel);
        self.signal.owes.store(woken, Ordering::Release);
    }

    /// The look after [`Waiter::arm`] ended (whatever it found): it owes nothing.
    pub(crate) fn looked(&self) {
        self.signal.owes.store(false, Ordering::Release);
    }

    /// `deadline`, or the moment the caller's token stops being accepted if that comes first.
    pub(crate) fn bound(&self, deadline: Instant) -> Instant {
        self.ends.map_or(deadline, |ends| ends.min(deadline))
    }

    /// Whether the caller's token is no longer accepted: the request must end, and nothing may
    /// be handed to it any more.
    pub(crate) fn expired(&self) -> bool {
        self.ends.is_some_and(|ends| Instant::now() >= ends)
    }

    /// Returns once the request is woken (since its last [`Waiter::arm`]), `nap` has passed or
    /// the caller's token stops being accepted. The first wait counts the request in
    /// `a2a_waiters`: from then on it is waiting, not looking (a count that reaches n means n
    /// requests have looked and found nothing).
    pub(crate) async fn wait(&self, nap: Duration) {
        if !self.signal.waiting.swap(true, Ordering::AcqRel) {
            let mut r = self.wakeups.registry();
            r.waiting = r.waiting.saturating_add(1);
            self.wakeups
                .metrics
                .waiters
                .store(r.waiting as u64, Ordering::Relaxed);
        }
        let nap = self.ends.map_or(nap, |ends| {
            nap.min(ends.saturating_duration_since(Instant::now()))
        });
        let sleep = tokio::time::sleep(nap);
        tokio::pin!(sleep);
        loop {
            let notified = self.signal.notify.notified();
            if self.signal.woken.load(Ordering::Acquire) {
                return;
            }
            tokio::select! {
                () = notified => {}
                () = &mut sleep => return,
            }
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let w = self.wakeups;
        let forward = {
            let mut r = w.registry();
            if let Some(slots) = r.slots.get_mut(&self.key.1) {
                slots
                    .of(self.key.0)
                    .retain(|s| !Arc::ptr_eq(s, &self.signal));
                if slots.0.iter().all(VecDeque::is_empty) {
                    r.slots.remove(&self.key.1);
                }
            }
            if let Some(n) = r.callers.get_mut(&self.caller) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    r.callers.remove(&self.caller);
                }
            }
            r.total = r.total.saturating_sub(1);
            if self.signal.waiting.load(Ordering::Acquire) {
                r.waiting = r.waiting.saturating_sub(1);
                w.metrics.waiters.store(r.waiting as u64, Ordering::Relaxed);
            }
            // Woken for a task or result it may not have taken: pass it on to the next one.
            self.key.0 != WaitFor::Follow
                && (self.signal.woken.load(Ordering::Acquire)
                    || self.signal.owes.load(Ordering::Acquire))
        };
        if forward {
            w.pass_on(self.key.0, &self.key.1);
        }
    }
}

mod slots;
#[cfg(test)]
mod tests;
