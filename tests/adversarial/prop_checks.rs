//! The checks of the property test after every step: what an enabled scan requeued, the
//! mailbox's tasks against the model (and the invariants), the audit rows of requeues, and the
//! clean-up that leaves later cases' scans only their own tasks.

use serde_json::{json, Value};

use super::kit::short;
use super::model::{exactly, Safety, St};
use super::prop_case::{Case, Check};

impl Case<'_> {
    pub async fn scan(&mut self, max_requeues: u64) -> Check {
        let policy = json!({"enabled": true, "min_lease_age_ms": 0, "max_attempts": 3,
            "max_requeues": max_requeues, "scan_limit": 1000});
        let r = self.api.post("/a2a/retry-stale", &self.ops, &policy).await;
        self.expect("retry scan", exactly(&[200], None), &r)?;
        let eligible = self.model.eligible(3);
        let requeued: Vec<String> = r.body["report"]["requeued"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["task_id"].as_str().map(str::to_owned))
            .collect();
        let want = eligible.len().min(max_requeues as usize);
        if requeued.len() != want {
            return Err(format!(
                "the scan requeued {} of {} eligible (max {max_requeues}): {}",
                requeued.len(),
                eligible.len(),
                short(&r.text)
            ));
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
    pub async fn compare(&mut self) -> Check {
        let path = format!("/a2a/tasks?context_id={}&limit=1000", self.ctx);
        let r = self.api.get(&path, &self.ops).await;
        if r.status != 200 {
            return Err(format!("listing the case: {} {}", r.status, short(&r.text)));
        }
        let listed = r.body["tasks"].as_array().cloned().unwrap_or_default();
        if listed.len() != self.model.tasks.len() {
            return Err(format!(
                "{} tasks listed, {} sent",
                listed.len(),
                self.model.tasks.len()
            ));
        }
        for s in listed {
            let id = s["task"]["id"].as_str().unwrap_or_default().to_owned();
            let Some(i) = self.model.index(&id) else {
                return Err(format!("unknown task {id}"));
            };
            let t = &self.model.tasks[i];
            let lease = s["lease"]["lease_id"].as_str();
            if s["state"] != t.state.wire()
                || s["attempt"] != t.attempt
                || lease != t.lease.as_deref()
            {
                return Err(format!(
                    "task {id} ({:?}) is {} attempt {} lease {lease:?}; the model says \
                    {:?} attempt {} lease {:?}",
                    t.safety, s["state"], s["attempt"], t.state, t.attempt, t.lease
                ));
            }
            if (t.state == St::InFlight) != s["lease"].is_object() {
                return Err(format!(
                    "task {id} in state {} with lease {}",
                    s["state"], s["lease"]
                ));
            }
            if t.state.terminal() {
                let seen = json!([
                    s["state"],
                    s["attempt"],
                    s["result"],
                    s["cancellation"],
                    s["updated_at_ms"]
                ]);
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
    pub async fn audit(&self, since_ms: u64) -> Check {
        let path = format!("/audit/recent?kind=a2a_repair_applied&since_ms={since_ms}&limit=1000");
        let r = self.api.get(&path, &self.ops).await;
        let rows = r.body["events"].as_array().cloned().unwrap_or_default();
        for t in &self.model.tasks {
            let mine: Vec<&Value> = rows
                .iter()
                .filter(|e| e["kind"]["task_id"] == t.id.as_str())
                .collect();
            let count = |action: &str| {
                mine.iter()
                    .filter(|e| e["kind"]["action"] == action)
                    .count()
            };
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
                    return Err(format!(
                        "a {:?} task was requeued by {}",
                        t.safety, e["kind"]
                    ));
                }
            }
            if count("requeue") != t.accepted_requeues || count("auto_requeue") != t.auto_requeues {
                return Err(format!(
                    "task {} ({:?}): {} repair and {} scan requeue rows, the model \
                    made {} and {}",
                    t.id,
                    t.safety,
                    count("requeue"),
                    count("auto_requeue"),
                    t.accepted_requeues,
                    t.auto_requeues
                ));
            }
        }
        Ok(())
    }

    /// Leaves nothing of the case queued or in flight, so later cases' scans see only theirs.
    pub async fn clean_up(&self) {
        for t in &self.model.tasks {
            let path = format!("/a2a/tasks/{}/cancel", t.id);
            let _ = self.api.post(&path, &self.ops, &json!({})).await;
        }
    }
}
