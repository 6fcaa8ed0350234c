//! The answers the HTTP layer writes before any route runs — a request head past its limits,
//! bytes that are not HTTP, a head that does not arrive in time — carry the contract's error
//! body like every other refusal, over TCP and over a Unix socket, and the server goes on.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// Where the test talks to the server.
#[derive(Clone)]
enum Peer {
    Tcp(String),
    Unix(PathBuf),
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

impl Peer {
    fn connect(&self) -> Box<dyn Stream> {
        let timeout = Some(Duration::from_secs(30));
        match self {
            Peer::Tcp(addr) => {
                let s = std::net::TcpStream::connect(addr).expect("connecting over TCP");
                s.set_read_timeout(timeout).unwrap();
                Box::new(s)
            }
            Peer::Unix(path) => {
                let s = std::os::unix::net::UnixStream::connect(path).expect("connecting");
                s.set_read_timeout(timeout).unwrap();
                Box::new(s)
            }
        }
    }
}

/// Writes `first` (and, later, `then`) on one connection and reads every answer until the
/// server closes it: the raw bytes.
async fn exchange(peer: &Peer, first: Vec<u8>, then: Option<Vec<u8>>) -> String {
    let peer = peer.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = peer.connect();
        s.write_all(&first).unwrap();
        let mut out = Vec::new();
        if let Some(then) = then {
            // The first answer, whole, before the second request.
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&out).contains("\"status\":\"ok\"}") {
                let n = s.read(&mut buf).expect("the first answer");
                assert!(n > 0, "closed before the first answer");
                out.extend_from_slice(&buf[..n]);
            }
            s.write_all(&then).unwrap();
        }
        let _ = s.read_to_end(&mut out);
        String::from_utf8(out).expect("an answer in UTF-8")
    })
    .await
    .unwrap()
}

/// The status and JSON body of the last answer in `raw`.
fn last_answer(raw: &str) -> (u16, Value, String) {
    let at = raw
        .rmatch_indices("HTTP/1.1 ")
        .map(|(at, _)| at)
        .find(|at| {
            raw[at + 9..]
                .split(' ')
                .next()
                .is_some_and(|s| s.parse::<u16>().is_ok())
        })
        .expect("an HTTP answer");
    let Some((head, body)) = raw[at..].split_once("\r\n\r\n") else {
        panic!("not a whole answer: {raw:?}")
    };
    let status = head[9..12].parse().expect("a status");
    let json = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, json, head.to_ascii_lowercase())
}

fn assert_contract_error(raw: &str, status: u16, code: &str) {
    let (got, body, head) = last_answer(raw);
    assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{raw}");
    assert_eq!(body["kind"], "error", "{raw}");
    assert_eq!(body["retriable"], false, "{raw}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(head.contains("content-type: application/json"), "{raw}");
}

fn health(extra_headers: &str) -> Vec<u8> {
    format!("GET /healthz HTTP/1.1\r\nHost: localhost\r\n{extra_headers}\r\n").into_bytes()
}

/// 100 header lines of 400 bytes: past actix-http's 96 lines.
fn too_many_headers() -> String {
    (0..100)
        .map(|i| format!("X-Filler-{i}: {}\r\n", "a".repeat(400)))
        .collect()
}

async fn the_servers_own_refusals_carry_the_error_body(app: TestApp) {
    let tcp = Peer::Tcp(app.url("").trim_start_matches("http://").to_owned());
    let peers = [tcp, Peer::Unix(app.dir.join("mailbox.sock"))];
    for peer in &peers {
        // Too many header lines, and one header past 128 KiB.
        let raw = exchange(peer, health(&too_many_headers()), None).await;
        assert_contract_error(&raw, 431, "headers_too_large");
        let huge = format!("X-Huge: {}\r\n", "b".repeat(140 * 1024));
        let raw = exchange(peer, health(&huge), None).await;
        assert_contract_error(&raw, 431, "headers_too_large");
        // After an answered request on the same connection.
        let raw = exchange(peer, health(""), Some(health(&too_many_headers()))).await;
        assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw}");
        assert_contract_error(&raw, 431, "headers_too_large");
        // Bytes that are not HTTP.
        let raw = exchange(peer, b"HELLO THERE\r\n\r\n".to_vec(), None).await;
        assert_contract_error(&raw, 400, "invalid_request");
        // A head that never ends: the server gives up on it (after 5 s) and says so.
        let raw = exchange(peer, b"GET /healthz HTTP/1.1\r\nHost: x\r\n".to_vec(), None).await;
        assert_contract_error(&raw, 408, "request_timeout");
        // Forty headers of 1 KB are within the limits.
        let fine: String = (0..40)
            .map(|i| format!("X-Fine-{i}: {}\r\n", "c".repeat(1000)))
            .collect();
        let raw = exchange(peer, health(&format!("{fine}Connection: close\r\n")), None).await;
        assert_eq!(last_answer(&raw).1["status"], "ok", "{raw}");
    }
    // Nothing of this reached the mailbox or stopped it.
    app.assert_empty("after raw refusals").await;
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    assert_eq!(app.status_ok(&id).await["state"], "queued");
}

fn tcp_and_socket() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_BIND", "127.0.0.1:0,unix:{dir}/mailbox.sock")
}

both_engines!(
    the_servers_own_refusals_carry_the_error_body,
    config = tcp_and_socket
);
