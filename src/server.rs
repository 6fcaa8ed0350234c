//! Wires the pools, the mailbox and the HTTP server together.

use std::sync::Arc;
use std::time::Duration;

use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use tracing_actix_web::TracingLogger;

use crate::auth::Verifier;
use crate::http::{self, AppState};
use crate::mailbox::{Mailbox, MailboxConfig};
use crate::metrics::Metrics;
use crate::store::{Db, PoolSettings};

pub struct ServerSettings {
    pub database_url: String,
    pub bind: String,
    pub pool: PoolSettings,
    pub verifier: Verifier,
    pub mailbox: MailboxConfig,
    pub max_body_bytes: usize,
}

/// Opens the database, runs its migrations and serves until interrupted. Prints
/// `a2a-mailbox listening on http://ADDR` on stdout once the socket is bound.
pub async fn serve(s: ServerSettings) -> anyhow::Result<()> {
    let db = Db::connect(&s.database_url, &s.pool).await?;
    db.migrate().await?;
    let mailbox = Mailbox::new(db.clone(), s.mailbox, Arc::new(Metrics::default()));
    if let Some(pool) = db.pg_pool() {
        tokio::spawn(listen_for_peers(pool.clone(), mailbox.clone()));
    }
    let max_body = s.max_body_bytes;
    let state = web::Data::new(Arc::new(AppState {
        mailbox,
        verifier: s.verifier,
        max_body_bytes: max_body,
    }));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(http::json_config(max_body))
            .app_data(web::PayloadConfig::new(max_body))
            .app_data(http::extract_query_config())
            .app_data(http::extract_path_config())
            .wrap(from_fn(http::observe_latency))
            .wrap(TracingLogger::default())
            .configure(http::configure)
            .default_service(web::to(http::not_found_route))
    })
    .shutdown_timeout(5)
    .bind(&s.bind)?;
    for addr in server.addrs() {
        println!("a2a-mailbox listening on http://{addr}");
    }
    server.run().await?;
    db.close().await;
    Ok(())
}

/// PostgreSQL: wakes this instance's long-polls when another instance commits a task or result.
async fn listen_for_peers(pool: sqlx::PgPool, mailbox: Mailbox) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen("a2a_mailbox").await {
                    tracing::warn!(error = %e, "LISTEN a2a_mailbox failed");
                } else {
                    while listener.recv().await.is_ok() {
                        mailbox.wakeup.notify_waiters();
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot open the NOTIFY listener connection"),
        }
        // Anything may have happened while the listener was down: let waiters re-check.
        mailbox.wakeup.notify_waiters();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
