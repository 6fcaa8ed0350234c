//! The `a2a-mailbox` binary: `serve`, `migrate`, `token`.

use std::io::Write;
use std::time::Duration;

use a2a_mailbox::telemetry;
use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use a2a_mailbox::auth::{mint_hs256, CapEntry};
use a2a_mailbox::cli;
use a2a_mailbox::config::{
    dev_secret_path, duration_setting, read_secret_file, DbArgs, JwtArgs, MailboxArgs, McpArgs,
    SchedulerArgs,
};
use a2a_mailbox::server::{serve, ServerSettings};
use a2a_mailbox::store::{PoolSettings, Store};

#[derive(Parser)]
#[command(
    name = "a2a-mailbox",
    version,
    about = "A durable, explicitly leased task mailbox between AI agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (runs migrations first).
    Serve(Box<ServeArgs>),
    /// Run the database migrations and exit.
    Migrate(MigrateArgs),
    /// Mint an HS256 token from the configured secret.
    Token(TokenArgs),
    /// Show what the service makes of a token (its agent id and capabilities, or why it is
    /// refused), configured as `serve` would be: for setting up an identity provider.
    CheckToken(Box<cli::CheckTokenArgs>),
    /// Show queued tasks, in-flight leases and pending results of a running server.
    Status(cli::StatusArgs),
    /// Requeue an in-flight task (stating the duplicate-work risk).
    Requeue(cli::RequeueArgs),
    /// Clear a lease and post an error result for the sender.
    ForceError(cli::ForceErrorArgs),
    /// Run the retry gate (a dry run unless --enable).
    RetryStale(cli::RetryStaleArgs),
    /// Cancel a queued or in-flight task (its sender, or an operator).
    Cancel(cli::CancelArgs),
    /// List tasks newest first, with filters (`--all` follows the cursors).
    Tasks(cli::TasksArgs),
    /// List a task's children, with their tally by state.
    Children(cli::ChildrenArgs),
    /// Drop resolved and canceled tasks and expired idempotency records.
    Compact(cli::CompactArgs),
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    jwt: JwtArgs,
    #[command(flatten)]
    mcp: McpArgs,
    #[command(flatten)]
    mailbox: MailboxArgs,
    #[command(flatten)]
    scheduler: SchedulerArgs,
    /// Where to listen: a comma-separated list of `host:port` (port 0 picks a free port) and
    /// `unix:/absolute/path` (a Unix domain socket).
    #[arg(long, env = "A2A_MAILBOX_BIND", default_value = "127.0.0.1:8080")]
    bind: a2a_mailbox::transport::Binds,
    /// File mode of a Unix socket, in octal.
    #[arg(long, env = "A2A_MAILBOX_UNIX_MODE", default_value = "0660",
        value_parser = a2a_mailbox::transport::parse_mode)]
    unix_mode: u32,
    /// Largest accepted request body, in bytes (larger bodies get 413).
    #[arg(long, env = "A2A_MAILBOX_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    max_body_bytes: usize,
    /// Largest accepted body of a batch route (`POST /a2a/tasks/batch`, `/a2a/results/batch`,
    /// `/a2a/tasks/heartbeat`), in bytes (larger bodies get 413).
    #[arg(long, env = "A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES", default_value_t = 8 * 1024 * 1024)]
    batch_body_bytes: usize,
    /// HTTP worker threads [default: one per core; on PostgreSQL one fewer, at least one].
    #[arg(long, env = "A2A_MAILBOX_HTTP_WORKERS", value_parser = clap::value_parser!(u16).range(1..))]
    http_workers: Option<u16>,
    /// The public base URL of the A2A agent cards' absolute URLs (e.g. https://mailbox.example.com)
    /// [default: http:// and the first TCP address of --bind].
    #[arg(long, env = "A2A_MAILBOX_PUBLIC_URL")]
    public_url: Option<String>,
    /// How long an A2A SendMessage without returnImmediately waits for its task to be answered.
    #[arg(long, env = "A2A_MAILBOX_A2A_BLOCK_MS", default_value_t = 30_000)]
    a2a_block_ms: u64,
    /// How long an A2A stream (SendStreamingMessage, SubscribeToTask) lasts at most.
    #[arg(long, env = "A2A_MAILBOX_A2A_STREAM_MS", default_value_t = 600_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    a2a_stream_ms: u64,
    /// The longest an A2A stream stays silent: a keep-alive comment line goes out then.
    #[arg(long, env = "A2A_MAILBOX_A2A_KEEP_ALIVE_MS", default_value_t = 15_000,
          value_parser = clap::value_parser!(u64).range(1..=15_000))]
    a2a_keep_alive_ms: u64,
    /// Test-only fault injection: a request to this path panics (to test how a panic is
    /// answered and counted). Never set it in production.
    #[arg(long, env = "A2A_MAILBOX_TEST_PANIC_PATH", hide = true)]
    test_panic_path: Option<String>,
    /// Development mode: without a configured secret, generate one, keep it next to the
    /// database and print a ready-to-use operator token.
    #[arg(long)]
    dev: bool,
}

#[derive(Args)]
struct MigrateArgs {
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Args)]
struct TokenArgs {
    #[command(flatten)]
    jwt: JwtArgs,
    /// Used only to find the secret that `serve --dev` generated next to the database.
    #[arg(long, env = "DATABASE_URL", default_value = a2a_mailbox::config::DEFAULT_DATABASE_URL)]
    database_url: String,
    /// The subject (AgentId) of the token.
    #[arg(long)]
    sub: String,
    /// A capability action, e.g. a2a.send.bob or a2a.operator; repeat for more. A scoped grant
    /// is written as JSON: '{"action":"a2a.send.*","scope":{"peer":"bob"}}'.
    #[arg(long = "cap")]
    caps: Vec<String>,
    /// Lifetime: seconds, or a number with s, m, h or d (e.g. 1h).
    #[arg(long, default_value = "1h")]
    ttl: String,
}

fn parse_ttl(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = num.parse().with_context(|| format!("bad --ttl {s:?}"))?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("bad --ttl {s:?}: use a number of seconds or a suffix s, m, h, d"),
    };
    n.checked_mul(mult)
        .with_context(|| format!("bad --ttl {s:?}: too long"))
}

fn parse_caps(caps: &[String]) -> anyhow::Result<Vec<CapEntry>> {
    caps.iter()
        .map(|c| {
            if c.trim_start().starts_with('{') {
                serde_json::from_str(c).with_context(|| format!("bad scoped --cap {c}"))
            } else {
                Ok(CapEntry::Action(c.clone()))
            }
        })
        .collect()
}

/// The capabilities of the operator token printed by `serve --dev`.
const DEV_OPERATOR_CAPS: [&str; 7] = [
    "a2a.operator",
    "a2a.send.*",
    "a2a.respond.*",
    "a2a.lease.*",
    "a2a.repair.requeue",
    "a2a.repair.force_error",
    "a2a.compact",
];

/// Worker threads of the main runtime, when this binary chooses them (`serve` only): see
/// [`a2a_mailbox::server::main_runtime_threads`].
fn main_runtime_threads(command: &Command) -> Option<usize> {
    let Command::Serve(a) = command else {
        return None;
    };
    let chosen = std::env::var_os("TOKIO_WORKER_THREADS").is_some();
    a2a_mailbox::server::main_runtime_threads(&a.db.database_url, chosen)
}

fn dev_secret(database_url: &str) -> anyhow::Result<Vec<u8>> {
    let path = dev_secret_path(database_url);
    if path.exists() {
        return read_secret_file(&path);
    }
    let secret = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(&path)
        .with_context(|| format!("writing the dev secret {}", path.display()))?;
    f.write_all(secret.as_bytes())?;
    eprintln!("dev mode: generated a JWT secret in {}", path.display());
    Ok(secret.into_bytes())
}

async fn run_serve(a: ServeArgs) -> anyhow::Result<()> {
    // Every setting is checked before anything is done (a `--dev` secret written included).
    let mut mailbox = a.mailbox.config()?;
    a.scheduler.apply(&mut mailbox)?;
    let scheduler = a.scheduler.settings()?;
    let pool = PoolSettings {
        max_connections: a.db.db_max_connections,
        acquire_timeout: a.db.acquire_timeout()?,
    };
    let a2a = a2a_mailbox::http::a2a::Settings {
        public_url: a.public_url.clone(),
        block: duration_setting("A2A_MAILBOX_A2A_BLOCK_MS", a.a2a_block_ms)?,
        stream: duration_setting("A2A_MAILBOX_A2A_STREAM_MS", a.a2a_stream_ms)?,
        keep_alive: Duration::from_millis(a.a2a_keep_alive_ms),
    };
    let secret = match a.jwt.configured_secret()? {
        Some(s) => Some(s),
        None if a.dev => {
            let s = dev_secret(&a.db.database_url)?;
            let token = mint_hs256(
                &s,
                "operator",
                DEV_OPERATOR_CAPS.iter().map(|c| CapEntry::Action(c.to_string())).collect(),
                7 * 86_400,
                a.jwt.jwt_audience.clone(),
                a.jwt.first_issuer(),
            )?;
            eprintln!(
                "dev mode: operator token (7 days; mint others with `a2a-mailbox token --sub NAME --cap ACTION`):\n{token}"
            );
            Some(s)
        }
        None if a.jwt.needs_no_secret()? => None,
        None => bail!(
            "no JWT secret is configured, so no request could be authenticated.\n\
             Set one, e.g.\n  export A2A_MAILBOX_JWT_SECRET=\"$(head -c 32 /dev/urandom | base64)\"\n\
             or point A2A_MAILBOX_JWT_SECRET_FILE (--jwt-secret-file) at a file holding it,\n\
             or run `a2a-mailbox serve --dev` to generate one for local development."
        ),
    };
    let verifier = a.jwt.verifier(secret.as_deref())?;
    let mcp_resource = a.mcp.resource(&a.jwt.issuers())?;
    serve(ServerSettings {
        database_url: a.db.database_url.clone(),
        binds: a.bind.0,
        unix_mode: a.unix_mode,
        pool,
        verifier,
        mcp_resource,
        mailbox,
        max_body_bytes: a.max_body_bytes,
        batch_body_bytes: a.batch_body_bytes,
        scheduler,
        http_workers: a.http_workers.map(usize::from),
        a2a,
        panic_path: a.test_panic_path.clone(),
    })
    .await
}

async fn run_migrate(a: MigrateArgs) -> anyhow::Result<()> {
    let db = Store::connect(
        &a.db.database_url,
        &PoolSettings {
            max_connections: 2,
            acquire_timeout: a.db.acquire_timeout()?,
        },
        Default::default(),
    )
    .await?;
    db.migrate().await?;
    db.close().await;
    println!("migrations applied to {}", a.db.database_url);
    Ok(())
}

fn run_token(a: TokenArgs) -> anyhow::Result<()> {
    let secret = match a.jwt.configured_secret()? {
        Some(s) => s,
        None => {
            let path = dev_secret_path(&a.database_url);
            if !path.exists() {
                bail!(
                    "no JWT secret is configured: set A2A_MAILBOX_JWT_SECRET (or --jwt-secret-file), \
                     or start `a2a-mailbox serve --dev` once to generate {}",
                    path.display()
                );
            }
            read_secret_file(&path)?
        }
    };
    let token = mint_hs256(
        &secret,
        &a.sub,
        parse_caps(&a.caps)?,
        parse_ttl(&a.ttl)?,
        a.jwt.jwt_audience.clone(),
        a.jwt.first_issuer(),
    )?;
    println!("{token}");
    Ok(())
}

/// Operator commands print only on success, so a failure leaves stdout empty.
fn print(out: anyhow::Result<String>) -> anyhow::Result<()> {
    println!("{}", out?);
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let export = match telemetry::start(matches!(cli.command, Command::Serve(_))) {
        Ok(export) => export,
        Err(e) => {
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let code = run(cli);
    if let Some(export) = export {
        export.shutdown();
    }
    code
}

fn run(cli: Cli) -> std::process::ExitCode {
    let result = match cli.command {
        Command::Token(a) => run_token(a),
        command => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if let Some(threads) = main_runtime_threads(&command) {
                builder.worker_threads(threads);
            }
            let rt = match builder.enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the runtime: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            };
            rt.block_on(async move {
                match command {
                    Command::Serve(a) => run_serve(*a).await,
                    Command::Migrate(a) => run_migrate(a).await,
                    Command::Status(a) => print(cli::status(a).await),
                    Command::Requeue(a) => print(cli::requeue(a).await),
                    Command::ForceError(a) => print(cli::force_error(a).await),
                    Command::RetryStale(a) => print(cli::retry_stale(a).await),
                    Command::Cancel(a) => print(cli::cancel(a).await),
                    Command::Tasks(a) => print(cli::tasks(a).await),
                    Command::Children(a) => print(cli::children(a).await),
                    Command::Compact(a) => print(cli::compact(a).await),
                    Command::CheckToken(a) => print(cli::check_token(*a).await),
                    Command::Token(_) => unreachable!("handled above"),
                }
            })
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units() {
        assert_eq!(parse_ttl("90").unwrap(), 90);
        assert_eq!(parse_ttl("1h").unwrap(), 3600);
        assert_eq!(parse_ttl("2d").unwrap(), 172_800);
        assert!(parse_ttl("1y").is_err());
        assert!(parse_ttl(&format!("{}d", u64::MAX / 2)).is_err());
    }
}
