//! Whom a commit concerns ([`Wake`]), and the lines that tell the other instances sharing the
//! database (`t bob`, `r alice <task>`, `w <task>`, `*`): what `wakeups.rs` wakes here and
//! sends there.

/// Whose parked requests a commit may have made work available to, or whose task it changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Wake {
    #[default]
    Nobody,
    /// A task was queued for this recipient: one of its leases.
    Recipient(String),
    /// A result of `task` is waiting for `sender`: one of the sender's drains, and every
    /// request following the task.
    Result { sender: String, task: String },
    /// This task changed with no result to drain (a lease, a requeue, a cancel, a result a
    /// waiting drain took in the same commit): every request following it.
    Followers(String),
    /// Several of the above (a batch, a retry scan).
    Many(Vec<Wake>),
    /// Anything may have changed (another instance's listener reconnected): everyone re-checks.
    Everyone,
}

impl Wake {
    /// A result of `task` waits for `sender`.
    pub fn result(sender: &str, task: &str) -> Wake {
        Wake::Result {
            sender: sender.to_owned(),
            task: task.to_owned(),
        }
    }

    /// A task was leased (a stream shows it working).
    pub fn leased(task: &str) -> Wake {
        Wake::Followers(task.to_owned())
    }

    /// A task is back in its recipient's queue: one of the recipient's leases, and whoever
    /// follows the task (a stream shows it submitted again).
    pub fn requeued(recipient: &str, task: &str) -> Wake {
        Wake::Many(vec![
            Wake::Recipient(recipient.to_owned()),
            Wake::Followers(task.to_owned()),
        ])
    }

    /// The line that tells another instance of a single target (`t bob`, `r alice <task>`,
    /// `w <task>`; `*` for everyone), read back by [`Wake::from_line`].
    pub(super) fn line(&self) -> Option<String> {
        match self {
            Wake::Recipient(who) => Some(format!("t {who}")),
            Wake::Result { sender, task } => Some(format!("r {sender} {task}")),
            Wake::Followers(task) => Some(format!("w {task}")),
            Wake::Everyone => Some("*".to_owned()),
            Wake::Nobody | Wake::Many(_) => None,
        }
    }

    pub(super) fn from_line(line: &str) -> Option<Wake> {
        if line == "*" {
            return Some(Wake::Everyone);
        }
        let (kind, rest) = line.split_once(' ')?;
        match kind {
            "t" => Some(Wake::Recipient(rest.to_owned())),
            "r" => {
                let (sender, task) = rest.split_once(' ')?;
                Some(Wake::result(sender, task))
            }
            "w" => Some(Wake::Followers(rest.to_owned())),
            _ => None,
        }
    }
}

/// The lines a commit tells the other instances: `now` for the waiting leases and drains it
/// may serve (a hand-off waits on them), `soon` for the requests that only follow a task (a
/// stream, which may hear of a lease a few milliseconds late; see `store/postgres/peers.rs`).
#[derive(Debug, Default)]
pub(crate) struct PeerLines {
    pub now: String,
    pub soon: String,
}

impl PeerLines {
    pub(super) fn is_empty(&self) -> bool {
        self.now.is_empty() && self.soon.is_empty()
    }

    /// Adds `wake`'s line (if it has one): a changed task's to `soon`, any other to `now`.
    pub(super) fn add(&mut self, wake: &Wake) {
        let Some(line) = wake.line() else { return };
        let to = match wake {
            Wake::Followers(_) => &mut self.soon,
            _ => &mut self.now,
        };
        to.push_str(&line);
        to.push('\n');
    }
}

/// Where the lines for the other instances sharing the database go (PostgreSQL's `NOTIFY`,
/// see `store/postgres/peers.rs`; SQLite serves one process and has none).
pub(crate) trait Peers: Send + Sync {
    /// Whether another instance shares the database now: only then are lines made at all.
    fn present(&self) -> bool;
    fn tell(&self, lines: PeerLines);
}

impl Peers for crate::store::Store {
    fn present(&self) -> bool {
        self.has_peers()
    }

    fn tell(&self, lines: PeerLines) {
        self.notify_peers(lines.now, lines.soon);
    }
}

#[cfg(test)]
mod tests {
    use super::Wake;

    #[test]
    fn a_note_line_names_the_same_target_on_every_instance() {
        let task = "6f1c2b8e-0d1a-4c3b-9e8f-2a1b3c4d5e6f";
        for wake in [
            Wake::Recipient("bob@acme".into()),
            Wake::result("alice", task),
            Wake::leased(task),
            Wake::Everyone,
        ] {
            let line = wake.line().expect("a single target has a line");
            assert_eq!(Wake::from_line(&line), Some(wake));
        }
        assert_eq!(Wake::Many(vec![]).line(), None);
        assert_eq!(Wake::from_line("hello"), None);
        assert_eq!(Wake::from_line("x bob"), None);
        assert_eq!(Wake::from_line("r alice"), None);
    }
}
