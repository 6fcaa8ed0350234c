//! What the conformance script stands on: its tasks, the trace of each step's row, and a store
//! on a temp SQLite file or a fresh PostgreSQL database.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{NewTask, PoolSettings, Store, TaskRow};

pub(crate) fn id(n: u8) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// Task `n` from alice to `recipient`.
pub(crate) fn task(n: u8, recipient: &str, deadline_ms: Option<i64>) -> NewTask {
    NewTask {
        id: id(n),
        sender: "alice".to_owned(),
        recipient: recipient.to_owned(),
        body: format!(r#"{{"n":{n}}}"#),
        deadline_ms,
        duplicate_safety: None,
        idem_key: None,
        parent: None,
        context_id: None,
        task_kind: None,
        cache_key: None,
    }
}

/// The columns a transition writes, with the instants the fast paths take from the clock
/// shown as `now`.
fn snap(step: &str, r: &TaskRow) -> String {
    let t = |v: Option<i64>| match v {
        Some(v) if v >= 1_000_000_000_000 => "now".to_owned(),
        Some(v) => v.to_string(),
        None => "-".to_owned(),
    };
    format!(
        "{step}: {} {} attempt={} lease={:?} to={:?} leased={} heartbeat={} deadline={} \
         result={:?}/{:?}/{:?} by={:?} created={} updated={} cancel={:?}/{:?}/{:?}/{}",
        &r.id[r.id.len() - 2..],
        r.state,
        r.attempt,
        r.lease_id,
        r.leased_to,
        t(r.leased_at_ms),
        t(r.heartbeat_at_ms),
        t(r.deadline_ms),
        r.result_status,
        r.result_content,
        r.result_error,
        r.result_by,
        t(Some(r.created_at_ms)),
        t(Some(r.updated_at_ms)),
        r.canceled_by,
        r.cancel_reason,
        r.canceled_from,
        t(r.canceled_at_ms),
    )
}

pub(crate) struct Trace(pub(crate) Vec<String>);

impl Trace {
    pub(crate) fn row(&mut self, step: &str, r: &TaskRow) {
        self.0.push(snap(step, r));
    }

    pub(crate) fn note(&mut self, line: String) {
        self.0.push(line);
    }
}

pub(crate) async fn open(url: &str) -> Store {
    let settings = PoolSettings {
        max_connections: 4,
        acquire_timeout: Duration::from_secs(10),
    };
    let store = Store::connect(url, &settings, Arc::default())
        .await
        .expect("opening the store");
    store.migrate().await.expect("migrating");
    store
}

/// `postgres://u@h:p/db?x` with the database replaced by `db`.
pub(crate) fn with_db(base: &str, db: &str) -> String {
    let (head, query) = base
        .split_once('?')
        .map_or((base, None), |(h, q)| (h, Some(q)));
    let authority = head.find("://").map_or(0, |i| i + 3);
    let end = head[authority..]
        .find('/')
        .map_or(head.len(), |i| authority + i);
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    format!("{}/{db}{query}", &head[..end])
}
