//! The rows `a2a_step_many` answers, and the elements of the batch they belong to.

use sqlx::FromRow;

use super::element::Outcome;
use crate::store::records::{Committed, Drained, TaskRow};

/// One row `a2a_step_many` answers: the element it belongs to (its kind and 1-based position
/// among that kind's elements) and what the element did.
#[derive(FromRow)]
pub(super) struct StepRow {
    pub(super) o_kind: i32,
    pub(super) o_ord: i32,
    pub(super) o_text: Option<String>,
    pub(super) o_status: Option<String>,
    pub(super) o_content: Option<String>,
    pub(super) o_error: Option<String>,
    pub(super) o_trace: Option<String>,
}

/// Maps the rows `a2a_step_many` answered to the batch's elements (`kinds`, in batch order): a
/// row names its kind and its 1-based position among that kind's elements; an element without a
/// row did nothing.
pub(super) fn place(kinds: &[usize], rows: Vec<StepRow>) -> Vec<Outcome> {
    let mut at: [Vec<usize>; 4] = Default::default();
    for (i, &k) in kinds.iter().enumerate() {
        if let Some(of_kind) = at.get_mut(k) {
            of_kind.push(i);
        }
    }
    let mut out: Vec<Outcome> = kinds
        .iter()
        .map(|k| match k {
            0 => Outcome::Sent(None),
            1 => Outcome::Claimed(None),
            2 => Outcome::Stored(None),
            _ => Outcome::Drained(None),
        })
        .collect();
    for row in rows {
        let element = usize::try_from(row.o_kind)
            .ok()
            .zip(usize::try_from(row.o_ord).ok())
            .and_then(|(k, ord)| at.get(k)?.get(ord.checked_sub(1)?).map(|&i| (k, i)));
        let Some((kind, i)) = element else {
            tracing::error!(
                kind = row.o_kind,
                ord = row.o_ord,
                "a batch row names no element"
            );
            continue;
        };
        let Some(slot) = out.get_mut(i) else {
            continue;
        };
        *slot = match kind {
            0 => Outcome::Sent(Some(Committed {
                made: (),
                handed: false,
            })),
            1 => match crate::store::records::from_stored::<TaskRow>(
                row.o_text.as_deref().unwrap_or(""),
            ) {
                Ok(task) => Outcome::Claimed(Some(Box::new(task))),
                // The lease is committed; only this request can be told it went wrong.
                Err(e) => Outcome::Failed(format!("the leased row could not be read: {e}")),
            },
            2 => Outcome::Stored(row.o_text.map(|sender| Committed {
                made: sender,
                handed: false,
            })),
            _ => Outcome::Drained(row.o_text.map(|id| Drained {
                id,
                result_status: row.o_status,
                result_content: row.o_content,
                result_error: row.o_error,
                result_trace: row.o_trace,
            })),
        };
    }
    out
}
