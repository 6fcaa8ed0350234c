//! Every request with a NUL character that the NUL test sends through an HTTP client: the
//! native API's JSON bodies, query parameters and paths, the facade's JSON-RPC params and
//! HTTP+JSON binding, and the dashboard's forms. Each would be allowed without its NUL.

use serde_json::{json, Value};

use super::dashboard::{csrf_of, form};
use super::facade::{a2a_request, message, Binding};
use super::kit::Req;
use super::world::Fix;
use crate::common::{result, task, Resp};

/// What a refusal of a NUL looks like on each surface.
#[derive(Clone, Copy, Debug)]
pub enum Class {
    /// 400 with the native body, code `invalid_request`.
    Native,
    /// JSON-RPC: HTTP 200 and error -32602.
    Rpc,
    /// Any 400 (the A2A HTTP+JSON binding, the dashboard, a raw request).
    Http400,
    /// A JSON-RPC endpoint's path: HTTP 400, or -32602.
    Either,
}

pub fn refused(class: Class, r: &Resp) -> bool {
    let rpc = r.status == 200 && r.body["error"]["code"] == -32602;
    match class {
        Class::Native => r.status == 400 && r.body["code"] == "invalid_request",
        Class::Rpc => rpc,
        Class::Http400 => r.status == 400,
        Class::Either => r.status == 400 || rpc,
    }
}

pub type Case = (String, Class, Req, &'static str);

/// Every request with a NUL, aimed at `fix`; the last field says whose token carries it (`s`
/// the sender, `r` the recipient, `o` the operator, `d` the operator's dashboard session, `-`
/// none).
pub fn cases(fix: &Fix, ops: &str) -> Vec<Case> {
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
    let repair =
        |reason: &str, command: Value| json!({"task_id": f, "reason": reason, "command": command});
    let requeue = json!({"action": "requeue", "duplicate_risk": "operator_accepted"});
    let mut cases: Vec<Case> = vec![];
    let mut add = |name: &str, class: Class, req: Req, token: &'static str| {
        cases.push((name.to_owned(), class, req, token));
    };
    use Class::*;
    // JSON bodies of the native API.
    add(
        "send intent_text",
        Native,
        Req::post("/a2a/tasks", &with("intent_text", json!(nul))),
        "s",
    );
    add(
        "send task_kind",
        Native,
        Req::post("/a2a/tasks", &with("task_kind", json!(nul))),
        "s",
    );
    add(
        "send text content",
        Native,
        Req::post(
            "/a2a/tasks",
            &with("content", json!([{"type": "text", "text": nul}])),
        ),
        "s",
    );
    add(
        "send json content value",
        Native,
        Req::post(
            "/a2a/tasks",
            &with("content", json!([{"type": "json", "value": {"k": [nul]}}])),
        ),
        "s",
    );
    add(
        "send json content key",
        Native,
        Req::post(
            "/a2a/tasks",
            &with("content", json!([{"type": "json", "value": {nul: 1}}])),
        ),
        "s",
    );
    add(
        "send context_id",
        Native,
        Req::post("/a2a/tasks", &with("context_id", json!(nul))),
        "s",
    );
    add(
        "send idempotency key",
        Native,
        Req::post(
            "/a2a/tasks",
            &with(
                "idempotency",
                json!({"duplicate_safety": "idempotent", "key": nul}),
            ),
        ),
        "s",
    );
    add(
        "send metadata",
        Native,
        Req::post("/a2a/tasks", &with("metadata", json!({"m": nul}))),
        "s",
    );
    add(
        "send claimed sender",
        Native,
        Req::post("/a2a/tasks", &with("sender", json!(format!("{s}\u{0}")))),
        "s",
    );
    add(
        "send unknown field",
        Native,
        Req::post("/a2a/tasks", &with("note", json!(nul))),
        "s",
    );
    add(
        "batch",
        Native,
        Req::post(
            "/a2a/tasks/batch",
            &json!({"tasks": [with("intent_text", json!(nul))]}),
        ),
        "s",
    );
    add(
        "result content",
        Native,
        Req::post("/a2a/results", &answer),
        "r",
    );
    add(
        "result error_message",
        Native,
        Req::post("/a2a/results", &failed),
        "r",
    );
    add(
        "cancel reason",
        Native,
        Req::post(format!("/a2a/tasks/{q}/cancel"), &json!({"reason": nul})),
        "s",
    );
    add(
        "repair reason",
        Native,
        Req::post("/a2a/repair", &repair(nul, requeue.clone())),
        "o",
    );
    add(
        "force_error message",
        Native,
        Req::post(
            "/a2a/repair",
            &repair("stuck", json!({"action": "force_error", "message": nul})),
        ),
        "o",
    );
    add(
        "heartbeat lease_id",
        Native,
        Req::post(
            format!("/a2a/tasks/{f}/heartbeat"),
            &json!({"lease_id": nul}),
        ),
        "r",
    );
    add(
        "retry-stale body",
        Native,
        Req::post(
            "/a2a/retry-stale",
            &json!({"enabled": true, "min_lease_age_ms": 0, "note": nul}),
        ),
        "o",
    );
    // Query parameters and paths of the native API.
    for (name, path, token) in [
        ("list sender", format!("/a2a/tasks?sender={s}%00"), "o"),
        (
            "list context_id",
            "/a2a/tasks?context_id=%00x".to_owned(),
            "o",
        ),
        (
            "list task_kind",
            "/a2a/tasks?task_kind=k%00".to_owned(),
            "o",
        ),
        ("list cursor", "/a2a/tasks?cursor=%00".to_owned(), "o"),
        (
            "lease recipient",
            format!("/a2a/tasks/next?recipient={r}%00"),
            "r",
        ),
        ("queue state", "/a2a/queue?state=queued%00".to_owned(), "o"),
        (
            "audit kind",
            "/audit/recent?kind=capability_check%00".to_owned(),
            "o",
        ),
        (
            "children state",
            format!("/a2a/tasks/{q}/children?state=queued%00"),
            "o",
        ),
        ("status path", "/a2a/tasks/%00".to_owned(), "o"),
    ] {
        add(name, Native, Req::get(path), token);
    }
    add(
        "cancel path",
        Native,
        Req::post(format!("/a2a/tasks/{q}%00/cancel"), &json!({})),
        "s",
    );
    add(
        "agent card path",
        Http400,
        Req::get(format!("/a2a/agents/{r}%00/.well-known/agent-card.json")),
        "-",
    );
    // The facade: JSON-RPC params and the HTTP+JSON binding.
    let msg = |m: Value| json!({"message": m, "configuration": {"returnImmediately": true}});
    let set = |k: &str, v: Value| {
        let mut m = message("x");
        m[k] = v;
        m
    };
    let rpc_params: Vec<(&str, &str, Value)> = vec![
        ("SendMessage text part", "SendMessage", msg(message(nul))),
        (
            "SendMessage messageId",
            "SendMessage",
            msg(set("messageId", json!(nul))),
        ),
        (
            "SendMessage contextId",
            "SendMessage",
            msg(set("contextId", json!(nul))),
        ),
        (
            "SendMessage metadata",
            "SendMessage",
            msg(set("metadata", json!({"note": nul}))),
        ),
        (
            "SendMessage data value",
            "SendMessage",
            msg(json!({"messageId": "d1", "role":
            "ROLE_USER", "parts": [{"data": {"k": nul}}]})),
        ),
        (
            "SendMessage data key",
            "SendMessage",
            msg(json!({"messageId": "d2", "role":
            "ROLE_USER", "parts": [{"data": {nul: 1}}]})),
        ),
        ("GetTask id", "GetTask", json!({"id": nul})),
        (
            "CancelTask id",
            "CancelTask",
            json!({"id": format!("{q}\u{0}")}),
        ),
        (
            "ListTasks contextId",
            "ListTasks",
            json!({"contextId": nul}),
        ),
    ];
    for (name, method, params) in rpc_params {
        add(
            &format!("JSON-RPC {name}"),
            Rpc,
            a2a_request(Binding::JsonRpc, r, method, params),
            "s",
        );
    }
    add(
        "HTTP+JSON message:send",
        Http400,
        a2a_request(Binding::HttpJson, r, "SendMessage", msg(message(nul))),
        "s",
    );
    add(
        "HTTP+JSON list contextId",
        Http400,
        Req::get(format!("/a2a/agents/{r}/tasks?contextId=%00")).header("A2A-Version", "1.0"),
        "s",
    );
    add(
        "HTTP+JSON task path",
        Http400,
        Req::get(format!("/a2a/agents/{r}/tasks/{q}%00")).header("A2A-Version", "1.0"),
        "s",
    );
    add(
        "JSON-RPC agent path",
        Either,
        a2a_request(
            Binding::JsonRpc,
            &format!("{r}%00"),
            "GetTask",
            json!({"id": q}),
        ),
        "s",
    );
    // The dashboard, from an operator's session.
    let csrf = csrf_of(ops);
    let target = format!("{f}:{}", fix.lease);
    add(
        "dashboard sign-in token",
        Http400,
        form("/dashboard/login", &[("token", nul)]),
        "-",
    );
    add(
        "dashboard search",
        Http400,
        Req::get("/dashboard/tasks?sender=%00"),
        "d",
    );
    add(
        "dashboard task path",
        Http400,
        Req::get("/dashboard/tasks/%00"),
        "d",
    );
    add(
        "dashboard cancel reason",
        Http400,
        form(
            &format!("/dashboard/tasks/{q}/cancel"),
            &[("csrf", &csrf), ("reason", nul)],
        ),
        "d",
    );
    add(
        "dashboard force_error message",
        Http400,
        form(
            "/dashboard/leases/act",
            &[
                ("csrf", &csrf),
                ("action", "force_error"),
                ("message", nul),
                ("task", &target),
            ],
        ),
        "d",
    );
    // Media types are case-insensitive: the same forms and a JSON body, their type in capitals.
    let shouted = |ct: &str| match ct {
        "application/x-www-form-urlencoded" => Some("Application/X-WWW-Form-Urlencoded"),
        "application/json" => Some("Application/JSON; Charset=UTF-8"),
        _ => None,
    };
    let capitals: Vec<Case> = cases
        .iter()
        .filter(|c| c.0 == "send intent_text" || c.0.starts_with("dashboard"))
        .filter_map(|(name, class, req, who)| {
            let content_type = shouted(req.content_type?)?;
            let req = Req {
                content_type: Some(content_type),
                ..req.clone()
            };
            Some((
                format!("{name}, its media type in capitals"),
                *class,
                req,
                *who,
            ))
        })
        .collect();
    cases.extend(capitals);
    cases
}
