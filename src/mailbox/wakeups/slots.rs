//! What a parked request waits for, the signal that wakes it, and the parked requests waiting
//! on one agent, by what they wait for.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// What a parked request waits for, with the agent or task it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WaitFor {
    /// A task queued for the recipient named with it (a lease): one task wakes one.
    Task = 0,
    /// A result for the sender named with it (a drain): one result wakes one.
    Result,
    /// Any change of the task named with it (a blocking send waiting for its task, a stream
    /// following it): every such follower wakes.
    Follow,
}

/// One parked request's signal: set when it is woken, cleared before each look.
#[derive(Default)]
pub(super) struct Signal {
    pub woken: AtomicBool,
    pub notify: Notify,
    /// Counted in `a2a_waiters`: the request has begun to wait (its first look found nothing).
    pub waiting: AtomicBool,
    /// Looking because it was woken: the look owes that wake-up to another request if it is
    /// dropped before it ends.
    pub owes: AtomicBool,
}

impl Signal {
    /// Sets the signal; `false` if it was already set (the request has not looked since).
    pub fn set(&self) -> bool {
        let first = !self.woken.swap(true, Ordering::AcqRel);
        self.notify.notify_one();
        first
    }
}

/// The parked requests waiting on one agent, by what they wait for, the longest parked first.
#[derive(Default)]
pub(super) struct Slots(pub(super) [VecDeque<Arc<Signal>>; 3]);

impl Slots {
    pub(super) fn of(&mut self, kind: WaitFor) -> &mut VecDeque<Arc<Signal>> {
        let [task, result, watch] = &mut self.0;
        match kind {
            WaitFor::Task => task,
            WaitFor::Result => result,
            WaitFor::Follow => watch,
        }
    }

    pub(super) fn get(&self, kind: WaitFor) -> &VecDeque<Arc<Signal>> {
        let [task, result, watch] = &self.0;
        match kind {
            WaitFor::Task => task,
            WaitFor::Result => result,
            WaitFor::Follow => watch,
        }
    }
}
