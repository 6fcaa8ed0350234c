//! PostgreSQL: a pool for transactions and reads, the group-commit lane for the four fast paths
//! (`lane.rs`, `steps.rs`, `step_many.sql`), and the `NOTIFY` that wakes other instances'
//! long-polls.

mod lane;
mod peers;
mod statements;
mod steps;

use std::str::FromStr;
use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

pub use lane::Ticket;
pub(crate) use statements::STATEMENTS;
pub use steps::{ClaimArgs, Outcome, PgBatches, ResultArgs, SendArgs, Step};

use super::runner::Tx;
use super::unit::Unit;
use super::{PoolSettings, LOCK_WAIT};
use crate::metrics::Metrics;

pub(crate) struct Postgres {
    pub(crate) pool: PgPool,
    pub(crate) lane: PgBatches,
    /// Asks the notifier task to wake the long-polls of other instances.
    peers: tokio::sync::mpsc::Sender<()>,
    /// This process's name in the wake-up payload, so it ignores its own.
    instance: String,
}

impl Postgres {
    pub(crate) async fn connect(
        url: &str,
        settings: &PoolSettings,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Postgres> {
        // A row or table lock held past this answers 503 (SQLSTATE 55P03) instead of holding the
        // request forever: the same bound SQLite's busy_timeout gives.
        let opts = PgConnectOptions::from_str(url)?
            .options([("lock_timeout", format!("{}ms", LOCK_WAIT.as_millis()))]);
        // No ping on every checkout: it costs a round trip per transaction (measured: 13.4k →
        // 10.9k commits/s); a connection that died answers its next statement with an error
        // (503, retriable) and the pool replaces it.
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .connect_with(opts)
            .await?;
        let instance = uuid::Uuid::new_v4().to_string();
        // Capacity one: while a NOTIFY is waiting to be sent, further wake-ups fold into it.
        let (peers, asks) = tokio::sync::mpsc::channel(1);
        tokio::spawn(peers::notify(pool.clone(), asks, instance.clone()));
        Ok(Postgres {
            lane: PgBatches::new(pool.clone(), metrics),
            pool,
            peers,
            instance,
        })
    }

    /// The migrations, then the group-commit function, installed under a lock so that instances
    /// starting together take turns.
    pub(crate) async fn migrate(&self) -> anyhow::Result<()> {
        sqlx::migrate!("migrations/postgres")
            .run(&self.pool)
            .await?;
        let mut tx = self.pool.begin().await?;
        sqlx::query(statements::INSTALL_LOCK)
            .execute(&mut *tx)
            .await?;
        sqlx::raw_sql(&steps::step_many_source())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) async fn run(&self, mut unit: Box<dyn Unit>) {
        let mut tx = match self.pool.begin().await {
            Ok(tx) => Tx::Postgres(tx),
            Err(e) => return unit.done(Err(e.to_string())),
        };
        let keep = unit.run(&mut tx).await;
        let committed = if keep {
            tx.commit().await.map_err(|e| e.to_string())
        } else {
            let _ = tx.rollback().await;
            Ok(())
        };
        unit.done(committed);
    }

    /// Asks for one coalesced `NOTIFY` to the other instances.
    pub(crate) fn notify_peers(&self) {
        let _ = self.peers.try_send(());
    }

    /// Calls `woken` whenever another instance's commit may have made work available (and after
    /// the listener reconnects, since anything may have happened meanwhile).
    pub(crate) fn on_peer_commit(&self, woken: impl Fn() + Send + 'static) {
        tokio::spawn(peers::listen(
            self.pool.clone(),
            self.instance.clone(),
            woken,
        ));
    }
}
