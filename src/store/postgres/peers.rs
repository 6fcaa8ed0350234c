//! Waking the long-polls of the other instances that share the database.

use std::time::Duration;

use sqlx::PgPool;

use super::statements::{NOTIFY_PEERS, PEER_CHANNEL};

/// At most one cross-instance `NOTIFY` per this interval per instance.
pub const PEER_NOTIFY_INTERVAL: Duration = Duration::from_millis(5);

/// Sends the cross-instance wake-up `NOTIFY` after the commits that asked for it, outside their
/// transactions: a commit that carries a NOTIFY holds PostgreSQL's notification queue lock
/// until its WAL is flushed, which serialises concurrent writers (BENCHMARKS.md, "Design
/// choices"). A NOTIFY is itself a write transaction, so
/// this instance sends at most one per [`PEER_NOTIFY_INTERVAL`]: wake-ups that arrive while one
/// is pending or during the interval are folded into the next one. The payload names this
/// instance, whose own listener ignores it (its waiters were woken directly).
pub(super) async fn notify(
    pool: PgPool,
    mut asks: tokio::sync::mpsc::Receiver<()>,
    instance: String,
) {
    while asks.recv().await.is_some() {
        if let Err(e) = sqlx::query(NOTIFY_PEERS)
            .bind(instance.as_str())
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "cannot NOTIFY other instances; their long-polls re-check within a second");
        }
        tokio::time::sleep(PEER_NOTIFY_INTERVAL).await;
    }
}

/// Listens for the other instances' wake-ups, reconnecting after a second when the connection
/// drops.
pub(super) async fn listen(pool: PgPool, instance: String, woken: impl Fn() + Send + 'static) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(PEER_CHANNEL).await {
                    tracing::warn!(error = %e, "LISTEN a2a_mailbox failed");
                } else {
                    while let Ok(note) = listener.recv().await {
                        if note.payload() != instance {
                            woken();
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot open the NOTIFY listener connection"),
        }
        // Anything may have happened while the listener was down: let waiters re-check.
        woken();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
