//! A NUL character (U+0000) anywhere in a request (a query parameter, a path, a header value,
//! any string inside a JSON body, JSON-RPC params included, a dashboard form) is 400
//! `invalid_request` (-32602 on JSON-RPC) on both engines, before anything is written: never a
//! 5xx, never a change. Each request would otherwise be allowed: only the NUL is wrong.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::dashboard::{csrf_of, form, with_session};
use super::facade::{a2a_request, message, Binding};
use super::kit::*;
use super::world::{audit_bounded, fixture, snapshot, unchanged, Fix, Snap};
use crate::common::{full_ops, result, task, Api, Resp, TestApp};

/// What a refusal of a NUL looks like on each surface.
#[derive(Clone, Copy, Debug)]
enum Class {
    /// 400 with the native body, code `invalid_request`.
    Native,
    /// JSON-RPC: HTTP 200 and error -32602.
    Rpc,
    /// Any 400 (the A2A HTTP+JSON binding, the dashboard, a raw request).
    Http400,
    /// A JSON-RPC endpoint's path: HTTP 400, or -32602.
    Either,
}

fn refused(class: Class, r: &Resp) -> bool {
    let rpc = r.status == 200 && r.body["error"]["code"] == -32602;
    match class {
        Class::Native => r.status == 400 && r.body["code"] == "invalid_request",
        Class::Rpc => rpc,
        Class::Http400 => r.status == 400,
        Class::Either => r.status == 400 || rpc,
    }
}

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
    let status = out.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let text = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default().to_owned();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp { what, status, headers: Default::default(), text, body }
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

type Case = (String, Class, Req, &'static str);

/// Every request with a NUL, aimed at `fix`; the last field says whose token carries it (`s`
/// the sender, `r` the recipient, `o` the operator, `d` the operator's dashboard session, `-`
/// none).
fn cases(fix: &Fix, ops: &str) -> Vec<Case> {
    let (s, r, q, f) = (&fix.sender, &fix.recipient, &fix.queued, &fix.in_flight);
    let nul = "a\u{0}b";
    let with = |k: &str, v: Value| {
        let mut t = task(s, r);
        t[k] = v;
        t
    };
    let mut answer = result(f, "ok", nul);
    answer["lease_id"] = json!(fix.lease);
    let mut failed = result(f, "error", "x");
    failed["error_message"] = json!(nul);
    failed["lease_id"] = json!(fix.lease);
    let repair = |reason: &str, command: Value| {
        json!({"task_id": f, "reason": reason, "command": command})
    };
    let requeue = json!({"action": "requeue", "duplicate_risk": "operator_accepted"});
    let mut cases: Vec<Case> = vec![];
    let mut add = |name: &str, class: Class, req: Req, token: &'static str| {
        cases.push((name.to_owned(), class, req, token));
    };
    use Class::*;
    // JSON bodies of the native API.
    add("send intent_text", Native, Req::post("/a2a/tasks", &with("intent_text", json!(nul))), "s");
    add("send task_kind", Native, Req::post("/a2a/tasks", &with("task_kind", json!(nul))), "s");
    add("send text content", Native, Req::post("/a2a/tasks",
        &with("content", json!([{"type": "text", "text": nul}]))), "s");
    add("send json content value", Native, Req::post("/a2a/tasks",
        &with("content", json!([{"type": "json", "value": {"k": [nul]}}]))), "s");
    add("send json content key", Native, Req::post("/a2a/tasks",
        &with("content", json!([{"type": "json", "value": {nul: 1}}]))), "s");
    add("send context_id", Native, Req::post("/a2a/tasks", &with("context_id", json!(nul))), "s");
    add("send idempotency key", Native, Req::post("/a2a/tasks", &with("idempotency",
        json!({"duplicate_safety": "idempotent", "key": nul}))), "s");
    add("send metadata", Native, Req::post("/a2a/tasks", &with("metadata", json!({"m": nul}))), "s");
    add("send claimed sender", Native, Req::post("/a2a/tasks",
        &with("sender", json!(format!("{s}\u{0}")))), "s");
    add("send unknown field", Native, Req::post("/a2a/tasks", &with("note", json!(nul))), "s");
    add("batch", Native, Req::post("/a2a/tasks/batch",
        &json!({"tasks": [with("intent_text", json!(nul))]})), "s");
    add("result content", Native, Req::post("/a2a/results", &answer), "r");
    add("result error_message", Native, Req::post("/a2a/results", &failed), "r");
    add("cancel reason", Native, Req::post(format!("/a2a/tasks/{q}/cancel"),
        &json!({"reason": nul})), "s");
    add("repair reason", Native, Req::post("/a2a/repair", &repair(nul, requeue.clone())), "o");
    add("force_error message", Native, Req::post("/a2a/repair",
        &repair("stuck", json!({"action": "force_error", "message": nul}))), "o");
    add("heartbeat lease_id", Native, Req::post(format!("/a2a/tasks/{f}/heartbeat"),
        &json!({"lease_id": nul})), "r");
    add("retry-stale body", Native, Req::post("/a2a/retry-stale",
        &json!({"enabled": true, "min_lease_age_ms": 0, "note": nul})), "o");
    // Query parameters and paths of the native API.
    for (name, path, token) in [
        ("list sender", format!("/a2a/tasks?sender={s}%00"), "o"),
        ("list context_id", "/a2a/tasks?context_id=%00x".to_owned(), "o"),
        ("list task_kind", "/a2a/tasks?task_kind=k%00".to_owned(), "o"),
        ("list cursor", "/a2a/tasks?cursor=%00".to_owned(), "o"),
        ("lease recipient", format!("/a2a/tasks/next?recipient={r}%00"), "r"),
        ("queue state", "/a2a/queue?state=queued%00".to_owned(), "o"),
        ("audit kind", "/audit/recent?kind=capability_check%00".to_owned(), "o"),
        ("children state", format!("/a2a/tasks/{q}/children?state=queued%00"), "o"),
        ("status path", "/a2a/tasks/%00".to_owned(), "o"),
    ] {
        add(name, Native, Req::get(path), token);
    }
    add("cancel path", Native, Req::post(format!("/a2a/tasks/{q}%00/cancel"), &json!({})), "s");
    add("agent card path", Http400,
        Req::get(format!("/a2a/agents/{r}%00/.well-known/agent-card.json")), "-");
    // The facade: JSON-RPC params and the HTTP+JSON binding.
    let msg = |m: Value| json!({"message": m, "configuration": {"returnImmediately": true}});
    let set = |k: &str, v: Value| {
        let mut m = message("x");
        m[k] = v;
        m
    };
    let rpc_params: Vec<(&str, &str, Value)> = vec![
        ("SendMessage text part", "SendMessage", msg(message(nul))),
        ("SendMessage messageId", "SendMessage", msg(set("messageId", json!(nul)))),
        ("SendMessage contextId", "SendMessage", msg(set("contextId", json!(nul)))),
        ("SendMessage metadata", "SendMessage", msg(set("metadata", json!({"note": nul})))),
        ("SendMessage data value", "SendMessage", msg(json!({"messageId": "d1", "role":
            "ROLE_USER", "parts": [{"data": {"k": nul}}]}))),
        ("SendMessage data key", "SendMessage", msg(json!({"messageId": "d2", "role":
            "ROLE_USER", "parts": [{"data": {nul: 1}}]}))),
        ("GetTask id", "GetTask", json!({"id": nul})),
        ("CancelTask id", "CancelTask", json!({"id": format!("{q}\u{0}")})),
        ("ListTasks contextId", "ListTasks", json!({"contextId": nul})),
    ];
    for (name, method, params) in rpc_params {
        add(&format!("JSON-RPC {name}"), Rpc, a2a_request(Binding::JsonRpc, r, method, params), "s");
    }
    add("HTTP+JSON message:send", Http400,
        a2a_request(Binding::HttpJson, r, "SendMessage", msg(message(nul))), "s");
    add("HTTP+JSON list contextId", Http400,
        Req::get(format!("/a2a/agents/{r}/tasks?contextId=%00")).header("A2A-Version", "1.0"), "s");
    add("HTTP+JSON task path", Http400,
        Req::get(format!("/a2a/agents/{r}/tasks/{q}%00")).header("A2A-Version", "1.0"), "s");
    add("JSON-RPC agent path", Either, a2a_request(Binding::JsonRpc, &format!("{r}%00"),
        "GetTask", json!({"id": q})), "s");
    // The dashboard, from an operator's session.
    let csrf = csrf_of(ops);
    let target = format!("{f}:{}", fix.lease);
    add("dashboard sign-in token", Http400, form("/dashboard/login", &[("token", nul)]), "-");
    add("dashboard search", Http400, Req::get("/dashboard/tasks?sender=%00"), "d");
    add("dashboard task path", Http400, Req::get("/dashboard/tasks/%00"), "d");
    add("dashboard cancel reason", Http400, form(&format!("/dashboard/tasks/{q}/cancel"),
        &[("csrf", &csrf), ("reason", nul)]), "d");
    add("dashboard force_error message", Http400, form("/dashboard/leases/act",
        &[("csrf", &csrf), ("action", "force_error"), ("message", nul), ("task", &target)]), "d");
    cases
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
        ("Idempotency-Key header", raw_request("POST", "/a2a/tasks", &[("Authorization",
            bearer(st)), json_ct.clone(), ("Idempotency-Key", nul.into())], &body)),
        ("another header", raw_request("POST", "/a2a/tasks", &[("Authorization", bearer(st)),
            json_ct.clone(), ("X-Note", nul.into())], &body)),
        ("Authorization header", raw_request("POST", "/a2a/tasks", &[("Authorization",
            format!("{}\u{0}", bearer(st))), json_ct.clone()], &body)),
        ("A2A-Version header", raw_request("POST", &format!("/a2a/agents/{r}/jsonrpc"),
            &[("Authorization", bearer(st)), json_ct.clone(), ("A2A-Version", "1.0\u{0}".into())],
            &serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                "params": {}})).unwrap())),
        ("dashboard cookie", raw_request("GET", "/dashboard", &[("Cookie",
            format!("a2a_dashboard={ops}\u{0}"))], b"")),
        ("request path", raw_request("GET", &format!("/a2a/tasks/{q}\u{0}"),
            &[("Authorization", bearer(&ops))], b"")),
        ("raw byte in a JSON string", raw_request("POST", "/a2a/tasks",
            &[("Authorization", bearer(st)), json_ct],
            &[br#"{"id":"6b0f3d3e-55b4-4a83-9b42-6a8f4f1a2b3c","sender":""#.as_slice(),
              s.as_bytes(), br#"","recipient":""#, r.as_bytes(),
              b"\",\"intent_text\":\"a\x00b\"}"].concat())),
    ];
    for (name, bytes) in raws {
        let r = raw_http(&app, bytes).await;
        check(&mut judge, &app, name, Class::Http400, &r, &mut before).await;
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("a NUL in a request");
}

/// Judges one answer; `false` when the request changed the mailbox.
async fn check(judge: &mut Judge, app: &Api, name: &str, class: Class, r: &Resp, before: &mut Snap) -> bool {
    let case = format!("NUL in {name}");
    judge.no_5xx(&case, r);
    judge.check(
        refused(class, r),
        &case,
        format!("expected {class:?} refusal, got {} {}", r.status, short(&r.text)),
    );
    let after = snapshot(app).await;
    unchanged(judge, &case, before, &after);
    let same = *before == after;
    *before = after;
    same
}
