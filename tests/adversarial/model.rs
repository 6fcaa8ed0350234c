//! A small model of the mailbox's state machine for the property test: the tasks of one case,
//! what each request should answer, and what it changes. It knows the contract's order of
//! leases (FIFO, a requeue goes to the end), of drains (oldest result first) and of refusals;
//! where the contract leaves the choice between two refusals open, it says so.

use serde_json::{json, Value};

/// A task's declared duplicate safety.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Safety {
    /// No `idempotency` at all (counts as unsafe).
    Undeclared,
    Unsafe,
    Idempotent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum St {
    Queued,
    InFlight,
    ResultPending,
    Resolved,
    Canceled,
}

impl St {
    pub fn wire(self) -> &'static str {
        match self {
            St::Queued => "queued",
            St::InFlight => "in_flight",
            St::ResultPending => "result_pending",
            St::Resolved => "resolved",
            St::Canceled => "canceled",
        }
    }

    pub fn terminal(self) -> bool {
        matches!(self, St::Resolved | St::Canceled)
    }
}

/// Who answered a task: a worker (under one of its leases) or the operator's force_error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Worker { lease: String, body: Value },
    Forced,
}

#[derive(Clone, Debug)]
pub struct MTask {
    pub id: String,
    pub sender: usize,
    pub recipient: usize,
    pub safety: Safety,
    pub state: St,
    pub attempt: u64,
    pub lease: Option<String>,
    pub queue_seq: u64,
    pub result_seq: u64,
    pub answer: Option<Answer>,
    /// The lease a cancel ended, if it was in flight.
    pub canceled_lease: Option<String>,
    /// Requeues by an operator's repair that stated `operator_accepted`, and by the retry gate.
    pub accepted_requeues: usize,
    pub auto_requeues: usize,
}

/// What an answer should be: one of these statuses (any non-5xx when empty), and this code.
#[derive(Clone, Copy, Debug)]
pub struct Pred {
    pub statuses: &'static [u16],
    pub code: Option<&'static str>,
}

pub const fn exactly(status: &'static [u16], code: Option<&'static str>) -> Pred {
    Pred {
        statuses: status,
        code,
    }
}

/// A refusal whose code the contract leaves open between `not_lessee` and a 409.
pub const REFUSED: Pred = exactly(&[403, 409], None);

impl Pred {
    pub fn admits(&self, status: u16, code: Option<&str>) -> bool {
        (self.statuses.is_empty() || self.statuses.contains(&status))
            && (self.code.is_none() || self.code == code)
    }
}

#[derive(Default)]
pub struct Model {
    pub tasks: Vec<MTask>,
    seq: u64,
    /// Every lease each worker was handed: (task index, lease id).
    pub held: [Vec<(usize, String)>; 2],
}

impl Model {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn index(&self, id: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.id == id)
    }

    pub fn sent(&mut self, id: String, sender: usize, recipient: usize, safety: Safety) {
        let queue_seq = self.next_seq();
        self.tasks.push(MTask {
            id,
            sender,
            recipient,
            safety,
            state: St::Queued,
            attempt: 0,
            lease: None,
            queue_seq,
            result_seq: 0,
            answer: None,
            canceled_lease: None,
            accepted_requeues: 0,
            auto_requeues: 0,
        });
    }

    /// The task a lease by `worker` must hand out: the oldest queued one addressed to it.
    pub fn next_for(&self, worker: usize) -> Option<usize> {
        (0..self.tasks.len())
            .filter(|&i| self.tasks[i].recipient == worker && self.tasks[i].state == St::Queued)
            .min_by_key(|&i| self.tasks[i].queue_seq)
    }

    pub fn leased(&mut self, i: usize, worker: usize, lease: String) {
        let t = &mut self.tasks[i];
        t.state = St::InFlight;
        t.attempt += 1;
        t.lease = Some(lease.clone());
        self.held[worker].push((i, lease));
    }

    /// The result a drain by `sender` must deliver: the oldest pending one of its tasks.
    pub fn drain_for(&self, sender: usize) -> Option<usize> {
        (0..self.tasks.len())
            .filter(|&i| self.tasks[i].sender == sender && self.tasks[i].state == St::ResultPending)
            .min_by_key(|&i| self.tasks[i].result_seq)
    }

    pub fn heartbeat(&self, i: usize, lease: &str) -> Pred {
        let t = &self.tasks[i];
        match t.state {
            St::InFlight if t.lease.as_deref() == Some(lease) => exactly(&[200], None),
            St::InFlight => exactly(&[409], Some("lease_mismatch")),
            St::Canceled if t.canceled_lease.is_some() => exactly(&[409], Some("task_canceled")),
            _ => REFUSED,
        }
    }

    /// A worker posts `body` for task `i` under `lease`.
    pub fn result(&self, i: usize, lease: &str, body: &Value) -> Pred {
        let t = &self.tasks[i];
        match (&t.state, &t.answer) {
            (St::InFlight, _) if t.lease.as_deref() == Some(lease) => exactly(&[201], None),
            (St::InFlight, _) => exactly(&[409], Some("lease_mismatch")),
            (St::Canceled, _) if t.canceled_lease.is_some() => {
                exactly(&[409], Some("task_canceled"))
            }
            (St::ResultPending | St::Resolved, Some(Answer::Worker { body: first, .. })) => {
                if first == body {
                    exactly(&[200], None)
                } else {
                    exactly(&[409], Some("result_conflict"))
                }
            }
            _ => REFUSED,
        }
    }

    pub fn answered(&mut self, i: usize, answer: Answer) {
        let seq = self.next_seq();
        let t = &mut self.tasks[i];
        t.state = St::ResultPending;
        t.lease = None;
        t.result_seq = seq;
        t.answer = Some(answer);
    }

    pub fn cancel(&self, i: usize) -> Pred {
        match self.tasks[i].state {
            St::Queued | St::InFlight | St::Canceled => exactly(&[200], None),
            St::ResultPending | St::Resolved => exactly(&[409], Some("not_cancelable")),
        }
    }

    pub fn canceled(&mut self, i: usize) {
        let t = &mut self.tasks[i];
        if t.state != St::Canceled {
            t.canceled_lease = t.lease.take();
            t.state = St::Canceled;
        }
    }

    /// An operator's requeue with the posture `idempotent` (else `operator_accepted`) and a
    /// lease guard that is current (`Some(true)`), stale (`Some(false)`) or absent.
    pub fn requeue(&self, i: usize, idempotent: bool, guard: Option<bool>) -> Pred {
        let t = &self.tasks[i];
        if t.state != St::InFlight {
            exactly(&[409], Some("not_in_flight"))
        } else if guard == Some(false) {
            exactly(&[409], Some("lease_mismatch"))
        } else if idempotent && t.safety != Safety::Idempotent {
            exactly(&[409], Some("duplicate_risk_mismatch"))
        } else {
            exactly(&[200], None)
        }
    }

    pub fn requeued(&mut self, i: usize, by_scan: bool) {
        let seq = self.next_seq();
        let t = &mut self.tasks[i];
        t.state = St::Queued;
        t.lease = None;
        t.queue_seq = seq;
        if by_scan {
            t.auto_requeues += 1;
        } else {
            t.accepted_requeues += 1;
        }
    }

    pub fn force_error(&self, i: usize) -> Pred {
        match self.tasks[i].state {
            St::InFlight => exactly(&[200], None),
            _ => exactly(&[409], Some("not_in_flight")),
        }
    }

    /// The tasks an enabled scan (min_lease_age_ms 0, max_attempts `max_attempts`) may requeue.
    pub fn eligible(&self, max_attempts: u64) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| {
                let t = &self.tasks[i];
                t.state == St::InFlight
                    && t.safety == Safety::Idempotent
                    && t.attempt < max_attempts
            })
            .collect()
    }

    pub fn drained(&mut self, i: usize) {
        self.tasks[i].state = St::Resolved;
    }
}

/// The result body a worker posts: its text names the lease and the status, so a repeat under
/// the same lease is the same result and anything else a different one.
pub fn result_body(id: &str, lease: &str, ok: bool) -> Value {
    let status = if ok { "ok" } else { "error" };
    let mut b = json!({"task_id": id, "status": status,
        "content": [{"type": "text", "text": format!("{lease}/{status}")}]});
    if !ok {
        b["error_message"] = json!("it broke");
    }
    b
}
