//! What the conformance script stands on: its tasks, the trace of each step's row, and a store
//! on a temp SQLite file or a fresh PostgreSQL database.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use sqlx::{Connection, PgConnection};

use crate::store::{NewTask, PoolSettings, Store, TaskRow};

pub(crate) const PG_URL_VAR: &str = "A2A_MAILBOX_TEST_POSTGRES_URL";
pub(crate) const REQUIRE_PG_VAR: &str = "A2A_MAILBOX_REQUIRE_POSTGRES";
/// Where a local PostgreSQL usually is (the README's and CI's default).
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The PostgreSQL server a test's PostgreSQL half runs on, as the black-box suite finds it
/// (`tests/common`): `A2A_MAILBOX_TEST_POSTGRES_URL`, or else a local server at
/// [`DEFAULT_PG_URL`] if one answers. `None` (the half is skipped, loudly) when there is none,
/// unless `A2A_MAILBOX_REQUIRE_POSTGRES=1`, which makes that a failure.
pub(crate) async fn postgres_base_url(test: &str) -> Option<String> {
    if let Ok(url) = std::env::var(PG_URL_VAR) {
        if !url.trim().is_empty() {
            return Some(url);
        }
    }
    let probe = tokio::time::timeout(
        Duration::from_secs(3),
        PgConnection::connect(DEFAULT_PG_URL),
    )
    .await;
    if let Ok(Ok(conn)) = probe {
        let _ = conn.close().await;
        return Some(DEFAULT_PG_URL.to_owned());
    }
    assert_ne!(
        std::env::var(REQUIRE_PG_VAR).as_deref(),
        Ok("1"),
        "{test}: {REQUIRE_PG_VAR}=1 but {PG_URL_VAR} is not set and no PostgreSQL answers at \
         {DEFAULT_PG_URL}"
    );
    // Written to the real stderr, bypassing the test harness's capture, so that every log
    // shows the skipped half.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED (no {PG_URL_VAR} and no PostgreSQL at {DEFAULT_PG_URL}; set \
         {REQUIRE_PG_VAR}=1 to fail instead): {test}, PostgreSQL half"
    );
    None
}

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
