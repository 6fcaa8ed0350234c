//! One case of the property test: its agents and their tokens, the model, and each step as
//! the requests it makes and the answers the model predicts for them.

use std::collections::HashMap;

use serde_json::{json, Value};
use uuid::Uuid;

use super::kit::short;
use super::model::{exactly, result_body, Answer, Model, Pred, Safety, St};
use super::prop::Step;
use crate::common::{full_ops, Api, Resp};

/// One case: its agents, their tokens, and the model.
pub struct Case<'a> {
    pub api: &'a Api,
    pub ctx: String,
    pub senders: [String; 2],
    pub workers: [String; 2],
    pub sender_tokens: [String; 2],
    pub worker_tokens: [String; 2],
    pub ops: String,
    pub model: Model,
    /// What each terminal task looked like when it became terminal.
    pub frozen: HashMap<String, Value>,
    pub drained: Vec<String>,
}

pub type Check = Result<(), String>;

fn code(r: &Resp) -> Option<&str> {
    r.body["code"].as_str()
}

impl<'a> Case<'a> {
    pub fn new(api: &'a Api, tag: &str) -> Case<'a> {
        let senders = [format!("{tag}-s0"), format!("{tag}-s1")];
        let workers = [format!("{tag}-w0"), format!("{tag}-w1")];
        let to_workers = json!([
            format!("a2a.send.{}", workers[0]),
            format!("a2a.send.{}", workers[1])
        ]);
        let for_senders = json!([
            format!("a2a.respond.{}", senders[0]),
            format!("a2a.respond.{}", senders[1])
        ]);
        Case {
            api,
            ctx: tag.to_owned(),
            sender_tokens: senders.clone().map(|s| api.token(&s, to_workers.clone())),
            worker_tokens: workers.clone().map(|w| api.token(&w, for_senders.clone())),
            senders,
            workers,
            ops: full_ops(api),
            model: Model::default(),
            frozen: HashMap::new(),
            drained: Vec::new(),
        }
    }

    pub fn expect(&self, what: &str, pred: Pred, r: &Resp) -> Check {
        if (500..600).contains(&r.status) || !pred.admits(r.status, code(r)) {
            return Err(format!(
                "{what}: expected {pred:?}, got {} {}",
                r.status,
                short(&r.text)
            ));
        }
        Ok(())
    }

    /// Task `pick` of the case, in the order they were sent.
    fn pick(&self, pick: usize) -> Option<usize> {
        let n = self.model.tasks.len();
        (n > 0).then(|| pick % n)
    }

    /// Task `pick` among those in flight (what an operator repairs), else among all.
    fn pick_in_flight(&self, pick: usize) -> Option<usize> {
        let live: Vec<usize> = (0..self.model.tasks.len())
            .filter(|&i| self.model.tasks[i].state == St::InFlight)
            .collect();
        if live.is_empty() {
            self.pick(pick)
        } else {
            Some(live[pick % live.len()])
        }
    }

    pub async fn run(&mut self, step: &Step) -> Check {
        let api = self.api;
        match *step {
            Step::Send {
                sender,
                recipient,
                safety,
            } => {
                let id = Uuid::new_v4().to_string();
                let mut t = json!({"id": id, "sender": self.senders[sender],
                    "recipient": self.workers[recipient], "intent_text": "work", "context_id": self.ctx});
                let key = Uuid::new_v4().to_string();
                match safety {
                    Safety::Undeclared => {}
                    Safety::Unsafe => {
                        t["idempotency"] = json!({"duplicate_safety": "unsafe", "key": key})
                    }
                    Safety::Idempotent => {
                        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key})
                    }
                }
                let r = api.send(&self.sender_tokens[sender], &t).await;
                self.expect("send", exactly(&[201], None), &r)?;
                self.model.sent(id, sender, recipient, safety);
            }
            Step::Lease { worker } => {
                let r = api
                    .get("/a2a/tasks/next", &self.worker_tokens[worker])
                    .await;
                self.expect("lease", exactly(&[200], None), &r)?;
                let want = self.model.next_for(worker);
                let got = r.body["task"]["id"].as_str();
                if got != want.map(|i| self.model.tasks[i].id.as_str()) {
                    return Err(format!(
                        "lease by w{worker}: expected {:?}, got {}",
                        want.map(|i| &self.model.tasks[i].id),
                        short(&r.text)
                    ));
                }
                if let Some(i) = want {
                    let attempt = r.body["lease"]["attempt"].as_u64();
                    if attempt != Some(self.model.tasks[i].attempt + 1) {
                        return Err(format!(
                            "lease of attempt {attempt:?} after {}",
                            self.model.tasks[i].attempt
                        ));
                    }
                    let lease = r.body["lease"]["lease_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    self.model.leased(i, worker, lease);
                }
            }
            Step::Heartbeat { worker, pick } => {
                let Some((i, lease)) = self.held(worker, pick) else {
                    return Ok(());
                };
                let path = format!("/a2a/tasks/{}/heartbeat", self.model.tasks[i].id);
                let r = api
                    .post(
                        &path,
                        &self.worker_tokens[worker],
                        &json!({"lease_id": lease}),
                    )
                    .await;
                self.expect("heartbeat", self.model.heartbeat(i, &lease), &r)?;
            }
            Step::Result { worker, pick, ok } => {
                let Some((i, lease)) = self.held(worker, pick) else {
                    return Ok(());
                };
                let body = result_body(&self.model.tasks[i].id, &lease, ok);
                let pred = self.model.result(i, &lease, &body);
                let mut posted = body.clone();
                posted["lease_id"] = json!(lease);
                let r = api.post_result(&self.worker_tokens[worker], &posted).await;
                self.expect("result", pred, &r)?;
                if r.status == 201 {
                    self.model.answered(i, Answer::Worker { lease, body });
                }
            }
            Step::Drain { sender } => {
                let r = api
                    .get("/a2a/results/next", &self.sender_tokens[sender])
                    .await;
                self.expect("drain", exactly(&[200], None), &r)?;
                let want = self
                    .model
                    .drain_for(sender)
                    .map(|i| self.model.tasks[i].id.clone());
                let got = r.body["result"]["task_id"].as_str().map(str::to_owned);
                if let Some(g) = &got {
                    if self.drained.contains(g) {
                        return Err(format!("the result of {g} was delivered twice"));
                    }
                    self.drained.push(g.clone());
                }
                if got != want {
                    return Err(format!(
                        "drain by s{sender}: expected {want:?}, got {}",
                        short(&r.text)
                    ));
                }
                if let Some(i) = want.and_then(|id| self.model.index(&id)) {
                    self.model.drained(i);
                }
            }
            Step::Cancel { by_operator, pick } => {
                let Some(i) = self.pick(pick) else {
                    return Ok(());
                };
                let token = if by_operator {
                    &self.ops
                } else {
                    &self.sender_tokens[self.model.tasks[i].sender]
                };
                let path = format!("/a2a/tasks/{}/cancel", self.model.tasks[i].id);
                let r = api.post(&path, token, &json!({"reason": "prop"})).await;
                self.expect("cancel", self.model.cancel(i), &r)?;
                if r.status == 200 {
                    self.model.canceled(i);
                }
            }
            Step::Requeue {
                pick,
                idempotent,
                guard,
            } => {
                let Some(i) = self.pick_in_flight(pick) else {
                    return Ok(());
                };
                let t = &self.model.tasks[i];
                let risk = if idempotent {
                    "idempotent"
                } else {
                    "operator_accepted"
                };
                let mut command = json!({"action": "requeue", "duplicate_risk": risk});
                match guard {
                    Some(true) => {
                        command["lease_id"] = json!(t
                            .lease
                            .clone()
                            .unwrap_or_else(|| Uuid::new_v4().to_string()))
                    }
                    Some(false) => command["lease_id"] = json!(Uuid::new_v4().to_string()),
                    None => {}
                }
                let body = json!({"task_id": t.id, "reason": "prop", "command": command});
                let pred = self.model.requeue(i, idempotent, guard);
                let r = api.post("/a2a/repair", &self.ops, &body).await;
                self.expect(
                    &format!("requeue ({risk}) of a {:?} task", t.safety),
                    pred,
                    &r,
                )?;
                if r.status == 200 {
                    self.model.requeued(i, false);
                }
            }
            Step::ForceError { pick } => {
                let Some(i) = self.pick_in_flight(pick) else {
                    return Ok(());
                };
                let body = json!({"task_id": self.model.tasks[i].id, "reason": "prop",
                    "command": {"action": "force_error", "message": "given up"}});
                let r = api.post("/a2a/repair", &self.ops, &body).await;
                self.expect("force_error", self.model.force_error(i), &r)?;
                if r.status == 200 {
                    self.model.answered(i, Answer::Forced);
                }
            }
            Step::Scan { max_requeues } => self.scan(max_requeues).await?,
        }
        Ok(())
    }

    /// A lease `worker` was handed, chosen by `pick`.
    fn held(&self, worker: usize, pick: usize) -> Option<(usize, String)> {
        let held = &self.model.held[worker];
        (!held.is_empty()).then(|| held[pick % held.len()].clone())
    }
}
