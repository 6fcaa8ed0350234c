//! Telling the other instances that share the database whom a commit concerns, and hearing
//! what they tell.
//!
//! A note is text the mailbox writes (one line per recipient, sender or task, see
//! `mailbox/wake.rs`); here it is only carried. Each `NOTIFY` payload starts with the line
//! naming the instance that sent it, so an instance ignores its own (its waiters were woken
//! directly).
//!
//! A note for the requests that only follow a task (a stream: the mailbox says which) waits up
//! to [`FOLLOWERS_WAIT`] for company: the next note a waiting lease or drain needs takes it
//! along at once, and under load the notes of many commits go in one `NOTIFY` instead of one
//! each. Such a request hears of a change on another instance that much later at most.
//!
//! An instance alone on its database sends no notes: every instance says hello once it listens
//! (and the others answer at once that they are here), says it is here every [`HERE_EVERY`],
//! and sends notes only while another instance was heard within [`PEER_GONE_AFTER`]. One
//! instance serving alone thus pays nothing for them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::Notify;

use super::statements::{NOTIFY_PEERS, PEER_CHANNEL};

/// PostgreSQL refuses a payload of 8,000 bytes or more: notes are cut into payloads below this.
const MAX_PAYLOAD: usize = 7_000;
/// Past this many bytes of notes waiting to be sent (the database is slow or away), they are
/// folded into one "everyone re-checks" note instead of growing.
const MAX_PENDING: usize = 1 << 20;
/// The note that wakes every waiter of an instance.
const EVERYONE: &str = "*";
/// The note of an instance that has just started listening: the others answer [`HERE`]. Neither
/// wakes anybody.
const HELLO: &str = "hello";
/// The note that says an instance is there.
const HERE: &str = "here";
/// How often an instance says it is there.
const HERE_EVERY: Duration = Duration::from_secs(10);
/// Notes stop this long after the last word heard from another instance.
const PEER_GONE_AFTER: Duration = Duration::from_secs(35);
/// How long a note for followers only may wait for company.
const FOLLOWERS_WAIT: Duration = Duration::from_millis(10);

/// The notes not sent yet: `now` for waiting leases and drains, `soon` for followers only.
#[derive(Default)]
struct PendingNotes {
    now: String,
    soon: String,
}

/// The notes waiting for the notifier task, and when another instance was last heard.
pub(super) struct Outbox {
    pending: Mutex<PendingNotes>,
    /// Any note posted.
    kick: Notify,
    /// A note that must not wait posted.
    hurry: Notify,
    started: Instant,
    /// Milliseconds after `started` when another instance was last heard; 0: never.
    peer_heard_ms: AtomicU64,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox {
            pending: Mutex::default(),
            kick: Notify::new(),
            hurry: Notify::new(),
            started: Instant::now(),
            peer_heard_ms: AtomicU64::new(0),
        }
    }
}

impl Outbox {
    fn since_start_ms(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64).saturating_add(1)
    }

    /// Another instance spoke.
    fn heard_a_peer(&self) {
        self.peer_heard_ms
            .store(self.since_start_ms(), Ordering::Relaxed);
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, PendingNotes> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a line for the other instances whether or not any was heard.
    fn say(&self, line: &str) {
        {
            let mut pending = self.pending();
            pending.now.push_str(line);
            pending.now.push('\n');
        }
        self.kick.notify_one();
        self.hurry.notify_one();
    }

    /// Whether another instance was heard recently enough to be told anything.
    pub(super) fn has_peers(&self) -> bool {
        let heard = self.peer_heard_ms.load(Ordering::Relaxed);
        heard > 0
            && self.since_start_ms().saturating_sub(heard) < PEER_GONE_AFTER.as_millis() as u64
    }

    /// Queues notes for the `NOTIFY`s (dropped while no other instance is there): `now` for the
    /// next, `soon` (for followers only) for one within [`FOLLOWERS_WAIT`].
    pub(super) fn post(&self, now: &str, soon: &str) {
        if !self.has_peers() {
            return;
        }
        {
            let mut pending = self.pending();
            let size = [pending.soon.len(), now.len(), soon.len()]
                .into_iter()
                .fold(pending.now.len(), usize::saturating_add);
            if size > MAX_PENDING {
                *pending = PendingNotes::default();
                pending.now.push_str(EVERYONE);
                pending.now.push('\n');
            } else if !pending.now.starts_with(EVERYONE) {
                pending.now.push_str(now);
                pending.soon.push_str(soon);
            }
        }
        self.kick.notify_one();
        if !now.is_empty() {
            self.hurry.notify_one();
        }
    }

    /// Whether a note that must not wait is queued.
    fn in_a_hurry(&self) -> bool {
        !self.pending().now.is_empty()
    }

    /// Every note queued, those that must not wait first.
    fn take(&self) -> String {
        let PendingNotes { mut now, soon } = std::mem::take(&mut *self.pending());
        now.push_str(&soon);
        now
    }
}

/// The payloads that carry `notes` (whole lines, each payload below [`MAX_PAYLOAD`]).
fn payloads(instance: &str, notes: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut payload = String::new();
    for line in notes.lines().filter(|l| !l.is_empty()) {
        if !payload.is_empty() && payload.len().saturating_add(line.len()) >= MAX_PAYLOAD {
            out.push(std::mem::take(&mut payload));
        }
        if payload.is_empty() {
            payload.push_str(instance);
        }
        payload.push('\n');
        payload.push_str(line);
    }
    if !payload.is_empty() {
        out.push(payload);
    }
    out
}

/// Sends what was posted to the [`Outbox`], outside the commits that posted it: a commit that
/// carries a NOTIFY holds PostgreSQL's notification queue lock until its WAL is flushed, which
/// serialises concurrent writers (BENCHMARKS.md, "Design choices"). Notes posted while one
/// `NOTIFY` is on its way go together in the next, so under load the notes fold into one
/// statement per round trip; the statement commits without waiting for its WAL flush (nothing
/// durable rides on it).
pub(super) async fn notify(pool: PgPool, outbox: std::sync::Arc<Outbox>, instance: String) {
    let mut here = tokio::time::interval(HERE_EVERY);
    here.tick().await;
    loop {
        tokio::select! {
            () = outbox.kick.notified() => {}
            _ = here.tick() => outbox.say(HERE),
        }
        if !outbox.in_a_hurry() {
            // Notes for followers only: wait a little for company.
            tokio::select! {
                () = tokio::time::sleep(FOLLOWERS_WAIT) => {}
                () = outbox.hurry.notified() => {}
            }
        }
        let notes = outbox.take();
        let payloads = payloads(&instance, &notes);
        if payloads.is_empty() {
            continue;
        }
        if let Err(e) = sqlx::query(NOTIFY_PEERS)
            .bind(payloads)
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "cannot NOTIFY other instances; their waiters re-check when their waits end");
        }
    }
}

/// Listens for the other instances' notes, reconnecting after a second when the connection
/// drops; after a reconnect every waiter re-checks, since anything may have happened meanwhile.
pub(super) async fn listen(
    pool: PgPool,
    instance: String,
    outbox: std::sync::Arc<Outbox>,
    woken: Box<dyn Fn(&str) + Send>,
) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(PEER_CHANNEL).await {
                    tracing::warn!(error = %e, "LISTEN a2a_mailbox failed");
                } else {
                    outbox.say(HELLO);
                    while let Ok(note) = listener.recv().await {
                        match note.payload().split_once('\n') {
                            Some((from, _)) if from == instance => {}
                            Some((_, lines)) => {
                                outbox.heard_a_peer();
                                if lines.lines().any(|l| l == HELLO) {
                                    outbox.say(HERE);
                                }
                                woken(lines);
                            }
                            // A payload naming whom it is for in no line: everyone re-checks.
                            None if note.payload() != instance => {
                                outbox.heard_a_peer();
                                woken(EVERYONE);
                            }
                            None => {}
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot open the NOTIFY listener connection"),
        }
        woken(EVERYONE);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::{payloads, Outbox, MAX_PAYLOAD, MAX_PENDING};

    #[test]
    fn notes_are_cut_into_payloads_of_whole_lines_each_naming_the_instance() {
        let notes: String = (0..2000).map(|i| format!("t worker-{i}\n")).collect();
        let out = payloads("me", &notes);
        assert!(out.len() > 1);
        let mut lines = Vec::new();
        for p in &out {
            assert!(p.len() < MAX_PAYLOAD, "{}", p.len());
            let (from, rest) = p.split_once('\n').unwrap();
            assert_eq!(from, "me");
            lines.extend(rest.lines().map(str::to_owned));
        }
        assert_eq!(lines.len(), 2000);
        assert_eq!(lines[1999], "t worker-1999");
        assert!(payloads("me", "").is_empty());
    }

    #[test]
    fn an_instance_alone_keeps_no_notes() {
        let outbox = Outbox::default();
        outbox.post("t bob\n", "");
        assert_eq!(outbox.take(), "");
        outbox.heard_a_peer();
        outbox.post("t bob\n", "");
        assert_eq!(outbox.take(), "t bob\n");
    }

    #[test]
    fn a_note_for_followers_waits_until_one_for_a_waiting_request_takes_it_along() {
        let outbox = Outbox::default();
        outbox.heard_a_peer();
        outbox.post("", "w 6f1c\n");
        assert!(!outbox.in_a_hurry());
        outbox.post("t bob\n", "");
        assert!(outbox.in_a_hurry());
        assert_eq!(outbox.take(), "t bob\nw 6f1c\n");
        assert!(!outbox.in_a_hurry());
        assert_eq!(outbox.take(), "");
    }

    #[test]
    fn too_many_pending_notes_fold_into_one_that_wakes_everyone() {
        let outbox = Outbox::default();
        outbox.heard_a_peer();
        let line = format!("t {}\n", "w".repeat(1000));
        for _ in 0..(2 * MAX_PENDING / line.len()) {
            outbox.post(&line, "");
        }
        assert_eq!(outbox.take(), "*\n");
        outbox.post("r alice\n", "");
        assert_eq!(outbox.take(), "r alice\n");
    }
}
