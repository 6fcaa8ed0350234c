//! What the fuzzer sends: a request as data (so that a failing one prints as a corpus entry and
//! replays), and a random request on each surface — the native API, the A2A facade on both
//! bindings, MCP (sessions and revision 2026-07-28), the dashboard's pages and forms, and every
//! GET route with random query strings — from a random kind of token. `${name}` in a path,
//! header or body stands for a value of the running world (a task id, a lease, a session).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fuzz_forms::{dashboard_form, mcp};
use super::fuzz_gen::*;
use super::kit::enc;

/// One request, replayable. `token` names a kind of bearer (see `fuzz::bearer`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FReq {
    pub token: String,
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl FReq {
    pub fn new(token: &str, method: &str, path: String) -> FReq {
        FReq {
            token: token.into(),
            method: method.into(),
            path,
            content_type: None,
            headers: Vec::new(),
            body: None,
        }
    }

    pub fn json(token: &str, path: String, body: String, rng: &mut Rng) -> FReq {
        FReq {
            content_type: json_media(rng),
            body: Some(body),
            ..FReq::new(token, "POST", path)
        }
    }

    /// The request as one line of a corpus file.
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("a request serializes")
    }
}

/// Every kind of bearer; the first ones more often.
pub const TOKENS: &[&str] = &[
    "sender",
    "operator",
    "wildcard",
    "recipient",
    "sender",
    "operator",
    "none",
    "expired",
    "forged",
    "capsless",
    "scoped",
    "scoped_op",
    "crit",
    "garbage",
];

/// The bearer of a request: most often the one a surface's operation is meant for (so that
/// it reaches the store), otherwise any kind.
fn bearer(rng: &mut Rng, meant: &'static str) -> &'static str {
    if rng.chance(55) {
        meant
    } else {
        TOKENS[rng.below(TOKENS.len())]
    }
}

/// Mutates a template, or fills its free-form values with random JSON.
pub fn body(rng: &mut Rng, template: &Value) -> String {
    match rng.below(10) {
        0..=4 => payload(rng, template),
        5..=8 => mutate(rng, template),
        _ => template.to_string(),
    }
}

/// The ids a request may aim at.
const IDS: &[&str] = &[
    "${queued}",
    "${in_flight}",
    "${pending}",
    "${resolved}",
    "${canceled}",
    "${new_id}",
];

pub fn id(rng: &mut Rng) -> String {
    if rng.chance(85) {
        (*rng.pick(IDS)).to_owned()
    } else {
        enc(&text(rng, 6).chars().take(3000).collect::<String>())
    }
}

/// A native task of the world's sender to its recipient.
pub fn native_task(rng: &mut Rng) -> Value {
    let mut t = json!({
        "id": "${new_id}", "sender": "${sender}", "recipient": "${recipient}",
        "intent_text": "fuzz", "context_id": "fuzz",
        "content": [{"type": "text", "text": "hi"}, {"type": "json", "value": "${payload}"}],
        "metadata": {"k": "${payload}"},
    });
    if rng.chance(40) {
        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "${new_id}"});
    }
    if rng.chance(20) {
        t["metadata"] = json!({"urn:a2a-mailbox:v1:a2a": {"message": "${payload}"}});
    }
    t
}

fn a2a_message() -> Value {
    json!({"messageId": "${new_id}", "role": "ROLE_USER", "contextId": "fuzz",
           "parts": [{"text": "hi"}, {"data": "${payload}"}], "metadata": {"k": "${payload}"}})
}

/// Times, well-formed or not.
const TIMES: &[&str] = &[
    "2025-11-25T12:00:00Z",
    "2025-11-25T12:00:00é1:00",
    "２０２５-11-25T12:00:00Z",
    "2025-11-25T12:00:00.123456789123Z",
    "2025-11-25T12:00:00€",
    "9999-12-31T23:59:59Z",
    "2025-13-45T25:61:61Z",
    "",
];

/// The params of an A2A method, and whether it is one of the facade's.
fn a2a_params(rng: &mut Rng, method: &str) -> Value {
    match method {
        "SendMessage" | "SendStreamingMessage" => json!({"message": a2a_message(),
            "configuration": {"returnImmediately": rng.chance(80), "historyLength": 1}}),
        "ListTasks" => json!({"pageSize": 10, "contextId": "fuzz",
            "status": "TASK_STATE_SUBMITTED", "statusTimestampAfter": *rng.pick(TIMES),
            "pageToken": "", "historyLength": 2, "includeArtifacts": true}),
        _ => json!({"id": id(rng), "historyLength": 1}),
    }
}

const A2A_METHODS: &[&str] = &[
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "message/send",
    "",
];

fn a2a_jsonrpc(rng: &mut Rng, token: &str) -> FReq {
    let method = *rng.pick(A2A_METHODS);
    let envelope = json!({"jsonrpc": "2.0", "id": 7, "method": method,
                          "params": a2a_params(rng, method)});
    let body = body(rng, &envelope);
    let mut r = FReq::json(token, "/a2a/agents/${recipient}/jsonrpc".into(), body, rng);
    if rng.chance(80) {
        r.headers.push(("A2A-Version".into(), "1.0".into()));
    }
    r
}

fn a2a_rest(rng: &mut Rng, token: &str) -> FReq {
    let base = "/a2a/agents/${recipient}";
    let send = a2a_params(rng, "SendMessage");
    let mut r = match rng.below(8) {
        0 | 1 => FReq::json(token, format!("{base}/message:send"), body(rng, &send), rng),
        2 => FReq::json(
            token,
            format!("{base}/message:stream"),
            body(rng, &send),
            rng,
        ),
        3 => {
            let names = [
                "pageSize",
                "pageToken",
                "contextId",
                "status",
                "statusTimestampAfter",
                "historyLength",
                "includeArtifacts",
            ];
            FReq::new(token, "GET", format!("{base}/tasks{}", query(rng, &names)))
        }
        4 => FReq::new(
            token,
            "GET",
            format!("{base}/tasks/{}{}", id(rng), query(rng, &["historyLength"])),
        ),
        5 => FReq::json(
            token,
            format!("{base}/tasks/{}:cancel", id(rng)),
            mutate(rng, &json!({"metadata": {}})),
            rng,
        ),
        6 => FReq::new(token, "GET", format!("{base}/tasks/{}:subscribe", id(rng))),
        _ => FReq::new(token, "GET", format!("{base}/.well-known/agent-card.json")),
    };
    if rng.chance(80) {
        r.headers.push(("A2A-Version".into(), "1.0".into()));
    }
    r
}

fn native_post(rng: &mut Rng, token: &str) -> FReq {
    let lease = json!({"lease_id": "${lease}"});
    let (path, template) = match rng.below(12) {
        0..=2 => ("/a2a/tasks".to_owned(), native_task(rng)),
        10 => (
            "/a2a/results/batch".to_owned(),
            json!({"results": [
                {"task_id": "${in_flight}", "lease_id": "${lease}", "status": "ok",
                 "content": [{"type": "json", "value": "${payload}"}]},
                {"task_id": id(rng), "status": "error", "error_message": "fuzz"}]}),
        ),
        11 => (
            "/a2a/tasks/heartbeat".to_owned(),
            json!({"leases": [{"task_id": "${in_flight}", "lease_id": "${lease}"},
                              {"task_id": id(rng), "lease_id": "${lease}"}]}),
        ),
        3 => (
            "/a2a/tasks/batch".to_owned(),
            json!({"tasks": [native_task(rng), native_task(rng)]}),
        ),
        4 => (
            "/a2a/results".to_owned(),
            json!({"task_id": "${in_flight}", "lease_id": "${lease}", "status": "ok",
                   "content": [{"type": "json", "value": "${payload}"}], "metadata": {}}),
        ),
        5 => (format!("/a2a/tasks/{}/heartbeat", id(rng)), lease),
        6 => (
            format!("/a2a/tasks/{}/cancel", id(rng)),
            json!({"reason": "fuzz"}),
        ),
        7 => (
            "/a2a/repair".to_owned(),
            json!({"task_id": id(rng), "reason": "fuzz", "expected_lease_id": "${lease}",
                   "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}}),
        ),
        8 => (
            "/a2a/retry-stale".to_owned(),
            json!({"enabled": true, "min_lease_age_ms": 0, "max_attempts": 3,
                   "max_requeues": 1, "scan_limit": 10}),
        ),
        _ => (
            (*rng.pick(&["/a2a/scheduler/tick", "/a2a/compact"])).to_owned(),
            json!({}),
        ),
    };
    let body = body(rng, &template);
    let mut r = FReq::json(token, path, body, rng);
    if rng.chance(15) {
        r.headers.push(("Idempotency-Key".into(), text(rng, 6)));
    }
    r
}

/// Every GET route with the names of its query parameters.
const GETS: &[(&str, &[&str])] = &[
    (
        "/a2a/tasks",
        &[
            "state",
            "role",
            "sender",
            "recipient",
            "parent",
            "context_id",
            "task_kind",
            "created_after_ms",
            "created_before_ms",
            "cursor",
            "limit",
        ],
    ),
    ("/a2a/tasks/${id}/children", &["state", "limit", "cursor"]),
    ("/a2a/tasks/${id}", &[]),
    ("/a2a/tasks/next", &["recipient", "wait_ms", "max", "attempt_id"]),
    ("/a2a/tasks/recent", &["limit"]),
    (
        "/a2a/queue",
        &["limit", "min_lease_age_ms", "deadline_within_ms", "state"],
    ),
    ("/a2a/results/next", &["wait_ms", "max", "attempt_id"]),
    ("/a2a/results/recent", &["limit"]),
    ("/audit/recent", &["limit", "since_ms", "kind"]),
    ("/healthz", &[]),
    ("/readyz", &[]),
    ("/version", &[]),
    ("/metrics", &[]),
    ("/dashboard", &[]),
    ("/dashboard/live", &[]),
    (
        "/dashboard/leases",
        &[
            "min_age_ms",
            "max_age_ms",
            "lessee",
            "recipient",
            "kind",
            "safety",
            "sort",
            "after",
        ],
    ),
    ("/dashboard/retry", &[]),
    (
        "/dashboard/tasks",
        &[
            "id",
            "sender",
            "recipient",
            "state",
            "context_id",
            "parent",
            "kind",
            "created",
            "result",
            "cursor",
        ],
    ),
    ("/dashboard/tasks/${id}", &[]),
    ("/dashboard/audit", &["kind", "task", "cursor", "limit"]),
    ("/dashboard/done", &[]),
    ("/dashboard/login", &["next"]),
];

fn get_route(rng: &mut Rng, token: &str) -> FReq {
    let (path, names) = *rng.pick(GETS);
    let path = path.replace("${id}", &id(rng));
    let mut q = query(rng, names);
    // A long-poll waits at most a moment here: the fuzzer has better things to do.
    if q.contains("wait_ms=") && rng.chance(80) {
        q = "?wait_ms=0".into();
    }
    FReq::new(token, "GET", format!("{path}{q}"))
}

/// One random request on a random surface.
pub fn request(rng: &mut Rng) -> FReq {
    let mut r = match rng.below(20) {
        0..=4 => {
            let meant = *rng.pick(&["sender", "sender", "recipient", "operator"]);
            let t = bearer(rng, meant);
            native_post(rng, t)
        }
        5..=8 => {
            let meant = *rng.pick(&["operator", "sender", "recipient"]);
            let t = bearer(rng, meant);
            get_route(rng, t)
        }
        9..=11 => {
            let t = bearer(rng, "sender");
            a2a_jsonrpc(rng, t)
        }
        12..=13 => {
            let t = bearer(rng, "sender");
            a2a_rest(rng, t)
        }
        14..=16 => {
            let meant = *rng.pick(&["sender", "recipient", "operator"]);
            let t = bearer(rng, meant);
            mcp(rng, t)
        }
        _ => {
            let t = bearer(rng, "operator");
            dashboard_form(rng, t)
        }
    };
    if rng.chance(8) {
        let odd = [
            ("Accept", "text/html"),
            ("Accept", "application/json;q=0"),
            ("Accept-Encoding", "gzip, br, zstd"),
            ("Cookie", "a2a_dashboard=x; a2a_dashboard=y"),
            ("X-Request-Id", "\u{e9}"),
            ("Origin", "null"),
            ("A2A-Version", "99.0"),
            ("Content-Encoding", "gzip"),
        ];
        let (k, v) = *rng.pick(&odd);
        r.headers.push((k.into(), v.into()));
    }
    r
}
