//! PostgreSQL: a pool for transactions and reads, the group-commit lane for the four fast paths
//! (`lane.rs`, `steps.rs`, `step_many.sql`), and the `NOTIFY` that wakes other instances'
//! long-polls. Its [`Backend`] (`backend.rs`) runs every statement of its own (`statements.rs`)
//! and the shared ones on them, bound and decoded as its
//! [`Dialect`](crate::store::dialect::Dialect) says (`dialect.rs`); `metrics.rs` reports its
//! lane.

mod backend;
mod dialect;
mod lane;
mod metrics;
mod peers;
mod statements;
mod steps;

use std::str::FromStr;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use steps::PgBatches;

use crate::metrics::Metrics;
use crate::store::backend::{Backend, Engine, PoolSettings, LOCK_WAIT};

/// PostgreSQL: `postgres:` and `postgresql:` URLs, shared by any number of instances, with a
/// group-commit lane.
pub(crate) const ENGINE: Engine = Engine {
    name: "postgres",
    answers_as: crate::domain::answers::EngineName::Postgres,
    schemes: &["postgres:", "postgresql:"],
    wants_own_thread: true,
    open,
    unavailable,
    local_file: |_| None,
};

/// Serialization failure, deadlock, lock not available; the classes connection exception (08),
/// insufficient resources (53: disk full, out of memory, too many connections), operator
/// intervention (57: shutdown) and system error (58: I/O).
fn unavailable(db: &dyn sqlx::error::DatabaseError) -> bool {
    db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
        && db.code().is_some_and(|code| {
            matches!(code.as_ref(), "40001" | "40P01" | "55P03")
                || ["08", "53", "57", "58"].iter().any(|c| code.starts_with(c))
        })
}

fn open<'a>(
    url: &'a str,
    settings: &'a PoolSettings,
    metrics: Arc<Metrics>,
) -> BoxFuture<'a, anyhow::Result<Arc<dyn Backend>>> {
    Box::pin(async move {
        let postgres: Arc<dyn Backend> = Arc::new(Postgres::connect(url, settings, metrics).await?);
        Ok(postgres)
    })
}

pub(crate) struct Postgres {
    pool: PgPool,
    lane: PgBatches,
    /// The notes for the other instances, sent by the notifier task.
    peers: Arc<peers::Outbox>,
    /// This process's name in the wake-up payload, so it ignores its own.
    instance: String,
}

impl Postgres {
    async fn connect(
        url: &str,
        settings: &PoolSettings,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Postgres> {
        // A row or table lock held past this answers 503 (SQLSTATE 55P03) instead of holding the
        // request forever: the same bound SQLite's busy_timeout gives.
        let opts = PgConnectOptions::from_str(url)?
            .options([("lock_timeout", format!("{}ms", LOCK_WAIT.as_millis()))]);
        // No ping on every checkout: it costs a round trip per transaction (BENCHMARKS.md,
        // "Design choices"); a connection that died answers its next statement with an error
        // (503, retriable) and the pool replaces it.
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .connect_with(opts)
            .await?;
        let instance = uuid::Uuid::new_v4().to_string();
        let peers = Arc::new(peers::Outbox::default());
        tokio::spawn(peers::notify(pool.clone(), peers.clone(), instance.clone()));
        Ok(Postgres {
            lane: PgBatches::new(pool.clone(), metrics),
            pool,
            peers,
            instance,
        })
    }
}
