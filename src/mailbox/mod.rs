//! The mailbox operations. Every write is ONE transaction that also carries its audit rows and,
//! when the request had an `Idempotency-Key`, the key's record: see [`Mailbox::begin_write`] and
//! [`Mailbox::finish_write`].
//!
//! A write operation checks everything before it changes anything, so a refused request (4xx)
//! can still commit the audit rows it wrote (a failed capability check is audited) without
//! changing the mailbox.

pub mod admin;
mod idempotency;
pub mod repair;
mod results;
pub mod retry;
mod rows;
pub mod tasks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::Notify;

use crate::args;
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::store::{Db, Tx};

pub use idempotency::IdemRequest;
pub use rows::TaskRow;

/// Tunables of the mailbox's rules.
#[derive(Clone, Debug)]
pub struct MailboxConfig {
    /// How long a cached idempotent result replays (default 24 h).
    pub result_cache_window_ms: i64,
    /// Per-`task_kind` overrides of the window.
    pub result_cache_window_by_kind: HashMap<String, i64>,
    /// How long an `Idempotency-Key` is honoured (default 24 h).
    pub idempotency_window_ms: i64,
    /// How long a pending `Idempotency-Key` record blocks a duplicate before it may be taken over.
    pub idempotency_pending_ttl_ms: i64,
}

impl Default for MailboxConfig {
    fn default() -> Self {
        MailboxConfig {
            result_cache_window_ms: 24 * 3600 * 1000,
            result_cache_window_by_kind: HashMap::new(),
            idempotency_window_ms: 24 * 3600 * 1000,
            idempotency_pending_ttl_ms: 60 * 1000,
        }
    }
}

/// What a write answers: the HTTP status and body, whether it is a replay of an earlier answer
/// (`Idempotent-Replayed: true`), and whether it made work available to a waiting long-poll.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
    pub wake: bool,
}

impl Reply {
    pub fn new(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body,
            replayed: false,
            wake: false,
        }
    }
    fn waking(mut self) -> Reply {
        self.wake = true;
        self
    }
    fn replay(mut self) -> Reply {
        self.replayed = true;
        self
    }
}

#[derive(Clone)]
pub struct Mailbox {
    pub db: Db,
    pub cfg: Arc<MailboxConfig>,
    pub metrics: Arc<Metrics>,
    /// Signalled after every commit that may have made a task or a result available.
    pub wakeup: Arc<Notify>,
    /// Held by the retry scan running in this process (see `retry`).
    pub(crate) scan_lock: Arc<tokio::sync::Mutex<()>>,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(crate) enum Begun {
    Tx(Tx),
    Replay(Reply),
}

impl Mailbox {
    pub fn new(db: Db, cfg: MailboxConfig, metrics: Arc<Metrics>) -> Mailbox {
        Mailbox {
            db,
            cfg: Arc::new(cfg),
            metrics,
            wakeup: Arc::new(Notify::new()),
            scan_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Opens the write transaction of one request and, with an `Idempotency-Key`, reserves the
    /// key inside it (or answers the stored response).
    pub(crate) async fn begin_write(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
    ) -> Result<Begun, ApiError> {
        let mut tx = self.db.begin().await?;
        if let Some(idem) = idem {
            match self.reserve_key(&mut tx, caller, idem).await {
                Ok(None) => {}
                Ok(Some(stored)) => {
                    audit(
                        &mut tx,
                        now_ms(),
                        caller.sub.as_str(),
                        "idempotency_key_replayed",
                        serde_json::json!({"key": idem.key, "status": stored.status}),
                    )
                    .await?;
                    tx.commit().await?;
                    self.metrics.inc(&self.metrics.idempotency_replays);
                    return Ok(Begun::Replay(stored));
                }
                Err(e) => {
                    tx.rollback().await?;
                    return Err(e);
                }
            }
        }
        Ok(Begun::Tx(tx))
    }

    /// Ends the write transaction of one request: a success or a refusal is committed (with its
    /// audit rows and its `Idempotency-Key` record); a server-side failure is rolled back.
    pub(crate) async fn finish_write(
        &self,
        mut tx: Tx,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        outcome: Result<Reply, ApiError>,
    ) -> Result<Reply, ApiError> {
        match outcome {
            Ok(reply) => {
                if let Some(idem) = idem {
                    self.complete_key(&mut tx, caller, idem, reply.status, &reply.body)
                        .await?;
                }
                if reply.wake {
                    tx.notify_peers().await?;
                }
                tx.commit().await?;
                if reply.wake {
                    self.wakeup.notify_waiters();
                }
                Ok(reply)
            }
            Err(e) if e.is_client_error() => {
                if let Some(idem) = idem {
                    let body = serde_json::to_value(e.body()).map_err(ApiError::internal)?;
                    self.complete_key(&mut tx, caller, idem, e.code.status().as_u16(), &body)
                        .await?;
                }
                tx.commit().await?;
                Err(e)
            }
            Err(e) => {
                // Dropping the transaction rolls it back even if the connection is gone.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// Runs a write operation with the begin/finish protocol.
    pub(crate) async fn write<'a, F, Fut>(
        &'a self,
        caller: &'a Caller,
        idem: Option<&'a IdemRequest>,
        op: F,
    ) -> Result<Reply, ApiError>
    where
        F: FnOnce(Tx) -> Fut,
        Fut: std::future::Future<Output = (Tx, Result<Reply, ApiError>)>,
    {
        match self.begin_write(caller, idem).await? {
            Begun::Replay(reply) => Ok(reply),
            Begun::Tx(tx) => {
                let (tx, outcome) = op(tx).await;
                self.finish_write(tx, caller, idem, outcome).await
            }
        }
    }

    /// Waits until `probe` finds something or `wait` has passed. Holds no connection while it
    /// waits: it sleeps on the wake-up signal (local commits and, on PostgreSQL, `NOTIFY` from
    /// other instances), re-probing at least once a second as a safety net.
    pub(crate) async fn long_poll<T, F, Fut>(
        &self,
        wait: Duration,
        mut probe: F,
    ) -> Result<Option<T>, ApiError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, ApiError>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.wakeup.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(found) = probe().await? {
                return Ok(Some(found));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let nap = (deadline - now).min(Duration::from_secs(1));
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
    }

    /// Records a capability check in the caller's audit feed and turns a refusal into a 403.
    pub(crate) async fn audited_check(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        scope_id: &str,
        action: &str,
        ctx: &ScopeCtx<'_>,
        now: i64,
    ) -> Result<(), ApiError> {
        let check = caller.check(action, ctx);
        let missing: Vec<&str> = if check == CapCheck::Passed {
            vec![]
        } else {
            vec![action]
        };
        audit(
            tx,
            now,
            caller.sub.as_str(),
            "capability_check",
            serde_json::json!({
                "scope_id": scope_id,
                "required_actions": [action],
                "missing_actions": missing,
                "passed": check == CapCheck::Passed,
            }),
        )
        .await?;
        crate::auth::cap_error(check, action)
    }
}

/// Writes one audit row inside the transaction of the change it records.
pub(crate) async fn audit(
    tx: &mut Tx,
    now: i64,
    issuer: &str,
    kind: &str,
    fields: Value,
) -> Result<(), sqlx::Error> {
    tx.execute(
        "INSERT INTO audit (timestamp_ms, issuer, kind, body) VALUES ($1, $2, $3, $4)",
        args![now, issuer, kind, fields.to_string()],
    )
    .await?;
    Ok(())
}
