//! Checkpoints: the tasks a client sent and has not drained, saved so that a process that
//! restarts can pick them up again, and only as the same agent.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{AgentId, Client, Error};
use a2a_mailbox_types::{TaskState, TaskStatus};

/// The checkpoint format this client writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;

/// What a client must remember to resume its work after a restart: who it is, its
/// conversation, and the tasks it sent whose results it has not drained yet.
///
/// ```
/// use a2a_mailbox_client::Checkpoint;
///
/// let saved = r#"{"version":1,"agent_id":"alice","context_id":"c-1",
///                 "active_task_ids":["0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"]}"#;
/// let checkpoint = Checkpoint::from_json(saved).unwrap();
/// assert_eq!(checkpoint.active_task_ids.len(), 1);
/// assert!(Checkpoint::from_json(r#"{"version":2,"agent_id":"a","active_task_ids":[]}"#).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The format, [`CHECKPOINT_VERSION`]; a newer one is refused.
    pub version: u32,
    /// The agent the tasks belong to: the token's `sub` when it was taken.
    pub agent_id: AgentId,
    /// The client's conversation id, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Tasks sent and not yet drained (nor canceled), oldest first.
    pub active_task_ids: Vec<Uuid>,
}

impl Checkpoint {
    /// Reads a checkpoint from its JSON text.
    pub fn from_json(text: &str) -> Result<Checkpoint, Error> {
        let checkpoint: Checkpoint = serde_json::from_str(text)
            .map_err(|e| Error::InvalidInput(format!("not a checkpoint: {e}")))?;
        if checkpoint.version > CHECKPOINT_VERSION {
            return Err(Error::InvalidInput(format!(
                "checkpoint version {} is newer than this client's {CHECKPOINT_VERSION}",
                checkpoint.version
            )));
        }
        Ok(checkpoint)
    }

    /// The checkpoint as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a checkpoint serialises")
    }

    /// Writes the checkpoint to `path`, replacing the file at once: a crash leaves the old or
    /// the new file, never half of one, and once `save` returns the new one is on disk.
    ///
    /// The text goes to a new temp file of a random name in the same directory, created
    /// exclusively (it never opens an existing file nor follows a symlink) and, on Unix, with
    /// mode 0600 from its creation; the file is synced, renamed over `path` (a symlink there is
    /// replaced, not followed) and the directory synced. Concurrent saves to one path all
    /// succeed; the file holds the last one renamed.
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        crate::durable::replace(path.as_ref(), self.to_json().as_bytes())
    }

    /// Reads the checkpoint saved at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", path.display())))?;
        Checkpoint::from_json(&text)
    }
}

/// What [`Client::resume`] found: the state of every task of the checkpoint still visible, and
/// the ids the mailbox no longer knows (compacted, or not visible to this agent).
#[derive(Clone, Debug, PartialEq)]
pub struct Resumed {
    /// Each task's status, in the checkpoint's order.
    pub tasks: Vec<TaskStatus>,
    /// Ids answered 404 `not_found`.
    pub gone: Vec<Uuid>,
}

/// The tasks a client sent and has not drained, and its conversation id.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) context_id: Option<String>,
    // UUIDv7 ids sort by creation time: the order is the order of sending.
    active: BTreeSet<Uuid>,
}

impl Ledger {
    pub(crate) fn new(context_id: Option<String>) -> Ledger {
        Ledger {
            context_id,
            active: BTreeSet::new(),
        }
    }
    pub(crate) fn track(&mut self, id: Uuid) {
        self.active.insert(id);
    }
    pub(crate) fn forget(&mut self, id: Uuid) {
        self.active.remove(&id);
    }
    /// A terminal task (drained, or canceled) has nothing left to resume.
    pub(crate) fn observe(&mut self, status: &TaskStatus) {
        if terminal(status.state) {
            self.forget(status.task.id);
        }
    }
}

/// Nothing is left to drain: the result was drained, or the task was canceled.
fn terminal(state: TaskState) -> bool {
    matches!(state, TaskState::Resolved | TaskState::Canceled)
}

impl Client {
    /// The tasks this client sent (or resumed) and has not drained yet, as a checkpoint to
    /// save; drained and canceled tasks leave it.
    ///
    /// ```no_run
    /// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use a2a_mailbox_client::NewTask;
    /// client.send(NewTask::new("bob", "summarise")).await?;
    /// client.checkpoint().save("alice.checkpoint.json")?;
    /// # Ok(()) }
    /// ```
    pub fn checkpoint(&self) -> Checkpoint {
        let ledger = self.ledger();
        Checkpoint {
            version: CHECKPOINT_VERSION,
            agent_id: self.agent_id().clone(),
            context_id: ledger.context_id.clone(),
            active_task_ids: ledger.active.iter().copied().collect(),
        }
    }

    /// A client for `token` that resumes `checkpoint` (see [`Client::resume`]). Refused with
    /// [`Error::CheckpointAgentMismatch`], before any call, when the checkpoint belongs to
    /// another agent than the token's `sub`.
    ///
    /// ```no_run
    /// # async fn demo(token: String) -> Result<(), a2a_mailbox_client::Error> {
    /// use std::time::Duration;
    /// use a2a_mailbox_client::{Checkpoint, Client};
    ///
    /// let saved = Checkpoint::load("alice.checkpoint.json")?;
    /// let (client, resumed) = Client::from_checkpoint("http://127.0.0.1:8080", token, saved).await?;
    /// for status in &resumed.tasks {
    ///     println!("{} is {}", status.task.id, status.state.as_str());
    /// }
    /// while !client.checkpoint().active_task_ids.is_empty() {
    ///     if let Some(result) = client.next_result(Duration::from_secs(20)).await? {
    ///         println!("{}: {:?}", result.task_id, result.status);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn from_checkpoint(
        base_url: impl Into<String>,
        token: impl Into<String>,
        checkpoint: Checkpoint,
    ) -> Result<(Client, Resumed), Error> {
        let client = Client::new(base_url, token)?;
        let resumed = client.resume(&checkpoint).await?;
        Ok((client, resumed))
    }

    /// Takes over `checkpoint`: refuses it (no call made) when it belongs to another agent,
    /// else reads each of its tasks by id and keeps tracking those not yet terminal; adopts its
    /// context id when this client has none.
    pub async fn resume(&self, checkpoint: &Checkpoint) -> Result<Resumed, Error> {
        if &checkpoint.agent_id != self.agent_id() {
            return Err(Error::CheckpointAgentMismatch {
                checkpoint: checkpoint.agent_id.clone(),
                token: self.agent_id().clone(),
            });
        }
        {
            let mut ledger = self.ledger();
            if ledger.context_id.is_none() {
                ledger.context_id = checkpoint.context_id.clone();
            }
        }
        let mut resumed = Resumed {
            tasks: Vec::new(),
            gone: Vec::new(),
        };
        for &id in &checkpoint.active_task_ids {
            match self.get_task(id).await {
                Ok(status) => {
                    if !terminal(status.state) {
                        self.ledger().track(id);
                    }
                    resumed.tasks.push(status);
                }
                Err(e) if e.is(a2a_mailbox_types::ErrorCode::NotFound) => resumed.gone.push(id),
                Err(e) => return Err(e),
            }
        }
        Ok(resumed)
    }
}
