//! The MCP endpoint on the wire: sessions, the negotiated revision, the gates of the native API
//! behind every tool, bounded input, and `tasks/result` as a stream of events.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

/// A client of `POST /mcp` with one token and, once initialized, a session.
pub struct Mcp<'a> {
    pub api: &'a Api,
    pub token: String,
    pub session: Option<String>,
}

impl<'a> Mcp<'a> {
    /// Initializes at `version`: the client and `initialize`'s result.
    pub async fn init(api: &'a Api, token: &str, version: &str) -> (Mcp<'a>, Value) {
        let mut mcp = Mcp {
            api,
            token: token.to_owned(),
            session: None,
        };
        let params = json!({"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}});
        let r = mcp.post(&rpc("initialize", params)).await;
        let result = r.expect(200)["result"].clone();
        mcp.session = r.header("mcp-session-id").map(str::to_owned);
        assert!(
            mcp.session.is_some(),
            "initialize issues a session: {:?}",
            r.headers
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(mcp.post(&note).await.status, 202);
        (mcp, result)
    }

    /// Posts one message with the session (if any).
    pub async fn post(&self, body: &Value) -> Resp {
        let mut headers = vec![("Accept", "application/json, text/event-stream")];
        if let Some(s) = &self.session {
            headers.push(("Mcp-Session-Id", s));
        }
        self.api
            .post_with("/mcp", &self.token, body, &headers)
            .await
    }

    /// A request's `result` (it must succeed).
    pub async fn result(&self, method: &str, params: Value) -> Value {
        let r = self.post(&rpc(method, params)).await;
        let b = r.expect(200);
        assert!(b.get("error").is_none(), "{method}: {}", r.text);
        b["result"].clone()
    }

    /// A request's JSON-RPC error code (it must fail with HTTP 200).
    pub async fn error_code(&self, method: &str, params: Value) -> i64 {
        let r = self.post(&rpc(method, params)).await;
        let code = r.expect(200)["error"]["code"].as_i64();
        code.unwrap_or_else(|| panic!("{method}: expected an error, got {}", r.text))
    }

    /// A tool's `CallToolResult`.
    pub async fn tool(&self, name: &str, args: Value) -> Value {
        self.result("tools/call", json!({"name": name, "arguments": args}))
            .await
    }
}

pub fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

both_engines!(a_session_is_required_and_one_this_mailbox_did_not_issue_is_404);
async fn a_session_is_required_and_one_this_mailbox_did_not_issue_is_404(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let list = rpc("tools/list", json!({}));
    let mut none = Mcp {
        api: &app,
        token: app.alice(),
        session: None,
    };
    assert_eq!(none.post(&list).await.status, 400, "no session");
    none.session = Some("0.00000000000000000000000000000000.forged".into());
    assert_eq!(none.post(&list).await.status, 404, "a forged session");
    // alice's session in bob's hands names nobody bob is.
    let stolen = Mcp {
        api: &app,
        token: app.bob(),
        session: alice.session.clone(),
    };
    assert_eq!(
        stolen.post(&list).await.status,
        404,
        "another caller's session"
    );
    assert_eq!(alice.post(&list).await.status, 200);
    // No token at all: 401 at the HTTP level, naming the scheme.
    let r = app
        .raw(
            Method::POST,
            "/mcp",
            None,
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await;
    assert_error(&r, 401, "unauthenticated");
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
}

both_engines!(the_revision_is_negotiated_and_2025_06_18_has_tools_but_no_tasks);
async fn the_revision_is_negotiated_and_2025_06_18_has_tools_but_no_tasks(app: TestApp) {
    let (old, init) = Mcp::init(&app, &app.alice(), "2025-06-18").await;
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert!(init["capabilities"]["tools"].is_object());
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
    let tools = old.result("tools/list", json!({})).await;
    assert_eq!(tools["tools"].as_array().unwrap().len(), 8);
    assert!(tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("execution").is_none()));
    assert_eq!(old.error_code("tasks/list", json!({})).await, -32601);

    let (_, init) = Mcp::init(&app, &app.alice(), "2024-11-05").await;
    assert_eq!(
        init["protocolVersion"], "2025-11-25",
        "an unknown revision gets the newest"
    );
    assert!(init["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
}

both_engines!(a_tool_has_the_native_gates_and_audit_rows_and_an_unknown_one_is_32602);
async fn a_tool_has_the_native_gates_and_audit_rows_and_an_unknown_one_is_32602(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    assert_eq!(
        alice
            .error_code("tools/call", json!({"name": "rm_rf", "arguments": {}}))
            .await,
        -32602
    );
    let refused = alice
        .tool(
            "send_task",
            json!({"recipient": "carol", "intent_text": "x"}),
        )
        .await;
    assert_eq!(refused["isError"], true);
    assert_eq!(refused["structuredContent"]["code"], "capability_missing");
    // Posing as another sender is refused as natively.
    let posing = alice
        .tool(
            "send_task",
            json!({"recipient": "bob", "intent_text": "x", "sender": "bob"}),
        )
        .await;
    assert_eq!(posing["structuredContent"]["code"], "sender_mismatch");
    // Bad input: the native refusal, nothing queued.
    let bad = alice
        .tool(
            "send_task",
            json!({"recipient": "not an agent", "intent_text": "x"}),
        )
        .await;
    assert_eq!(bad["structuredContent"]["code"], "invalid_request");
    let bad = alice.tool("next_task", json!({"wait_ms": 30001})).await;
    assert_eq!(bad["structuredContent"]["code"], "invalid_request");
    app.assert_empty("refused tool calls queue nothing").await;
    // The refusal was audited like a native one.
    let rows = app
        .get("/audit/recent?limit=100&kind=capability_check", &app.ops())
        .await;
    let refused_rows = rows.expect(200)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["issuer"] == "alice" && e["kind"]["passed"] == false)
        .count();
    assert_eq!(refused_rows, 1, "{}", rows.text);
}

both_engines!(input_that_is_not_one_json_rpc_message_is_refused_and_notifications_get_202);
async fn input_that_is_not_one_json_rpc_message_is_refused_and_notifications_get_202(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let session = alice.session.clone().unwrap();
    let send = |body: &'static [u8]| {
        let headers = [
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
        ];
        let app = &app;
        async move {
            let auth = format!("Bearer {}", app.alice());
            app.raw_with(
                Method::POST,
                "/mcp",
                Some(&auth),
                Some("application/json"),
                Some(body.to_vec()),
                &headers,
            )
            .await
        }
    };
    let r = send(b"{not json").await;
    assert_eq!(
        (r.status, r.body["error"]["code"].as_i64()),
        (400, Some(-32700))
    );
    let r = send(br#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#).await;
    assert_eq!(
        (r.status, r.body["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    let r = send(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}"#).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r =
        send(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": "\u0000"}}"#).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = send(br#"{"jsonrpc": "2.0", "method": "notifications/cancelled"}"#).await;
    assert_eq!(r.status, 202);
    let r = send(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#).await;
    assert_eq!(r.expect(200)["result"], json!({}));
    // A body over the service's limit is the native 413.
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "send_task", "arguments": {"recipient": "bob", "intent_text": "x".repeat(2 << 20)}}});
    assert_error(&alice.post(&big).await, 413, "payload_too_large");
}

both_engines!(only_post_is_served_on_the_endpoint);
async fn only_post_is_served_on_the_endpoint(app: TestApp) {
    for method in [Method::GET, Method::DELETE] {
        let auth = format!("Bearer {}", app.alice());
        let r = app.raw(method, "/mcp", Some(&auth), None, None).await;
        assert_error(&r, 405, "method_not_allowed");
        assert_eq!(r.header("allow"), Some("POST"));
    }
}

/// A 2026-07-28 request of `method`: its context in `_meta`, with the tasks extension if `tasks`.
pub fn modern(method: &str, mut params: Value, version: &str, tasks: bool) -> Value {
    let extensions = if tasks {
        json!({"io.modelcontextprotocol/tasks": {}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    });
    rpc(method, params)
}

both_engines!(revision_2026_07_28_needs_no_session_and_refuses_what_does_not_agree);
async fn revision_2026_07_28_needs_no_session_and_refuses_what_does_not_agree(app: TestApp) {
    let alice = Mcp {
        api: &app,
        token: app.alice(),
        session: None,
    };
    let found = alice
        .post(&modern("server/discover", json!({}), "2026-07-28", false))
        .await;
    let result = &found.expect(200)["result"];
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    // An unknown revision names the ones served.
    let r = alice
        .post(&modern("tools/list", json!({}), "2099-01-01", false))
        .await;
    let e = &r.expect(400)["error"];
    assert_eq!(e["code"], -32022);
    assert_eq!(e["data"]["supported"], json!(["2026-07-28"]));
    // A task method without the extension in the request's capabilities.
    let id = json!({"taskId": uuid::Uuid::new_v4()});
    let r = alice
        .post(&modern("tasks/get", id.clone(), "2026-07-28", false))
        .await;
    assert_eq!(r.expect(400)["error"]["code"], -32021);
    // tasks/list and tasks/result are not in the extension.
    let r = alice
        .post(&modern("tasks/list", json!({}), "2026-07-28", true))
        .await;
    assert_eq!(r.expect(404)["error"]["code"], -32601);
    // Headers a proxy routes by must say what the body says.
    let call = modern(
        "tools/call",
        json!({"name": "get_task", "arguments": {"task_id": uuid::Uuid::new_v4()}}),
        "2026-07-28",
        true,
    );
    let lying = [("Mcp-Method", "tools/list")];
    let r = app.post_with("/mcp", &alice.token, &call, &lying).await;
    assert_eq!(r.expect(400)["error"]["code"], -32020);
    let lying = [("Mcp-Name", "send_task")];
    let r = app.post_with("/mcp", &alice.token, &call, &lying).await;
    assert_eq!(r.expect(400)["error"]["code"], -32020);
    let honest = [("Mcp-Method", "tools/call"), ("Mcp-Name", "get_task")];
    let r = app.post_with("/mcp", &alice.token, &call, &honest).await;
    let result = &r.expect(200)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["code"], "not_found");
}
