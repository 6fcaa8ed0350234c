//! Starting and stopping the real server binary, one per phase, on a fresh database.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::db::Store;
use crate::Settings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }
}

pub const JWT_SECRET: &str = "a2a-mailbox-bench-secret-not-for-production";

pub struct Server {
    child: Child,
    pub pid: u32,
    pub base: String,
}

impl Server {
    pub async fn start(s: &Settings, engine: Engine, store: &Store, phase: &str) -> Result<Server> {
        Server::start_env(s, engine, store, phase, &[]).await
    }

    /// [`Server::start`] with extra environment variables for the server (its log file is
    /// named after `phase`, so each server of a phase needs its own).
    pub async fn start_env(
        s: &Settings,
        engine: Engine,
        store: &Store,
        phase: &str,
        env: &[(&str, &str)],
    ) -> Result<Server> {
        let log = std::fs::File::create(
            s.out
                .join("logs")
                .join(format!("server-{}-{phase}.log", engine.name())),
        )?;
        let mut child = Command::new(&s.server_bin)
            .arg("serve")
            .env("DATABASE_URL", &store.url)
            .env("A2A_MAILBOX_BIND", "127.0.0.1:0")
            .env("A2A_MAILBOX_JWT_SECRET", JWT_SECRET)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", s.server_bin.display()))?;
        let pid = child.id().context("server has no pid")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let base = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("a2a-mailbox listening on ") {
                    return Ok::<_, anyhow::Error>(url.trim().to_owned());
                }
            }
            bail!("the server exited before it listened (see target/bench/*/logs)")
        })
        .await
        .context("the server did not print its listening line within 60 s")??;
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server { child, pid, base })
    }

    pub fn vm_kib(&self, field: &str) -> u64 {
        crate::stats::proc_status_kib(self.pid, field).unwrap_or(0)
    }

    /// SIGTERM (graceful: pools close, PostgreSQL backends flush their statistics), SIGKILL
    /// after 10 s.
    pub async fn stop(self) -> Result<()> {
        self.stop_within(Duration::from_secs(10)).await
    }

    /// SIGTERM, SIGKILL after `grace` (a server still holding parked long-polls may wait for
    /// them to end before it exits).
    pub async fn stop_within(mut self, grace: Duration) -> Result<()> {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status();
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(r) => {
                r?;
            }
            Err(_) => {
                self.child.kill().await?;
            }
        }
        Ok(())
    }
}
