//! The A2A facade on both bindings (JSON-RPC and HTTP+JSON) with every kind of token:
//! SendMessage, GetTask, CancelTask and ListTasks. Authentication and authorization fail at the
//! transport (401/403 with the native body); an invisible task is TaskNotFound, exactly like a
//! missing one; a refusal changes nothing.

use serde_json::{json, Value};
use uuid::Uuid;

use super::kit::*;
use super::world::{audit_bounded, Fix, Sweep};
use crate::common::{Resp, TestApp};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    SendMessage,
    /// GetTask of the fixture's task in this state (queued, in flight, pending, resolved,
    /// canceled).
    GetTask(usize),
    CancelQueued,
    CancelInFlight,
    ListTasks,
}

/// Columns as in the native table: caps-less, wildcard, scoped, scoped operator.
const TABLE: &[(Op, [Want; 4])] = &[
    (Op::SendMessage, [CM, OK, CSM, CM]),
    (Op::GetTask(0), [H, H, H, H]),
    (Op::GetTask(1), [H, H, H, H]),
    (Op::GetTask(2), [H, H, H, H]),
    (Op::GetTask(3), [H, H, H, H]),
    (Op::GetTask(4), [H, H, H, H]),
    (Op::CancelQueued, [H, H, H, H]),
    (Op::CancelInFlight, [H, H, H, H]),
    (Op::ListTasks, [R, R, R, R]),
];

pub fn message(text: &str) -> Value {
    json!({"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER",
           "parts": [{"text": text}]})
}

/// The request of one A2A method on `agent`'s endpoints, in one binding.
pub fn a2a_request(b: Binding, agent: &str, method: &str, params: Value) -> Req {
    let base = format!("/a2a/agents/{agent}");
    let req = match b {
        Binding::JsonRpc => Req::post(
            format!("{base}/jsonrpc"),
            &json!({"jsonrpc": "2.0", "id": "adv-1", "method": method, "params": params}),
        ),
        Binding::HttpJson => {
            let id = params["id"].as_str().unwrap_or_default();
            match method {
                "SendMessage" => Req::post(format!("{base}/message:send"), &params),
                "GetTask" => Req::get(format!("{base}/tasks/{id}")),
                "CancelTask" => Req::post(format!("{base}/tasks/{id}:cancel"), &json!({})),
                "ListTasks" => Req::get(format!("{base}/tasks?pageSize=100")),
                other => panic!("no HTTP+JSON route for {other}"),
            }
        }
    };
    req.header("A2A-Version", "1.0")
}

/// The facade's answer as a class.
pub fn a2a_got(b: Binding, r: &Resp) -> Got {
    let native_code = r.body["code"].as_str().unwrap_or_default().to_owned();
    match (b, r.status) {
        (_, 401) if native_code == "unauthenticated" => Got::Unauth,
        (_, 403) => Got::Deny(native_code),
        (Binding::JsonRpc, 200) if r.body.get("result").is_some() => Got::Ok,
        (Binding::JsonRpc, 200)
            if r.body["error"]["code"] == -32001
                && r.body["error"]["data"][0]["reason"] == "TASK_NOT_FOUND" =>
        {
            Got::Hidden
        }
        (Binding::HttpJson, 200..=299) => Got::Ok,
        (Binding::HttpJson, 404) if r.body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND" => {
            Got::Hidden
        }
        (_, s) => Got::Other(format!("{s} {}", short(&r.text))),
    }
}

fn request(b: Binding, op: Op, fix: &Fix) -> Req {
    let agent = &fix.recipient;
    match op {
        Op::SendMessage => a2a_request(
            b,
            agent,
            "SendMessage",
            json!({"message": message("from a stranger"),
                   "configuration": {"returnImmediately": true}}),
        ),
        Op::GetTask(i) => a2a_request(b, agent, "GetTask", json!({"id": fix.ids()[i]})),
        Op::CancelQueued => a2a_request(b, agent, "CancelTask", json!({"id": fix.queued})),
        Op::CancelInFlight => a2a_request(b, agent, "CancelTask", json!({"id": fix.in_flight})),
        Op::ListTasks => a2a_request(b, agent, "ListTasks", json!({})),
    }
}

both_engines!(the_facade_on_both_bindings_with_every_token);
async fn the_facade_on_both_bindings_with_every_token(app: TestApp) {
    let mut sweep = Sweep::new(&app).await;
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        for (op, row) in TABLE {
            for tok in Tok::ALL {
                let case = format!("A2A {binding:?} {op:?} as {tok:?}");
                let req = request(binding, *op, &sweep.fix);
                let r = call(&app, &req, tok.auth(&app).as_deref()).await;
                let got = a2a_got(binding, &r);
                sweep.judge_one(&case, want(*row, tok), &got, &r).await;
            }
        }
    }
    sweep.finish("the A2A facade under attack").await;
}

/// The namespace of the facade's task ids as the source code of the first versions spelled it:
/// what an attacker who read that code would use to compute another caller's task id.
const PUBLISHED_TASK_NS: Uuid = Uuid::from_u128(0x6f1c_2a4e_8b3d_4c5f_9e7a_1d2b_3c4d_5e6f);

fn guessed_id(sender: &str, recipient: &str, key: &str) -> Uuid {
    Uuid::new_v5(
        &PUBLISHED_TASK_NS,
        json!([sender, recipient, key]).to_string().as_bytes(),
    )
}

both_engines!(a_squatted_task_id_neither_hijacks_nor_blocks_a_send_message);
/// Mallory computes the id alice's next SendMessage will get and takes it first with a native
/// send, once addressed to alice herself (with alice's message copied into its metadata) and
/// once to the agent. Neither may answer alice with mallory's task, nor refuse her message:
/// the id of a SendMessage cannot be computed by anyone else.
async fn a_squatted_task_id_neither_hijacks_nor_blocks_a_send_message(app: TestApp) {
    let mut judge = Judge::default();
    let (alice, agent) = ("alice-sq", "agent-sq");
    let alice_token = app.token(alice, json!([format!("a2a.send.{agent}")]));
    let mallory = app.token(
        "mallory-sq",
        json!([format!("a2a.send.{alice}"), format!("a2a.send.{agent}")]),
    );
    for (case, squat_recipient) in [("hijack", alice), ("block", agent)] {
        let msg = json!({"messageId": format!("m-{case}"), "role": "ROLE_USER",
                         "parts": [{"text": format!("pay invoice {case}")}]});
        let squatted = guessed_id(alice, agent, &format!("m-{case}"));
        let squat = json!({"id": squatted, "sender": "mallory-sq", "recipient": squat_recipient,
            "intent_text": format!("pay invoice {case}"), "content": [{"type": "text",
            "text": format!("pay invoice {case}")}],
            "metadata": {"urn:a2a-mailbox:v1:a2a": {"message": msg}}});
        app.send(&mallory, &squat).await.expect(201);
        for b in [Binding::JsonRpc, Binding::HttpJson] {
            let case = format!("{case} over {b:?}");
            let params = json!({"message": msg, "configuration": {"returnImmediately": true}});
            let req = a2a_request(b, agent, "SendMessage", params);
            let r = call(&app, &req, Some(&format!("Bearer {alice_token}"))).await;
            judge.no_5xx(&case, &r);
            let task = match b {
                Binding::JsonRpc => r.body["result"]["task"].clone(),
                Binding::HttpJson => r.body["task"].clone(),
            };
            let Some(id) = task["id"].as_str().filter(|_| r.status == 200) else {
                judge.fail(
                    &case,
                    format!("alice's message was refused: {}", short(&r.text)),
                );
                continue;
            };
            let native = app.status_ok(id).await;
            judge.check(
                native["task"]["sender"] == alice && native["task"]["recipient"] == agent,
                &case,
                format!(
                    "alice was answered with someone else's task: {}",
                    native["task"]
                ),
            );
        }
        // Mallory's task is still mallory's, untouched.
        let s = app.status_ok(&squatted.to_string()).await;
        judge.check(
            s["task"]["sender"] == "mallory-sq" && s["state"] == "queued",
            case,
            format!("the squatted task changed: {s}"),
        );
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("a squatted SendMessage id");
}
