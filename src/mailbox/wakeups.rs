//! The wake-up signals long-polls sleep on: what a waiter waits for, and the signals a commit
//! fires for it.

use std::pin::Pin;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

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
