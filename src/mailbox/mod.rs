//! The mailbox operations. Every write is ONE transaction that also carries its audit rows and,
//! when the request had an `Idempotency-Key`, the key's record: see [`Mailbox::write`].
//!
//! A write operation checks everything before it changes anything, so a refused request (4xx)
//! can still commit the audit rows it wrote (a failed capability check is audited) without
//! changing the mailbox.

pub mod admin;
mod batch;
mod idempotency;
pub mod repair;
mod results;
pub mod retry;
mod rows;
pub mod tasks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use crate::args;
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::error::MailboxError;
use crate::metrics::Metrics;
use crate::store::{Db, Tx, Unit};

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

/// Whose long-polls a commit may have made work available to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Wake {
    #[default]
    Nobody,
    /// A task was queued for this recipient.
    Recipient(String),
    /// A result is waiting for this sender.
    Sender(String),
    /// Anything (repairs, retry scans, expiries, other instances): every waiter re-checks.
    Everyone,
}

/// What a write answers: the HTTP status and body, whether it is a replay of an earlier answer
/// (`Idempotent-Replayed: true`), and whose waiting long-polls it made work available to.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
    pub wake: Wake,
}

impl Reply {
    pub fn new(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body,
            replayed: false,
            wake: Wake::Nobody,
        }
    }
    fn waking(mut self, wake: Wake) -> Reply {
        self.wake = wake;
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
    pub wakeups: Arc<Wakeups>,
    /// Held by the retry scan running in this process (see `retry`).
    pub(crate) scan_lock: Arc<tokio::sync::Mutex<()>>,
    /// PostgreSQL: asks the notifier task to wake the long-polls of other instances.
    peer_wakeup: Option<tokio::sync::mpsc::Sender<()>>,
    /// This process's name in the wake-up `NOTIFY` payload, so it ignores its own.
    pub instance: String,
    /// PostgreSQL: group commit of the fast paths (see `batch`).
    pub(crate) batches: Option<Arc<batch::PgBatches>>,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A write operation: runs inside the transaction it is given and answers its outcome.
pub(crate) type Op<R> =
    Box<dyn for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, MailboxError>> + Send>;

/// Adapts a write operation to the store's [`Unit`]: keeps the outcome until the transaction
/// that carried it has committed, then answers.
struct OpUnit<R> {
    op: Option<Op<(R, bool)>>,
    outcome: Option<Result<R, MailboxError>>,
    answer: Option<oneshot::Sender<Result<R, MailboxError>>>,
}

impl<R: Send + 'static> Unit for OpUnit<R> {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let Some(op) = self.op.take() else {
                return false;
            };
            match op(tx).await {
                Ok((value, keep)) => {
                    self.outcome = Some(Ok(value));
                    keep
                }
                Err(e) => {
                    self.outcome = Some(Err(e));
                    false
                }
            }
        })
    }

    fn done(mut self: Box<Self>, committed: Result<(), String>) {
        let answer = match (committed, self.outcome.take()) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(MailboxError::internal("a write unit never ran")),
            (Err(cause), outcome) => {
                if let Some(Err(e)) = outcome {
                    Err(e)
                } else {
                    tracing::warn!(error = %cause, "write transaction failed");
                    Err(MailboxError::storage_unavailable(
                        "the database could not commit the change; retry later",
                    ))
                }
            }
        };
        if let Some(tx) = self.answer.take() {
            let _ = tx.send(answer);
        }
    }
}

impl Mailbox {
    /// Must be called inside the Tokio runtime (on PostgreSQL it starts the notifier task).
    pub fn new(db: Db, cfg: MailboxConfig, metrics: Arc<Metrics>) -> Mailbox {
        let instance = uuid::Uuid::new_v4().to_string();
        let peer_wakeup = db.pg_pool().map(|pool| {
            // Capacity one: while a NOTIFY is waiting to be sent, further wake-ups fold into it.
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tokio::spawn(notify_peers(pool.clone(), rx, instance.clone()));
            tx
        });
        let batches = db
            .pg_pool()
            .map(|pool| Arc::new(batch::PgBatches::new(pool.clone(), metrics.clone())));
        Mailbox {
            batches,
            peer_wakeup,
            instance,
            db,
            cfg: Arc::new(cfg),
            metrics,
            wakeups: Arc::new(Wakeups::new()),
            scan_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// PostgreSQL: runs the group-commit lane on the HTTP worker that starts it (see
    /// [`batch::Combiner::run_on_the_http_worker`]). For a server with one HTTP worker.
    pub fn run_the_lane_on_the_http_worker(&self) {
        if let Some(batches) = &self.batches {
            batches.run_on_the_http_worker();
        }
    }

    /// Runs a write operation as one unit of work: `Ok((value, keep))` commits when `keep`,
    /// `Err` undoes everything the operation wrote.
    pub(crate) async fn transact<R: Send + 'static>(
        &self,
        op: Op<(R, bool)>,
    ) -> Result<R, MailboxError> {
        let (answer, answered) = oneshot::channel();
        self.db
            .run(Box::new(OpUnit {
                op: Some(op),
                outcome: None,
                answer: Some(answer),
            }))
            .await;
        answered.await.unwrap_or_else(|_| {
            Err(MailboxError::internal(
                "a write unit was dropped unanswered",
            ))
        })
    }

    /// SQLite: a write of one text (several statements sharing the numbered parameters) as
    /// one unit of the group-commit writer. Answers the rows of its row-returning statement.
    /// (PostgreSQL runs the same fast paths as batch functions: see `batch`.)
    pub(crate) async fn write_sqlite<T: crate::store::Row + 'static>(
        &self,
        sql: &'static str,
        args: &[crate::store::Val],
    ) -> Result<Vec<T>, MailboxError> {
        let args = args.to_vec();
        self.transact(Box::new(move |tx| {
            Box::pin(async move {
                let rows: Vec<T> = tx.fetch_all(sql, &args).await?;
                Ok((rows, true))
            })
        }))
        .await
    }

    /// Runs a request's write: with an `Idempotency-Key` the key is reserved (or its stored
    /// response answered) in the same transaction as the effect, and the response is stored
    /// with it. A success or a refusal commits (a refusal changed nothing but may have written
    /// audit rows, and its key record stores the refusal); a server-side failure is rolled back.
    pub(crate) async fn write(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        op: Op<Reply>,
    ) -> Result<Reply, MailboxError> {
        let this = self.clone();
        let caller = caller.clone();
        let idem = idem.cloned();
        let outcome = self
            .transact(Box::new(move |tx| {
                Box::pin(async move { this.write_in(tx, &caller, idem.as_ref(), op).await })
            }))
            .await?;
        match outcome {
            Ok(reply) => {
                self.woke(&reply.wake);
                Ok(reply)
            }
            Err(refusal) => Err(refusal),
        }
    }

    async fn write_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        op: Op<Reply>,
    ) -> Result<(Result<Reply, MailboxError>, bool), MailboxError> {
        if let Some(idem) = idem {
            if let Some(stored) = self.reserve_key(tx, caller, idem).await? {
                audit(
                    tx,
                    now_ms(),
                    caller.sub.as_str(),
                    "idempotency_key_replayed",
                    serde_json::json!({"key": idem.key, "status": stored.status}),
                )
                .await?;
                self.metrics.inc(&self.metrics.idempotency_replays);
                return Ok((Ok(stored), true));
            }
        }
        match op(tx).await {
            Ok(reply) => {
                if let Some(idem) = idem {
                    self.complete_key(tx, caller, idem, reply.status, &reply.body)
                        .await?;
                }
                Ok((Ok(reply), true))
            }
            Err(e) if e.is_refusal() => {
                if let Some(idem) = idem {
                    let body = serde_json::to_value(crate::http::error::ErrorBody::of(&e))
                        .map_err(MailboxError::internal)?;
                    self.complete_key(
                        tx,
                        caller,
                        idem,
                        crate::http::error::status(e.code).as_u16(),
                        &body,
                    )
                    .await?;
                }
                Ok((Err(e), true))
            }
            Err(e) => Err(e),
        }
    }

    /// A commit made a task or a result available: wake the long-polls of this instance that
    /// wait for it now, and (PostgreSQL) the other instances' through one coalesced `NOTIFY`.
    pub(crate) fn woke(&self, wake: &Wake) {
        match wake {
            Wake::Nobody => return,
            Wake::Recipient(who) => self.wakeups.key(WaitFor::Task, who).notify_waiters(),
            Wake::Sender(who) => self.wakeups.key(WaitFor::Result, who).notify_waiters(),
            Wake::Everyone => self.wakeups.all.notify_waiters(),
        }
        if let Some(peers) = &self.peer_wakeup {
            let _ = peers.try_send(());
        }
    }

    /// Waits until `probe` finds something or `wait` has passed. Holds no connection while it
    /// waits: it sleeps on the wake-up signal (local commits and, on PostgreSQL, `NOTIFY` from
    /// other instances), re-probing at least once a second as a safety net. On PostgreSQL a
    /// probe that found nothing leaves its claim or drain parked in the batch lane, which
    /// answers it from the batch that queued its task or stored its result (see `batch`); any
    /// other wake-up unparks it first, and a parked claim or drain that was riding in a batch
    /// at that moment is waited for, so what it took is never dropped.
    pub(crate) async fn long_poll<T, F, Fut>(
        &self,
        wait: Duration,
        (kind, who): (WaitFor, &str),
        mut probe: F,
    ) -> Result<Option<T>, MailboxError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Polled<T>, MailboxError>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        let mine = self.wakeups.key(kind, who);
        loop {
            let anything = self.wakeups.all.notified();
            let for_me = mine.notified();
            tokio::pin!(anything, for_me);
            anything.as_mut().enable();
            for_me.as_mut().enable();
            let mut parked = match probe().await? {
                Polled::Found(found) => return Ok(Some(found)),
                Polled::Empty => None,
                Polled::Parked(p) => Some(p),
            };
            let now = tokio::time::Instant::now();
            if now < deadline {
                let nap = (deadline - now).min(Duration::from_secs(1));
                let handed = async {
                    match parked.as_mut() {
                        Some(p) => p.ticket.answered().await,
                        None => std::future::pending().await,
                    }
                };
                let handed = tokio::select! {
                    biased;
                    outcome = handed => Some(outcome),
                    _ = &mut anything => None,
                    _ = &mut for_me => None,
                    _ = tokio::time::sleep(nap) => None,
                };
                if let Some(outcome) = handed {
                    // A ride that found something: the ticket is spent.
                    if let Some(p) = parked.take() {
                        if let Some(found) = (p.settle)(self, outcome?)? {
                            return Ok(Some(found));
                        }
                    }
                }
            }
            if let Some(found) = Parked::leave(parked, self).await? {
                return Ok(Some(found));
            }
            if now >= deadline {
                return Ok(None);
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
    ) -> Result<(), MailboxError> {
        let check = caller.check(action, ctx);
        audit(
            tx,
            now,
            caller.sub.as_str(),
            CAPABILITY_CHECK,
            capability_audit(scope_id, action, check == CapCheck::Passed),
        )
        .await?;
        crate::auth::cap_error(check, action)
    }
}

/// The audit slug of a capability check: by far the most common row (one per send and per
/// result), which is why `audit_by_kind` leaves it out (migrations 0007 / 0002).
pub(crate) const CAPABILITY_CHECK: &str = "capability_check";

/// The body of a `capability_check` audit row.
pub(crate) fn capability_audit(scope_id: &str, action: &str, passed: bool) -> Value {
    let missing: &[&str] = if passed { &[] } else { &[action] };
    serde_json::json!({
        "scope_id": scope_id,
        "required_actions": [action],
        "missing_actions": missing,
        "passed": passed,
    })
}

/// What one probe of a long-poll found.
pub(crate) enum Polled<T> {
    Found(T),
    Empty,
    /// Nothing, and its claim or drain waits parked in the batch lane (PostgreSQL).
    Parked(Parked<T>),
}

/// A parked claim or drain, and how its outcome becomes what the long-poll answers.
pub(crate) struct Parked<T> {
    pub ticket: batch::Parked,
    pub settle: fn(&Mailbox, batch::Outcome) -> Result<Option<T>, MailboxError>,
}

impl<T> Parked<T> {
    /// Stops waiting (if parked at all): what its claim or drain took meanwhile, if anything.
    /// One riding in the running batch is waited for, so a lease or drain it committed is kept.
    pub(crate) async fn leave(
        parked: Option<Self>,
        mailbox: &Mailbox,
    ) -> Result<Option<T>, MailboxError> {
        let Some(p) = parked else {
            return Ok(None);
        };
        match p.ticket.leave().await {
            Some(outcome) => (p.settle)(mailbox, outcome?),
            None => Ok(None),
        }
    }
}

/// What a long-poll waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WaitFor {
    /// A task queued for the recipient named with it.
    Task,
    /// A result for the sender named with it.
    Result,
}

/// The wake-up signals of this instance's long-polls: one for everyone, and a fixed set of
/// shards that a recipient's or sender's waiters share by hash, so a commit wakes the waiters
/// it concerns (and the rare waiter that shares their shard) rather than all of them.
pub struct Wakeups {
    pub all: Notify,
    shards: Box<[Notify]>,
}

const WAKE_SHARDS: usize = 256;

impl Wakeups {
    fn new() -> Wakeups {
        Wakeups {
            all: Notify::new(),
            shards: (0..WAKE_SHARDS).map(|_| Notify::new()).collect(),
        }
    }

    fn key(&self, kind: WaitFor, who: &str) -> &Notify {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (kind, who).hash(&mut h);
        &self.shards[(h.finish() as usize) % WAKE_SHARDS]
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

/// At most one cross-instance `NOTIFY` per this interval per instance.
pub const PEER_NOTIFY_INTERVAL: Duration = Duration::from_millis(5);

/// Sends the cross-instance wake-up `NOTIFY` after the commits that asked for it, outside their
/// transactions: a commit that carries a NOTIFY holds PostgreSQL's notification queue lock
/// until its WAL is flushed, which serialises concurrent writers (measured: 13.4k plain commits
/// per second against 4.0k with a NOTIFY inside). A NOTIFY is itself a write transaction, so
/// this instance sends at most one per [`PEER_NOTIFY_INTERVAL`]: wake-ups that arrive while one
/// is pending or during the interval are folded into the next one. The payload names this
/// instance, whose own listener ignores it (its waiters were woken directly).
async fn notify_peers(
    pool: sqlx::PgPool,
    mut asks: tokio::sync::mpsc::Receiver<()>,
    instance: String,
) {
    while asks.recv().await.is_some() {
        if let Err(e) = sqlx::query("SELECT pg_notify('a2a_mailbox', $1)")
            .bind(instance.as_str())
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "cannot NOTIFY other instances; their long-polls re-check within a second");
        }
        tokio::time::sleep(PEER_NOTIFY_INTERVAL).await;
    }
}
