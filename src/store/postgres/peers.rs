//! Telling the other instances that share the database whom a commit concerns, and hearing
//! what they tell.
//!
//! A note is text the mailbox writes (one line per recipient or sender, see
//! `mailbox/wakeups.rs`); here it is only carried. Each `NOTIFY` payload starts with the line
//! naming the instance that sent it, so an instance ignores its own (its waiters were woken
//! directly).

use std::sync::Mutex;
use std::time::Duration;

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

/// The notes waiting for the notifier task.
#[derive(Default)]
pub(super) struct Outbox {
    pending: Mutex<String>,
    kick: Notify,
}

impl Outbox {
    /// Queues `note` for the next `NOTIFY`.
    pub(super) fn post(&self, note: &str) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.len() + note.len() > MAX_PENDING {
                pending.clear();
                pending.push_str(EVERYONE);
                pending.push('\n');
            } else if !pending.starts_with(EVERYONE) {
                pending.push_str(note);
            }
        }
        self.kick.notify_one();
    }

    fn take(&self) -> String {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The payloads that carry `notes` (whole lines, each payload below [`MAX_PAYLOAD`]).
fn payloads(instance: &str, notes: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut payload = String::new();
    for line in notes.lines().filter(|l| !l.is_empty()) {
        if !payload.is_empty() && payload.len() + line.len() + 1 > MAX_PAYLOAD {
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
    loop {
        outbox.kick.notified().await;
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
pub(super) async fn listen(pool: PgPool, instance: String, woken: Box<dyn Fn(&str) + Send>) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(PEER_CHANNEL).await {
                    tracing::warn!(error = %e, "LISTEN a2a_mailbox failed");
                } else {
                    while let Ok(note) = listener.recv().await {
                        match note.payload().split_once('\n') {
                            Some((from, _)) if from == instance => {}
                            Some((_, lines)) => woken(lines),
                            // A payload naming whom it is for in no line: everyone re-checks.
                            None if note.payload() != instance => woken(EVERYONE),
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
    fn too_many_pending_notes_fold_into_one_that_wakes_everyone() {
        let outbox = Outbox::default();
        let line = format!("t {}\n", "w".repeat(1000));
        for _ in 0..(2 * MAX_PENDING / line.len()) {
            outbox.post(&line);
        }
        assert_eq!(outbox.take(), "*\n");
        outbox.post("r alice\n");
        assert_eq!(outbox.take(), "r alice\n");
    }
}
