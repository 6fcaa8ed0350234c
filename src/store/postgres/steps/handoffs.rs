//! Which sends and results of a batch a riding claim or drain took the work of.

use super::element::{Outcome, Step};

/// Marks the sends and results whose work a riding claim or drain of the same batch took: one
/// send per claim that took a task of its recipient, one result per drain that took a result of
/// its sender. Their requests then wake nobody else.
pub(super) fn mark(steps: &[Step], out: &mut [Outcome]) {
    let mut claimed: Vec<&str> = Vec::new();
    let mut drained: Vec<&str> = Vec::new();
    for (step, outcome) in steps.iter().zip(out.iter()) {
        match (step, outcome) {
            (Step::Claim(a), Outcome::Claimed(Some(_))) if a.if_sent => claimed.push(&a.recipient),
            (Step::Drain(a), Outcome::Drained(Some(_))) if a.if_stored => drained.push(&a.sender),
            _ => {}
        }
    }
    let take = |taken: &mut Vec<&str>, who: &str| match taken.iter().position(|t| *t == who) {
        Some(at) => {
            taken.swap_remove(at);
            true
        }
        None => false,
    };
    for (step, outcome) in steps.iter().zip(out.iter_mut()) {
        match (step, outcome) {
            (Step::Send(a), Outcome::Sent(Some(c))) => {
                c.handed = take(&mut claimed, &a.task.recipient)
            }
            (Step::Result(_), Outcome::Stored(Some(c))) => c.handed = take(&mut drained, &c.made),
            _ => {}
        }
    }
}
