//! A task as the store inserts it, and its columns as bound parameters.

use super::runner::{args, Val};

/// A task to insert, as stored; serialised by name for [`super::Tx::insert_tasks`].
#[derive(serde::Serialize)]
pub struct NewTask<'a> {
    pub id: &'a str,
    pub sender: &'a str,
    pub recipient: &'a str,
    /// The canonical JSON of the task as accepted.
    pub body: &'a str,
    pub deadline_ms: Option<i64>,
    pub duplicate_safety: Option<&'a str>,
    pub idem_key: Option<&'a str>,
    pub cache_key: Option<&'a str>,
    /// What lists filter on (§13), from the task.
    pub parent: Option<String>,
    pub context_id: Option<&'a str>,
    pub task_kind: Option<&'a str>,
}

impl NewTask<'_> {
    /// The task's own columns in the order every insert binds them first: id, sender,
    /// recipient, body, deadline_ms, duplicate_safety, idem_key, parent, context_id, task_kind.
    pub(crate) fn columns(&self) -> Vec<Val> {
        args![
            self.id,
            self.sender,
            self.recipient,
            self.body,
            self.deadline_ms,
            self.duplicate_safety,
            self.idem_key,
            self.parent.clone(),
            self.context_id,
            self.task_kind
        ]
        .to_vec()
    }

    /// The columns of [`NewTask::columns`] and then `cache_key`, one array each: the rows of
    /// a set-based insert.
    pub(crate) fn by_column(tasks: &[NewTask<'_>]) -> Vec<Val> {
        let text = |f: for<'t> fn(&'t NewTask<'t>) -> Option<&'t str>| {
            Val::Texts(tasks.iter().map(|t| f(t).map(str::to_owned)).collect())
        };
        vec![
            text(|t| Some(t.id)),
            text(|t| Some(t.sender)),
            text(|t| Some(t.recipient)),
            text(|t| Some(t.body)),
            Val::Ints(tasks.iter().map(|t| t.deadline_ms).collect()),
            text(|t| t.duplicate_safety),
            text(|t| t.idem_key),
            text(|t| t.parent.as_deref()),
            text(|t| t.context_id),
            text(|t| t.task_kind),
            text(|t| t.cache_key),
        ]
    }
}
