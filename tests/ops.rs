//! Black-box tests of the stale-lease operations (docs/contract.md#repair, docs/contract.md#retry-gate, docs/contract.md#compaction, docs/contract.md#audit, heartbeat of docs/contract.md#endpoints) and
//! of the operator CLI: the real binary over HTTP, every test on SQLite and on PostgreSQL.
//! Shares the harness in `tests/common`.

#[allow(dead_code)]
#[macro_use]
mod common;

mod ops {
    mod audit;
    mod audit_bounds;
    mod checks;
    mod cli;
    mod coalescing;
    mod compact;
    mod durations;
    mod repair;
    mod retry;
    mod scan_bounds;
    mod scheduler;
    mod startup;

    pub use crate::common::full_ops;
    use crate::common::{task, Api};
    use serde_json::{json, Value};

    /// A task alice → bob of kind `test-work` declared idempotent with `key` (so two of them with
    /// one key share a result-cache key).
    pub fn idem_task(key: &str) -> Value {
        let mut t = task("alice", "bob");
        t["task_kind"] = json!("test-work");
        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
        t
    }

    /// A task alice → bob marked unsafe (with a key).
    pub fn unsafe_task(key: &str) -> Value {
        let mut t = task("alice", "bob");
        t["idempotency"] = json!({"duplicate_safety": "unsafe", "key": key});
        t
    }

    /// Sends `t` as alice and leases it as bob; returns (task id, lease id).
    pub async fn send_and_lease(api: &Api, t: &Value) -> (String, String) {
        let id = api.send_ok(&api.alice(), t).await;
        let (leased, lease) = api.lease_some(&api.bob()).await;
        assert_eq!(leased, id, "bob leased another task than the one just sent");
        (id, lease["lease_id"].as_str().unwrap().to_owned())
    }

    /// `POST /a2a/repair`.
    pub async fn repair(
        api: &Api,
        token: &str,
        id: &str,
        reason: &str,
        command: Value,
    ) -> crate::common::Resp {
        api.post(
            "/a2a/repair",
            token,
            &json!({"task_id": id, "reason": reason, "command": command}),
        )
        .await
    }

    /// Audit rows of one slug as an operator sees them, newest first.
    pub async fn audit_rows(api: &Api, kind: &str) -> Vec<Value> {
        let r = api
            .get(&format!("/audit/recent?limit=1000&kind={kind}"), &api.ops())
            .await;
        let b = r.expect(200);
        assert_eq!(b["kind"], "audit_events", "{}", r.text);
        b["events"].as_array().unwrap().clone()
    }
}
