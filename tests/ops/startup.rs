//! Start-up as a newcomer meets it: `serve` without a secret, `serve --dev`, `token`, `migrate`.
//! Each test runs on SQLite and on PostgreSQL (a fresh database of its own).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use sqlx::{Connection, Executor};
use uuid::Uuid;

use crate::common::{postgres_base_url, task, BIN};

/// A fresh database URL (and a scratch directory to run in), or `None` when PostgreSQL is
/// skipped. The third value drops the PostgreSQL database when the test ends.
async fn fresh_db(postgres: bool, test: &str) -> Option<(String, PathBuf, DropDb)> {
    let dir = std::env::temp_dir().join(format!("a2a-startup-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    if !postgres {
        return Some((
            format!("sqlite://{}?mode=rwc", dir.join("m.db").display()),
            dir,
            DropDb(None),
        ));
    }
    let base = postgres_base_url(test).await?;
    let name = format!("a2a_t_{}", Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&base).await.unwrap();
    conn.execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
        .await
        .unwrap();
    let _ = conn.close().await;
    let url = crate::common::pg_url_with_db(&base, &name);
    Some((url, dir, DropDb(Some((base, name)))))
}

/// Drops its PostgreSQL database (admin URL, name) when dropped, even when the test failed.
struct DropDb(Option<(String, String)>);

impl Drop for DropDb {
    fn drop(&mut self) {
        if let Some((admin, name)) = self.0.take() {
            crate::common::drop_database(admin, name);
        }
    }
}

fn command(db: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("A2A_MAILBOX_") || k == "DATABASE_URL" {
            cmd.env_remove(k);
        }
    }
    cmd.env("DATABASE_URL", db)
        .env("A2A_MAILBOX_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd
}

async fn serve_without_a_secret_refuses_and_says_how(postgres: bool, test: &str) {
    let Some((db, dir, _drop_db)) = fresh_db(postgres, test).await else {
        return;
    };
    let out = tokio::task::spawn_blocking(move || command(&db, &dir).arg("serve").output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !out.status.success(),
        "serve must refuse to start without a secret"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for hint in [
        "A2A_MAILBOX_JWT_SECRET",
        "A2A_MAILBOX_JWT_SECRET_FILE",
        "--dev",
    ] {
        assert!(stderr.contains(hint), "the refusal names {hint}: {stderr}");
    }
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("listening"),
        "it did not serve"
    );
}

async fn serve_dev_generates_a_secret_and_prints_a_working_operator_token(
    postgres: bool,
    test: &str,
) {
    let Some((db, dir, _drop_db)) = fresh_db(postgres, test).await else {
        return;
    };
    let mut child = command(&db, &dir)
        .args(["serve", "--dev"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let token = std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        while let Some(Ok(line)) = lines.next() {
            if line.contains("operator token") {
                return lines.next().and_then(|l| l.ok());
            }
        }
        None
    });
    let address = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("a2a-mailbox listening on ")
                    .map(str::to_owned)
            })
    });
    let token = tokio::task::spawn_blocking(move || token.join().unwrap())
        .await
        .unwrap()
        .expect("serve --dev prints an operator token");
    let address = tokio::task::spawn_blocking(move || address.join().unwrap())
        .await
        .unwrap()
        .expect("serve --dev serves");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let r = http
        .get(format!("{address}/a2a/queue"))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the printed operator token works");
    let secret_file = if postgres {
        dir.join("a2a-mailbox-dev.jwt-secret")
    } else {
        dir.join("m.db.jwt-secret")
    };
    assert!(
        secret_file.exists(),
        "the secret is kept at {}",
        secret_file.display()
    );
    // `token` finds that secret by itself.
    let (db2, dir2) = (db.clone(), dir.clone());
    let minted = tokio::task::spawn_blocking(move || {
        command(&db2, &dir2)
            .args([
                "token",
                "--sub",
                "alice",
                "--cap",
                "a2a.send.bob",
                "--ttl",
                "10m",
            ])
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        minted.status.success(),
        "{}",
        String::from_utf8_lossy(&minted.stderr)
    );
    let alice = String::from_utf8_lossy(&minted.stdout).trim().to_owned();
    let r = http
        .post(format!("{address}/a2a/tasks"))
        .bearer_auth(&alice)
        .json(&task("alice", "bob"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "a token minted by `token` is accepted");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

async fn migrate_applies_the_migrations_and_is_repeatable(postgres: bool, test: &str) {
    let Some((db, dir, _drop_db)) = fresh_db(postgres, test).await else {
        return;
    };
    for _ in 0..2 {
        let (db, dir) = (db.clone(), dir.clone());
        let out = tokio::task::spawn_blocking(move || command(&db, &dir).arg("migrate").output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("migrations applied"));
    }
}

macro_rules! startup_test {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::$name(false, concat!(module_path!(), "::sqlite")).await;
            }
            #[tokio::test]
            async fn postgres() {
                super::$name(true, concat!(module_path!(), "::postgres")).await;
            }
        }
    };
}
startup_test!(serve_without_a_secret_refuses_and_says_how);
startup_test!(serve_dev_generates_a_secret_and_prints_a_working_operator_token);
startup_test!(migrate_applies_the_migrations_and_is_repeatable);

/// SQLite only by nature: an in-memory database would be one per connection, and not durable.
#[tokio::test]
async fn an_in_memory_sqlite_url_is_refused_with_a_reason() {
    let dir = std::env::temp_dir().join(format!("a2a-startup-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        command("sqlite::memory:", &dir)
            .env("A2A_MAILBOX_JWT_SECRET", "s")
            .arg("serve")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in-memory SQLite database is not supported"),
        "{stderr}"
    );
}
