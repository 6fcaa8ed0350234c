//! One element of a batch: what it asks (a [`Step`] and its arguments) and what it did (its
//! [`Outcome`]).

use crate::error::MailboxError;
use crate::store::new_task::NewTask;
use crate::store::records::{Committed, Drained, TaskRow};

/// A task to insert with its `capability_check` audit row (an `a2a_step_many` send element).
pub struct SendArgs {
    pub task: NewTask,
    pub audit_body: String,
}

/// A claim of the head of `recipient`'s queue (an `a2a_step_many` claim element).
pub struct ClaimArgs {
    pub recipient: String,
    pub lease_id: String,
    pub caller: String,
    /// A parked poll riding along: claims only if its batch queued a task for `recipient`.
    pub if_sent: bool,
}

/// A drain of `sender`'s oldest pending result (an `a2a_step_many` drain element).
pub struct DrainArgs {
    pub sender: String,
    /// A parked poll riding along: drains only if its batch stored a result for `sender`.
    pub if_stored: bool,
}

/// A result to store (an `a2a_step_many` result element).
pub struct ResultArgs {
    pub task_id: String,
    pub status: String,
    pub content: String,
    pub error_message: Option<String>,
    pub caller: String,
    pub lease_guard: Option<String>,
    /// The audit row's body before and after the task's sender, which only the batch reads.
    pub audit_pre: String,
    pub audit_post: String,
}

/// One request's element of a batch.
pub enum Step {
    Send(SendArgs),
    Claim(ClaimArgs),
    Result(ResultArgs),
    Drain(DrainArgs),
}

/// What an element did.
pub enum Outcome {
    /// The task inserted (`None`: its id exists), and whether a parked claim riding in the
    /// same batch took a task of its recipient.
    Sent(Option<Committed<()>>),
    /// The leased row, or `None` when the head was missing, expired or locked.
    Claimed(Option<Box<TaskRow>>),
    /// The task's sender when the result was stored, and whether a parked drain riding in the
    /// same batch took a result of that sender.
    Stored(Option<Committed<String>>),
    /// The result drained, if any.
    Drained(Option<Drained>),
    /// The element's answer could not be read (a server bug): only its request fails.
    Failed(String),
}

pub(crate) fn mismatch(other: Outcome) -> MailboxError {
    match other {
        Outcome::Failed(why) => MailboxError::internal(why),
        _ => MailboxError::internal("a batch answered another kind of outcome"),
    }
}

impl Outcome {
    /// A claim's outcome: the leased row, if any.
    pub fn claimed(self) -> Result<Option<TaskRow>, MailboxError> {
        match self {
            Outcome::Claimed(r) => Ok(r.map(|row| *row)),
            other => Err(mismatch(other)),
        }
    }

    /// A drain's outcome: the drained result, if any.
    pub fn drained(self) -> Result<Option<Drained>, MailboxError> {
        match self {
            Outcome::Drained(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }
}
