//! Revision 2026-07-28 and its tasks extension, driven by the official Rust SDK (`rmcp` 3.11) as
//! a client: it discovers the server, asks for the extension with every request, and runs
//! `send_task` as a task that a native worker answers.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, GetTaskParams, Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{object, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{json, Value};

use crate::common::*;

/// A 2026-07-28 client of `app` with `token`; with `tasks`, it asks for the tasks extension.
async fn client(app: &Api, token: &str, tasks: bool) -> RunningService<RoleClient, ClientConfig> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.address))
        .auth_header(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    let mut capabilities = ClientCapabilities::builder();
    if tasks {
        capabilities = capabilities.enable_tasks();
    }
    let info = ClientConfig::new(capabilities.build(), Implementation::from_build_env());
    let mode = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    info.serve_with_lifecycle(transport, mode)
        .await
        .expect("discovery of a 2026-07-28 server")
}

fn send(text: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("send_task")
        .with_arguments(object!({"recipient": "bob", "intent_text": text}))
}

/// bob leases the next task natively and answers it with `body` (its result fields).
async fn answer(app: &Api, mut body: Value) -> String {
    let (id, lease) = app.lease_some(&app.bob()).await;
    body["task_id"] = json!(id);
    body["lease_id"] = lease["lease_id"].clone();
    app.post_result(&app.bob(), &body).await.expect(201);
    id
}

both_engines!(the_rust_sdk_runs_send_task_as_a_task_of_the_tasks_extension);
async fn the_rust_sdk_runs_send_task_as_a_task_of_the_tasks_extension(app: TestApp) {
    let alice = client(&app, &app.alice(), true).await;
    let tools = alice.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 8, "{tools:?}");

    let CallToolResponse::Task(created) = alice.call_tool_once(send("via rmcp")).await.unwrap()
    else {
        panic!("send_task with the tasks extension answers a task");
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    let id = created.task.task_id.clone();
    let ok = json!({"status": "ok", "content": [{"type": "text", "text": "done by bob"}]});
    assert_eq!(answer(&app, ok).await, id);
    let got = alice
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap();
    let TaskPayload::Completed { result } = got.task.payload else {
        panic!("completed with its result: {got:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).unwrap();
    let text = serde_json::to_value(&result.content).unwrap();
    assert_eq!(text[0]["text"], "done by bob", "{text}");
    assert_eq!(
        app.status_ok(&id).await["state"],
        "resolved",
        "read, it is delivered"
    );

    // An error result fails the task with its text.
    let CallToolResponse::Task(failing) = alice.call_tool_once(send("will fail")).await.unwrap()
    else {
        panic!("a task");
    };
    answer(
        &app,
        json!({"status": "error", "error_message": "no stock"}),
    )
    .await;
    let got = alice
        .get_task(GetTaskParams::new(failing.task.task_id.clone()))
        .await
        .unwrap();
    let TaskPayload::Failed { error } = got.task.payload else {
        panic!("failed: {got:?}");
    };
    assert_eq!(error["message"], "no stock");

    // Cancelled, and an unknown task is an error.
    let CallToolResponse::Task(doomed) = alice.call_tool_once(send("cancel me")).await.unwrap()
    else {
        panic!("a task");
    };
    let doomed = doomed.task.task_id;
    alice
        .cancel_task(CancelTaskParams::new(doomed.clone()))
        .await
        .unwrap();
    let got = alice.get_task(GetTaskParams::new(doomed)).await.unwrap();
    assert_eq!(got.task.status(), TaskStatus::Cancelled);
    let unknown = uuid::Uuid::new_v4().to_string();
    assert!(alice.get_task(GetTaskParams::new(unknown)).await.is_err());
    alice.cancel().await.unwrap();

    // Without the extension in its capabilities, the same call is an ordinary tool call.
    let plain = client(&app, &app.alice(), false).await;
    let CallToolResponse::Complete(done) = plain.call_tool_once(send("no task")).await.unwrap()
    else {
        panic!("without the extension, no task");
    };
    assert_eq!(done.structured_content.unwrap()["kind"], "a2a_task_queued");
    plain.cancel().await.unwrap();
}
