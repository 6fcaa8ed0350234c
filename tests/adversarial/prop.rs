//! Random interleavings of send, lease, heartbeat, result, drain, cancel, repair (requeue in
//! both postures, force_error) and enabled retry scans, from two senders, two workers and an
//! operator, against the real server on both engines, beside the model of `model.rs`. After
//! every step: each answer's status is the one the model predicts, and the mailbox's tasks are
//! the model's: at most one live lease, attempts never go down, a canceled or resolved task
//! never changes again, a result is drained at most once, and an unsafe task (or one without
//! idempotency) is requeued only by an explicit `operator_accepted` repair (its audit rows
//! say so). One server per engine serves every case; each case has agents of its own.

use std::cell::Cell;
use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};
use uuid::Uuid;

use super::kit::short;
use super::model::{result_body, Answer, Model, Pred, Safety, St};
use crate::common::{full_ops, now_ms, Api, AppConfig, Engine, Resp, TestApp};

#[derive(Clone, Debug)]
enum Step {
    Send { sender: usize, recipient: usize, safety: Safety },
    Lease { worker: usize },
    Heartbeat { worker: usize, pick: usize },
    Result { worker: usize, pick: usize, ok: bool },
    Drain { sender: usize },
    Cancel { by_operator: bool, pick: usize },
    /// `guard`: the current lease (`Some(true)`), a stale one (`Some(false)`) or none.
    Requeue { pick: usize, idempotent: bool, guard: Option<bool> },
    ForceError { pick: usize },
    Scan { max_requeues: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    let safety = prop_oneof![Just(Safety::Undeclared), Just(Safety::Unsafe), Just(Safety::Idempotent)];
    let guard = prop_oneof![Just(None), Just(Some(true)), Just(Some(false))];
    prop_oneof![
        4 => (0..2usize, 0..2usize, safety)
            .prop_map(|(sender, recipient, safety)| Step::Send { sender, recipient, safety }),
        5 => (0..2usize).prop_map(|worker| Step::Lease { worker }),
        2 => (0..2usize, 0..8usize).prop_map(|(worker, pick)| Step::Heartbeat { worker, pick }),
        4 => (0..2usize, 0..8usize, any::<bool>())
            .prop_map(|(worker, pick, ok)| Step::Result { worker, pick, ok }),
        3 => (0..2usize).prop_map(|sender| Step::Drain { sender }),
        2 => (any::<bool>(), 0..8usize)
            .prop_map(|(by_operator, pick)| Step::Cancel { by_operator, pick }),
        4 => (0..8usize, any::<bool>(), guard)
            .prop_map(|(pick, idempotent, guard)| Step::Requeue { pick, idempotent, guard }),
        1 => (0..8usize).prop_map(|pick| Step::ForceError { pick }),
        2 => prop_oneof![Just(1u64), Just(2), Just(100)].prop_map(|max_requeues| Step::Scan { max_requeues }),
    ]
}

/// One case: its agents, their tokens, and the model.
struct Case<'a> {
    api: &'a Api,
    ctx: String,
    senders: [String; 2],
    workers: [String; 2],
    sender_tokens: [String; 2],
    worker_tokens: [String; 2],
    ops: String,
    model: Model,
    /// What each terminal task looked like when it became terminal.
    frozen: HashMap<String, Value>,
    drained: Vec<String>,
}

type Check = Result<(), String>;

fn code(r: &Resp) -> Option<&str> {
    r.body["code"].as_str()
}

impl<'a> Case<'a> {
    fn new(api: &'a Api, tag: &str) -> Case<'a> {
        let senders = [format!("{tag}-s0"), format!("{tag}-s1")];
        let workers = [format!("{tag}-w0"), format!("{tag}-w1")];
        let to_workers = json!([format!("a2a.send.{}", workers[0]), format!("a2a.send.{}", workers[1])]);
        let for_senders = json!([format!("a2a.respond.{}", senders[0]),
            format!("a2a.respond.{}", senders[1])]);
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

    fn expect(&self, what: &str, pred: Pred, r: &Resp) -> Check {
        if (500..600).contains(&r.status) || !pred.admits(r.status, code(r)) {
            return Err(format!("{what}: expected {pred:?}, got {} {}", r.status, short(&r.text)));
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

    async fn run(&mut self, step: &Step) -> Check {
        let api = self.api;
        match *step {
            Step::Send { sender, recipient, safety } => {
                let id = Uuid::new_v4().to_string();
                let mut t = json!({"id": id, "sender": self.senders[sender],
                    "recipient": self.workers[recipient], "intent_text": "work", "context_id": self.ctx});
                let key = Uuid::new_v4().to_string();
                match safety {
                    Safety::Undeclared => {}
                    Safety::Unsafe => t["idempotency"] = json!({"duplicate_safety": "unsafe", "key": key}),
                    Safety::Idempotent => {
                        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key})
                    }
                }
                let r = api.send(&self.sender_tokens[sender], &t).await;
                self.expect("send", super::model::exactly(&[201], None), &r)?;
                self.model.sent(id, sender, recipient, safety);
            }
            Step::Lease { worker } => {
                let r = api.get("/a2a/tasks/next", &self.worker_tokens[worker]).await;
                self.expect("lease", super::model::exactly(&[200], None), &r)?;
                let want = self.model.next_for(worker);
                let got = r.body["task"]["id"].as_str();
                if got != want.map(|i| self.model.tasks[i].id.as_str()) {
                    return Err(format!("lease by w{worker}: expected {:?}, got {}",
                        want.map(|i| &self.model.tasks[i].id), short(&r.text)));
                }
                if let Some(i) = want {
                    let attempt = r.body["lease"]["attempt"].as_u64();
                    if attempt != Some(self.model.tasks[i].attempt + 1) {
                        return Err(format!("lease of attempt {attempt:?} after {}", self.model.tasks[i].attempt));
                    }
                    let lease = r.body["lease"]["lease_id"].as_str().unwrap_or_default().to_owned();
                    self.model.leased(i, worker, lease);
                }
            }
            Step::Heartbeat { worker, pick } => {
                let Some((i, lease)) = self.held(worker, pick) else { return Ok(()) };
                let path = format!("/a2a/tasks/{}/heartbeat", self.model.tasks[i].id);
                let r = api.post(&path, &self.worker_tokens[worker], &json!({"lease_id": lease})).await;
                self.expect("heartbeat", self.model.heartbeat(i, &lease), &r)?;
            }
            Step::Result { worker, pick, ok } => {
                let Some((i, lease)) = self.held(worker, pick) else { return Ok(()) };
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
                let r = api.get("/a2a/results/next", &self.sender_tokens[sender]).await;
                self.expect("drain", super::model::exactly(&[200], None), &r)?;
                let want = self.model.drain_for(sender).map(|i| self.model.tasks[i].id.clone());
                let got = r.body["result"]["task_id"].as_str().map(str::to_owned);
                if let Some(g) = &got {
                    if self.drained.contains(g) {
                        return Err(format!("the result of {g} was delivered twice"));
                    }
                    self.drained.push(g.clone());
                }
                if got != want {
                    return Err(format!("drain by s{sender}: expected {want:?}, got {}", short(&r.text)));
                }
                if let Some(i) = want.and_then(|id| self.model.index(&id)) {
                    self.model.drained(i);
                }
            }
            Step::Cancel { by_operator, pick } => {
                let Some(i) = self.pick(pick) else { return Ok(()) };
                let token = if by_operator { &self.ops } else { &self.sender_tokens[self.model.tasks[i].sender] };
                let path = format!("/a2a/tasks/{}/cancel", self.model.tasks[i].id);
                let r = api.post(&path, token, &json!({"reason": "prop"})).await;
                self.expect("cancel", self.model.cancel(i), &r)?;
                if r.status == 200 {
                    self.model.canceled(i);
                }
            }
            Step::Requeue { pick, idempotent, guard } => {
                let Some(i) = self.pick_in_flight(pick) else { return Ok(()) };
                let t = &self.model.tasks[i];
                let risk = if idempotent { "idempotent" } else { "operator_accepted" };
                let mut command = json!({"action": "requeue", "duplicate_risk": risk});
                match guard {
                    Some(true) => command["lease_id"] = json!(t.lease.clone().unwrap_or_else(|| Uuid::new_v4().to_string())),
                    Some(false) => command["lease_id"] = json!(Uuid::new_v4().to_string()),
                    None => {}
                }
                let body = json!({"task_id": t.id, "reason": "prop", "command": command});
                let pred = self.model.requeue(i, idempotent, guard);
                let r = api.post("/a2a/repair", &self.ops, &body).await;
                self.expect(&format!("requeue ({risk}) of a {:?} task", t.safety), pred, &r)?;
                if r.status == 200 {
                    self.model.requeued(i, false);
                }
            }
            Step::ForceError { pick } => {
                let Some(i) = self.pick_in_flight(pick) else { return Ok(()) };
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

    async fn scan(&mut self, max_requeues: u64) -> Check {
        let policy = json!({"enabled": true, "min_lease_age_ms": 0, "max_attempts": 3,
            "max_requeues": max_requeues, "scan_limit": 1000});
        let r = self.api.post("/a2a/retry-stale", &self.ops, &policy).await;
        self.expect("retry scan", super::model::exactly(&[200], None), &r)?;
        let eligible = self.model.eligible(3);
        let requeued: Vec<String> = r.body["report"]["requeued"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["task_id"].as_str().map(str::to_owned))
            .collect();
        let want = eligible.len().min(max_requeues as usize);
        if requeued.len() != want {
            return Err(format!("the scan requeued {} of {} eligible (max {max_requeues}): {}",
                requeued.len(), eligible.len(), short(&r.text)));
        }
        for id in &requeued {
            match self.model.index(id) {
                Some(i) if eligible.contains(&i) => self.model.requeued(i, true),
                _ => return Err(format!("the scan requeued {id}, which is not eligible")),
            }
        }
        Ok(())
    }

    /// The mailbox's tasks of this case against the model, and the invariants.
    async fn compare(&mut self) -> Check {
        let path = format!("/a2a/tasks?context_id={}&limit=1000", self.ctx);
        let r = self.api.get(&path, &self.ops).await;
        if r.status != 200 {
            return Err(format!("listing the case: {} {}", r.status, short(&r.text)));
        }
        let listed = r.body["tasks"].as_array().cloned().unwrap_or_default();
        if listed.len() != self.model.tasks.len() {
            return Err(format!("{} tasks listed, {} sent", listed.len(), self.model.tasks.len()));
        }
        for s in listed {
            let id = s["task"]["id"].as_str().unwrap_or_default().to_owned();
            let Some(i) = self.model.index(&id) else { return Err(format!("unknown task {id}")) };
            let t = &self.model.tasks[i];
            let lease = s["lease"]["lease_id"].as_str();
            if s["state"] != t.state.wire() || s["attempt"] != t.attempt || lease != t.lease.as_deref() {
                return Err(format!("task {id} ({:?}) is {} attempt {} lease {lease:?}; the model says \
                    {:?} attempt {} lease {:?}", t.safety, s["state"], s["attempt"], t.state, t.attempt, t.lease));
            }
            if (t.state == St::InFlight) != s["lease"].is_object() {
                return Err(format!("task {id} in state {} with lease {}", s["state"], s["lease"]));
            }
            if t.state.terminal() {
                let seen = json!([s["state"], s["attempt"], s["result"], s["cancellation"], s["updated_at_ms"]]);
                if let Some(first) = self.frozen.get(&id) {
                    if *first != seen {
                        return Err(format!("terminal task {id} changed: {first} -> {seen}"));
                    }
                }
                self.frozen.entry(id).or_insert(seen);
            }
        }
        Ok(())
    }

    /// The audit rows of the case's requeues: an unsafe (or undeclared) task is requeued only
    /// by a repair that stated `operator_accepted`, and every requeue is recorded.
    async fn audit(&self, since_ms: u64) -> Check {
        let path = format!("/audit/recent?kind=a2a_repair_applied&since_ms={since_ms}&limit=1000");
        let r = self.api.get(&path, &self.ops).await;
        let rows = r.body["events"].as_array().cloned().unwrap_or_default();
        for t in &self.model.tasks {
            let mine: Vec<&Value> = rows.iter().filter(|e| e["kind"]["task_id"] == t.id.as_str()).collect();
            let count = |action: &str| mine.iter().filter(|e| e["kind"]["action"] == action).count();
            for e in &mine {
                let risk = &e["kind"]["duplicate_risk"];
                let ok = match (e["kind"]["action"].as_str(), t.safety) {
                    (Some("force_error"), _) => true,
                    (Some("requeue"), Safety::Idempotent) => true,
                    (Some("requeue"), _) => *risk == "operator_accepted",
                    (Some("auto_requeue"), s) => s == Safety::Idempotent && *risk == "idempotent",
                    _ => false,
                };
                if !ok {
                    return Err(format!("a {:?} task was requeued by {}", t.safety, e["kind"]));
                }
            }
            if count("requeue") != t.accepted_requeues || count("auto_requeue") != t.auto_requeues {
                return Err(format!("task {} ({:?}): {} repair and {} scan requeue rows, the model \
                    made {} and {}", t.id, t.safety, count("requeue"), count("auto_requeue"),
                    t.accepted_requeues, t.auto_requeues));
            }
        }
        Ok(())
    }

    /// Leaves nothing of the case queued or in flight, so later cases' scans see only theirs.
    async fn clean_up(&self) {
        for t in &self.model.tasks {
            let path = format!("/a2a/tasks/{}/cancel", t.id);
            let _ = self.api.post(&path, &self.ops, &json!({})).await;
        }
    }
}

async fn run_case(api: &Api, tag: String, steps: &[Step]) -> Check {
    let since = now_ms();
    let mut case = Case::new(api, &tag);
    let mut outcome = Ok(());
    for (n, step) in steps.iter().enumerate() {
        let checked = match case.run(step).await {
            Ok(()) => case.compare().await,
            e => e,
        };
        if let Err(e) = checked {
            outcome = Err(format!("step {n} {step:?}: {e}"));
            break;
        }
    }
    if outcome.is_ok() {
        outcome = case.audit(since).await;
    }
    case.clean_up().await;
    outcome
}

fn interleavings(engine: Engine) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let test = format!("adversarial::prop::{engine:?}");
    let Some(app) = rt.block_on(TestApp::spawn(engine, AppConfig::default(), &test)) else {
        return;
    };
    let config = Config {
        cases: 32,
        failure_persistence: None,
        max_shrink_iters: 150,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counter = Cell::new(0);
    let result = runner.run(&proptest::collection::vec(step(), 10..=40), |steps| {
        counter.set(counter.get() + 1);
        let tag = format!("p{}", counter.get());
        rt.block_on(run_case(&app.api, tag, &steps)).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{engine:?}: {e}");
    }
}

#[test]
fn random_interleavings_keep_the_invariants_sqlite() {
    interleavings(Engine::Sqlite);
}

#[test]
fn random_interleavings_keep_the_invariants_postgres() {
    interleavings(Engine::Postgres);
}
