//! A panic that still happens (docs/contract.md#errors): the request answers 500 `internal`
//! with an `X-Request-Id` header that names it in the logs, `a2a_panics_total` counts it, and
//! nothing else is affected: the connection is answered, and the one worker goes on serving,
//! on TCP and on a Unix socket alike. The panic is injected by the test-only setting
//! `A2A_MAILBOX_TEST_PANIC_PATH` (docs/configuration.md).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

const PANICS: &str = "/a2a/queue";

fn a_route_that_panics() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_BIND", "127.0.0.1:0,unix:{dir}/mailbox.sock")
        .env("A2A_MAILBOX_HTTP_WORKERS", "1")
        .env("A2A_MAILBOX_TEST_PANIC_PATH", PANICS)
        // The log is read back for the request ids: no backtrace pushes them out of its tail,
        // whatever the environment the tests run in says.
        .env("RUST_BACKTRACE", "0")
}

/// A GET over the Unix socket: the status, the `X-Request-Id` header and the JSON body.
fn over_socket(path: &Path, target: &str, token: &str) -> (u16, Option<String>, Value) {
    let mut stream = UnixStream::connect(path).expect("connecting to the socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let req = format!(
        "GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, payload) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok());
    let id = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("x-request-id")
            .then(|| value.trim().to_owned())
    });
    let body = serde_json::from_str(payload).unwrap_or(Value::Null);
    (status.expect("a status"), id, body)
}

/// Asserts the contract's answer to a panic; answers its request id.
#[track_caller]
fn internal(status: u16, id: Option<String>, body: &Value) -> String {
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["code"], "internal", "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    let id = id.expect("an X-Request-Id header");
    assert!(!id.trim().is_empty(), "an empty X-Request-Id");
    id
}

both_engines!(
    a_panic_answers_500_internal_names_the_request_and_is_counted,
    config = a_route_that_panics
);
async fn a_panic_answers_500_internal_names_the_request_and_is_counted(app: TestApp) {
    let ops = app.ops();
    assert_eq!(app.metric("a2a_panics_total").await, 0.0);
    let r = app
        .client
        .get(app.url(PANICS))
        .bearer_auth(&ops)
        .send()
        .await
        .expect("the panicking request is answered, not dropped");
    let status = r.status().as_u16();
    let id = r
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = r.json().await.expect("a JSON body");
    let id = internal(status, id, &body);
    assert_eq!(app.metric("a2a_panics_total").await, 1.0);
    // The one worker goes on serving: a send, a lease, a listing.
    let sent = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, sent);
    app.get("/a2a/tasks", &ops).await.expect(200);
    // The same over the Unix socket, on the same worker.
    let socket = app.dir.join("mailbox.sock");
    let (token, target) = (ops.clone(), PANICS.to_owned());
    let (status, again, body) =
        tokio::task::spawn_blocking(move || over_socket(&socket, &target, &token))
            .await
            .unwrap();
    let again = internal(status, again, &body);
    assert_ne!(again, id, "each request has its own id");
    assert_eq!(app.metric("a2a_panics_total").await, 2.0);
    app.get("/a2a/tasks", &ops).await.expect(200);
    // The log names each request by its id.
    let log = app.server_log();
    for id in [&id, &again] {
        assert!(log.contains(id.as_str()), "the log names {id}:\n{log}");
    }
}
