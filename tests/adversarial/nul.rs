//! A NUL character (U+0000) anywhere in a request (a query parameter, a path, a header value,
//! any string inside a JSON body, JSON-RPC params included, a dashboard form) is 400
//! `invalid_request` (-32602 on JSON-RPC) on both engines, before anything is written: never a
//! 5xx, never a change. Each request would otherwise be allowed: only the NUL is wrong.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::dashboard::with_session;
use super::kit::*;
use super::nul_cases::{cases, refused, Class};
use super::world::{audit_bounded, fixture, snapshot, unchanged, Snap};
use crate::common::{full_ops, task, Api, Resp, TestApp};

/// A whole HTTP/1.1 request written on a socket as it is (clients refuse to send a NUL in a
/// header), and its answer.
async fn raw_http(api: &Api, request: Vec<u8>) -> Resp {
    let addr = api.address.trim_start_matches("http://").to_owned();
    let what = "a raw request".to_owned();
    let io = async {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        s.write_all(&request).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    };
    let out = match tokio::time::timeout(std::time::Duration::from_secs(10), io).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out).into_owned(),
        other => format!("HTTP/1.1 000 transport error {other:?}\r\n\r\n"),
    };
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let text = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default()
        .to_owned();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp {
        what,
        status,
        headers: Default::default(),
        text,
        body,
    }
}

fn raw_request(method: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

both_engines!(a_nul_anywhere_is_invalid_request);
async fn a_nul_anywhere_is_invalid_request(app: TestApp) {
    let mut judge = Judge::default();
    let ops = full_ops(&app);
    let mut n = 0;
    let mut fix = fixture(&app, n).await;
    let mut before = snapshot(&app).await;
    for i in 0..cases(&fix, &ops).len() {
        let (name, class, req, who) = cases(&fix, &ops).swap_remove(i);
        let (st, rt) = (&fix.sender_token, &fix.recipient_token);
        let (req, auth) = match who {
            "s" => (req, Some(format!("Bearer {st}"))),
            "r" => (req, Some(format!("Bearer {rt}"))),
            "o" => (req, Some(format!("Bearer {ops}"))),
            "d" => (with_session(req, Some(&ops)), None),
            _ => (req, None),
        };
        let r = call(&app, &req, auth.as_deref()).await;
        if !check(&mut judge, &app, &name, class, &r, &mut before).await {
            // A NUL that got through spent the fixture: the next case gets a fresh one.
            n += 1;
            fix = fixture(&app, n).await;
            before = snapshot(&app).await;
        }
    }
    let (st, s, r, q) = (&fix.sender_token, &fix.sender, &fix.recipient, &fix.queued);
    let nul = "a\u{0}b";
    // Header values and a literal NUL in the request line, written on the socket.
    let body = serde_json::to_vec(&task(s, r)).unwrap();
    let bearer = |t: &str| format!("Bearer {t}");
    let json_ct = ("Content-Type", "application/json".to_owned());
    let raws: Vec<(&str, Vec<u8>)> = vec![
        (
            "Idempotency-Key header",
            raw_request(
                "POST",
                "/a2a/tasks",
                &[
                    ("Authorization", bearer(st)),
                    json_ct.clone(),
                    ("Idempotency-Key", nul.into()),
                ],
                &body,
            ),
        ),
        (
            "another header",
            raw_request(
                "POST",
                "/a2a/tasks",
                &[
                    ("Authorization", bearer(st)),
                    json_ct.clone(),
                    ("X-Note", nul.into()),
                ],
                &body,
            ),
        ),
        (
            "Authorization header",
            raw_request(
                "POST",
                "/a2a/tasks",
                &[
                    ("Authorization", format!("{}\u{0}", bearer(st))),
                    json_ct.clone(),
                ],
                &body,
            ),
        ),
        (
            "A2A-Version header",
            raw_request(
                "POST",
                &format!("/a2a/agents/{r}/jsonrpc"),
                &[
                    ("Authorization", bearer(st)),
                    json_ct.clone(),
                    ("A2A-Version", "1.0\u{0}".into()),
                ],
                &serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                "params": {}}))
                .unwrap(),
            ),
        ),
        (
            "dashboard cookie",
            raw_request(
                "GET",
                "/dashboard",
                &[("Cookie", format!("a2a_dashboard={ops}\u{0}"))],
                b"",
            ),
        ),
        (
            "request path",
            raw_request(
                "GET",
                &format!("/a2a/tasks/{q}\u{0}"),
                &[("Authorization", bearer(&ops))],
                b"",
            ),
        ),
        (
            "raw byte in a JSON string",
            raw_request(
                "POST",
                "/a2a/tasks",
                &[("Authorization", bearer(st)), json_ct],
                &[
                    br#"{"id":"6b0f3d3e-55b4-4a83-9b42-6a8f4f1a2b3c","sender":""#.as_slice(),
                    s.as_bytes(),
                    br#"","recipient":""#,
                    r.as_bytes(),
                    b"\",\"intent_text\":\"a\x00b\"}",
                ]
                .concat(),
            ),
        ),
    ];
    for (name, bytes) in raws {
        let r = raw_http(&app, bytes).await;
        check(&mut judge, &app, name, Class::Http400, &r, &mut before).await;
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("a NUL in a request");
}

/// Judges one answer; `false` when the request changed the mailbox.
async fn check(
    judge: &mut Judge,
    app: &Api,
    name: &str,
    class: Class,
    r: &Resp,
    before: &mut Snap,
) -> bool {
    let case = format!("NUL in {name}");
    judge.no_5xx(&case, r);
    judge.check(
        refused(class, r),
        &case,
        format!(
            "expected {class:?} refusal, got {} {}",
            r.status,
            short(&r.text)
        ),
    );
    let after = snapshot(app).await;
    unchanged(judge, &case, before, &after);
    let same = *before == after;
    *before = after;
    same
}
