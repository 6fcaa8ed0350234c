//! The mailbox's rules, each written once, in plain Rust over the store's named operations.
//! Every write is ONE transaction that also carries its audit rows and, when the request had an
//! `Idempotency-Key`, the key's record ([`Mailbox::write`]). A write checks everything before it
//! changes anything, so a refusal can still commit the audit rows it wrote (a failed capability
//! check is audited) without changing the mailbox. Operations answer typed outcomes ([`Done`])
//! or a [`MailboxError`]; what they look like on the wire is `src/http/`'s business.

pub mod admin;
pub(crate) mod audit;
pub mod auth_failures;
pub mod batch;
pub mod batch_items;
pub mod cancel;
mod deliver;
pub mod follow;
mod idempotency;
pub mod in_flight;
mod lease;
pub mod listing;
mod longpoll;
pub mod overview;
pub mod repair;
mod results;
pub mod retry;
mod secrets;
pub mod send;
pub mod takes;
pub mod tasks;
mod traced;
mod visibility;
mod wake;
mod wakeups;
mod writer;

use std::collections::HashMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::domain::answers::EngineName;
use crate::error::MailboxError;
use crate::metrics::Metrics;
use crate::store::{Store, Tx};

pub use crate::clock::now_ms;
pub use wake::Wake;
pub use wakeups::{WaitingLimits, Wakeups};
pub use writer::{Author, IdemRequest};

pub(crate) use visibility::{check_lease, not_found, visible_to};
pub(crate) use wakeups::WaitFor;

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
    /// How long audit rows are kept; compaction drops older ones (default 30 days).
    pub audit_retention_ms: i64,
    /// Scheduler ticks closer than this to the previous tick's start are coalesced (docs/contract.md#retry-gate).
    pub scheduler_min_spacing_ms: i64,
    /// Refused tokens per client address and minute answered at once (0: no limit); see
    /// `auth_failures`.
    pub auth_failures_per_minute: u64,
    /// Requests parked at once, per caller and in all (docs/contract.md#waiting).
    pub waiting: WaitingLimits,
    /// How deep a free-form value a caller supplies may nest (docs/contract.md#free-form-json).
    pub max_json_depth: usize,
}

impl Default for MailboxConfig {
    fn default() -> Self {
        MailboxConfig {
            result_cache_window_ms: 24 * 3600 * 1000,
            result_cache_window_by_kind: HashMap::new(),
            idempotency_window_ms: 24 * 3600 * 1000,
            idempotency_pending_ttl_ms: 60 * 1000,
            audit_retention_ms: 30 * 24 * 3600 * 1000,
            scheduler_min_spacing_ms: 1000,
            auth_failures_per_minute: 600,
            waiting: WaitingLimits::default(),
            max_json_depth: crate::domain::free_form::DEFAULT_MAX_JSON_DEPTH,
        }
    }
}

/// What a write answers: its outcome, whether it created something (a task, a result) or
/// answered an existing state, and whether it is a replay of an earlier answer (of the same
/// task id, the same result, or the same `Idempotency-Key`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Done<T> {
    pub value: T,
    pub created: bool,
    #[serde(skip)]
    pub replayed: bool,
    #[serde(skip)]
    wake: Wake,
}

impl<T> Done<T> {
    /// A first answer that created something.
    pub(crate) fn created(value: T) -> Done<T> {
        Done {
            value,
            created: true,
            replayed: false,
            wake: Wake::Nobody,
        }
    }
    /// A first answer that changed an existing state (or read it).
    pub(crate) fn changed(value: T) -> Done<T> {
        Done {
            created: false,
            ..Done::created(value)
        }
    }
    /// The answer of an earlier identical request.
    pub(crate) fn replay(value: T) -> Done<T> {
        Done {
            replayed: true,
            ..Done::changed(value)
        }
    }
    pub(crate) fn waking(mut self, wake: Wake) -> Done<T> {
        self.wake = wake;
        self
    }
}

/// What a write's rule runs in: the write's transaction, its caller, and the instant the rule
/// started (every row the rule writes carries it).
pub(crate) struct Cx<'t> {
    pub tx: &'t mut Tx,
    pub caller: &'t Caller,
    pub now: i64,
}

/// A write's rule: runs inside the transaction its [`Cx`] holds, with the mailbox.
pub(crate) type Rule<T> = Box<
    dyn for<'t> FnOnce(
            Cx<'t>,
            Mailbox,
        )
            -> futures_util::future::BoxFuture<'t, Result<Done<T>, MailboxError>>
        + Send,
>;

/// `rule!(|mailbox, cx| mailbox.op_in(cx, ..))` builds a [`Rule`]; whatever else the body names
/// is moved into it.
macro_rules! rule {
    (|$this:ident, $cx:ident| $body:expr) => {
        Box::new(move |$cx, $this| Box::pin(async move { $body.await }))
    };
}
pub(crate) use rule;

#[derive(Clone)]
pub struct Mailbox {
    store: Store,
    pub cfg: Arc<MailboxConfig>,
    pub metrics: Arc<Metrics>,
    /// Signalled after every commit that may have made a task or a result available.
    pub wakeups: Arc<Wakeups>,
    /// Held by the retry scan running in this process (see `retry`).
    pub(crate) scan_lock: Arc<tokio::sync::Mutex<()>>,
    /// Refused tokens counted in memory until written (see `auth_failures`).
    pub auth_failures: Arc<auth_failures::counts::AuthFailures>,
}

impl Mailbox {
    /// Must be called inside the Tokio runtime that serves it.
    pub fn new(store: Store, cfg: MailboxConfig, metrics: Arc<Metrics>) -> Mailbox {
        let wakeups = Arc::new(Wakeups::new(
            cfg.waiting,
            metrics.clone(),
            Box::new(store.clone()),
        ));
        let peers = wakeups.clone();
        store.on_peer_commit(move |note: &str| peers.heard_from_peer(note));
        Mailbox {
            store,
            cfg: Arc::new(cfg),
            metrics,
            wakeups,
            scan_lock: Arc::new(tokio::sync::Mutex::new(())),
            auth_failures: Arc::default(),
        }
    }

    /// The engine behind this mailbox, as `/version` names it.
    pub fn engine(&self) -> EngineName {
        self.store.engine().answers_as()
    }

    /// Readiness (`/readyz`): the database answers and a write commits, checked at most once a
    /// second whoever asks.
    pub async fn readiness(&self) -> Result<(), MailboxError> {
        self.store.readiness().await
    }

    /// Runs a request's write: with an `Idempotency-Key` the key is reserved (or its stored
    /// outcome answered) in the same transaction as the effect, and the outcome is stored with
    /// it. A success or a refusal commits (a refusal changed nothing but may have written audit
    /// rows, and its key record keeps the refusal); a server-side failure is rolled back.
    pub(crate) async fn write<T>(
        &self,
        by: Author<'_>,
        rule: Rule<T>,
    ) -> Result<Done<T>, MailboxError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        let this = self.clone();
        let caller = by.caller.clone();
        let idem = by.idem.cloned();
        let outcome = self
            .store
            .transact(Box::new(move |tx| {
                Box::pin(async move {
                    let outcome = this.write_in(tx, &caller, idem.as_ref(), rule).await?;
                    Ok(outcome)
                })
            }))
            .await?;
        if let Ok(done) = &outcome {
            self.woke(&done.wake);
        }
        outcome
    }

    /// A write with a fast path: without an `Idempotency-Key`, `fast` answers the common case
    /// on its own (`Some`); anything else, and every keyed request, goes through the rule that
    /// `rule` builds, by [`Mailbox::write`].
    pub(crate) async fn write_fast_first<T>(
        &self,
        by: Author<'_>,
        fast: impl std::future::Future<Output = Result<Option<Done<T>>, MailboxError>>,
        rule: impl FnOnce() -> Rule<T>,
    ) -> Result<Done<T>, MailboxError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        if by.idem.is_none() {
            if let Some(done) = fast.await? {
                self.woke(&done.wake);
                return Ok(done);
            }
        }
        self.write(by, rule()).await
    }

    async fn write_in<T>(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        rule: Rule<T>,
    ) -> Result<Result<Done<T>, MailboxError>, MailboxError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        if let Some(idem) = idem {
            if let Some(stored) = self.reserve_key(tx, caller, idem).await? {
                return Ok(stored);
            }
        }
        let cx = Cx {
            tx: &mut *tx,
            caller,
            now: now_ms(),
        };
        let outcome = match rule(cx, self.clone()).await {
            Err(e) if !e.is_refusal() => return Err(e),
            outcome => outcome,
        };
        if let Some(idem) = idem {
            let stored = serde_json::to_string(&outcome).map_err(MailboxError::internal)?;
            self.complete_key(tx, caller, idem, &stored).await?;
        }
        Ok(outcome)
    }

    /// A commit made a task or a result available: wake the requests of this instance that
    /// wait for it, and tell the other instances whom it concerns.
    pub(crate) fn woke(&self, wake: &Wake) {
        self.wakeups.woke(wake);
    }
}
