//! Transports (docs/contract.md#transports): `A2A_MAILBOX_BIND` lists TCP addresses and Unix sockets; every route
//! is served alike on each, with the same authentication.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

fn tcp_and_socket() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_BIND", "127.0.0.1:0,unix:{dir}/mailbox.sock")
}

fn socket_0600() -> AppConfig {
    tcp_and_socket().env("A2A_MAILBOX_UNIX_MODE", "0600")
}

/// One HTTP/1.1 request over a Unix socket: the status and the JSON body.
fn over_socket(
    path: &Path,
    method: &str,
    target: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut stream = UnixStream::connect(path).expect("connecting to the socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, payload) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, serde_json::from_str(payload).unwrap_or(Value::Null))
}

async fn socket(
    path: &Path,
    method: &'static str,
    target: String,
    token: Option<String>,
    body: Option<Value>,
) -> (u16, Value) {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        over_socket(&path, method, &target, token.as_deref(), body.as_ref())
    })
    .await
    .unwrap()
}

fn socket_of(app: &TestApp) -> PathBuf {
    app.dir.join("mailbox.sock")
}

both_engines!(
    a_task_goes_round_trip_over_a_unix_socket,
    config = tcp_and_socket
);
async fn a_task_goes_round_trip_over_a_unix_socket(app: TestApp) {
    let path = socket_of(&app);
    // `/version` names both transports, on either of them.
    let v = app.get_anon("/version").await.expect(200).clone();
    let transports = v["transports"].as_array().unwrap().clone();
    assert_eq!(transports.len(), 2, "{v}");
    assert!(
        transports[0]
            .as_str()
            .unwrap()
            .starts_with("tcp:127.0.0.1:"),
        "{v}"
    );
    assert_eq!(transports[1], json!(format!("unix:{}", path.display())));
    let (status, over) = socket(&path, "GET", "/version".into(), None, None).await;
    assert_eq!((status, &over["transports"]), (200, &json!(transports)));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "the default socket mode");

    // A token is still required on the socket.
    let (status, body) = socket(&path, "GET", "/a2a/queue".into(), None, None).await;
    assert_eq!((status, &body["code"]), (401, &json!("unauthenticated")));

    // send over the socket, lease over TCP, answer and drain over the socket.
    let t = task("alice", "bob");
    let (status, body) = socket(
        &path,
        "POST",
        "/a2a/tasks".into(),
        Some(app.alice()),
        Some(t.clone()),
    )
    .await;
    assert_eq!((status, &body["task_id"]), (201, &t["id"]), "{body}");
    let (id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(json!(id), t["id"]);
    let mut res = result(&id, "ok", "over the socket");
    res["lease_id"] = lease["lease_id"].clone();
    let (status, body) = socket(
        &path,
        "POST",
        "/a2a/results".into(),
        Some(app.bob()),
        Some(res),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = socket(
        &path,
        "GET",
        "/a2a/results/next".into(),
        Some(app.alice()),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["content"][0]["text"], "over the socket");
    assert_eq!(app.status_ok(&id).await["state"], "resolved");
}

both_engines!(the_socket_mode_is_configurable, config = socket_0600);
async fn the_socket_mode_is_configurable(app: TestApp) {
    let mode = std::fs::metadata(socket_of(&app))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
}

/// Starts `a2a-mailbox serve` on `app`'s database listening on `sock` only.
fn serve_on(app: &TestApp, sock: &Path) -> std::process::Child {
    serve_with_mode(app, sock, "0660")
}

/// [`serve_on`] with the socket file's mode `A2A_MAILBOX_UNIX_MODE`.
fn serve_with_mode(app: &TestApp, sock: &Path, mode: &str) -> std::process::Child {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .env_remove("A2A_MAILBOX_TEST_POSTGRES_URL")
        .env("DATABASE_URL", &app.db_url)
        .env("A2A_MAILBOX_BIND", format!("unix:{}", sock.display()))
        .env("A2A_MAILBOX_UNIX_MODE", mode)
        .env("A2A_MAILBOX_JWT_SECRET", &app.secret)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("spawning the server")
}

/// SIGTERM, and the server stops cleanly.
fn stop(mut server: std::process::Child) {
    let killed = Command::new("kill")
        .arg("-TERM")
        .arg(server.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.wait().unwrap();
    assert!(
        status.success(),
        "the server did not stop cleanly: {status:?}"
    );
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

both_engines!(a_stale_socket_is_replaced_a_live_one_refused_and_shutdown_removes_it);
async fn a_stale_socket_is_replaced_a_live_one_refused_and_shutdown_removes_it(app: TestApp) {
    let sock = app.dir.join("other.sock");
    // A socket file left behind by a dead process.
    drop(UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let first = serve_on(&app, &sock);
    let answers = |p: &Path| UnixStream::connect(p).is_ok();
    wait_for("the server to answer on the replaced socket", || {
        answers(&sock)
    });
    let (status, _) = over_socket(&sock, "GET", "/healthz", None, None);
    assert_eq!(status, 200);

    // A second server on the same path: a start-up error, and the first keeps serving.
    let second = serve_on(&app, &sock).wait_with_output().unwrap();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("another server is listening"), "{err}");
    assert_eq!(over_socket(&sock, "GET", "/healthz", None, None).0, 200);

    // A clean shutdown (SIGTERM) removes the file.
    stop(first);
    assert!(!sock.exists(), "the socket file outlived the server");
}

both_engines!(the_socket_file_never_has_a_looser_mode_than_configured);
async fn the_socket_file_never_has_a_looser_mode_than_configured(app: TestApp) {
    let sock = app.dir.join("strict.sock");
    for round in 0..20 {
        let server = serve_with_mode(&app, &sock, "0600");
        // Two threads stat the path in a tight loop from before it exists until well after it
        // appeared: the modes it was seen with.
        let modes: std::collections::BTreeSet<String> = std::thread::scope(|s| {
            let spin = || {
                let (mut modes, mut after) = (std::collections::BTreeSet::new(), 0);
                let start = Instant::now();
                while after < 20_000 {
                    if let Ok(m) = std::fs::symlink_metadata(&sock) {
                        modes.insert(format!("{:o}", m.permissions().mode() & 0o7777));
                        after += 1;
                    }
                    assert!(start.elapsed() < Duration::from_secs(30), "no socket file");
                }
                modes
            };
            let spinners = [s.spawn(spin), s.spawn(spin)];
            spinners
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect()
        });
        wait_for("the server to answer", || {
            UnixStream::connect(&sock).is_ok()
        });
        stop(server);
        assert_eq!(
            modes.into_iter().collect::<Vec<_>>(),
            vec!["600"],
            "modes of the socket file seen during start-up {round}"
        );
        assert!(!sock.exists());
    }
    // Nothing of the staging is left beside the socket.
    let names: Vec<String> = std::fs::read_dir(&app.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with(".a2a.")), "{names:?}");
}

both_engines!(shutdown_leaves_a_file_that_replaced_the_socket);
async fn shutdown_leaves_a_file_that_replaced_the_socket(app: TestApp) {
    let sock = app.dir.join("taken.sock");
    let server = serve_on(&app, &sock);
    wait_for("the server to answer", || {
        UnixStream::connect(&sock).is_ok()
    });
    // Another process takes the path over while the server runs.
    std::fs::remove_file(&sock).unwrap();
    let theirs = UnixListener::bind(&sock).unwrap();
    stop(server);
    let client = UnixStream::connect(&sock).expect("the other process's socket is still there");
    let (accepted, _) = theirs.accept().unwrap();
    drop((client, accepted));
    // A regular file in its place is left alone too.
    std::fs::remove_file(&sock).unwrap();
    let server = serve_on(&app, &sock);
    wait_for("the server to answer", || {
        UnixStream::connect(&sock).is_ok()
    });
    std::fs::remove_file(&sock).unwrap();
    std::fs::write(&sock, "theirs").unwrap();
    stop(server);
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "theirs");
}
