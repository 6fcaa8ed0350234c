//! A malformed time in a request, a non-ASCII character included, is refused (400 / -32602),
//! never a dropped connection.

use serde_json::json;

use super::facade::{a2a_request, Binding};
use super::kit::{call, Req};
use crate::common::*;

/// Malformed `statusTimestampAfter` values: non-ASCII characters where the parser looks for
/// the offset's sign, its colon, a digit and the fraction, and elsewhere.
const BAD: [&str; 6] = [
    "2025-11-25T12:00:00é1:00",
    "2025-11-25T12:00:00+0é:00",
    "2025-11-25T12:00:00+01é00",
    "2025-11-25T12:00:00.é+01:00",
    "2025-11-2éT12:00:00Z",
    "2025-11-25T12:00:00😀",
];

both_engines!(a_non_ascii_timestamp_is_refused_on_both_bindings);
async fn a_non_ascii_timestamp_is_refused_on_both_bindings(app: TestApp) {
    let auth = format!("Bearer {}", full_ops(&app));
    for bad in BAD {
        let encoded: String = bad.bytes().map(|b| format!("%{b:02X}")).collect();
        let req = Req::get(format!(
            "/a2a/agents/bob/tasks?statusTimestampAfter={encoded}"
        ))
        .header("A2A-Version", "1.0");
        let r = call(&app, &req, Some(&auth)).await;
        assert_eq!(r.status, 400, "HTTP+JSON {bad}: {}", r.text);
        assert_eq!(
            r.body["error"]["status"], "INVALID_ARGUMENT",
            "{bad}: {}",
            r.text
        );
        let params = json!({"statusTimestampAfter": bad});
        let req = a2a_request(Binding::JsonRpc, "bob", "ListTasks", params);
        let r = call(&app, &req, Some(&auth)).await;
        assert_eq!(r.status, 200, "JSON-RPC {bad}: {}", r.text);
        assert_eq!(
            r.body["error"]["code"], -32602,
            "JSON-RPC {bad}: {}",
            r.text
        );
    }
    // A well-formed one still lists.
    let req = a2a_request(
        Binding::JsonRpc,
        "bob",
        "ListTasks",
        json!({"statusTimestampAfter": "2025-11-25T13:00:00+01:00"}),
    );
    let r = call(&app, &req, Some(&auth)).await;
    assert!(r.body["result"]["tasks"].is_array(), "{}", r.text);
}
