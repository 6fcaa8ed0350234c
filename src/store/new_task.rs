//! A task as the store inserts it, and its columns as bound parameters.

use super::runner::{args, Column, Val};

/// A task to insert, as stored; serialised by name for [`super::Tx::insert_tasks`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct NewTask {
    pub id: String,
    pub sender: String,
    pub recipient: String,
    /// The canonical JSON of the task as accepted.
    pub body: String,
    pub deadline_ms: Option<i64>,
    pub duplicate_safety: Option<String>,
    pub idem_key: Option<String>,
    /// What lists filter on (docs/contract.md#listing), from the task.
    pub parent: Option<String>,
    pub context_id: Option<String>,
    pub task_kind: Option<String>,
    pub cache_key: Option<String>,
}

impl NewTask {
    /// The task's own columns in the order every insert binds them first: id, sender,
    /// recipient, body, deadline_ms, duplicate_safety, idem_key, parent, context_id, task_kind.
    pub(crate) fn columns(&self) -> Vec<Val> {
        args![
            &self.id,
            &self.sender,
            &self.recipient,
            &self.body,
            self.deadline_ms,
            self.duplicate_safety.as_deref(),
            self.idem_key.as_deref(),
            self.parent.as_deref(),
            self.context_id.as_deref(),
            self.task_kind.as_deref()
        ]
        .to_vec()
    }

    /// The columns of [`NewTask::columns`] and then `cache_key`, one array each: the rows of
    /// a set-based insert.
    pub(crate) fn by_column<'t>(tasks: impl Iterator<Item = &'t NewTask> + Clone) -> Vec<Column> {
        let text = |f: fn(&NewTask) -> Option<&str>| {
            Column::Texts(tasks.clone().map(|t| f(t).map(str::to_owned)).collect())
        };
        vec![
            text(|t| Some(&t.id)),
            text(|t| Some(&t.sender)),
            text(|t| Some(&t.recipient)),
            text(|t| Some(&t.body)),
            Column::Ints(tasks.clone().map(|t| t.deadline_ms).collect()),
            text(|t| t.duplicate_safety.as_deref()),
            text(|t| t.idem_key.as_deref()),
            text(|t| t.parent.as_deref()),
            text(|t| t.context_id.as_deref()),
            text(|t| t.task_kind.as_deref()),
            text(|t| t.cache_key.as_deref()),
        ]
    }
}
