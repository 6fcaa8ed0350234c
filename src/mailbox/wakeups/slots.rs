//! The parked requests waiting on one agent, by what they wait for.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{Signal, WaitFor};

/// The parked requests waiting on one agent, by what they wait for, the longest parked first.
#[derive(Default)]
pub(super) struct Slots(pub(super) [VecDeque<Arc<Signal>>; 3]);

impl Slots {
    pub(super) fn of(&mut self, kind: WaitFor) -> &mut VecDeque<Arc<Signal>> {
        let [task, result, watch] = &mut self.0;
        match kind {
            WaitFor::Task => task,
            WaitFor::Result => result,
            WaitFor::Watch => watch,
        }
    }

    pub(super) fn get(&self, kind: WaitFor) -> &VecDeque<Arc<Signal>> {
        let [task, result, watch] = &self.0;
        match kind {
            WaitFor::Task => task,
            WaitFor::Result => result,
            WaitFor::Watch => watch,
        }
    }
}
