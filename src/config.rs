//! Settings: command-line flags, each of which also reads an environment variable.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::domain::{free_form, Validate};
use crate::mailbox::retry::RetryPolicy;
use crate::mailbox::MailboxConfig;
use crate::server::Scheduler;
use anyhow::{bail, Context};
use clap::Args;

pub use crate::store::DEFAULT_DATABASE_URL;

pub mod identity;
mod ms;
pub use identity::{read_secret_file, JwtArgs, McpArgs};
pub use ms::{duration_setting, ms_setting, MAX_SETTING_MS};

/// [`ms_setting`] as the mailbox's windows are kept: milliseconds in an `i64`.
fn window_setting(name: &str, value: u64) -> anyhow::Result<i64> {
    Ok(i64::try_from(ms_setting(name, value)?)?)
}

#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// sqlite://file.db (created on first start), sqlite:///abs/path.db?mode=rwc or postgres://user@host:port/db
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub database_url: String,
    /// Largest number of database connections (PostgreSQL; SQLite uses one writer and up to 8 readers).
    #[arg(long, env = "A2A_MAILBOX_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,
    /// How long a request waits for a database connection before it answers 503. Short, so a
    /// database outage answers within 2 s (docs/contract.md#details) instead of holding requests.
    #[arg(
        long,
        env = "A2A_MAILBOX_DB_ACQUIRE_TIMEOUT_MS",
        default_value_t = 1_500
    )]
    pub db_acquire_timeout_ms: u64,
}

impl DbArgs {
    /// `A2A_MAILBOX_DB_ACQUIRE_TIMEOUT_MS`, refused beyond [`MAX_SETTING_MS`].
    pub fn acquire_timeout(&self) -> anyhow::Result<Duration> {
        duration_setting(
            "A2A_MAILBOX_DB_ACQUIRE_TIMEOUT_MS",
            self.db_acquire_timeout_ms,
        )
    }
}

/// Where `serve --dev` keeps its generated secret: next to the SQLite file, or in the working
/// directory for PostgreSQL.
pub fn dev_secret_path(database_url: &str) -> PathBuf {
    match crate::store::Engine::local_file(database_url) {
        Some(p) => {
            let mut s = p.into_os_string();
            s.push(".jwt-secret");
            PathBuf::from(s)
        }
        None => PathBuf::from("a2a-mailbox-dev.jwt-secret"),
    }
}

#[derive(Args, Debug, Clone)]
pub struct MailboxArgs {
    /// Dedup window of the receiver-side result cache, in milliseconds.
    #[arg(
        long,
        env = "A2A_MAILBOX_RESULT_CACHE_WINDOW_MS",
        default_value_t = 86_400_000
    )]
    pub result_cache_window_ms: u64,
    /// Per-task_kind windows, e.g. `refund=604800000,lookup=3600000`.
    #[arg(long, env = "A2A_MAILBOX_RESULT_CACHE_WINDOWS", default_value = "")]
    pub result_cache_windows: String,
    /// How long an Idempotency-Key is honoured, in milliseconds.
    #[arg(
        long,
        env = "A2A_MAILBOX_IDEMPOTENCY_WINDOW_MS",
        default_value_t = 86_400_000
    )]
    pub idempotency_window_ms: u64,
    /// How long a pending Idempotency-Key record blocks duplicates before it may be taken over.
    #[arg(
        long,
        env = "A2A_MAILBOX_IDEMPOTENCY_PENDING_TTL_MS",
        default_value_t = 60_000
    )]
    pub idempotency_pending_ttl_ms: u64,
    /// How long audit rows are kept, in milliseconds; `POST /a2a/compact` drops older ones.
    #[arg(
        long,
        env = "A2A_MAILBOX_AUDIT_RETENTION_MS",
        default_value_t = 30 * 86_400_000
    )]
    pub audit_retention_ms: u64,
    /// Refused tokens from one client address answered at once per minute; past it each refusal
    /// is answered 100 ms late, so a flood of bad tokens cannot take the CPU from real callers
    /// (0: never slow down).
    #[arg(
        long,
        env = "A2A_MAILBOX_AUTH_FAILURES_PER_MINUTE",
        default_value_t = 600
    )]
    pub auth_failures_per_minute: u64,
    /// Requests of one caller (token subject) this instance parks at once (long-polls, blocking
    /// sends); the next answers 429 `too_many_waiting`.
    #[arg(
        long,
        env = "A2A_MAILBOX_MAX_WAITING_PER_CALLER",
        default_value_t = 1000
    )]
    pub max_waiting_per_caller: usize,
    /// Requests this instance parks at once from everyone; the next answers 503 `overloaded`.
    #[arg(long, env = "A2A_MAILBOX_MAX_WAITING", default_value_t = 50_000)]
    pub max_waiting: usize,
    /// How deep a free-form JSON value a caller supplies (content values, metadata, A2A data
    /// parts, MCP tool arguments) may nest objects and arrays; deeper is refused (1 to 100).
    #[arg(
        long,
        env = "A2A_MAILBOX_MAX_JSON_DEPTH",
        default_value_t = free_form::DEFAULT_MAX_JSON_DEPTH
    )]
    pub max_json_depth: usize,
}

impl MailboxArgs {
    pub fn config(&self) -> anyhow::Result<MailboxConfig> {
        let mut by_kind = HashMap::new();
        for part in self
            .result_cache_windows
            .split(',')
            .filter(|p| !p.trim().is_empty())
        {
            let (kind, ms) = part
                .split_once('=')
                .with_context(|| format!("bad result cache window {part:?}: expected kind=ms"))?;
            let ms: u64 = ms
                .trim()
                .parse()
                .with_context(|| format!("bad result cache window {part:?}: expected kind=ms"))?;
            let name = format!("A2A_MAILBOX_RESULT_CACHE_WINDOWS ({})", kind.trim());
            by_kind.insert(kind.trim().to_owned(), window_setting(&name, ms)?);
        }
        let depth = self.max_json_depth;
        if !(1..=free_form::MAX_MAX_JSON_DEPTH).contains(&depth) {
            bail!(
                "A2A_MAILBOX_MAX_JSON_DEPTH is {depth}: it must be 1 to {}",
                free_form::MAX_MAX_JSON_DEPTH
            );
        }
        Ok(MailboxConfig {
            result_cache_window_ms: window_setting(
                "A2A_MAILBOX_RESULT_CACHE_WINDOW_MS",
                self.result_cache_window_ms,
            )?,
            result_cache_window_by_kind: by_kind,
            idempotency_window_ms: window_setting(
                "A2A_MAILBOX_IDEMPOTENCY_WINDOW_MS",
                self.idempotency_window_ms,
            )?,
            idempotency_pending_ttl_ms: window_setting(
                "A2A_MAILBOX_IDEMPOTENCY_PENDING_TTL_MS",
                self.idempotency_pending_ttl_ms,
            )?,
            audit_retention_ms: window_setting(
                "A2A_MAILBOX_AUDIT_RETENTION_MS",
                self.audit_retention_ms,
            )?,
            auth_failures_per_minute: self.auth_failures_per_minute,
            waiting: crate::mailbox::WaitingLimits {
                per_caller: self.max_waiting_per_caller,
                total: self.max_waiting,
            },
            max_json_depth: depth,
            ..MailboxConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_secret_lives_next_to_the_sqlite_file() {
        assert_eq!(
            dev_secret_path("sqlite://a2a-mailbox.db"),
            PathBuf::from("a2a-mailbox.db.jwt-secret")
        );
        assert_eq!(
            dev_secret_path("sqlite:///var/lib/a2a/m.db?mode=rwc"),
            PathBuf::from("/var/lib/a2a/m.db.jwt-secret")
        );
        assert_eq!(
            dev_secret_path("postgres://u@h/db"),
            PathBuf::from("a2a-mailbox-dev.jwt-secret")
        );
    }
}

/// The retry-gate policy of the scheduler tick, and the optional in-process timer.
#[derive(Args, Debug, Clone)]
pub struct SchedulerArgs {
    /// Let `POST /a2a/scheduler/tick` requeue (1/true). Unset: every tick is a dry run.
    #[arg(long = "auto-retry-scheduler", env = "A2A_MAILBOX_AUTO_RETRY_SCHEDULER",
        value_parser = clap::builder::BoolishValueParser::new(), default_value = "false")]
    pub enabled: bool,
    #[arg(
        long = "auto-retry-min-lease-age-ms",
        env = "A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS",
        default_value_t = RetryPolicy::default().min_lease_age_ms
    )]
    pub min_lease_age_ms: u64,
    #[arg(
        long = "auto-retry-max-attempts",
        env = "A2A_MAILBOX_AUTO_RETRY_MAX_ATTEMPTS",
        default_value_t = RetryPolicy::default().max_attempts
    )]
    pub max_attempts: u32,
    #[arg(
        long = "auto-retry-max-requeues",
        env = "A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES",
        default_value_t = RetryPolicy::default().max_requeues
    )]
    pub max_requeues: u32,
    #[arg(
        long = "auto-retry-scan-limit",
        env = "A2A_MAILBOX_AUTO_RETRY_SCAN_LIMIT",
        default_value_t = RetryPolicy::default().scan_limit
    )]
    pub scan_limit: u32,
    /// Also run the tick on an in-process timer every this many milliseconds (single-node
    /// setups; with several instances prefer one external timer calling the endpoint).
    #[arg(
        long = "auto-retry-interval-ms",
        env = "A2A_MAILBOX_AUTO_RETRY_INTERVAL_MS"
    )]
    pub interval_ms: Option<u64>,
    /// A tick that starts less than this many milliseconds after the previous tick started (on
    /// any instance of the database), or while another tick's scan runs, is coalesced: it
    /// changes nothing and answers `coalesced: true`.
    #[arg(
        long = "auto-retry-scheduler-min-spacing-ms",
        env = "A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS",
        default_value_t = 1_000
    )]
    pub min_spacing_ms: u64,
}

impl SchedulerArgs {
    /// Adds the scheduler's tunables to the mailbox's.
    pub fn apply(&self, cfg: &mut MailboxConfig) -> anyhow::Result<()> {
        cfg.scheduler_min_spacing_ms = window_setting(
            "A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS",
            self.min_spacing_ms,
        )?;
        Ok(())
    }

    /// The tick's policy, refused when invalid, and its in-process timer.
    pub fn settings(&self) -> anyhow::Result<Scheduler> {
        let policy = RetryPolicy {
            enabled: self.enabled,
            min_lease_age_ms: ms_setting(
                "A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS",
                self.min_lease_age_ms,
            )?,
            max_attempts: self.max_attempts,
            max_requeues: self.max_requeues,
            scan_limit: self.scan_limit,
        };
        policy
            .validate()
            .map_err(|e| anyhow::anyhow!("A2A_MAILBOX_AUTO_RETRY_*: {}", e.message))?;
        let interval = "A2A_MAILBOX_AUTO_RETRY_INTERVAL_MS";
        Ok(Scheduler {
            policy,
            interval_ms: self
                .interval_ms
                .map(|ms| ms_setting(interval, ms))
                .transpose()?,
        })
    }
}
