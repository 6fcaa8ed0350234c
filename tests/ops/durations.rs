//! Configured durations: every `_MS` setting has a documented maximum (docs/configuration.md),
//! and `serve` refuses to start beyond it, naming the setting and the maximum, instead of
//! overflowing a deadline later. At the maximum itself the service serves (`tests/a2a/edges.rs`
//! runs streams and waits with every setting there).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use super::startup::{command, fresh_db};

/// The largest value of every `_MS` setting: 100 years of 365 days.
pub const MAX_MS: u64 = 3_153_600_000_000;

async fn durations_beyond_their_maximum_are_refused_at_start_up(postgres: bool, test: &str) {
    let Some((db, dir, _drop_db)) = fresh_db(postgres, test).await else {
        return;
    };
    let huge = u64::MAX.to_string();
    let beyond = (MAX_MS + 1).to_string();
    let cases = [
        ("A2A_MAILBOX_A2A_STREAM_MS", huge.clone()),
        ("A2A_MAILBOX_A2A_STREAM_MS", beyond.clone()),
        ("A2A_MAILBOX_A2A_BLOCK_MS", huge.clone()),
        ("A2A_MAILBOX_DB_ACQUIRE_TIMEOUT_MS", huge.clone()),
        ("A2A_MAILBOX_IDEMPOTENCY_WINDOW_MS", beyond.clone()),
        ("A2A_MAILBOX_AUDIT_RETENTION_MS", huge.clone()),
        ("A2A_MAILBOX_RESULT_CACHE_WINDOWS", format!("refund={huge}")),
        ("A2A_MAILBOX_AUTO_RETRY_INTERVAL_MS", huge.clone()),
        ("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", beyond.clone()),
        ("A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS", huge),
    ];
    for (name, value) in cases {
        let (db, dir, value) = (db.clone(), dir.clone(), value.clone());
        let (served, stderr) = tokio::task::spawn_blocking(move || {
            let mut cmd = command(&db, &dir);
            cmd.env("A2A_MAILBOX_JWT_SECRET", "s").env(name, value);
            serves(cmd)
        })
        .await
        .unwrap();
        assert!(!served, "{name} beyond its maximum: it served");
        for said in [name, &MAX_MS.to_string()] {
            assert!(stderr.contains(said), "the refusal names {said}: {stderr}");
        }
    }
}

/// Runs `serve` until it either says it listens (then it is killed) or exits; answers whether
/// it served, and what it wrote on stderr.
fn serves(mut cmd: Command) -> (bool, String) {
    let mut child = cmd
        .arg("serve")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let served = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("listening"));
    if served {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    (served, String::from_utf8_lossy(&out.stderr).into_owned())
}

mod durations_beyond_their_maximum_are_refused_at_start_up {
    #[tokio::test]
    async fn sqlite() {
        super::durations_beyond_their_maximum_are_refused_at_start_up(
            false,
            concat!(module_path!(), "::sqlite"),
        )
        .await;
    }
    #[tokio::test]
    async fn postgres() {
        super::durations_beyond_their_maximum_are_refused_at_start_up(
            true,
            concat!(module_path!(), "::postgres"),
        )
        .await;
    }
}
