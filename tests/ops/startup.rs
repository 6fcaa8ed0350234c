//! Start-up as a newcomer meets it: `serve` without a secret, `serve --dev`, `token`, `migrate`.
//! Each test runs on SQLite and on PostgreSQL (a fresh database of its own).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sqlx::{Connection, Executor};
use uuid::Uuid;

use crate::common::{postgres_base_url, task, BIN};

/// A fresh database URL (and a scratch directory to run in), or `None` when PostgreSQL is
/// skipped. The third value drops the PostgreSQL database when the test ends.
pub(super) async fn fresh_db(postgres: bool, test: &str) -> Option<(String, PathBuf, DropDb)> {
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
pub(super) struct DropDb(Option<(String, String)>);

impl Drop for DropDb {
    fn drop(&mut self) {
        if let Some((admin, name)) = self.0.take() {
            crate::common::drop_database(admin, name);
        }
    }
}

pub(super) fn command(db: &str, dir: &Path) -> Command {
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

/// Runs `serve` on the Unix socket `sock` only, as `uid` if given; its output once it exits.
/// Panics if it is still running after 30 s (it started instead of refusing).
fn serve_on_socket(db: &str, dir: &Path, sock: &Path, uid: Option<u32>) -> Output {
    let mut cmd = command(db, dir);
    cmd.env("A2A_MAILBOX_JWT_SECRET", "s")
        .env("A2A_MAILBOX_BIND", format!("unix:{}", sock.display()))
        .arg("serve")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "serve on {} started instead of refusing: {}",
                sock.display(),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Whether any user may run the file at `path`: it and every directory above it are open to
/// others.
fn anyone_may_run(path: &Path) -> bool {
    path.ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// The file's identity: (device, inode).
fn identity(path: &Path) -> (u64, u64) {
    let m = std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{} is gone: {e}", path.display()));
    (m.dev(), m.ino())
}

/// Only a socket nobody listens on (connect: ECONNREFUSED) is stale and replaced. A regular
/// file, another process's live datagram socket (connect: EPROTOTYPE) and a live socket the
/// server may not connect to (EACCES) stay as they are, and start-up fails naming the path and
/// the reason.
async fn a_socket_path_that_is_not_a_stale_socket_is_left_alone(postgres: bool, test: &str) {
    let Some((db, dir, _drop_db)) = fresh_db(postgres, test).await else {
        return;
    };
    // As root (who may connect anywhere) the server runs as uid 65534, and is refused by a
    // socket of mode 0600 that root owns; as anyone else, a mode of 0 refuses even its owner.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let (uid, private_mode) = match (root, anyone_may_run(Path::new(BIN))) {
        (false, _) => (None, Some(0)),
        (true, true) => (Some(65534), Some(0o600)),
        (true, false) => {
            println!("SKIPPED the EACCES case: uid 65534 may not run {BIN}");
            (None, None)
        }
    };
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let refused = |sock: PathBuf, reason: &str| {
        let before = identity(&sock);
        let out = serve_on_socket(&db, &dir, &sock, uid);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {stderr}", sock.display());
        assert!(
            stderr.contains(&sock.display().to_string()) && stderr.contains(reason),
            "the refusal names {} and {reason:?}: {stderr}",
            sock.display()
        );
        assert_eq!(identity(&sock), before, "{} was replaced", sock.display());
    };

    let file = dir.join("file.sock");
    std::fs::write(&file, "not a socket").unwrap();
    refused(file.clone(), "is not a socket");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a socket");

    let datagram = dir.join("datagram.sock");
    let theirs = UnixDatagram::bind(&datagram).unwrap();
    chmod(&datagram, 0o777);
    refused(datagram.clone(), "Protocol wrong type for socket");
    UnixDatagram::unbound()
        .unwrap()
        .send_to(b"still mine", &datagram)
        .unwrap();
    let mut buf = [0u8; 16];
    let n = theirs.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"still mine");

    let Some(private_mode) = private_mode else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let private = dir.join("private.sock");
    let listener = UnixListener::bind(&private).unwrap();
    chmod(&private, private_mode);
    refused(private.clone(), "Permission denied");
    chmod(&private, 0o600);
    let _client = UnixStream::connect(&private).expect("the private socket still answers");
    listener.accept().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
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
startup_test!(a_socket_path_that_is_not_a_stale_socket_is_left_alone);

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
