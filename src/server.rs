//! Wires the pools, the mailbox and the HTTP server together.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;

use crate::auth::Verifier;
use crate::auth::{Caller, CapEntry};
use crate::domain::AgentId;
use crate::http::{self, AppState};
use crate::mailbox::retry::{RetryPolicy, ScanKind};
use crate::mailbox::Author;
use crate::mailbox::{Mailbox, MailboxConfig};
use crate::metrics::Metrics;
use crate::store::{Engine, PoolSettings, Store};
use crate::transport::{Bind, Removal};

pub struct ServerSettings {
    pub database_url: String,
    /// Where to listen (`A2A_MAILBOX_BIND`), and the mode of any Unix socket file.
    pub binds: Vec<Bind>,
    pub unix_mode: u32,
    pub pool: PoolSettings,
    pub verifier: Verifier,
    /// The MCP endpoint as an OAuth resource server (`A2A_MAILBOX_MCP_RESOURCE`).
    pub mcp_resource: Option<crate::config::identity::McpResource>,
    pub mailbox: MailboxConfig,
    pub max_body_bytes: usize,
    /// The largest body a batch route takes.
    pub batch_body_bytes: usize,
    pub scheduler: Scheduler,
    /// HTTP worker threads, when the operator chose; see [`http_workers`].
    pub http_workers: Option<usize>,
    /// The A2A facade's settings.
    pub a2a: http::a2a::Settings,
    /// The test-only fault injection `A2A_MAILBOX_TEST_PANIC_PATH` (`http::serve::panics`).
    pub panic_path: Option<String>,
}

/// The scheduler tick's retry policy (`POST /a2a/scheduler/tick`), and the in-process timer
/// that may run it.
pub struct Scheduler {
    pub policy: RetryPolicy,
    /// Run the tick in-process every this many milliseconds.
    pub interval_ms: Option<u64>,
}

/// Worker threads of the main runtime, which carries the group-commit lane (HTTP requests run
/// on the workers of [`http_workers`]). On PostgreSQL the lane is one task that runs one batch at
/// a time, and one thread serves it with fewer cross-thread wake-ups than one per core. With one
/// HTTP worker the lane runs on that worker instead (`Store::start_on_http_worker`),
/// and this thread is left the notifier, the peer listener and the scheduler timer. SQLite keeps
/// Tokio's default (`None`: one per core), as does an operator's own `TOKIO_WORKER_THREADS`
/// (`chosen_by_operator`). The measurements behind both choices are in BENCHMARKS.md ("Threads").
pub fn main_runtime_threads(database_url: &str, chosen_by_operator: bool) -> Option<usize> {
    let lane = Engine::from_url(database_url).is_ok_and(Engine::wants_own_thread);
    (lane && !chosen_by_operator).then_some(1)
}

/// HTTP worker threads: the operator's choice, else one per core, and on PostgreSQL one fewer
/// (at least one). There the group-commit lane keeps a thread of its own busy (the main runtime,
/// one thread on PostgreSQL), so one worker per core would oversubscribe the cores. SQLite keeps
/// one per core. Measured in BENCHMARKS.md ("Threads").
pub fn http_workers(chosen: Option<usize>, lane: bool, cores: usize) -> usize {
    match chosen {
        Some(n) => n.max(1),
        None if lane => cores.saturating_sub(1).max(1),
        None => cores.max(1),
    }
}

/// Opens the database, runs its migrations and serves until interrupted. Prints
/// `a2a-mailbox listening on http://ADDR` on stdout once the socket is bound.
pub async fn serve(s: ServerSettings) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::default());
    let store = Store::connect(&s.database_url, &s.pool, metrics.clone()).await?;
    store.migrate().await?;
    let mailbox = Mailbox::new(store.clone(), s.mailbox, metrics);
    let a2a_namespace = mailbox.secret_namespace(A2A_TASK_IDS).await?;
    let mcp_sessions = mailbox.secret_namespace(MCP_SESSIONS).await?;
    let dashboard_outcomes = mailbox.secret_namespace(DASHBOARD_OUTCOMES).await?;
    tokio::spawn(crate::mailbox::auth_failures::flush(mailbox.clone()));
    tokio::spawn(sample_throughput(mailbox.metrics.clone()));
    tokio::spawn(sample_depth(mailbox.clone()));
    tokio::spawn(crate::trim::after_bursts(mailbox.metrics.clone()));
    if let Some(every) = s.scheduler.interval_ms.filter(|ms| *ms > 0) {
        tokio::spawn(scheduler_timer(
            mailbox.clone(),
            s.scheduler.policy.clone(),
            Duration::from_millis(every),
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = http_workers(s.http_workers, store.engine().wants_own_thread(), cores);
    if workers == 1 {
        // Every request runs on the one worker: the lane runs there too.
        store.start_on_http_worker();
    }
    if let Some(jwks) = &s.verifier.keys().jwks {
        // Not fatal: an identity provider that is down at start-up is asked again at the first
        // token it signed, and at every refresh.
        jwks.fetch().await;
        jwks.spawn_refresher();
    }
    let mcp_resource = s.mcp_resource.map(|resource| http::McpResource {
        verifier: s.verifier.for_audience(&resource.resource),
        settings: resource,
    });
    let max_body = s.max_body_bytes;
    let state = web::Data::new(Arc::new(AppState {
        mailbox,
        verifier: s.verifier,
        mcp_resource,
        max_body_bytes: max_body,
        batch_body_bytes: s.batch_body_bytes,
        scheduler_policy: s.scheduler.policy,
        a2a: s.a2a,
        a2a_namespace,
        mcp_sessions,
        dashboard_outcomes,
        panic_path: s.panic_path,
        transports: std::sync::OnceLock::new(),
    }));
    // SIGTERM and SIGINT stop the server gracefully from the moment it binds: the handlers are
    // installed before any socket exists (the server's own come only once it runs), so a signal
    // sent as soon as a socket accepts never kills the process mid-start.
    let stop_signals = StopSignals::install()?;
    let http::Listening {
        server,
        transports,
        sockets,
    } = http::listen(state.clone(), max_body, &s.binds, s.unix_mode, workers)?;
    stop_signals.stop(server.handle());
    for t in &transports {
        match t.strip_prefix("tcp:") {
            Some(addr) => println!("a2a-mailbox listening on http://{addr}"),
            None => println!("a2a-mailbox listening on {t}"),
        }
    }
    let _ = state.transports.set(transports);
    let outcome = server.await;
    // Each socket file is removed only if it is still the one this server made.
    for socket in &sockets {
        let path = socket.path().display();
        match socket.remove() {
            Ok(Removal::Removed) => {}
            Ok(Removal::Replaced) => {
                tracing::warn!(path = %path, "another file replaced the socket file; left in place")
            }
            Ok(Removal::Gone) => tracing::warn!(path = %path, "the socket file was already gone"),
            Err(e) => {
                tracing::warn!(path = %path, error = %e, "could not remove the socket file")
            }
        }
    }
    outcome?;
    store.close().await;
    Ok(())
}

/// The stop signals, listened for before the server binds.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Stops `server` gracefully at the first of them (one that came before is not lost).
    fn stop(mut self, server: actix_server::ServerHandle) {
        tokio::spawn(async move {
            tokio::select! {
                _ = self.term.recv() => {}
                _ = self.int.recv() => {}
            }
            server.stop(true).await;
        });
    }
}

/// The name of the secret namespace the A2A facade derives its task ids from.
const A2A_TASK_IDS: &str = "a2a-task-ids";
/// The secret under which MCP session ids are signed (`http::mcp::session`).
const MCP_SESSIONS: &str = "mcp-sessions";
const DASHBOARD_OUTCOMES: &str = "dashboard-outcomes";

/// Samples the counters every 10 s for the dashboard's throughput chart.
async fn sample_throughput(metrics: Arc<Metrics>) {
    let mut every = tokio::time::interval(Duration::from_secs(10));
    loop {
        every.tick().await;
        let minute = crate::mailbox::overview::this_minute();
        metrics
            .throughput
            .sample(metrics.throughput_counts(), minute);
    }
}

/// Samples the deepest queues for the dashboard's depth chart at start, then once a minute,
/// halfway through it (so no minute is missed): one cheap read of the database, the overview's.
async fn sample_depth(mailbox: Mailbox) {
    let sample = || async {
        if let Err(e) = mailbox.sample_depth().await {
            tracing::warn!(error = %e, "sampling the depth of the queues failed");
        }
    };
    sample().await;
    let into_minute = crate::clock::now_ms().rem_euclid(60_000).unsigned_abs();
    let halfway = Duration::from_millis(90_000_u64.saturating_sub(into_minute) % 60_000);
    let start = tokio::time::Instant::now()
        .checked_add(halfway)
        .unwrap_or_else(tokio::time::Instant::now);
    let mut every = tokio::time::interval_at(start, Duration::from_secs(60));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        sample().await;
    }
}

/// The identity of the in-process timer in the audit feed.
pub const SCHEDULER_AGENT: &str = "a2a-mailbox-scheduler";

/// Runs the scheduler tick in-process (opt-in, single-node setups). It holds exactly the
/// capabilities an operator's timer would: `a2a.operator` and `a2a.repair.requeue`.
async fn scheduler_timer(mailbox: Mailbox, policy: RetryPolicy, every: Duration) {
    // A constant agent id, which a unit test parses.
    let Ok(sub) = AgentId::parse(SCHEDULER_AGENT) else {
        tracing::error!("the in-process timer's agent id does not parse; the timer is off");
        return;
    };
    let caller = Caller {
        sub,
        caps: vec![
            CapEntry::Action("a2a.operator".into()),
            CapEntry::Action("a2a.repair.requeue".into()),
        ],
        exp: None,
    };
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        match mailbox
            .retry_stale(Author::from(&caller), &policy, ScanKind::Scheduler)
            .await
        {
            Ok(r) => tracing::info!(
                requeued = r.value.requeued.len(),
                considered = r.value.considered,
                "scheduler tick"
            ),
            Err(e) => tracing::warn!(error = %e, "scheduler tick failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{http_workers, main_runtime_threads, SCHEDULER_AGENT};

    #[test]
    fn the_in_process_timer_has_a_valid_agent_id() {
        assert!(crate::domain::AgentId::parse(SCHEDULER_AGENT).is_ok());
    }

    #[test]
    fn the_main_runtime_has_one_thread_on_postgresql_unless_the_operator_chose() {
        let pg = "postgres://postgres@127.0.0.1:5432/mailbox";
        assert_eq!(main_runtime_threads(pg, false), Some(1));
        assert_eq!(main_runtime_threads("postgresql://u@h/db", false), Some(1));
        assert_eq!(
            main_runtime_threads(pg, true),
            None,
            "TOKIO_WORKER_THREADS wins"
        );
        assert_eq!(main_runtime_threads("sqlite://a2a-mailbox.db", false), None);
        assert_eq!(main_runtime_threads("mysql://x", false), None);
    }

    #[test]
    fn postgres_leaves_a_core_to_the_lane_and_the_operator_decides_first() {
        assert_eq!(http_workers(None, true, 2), 1);
        assert_eq!(http_workers(None, true, 8), 7);
        assert_eq!(http_workers(None, true, 1), 1);
        assert_eq!(http_workers(None, false, 2), 2);
        assert_eq!(http_workers(Some(3), true, 2), 3);
        assert_eq!(http_workers(Some(4), false, 2), 4);
    }
}
