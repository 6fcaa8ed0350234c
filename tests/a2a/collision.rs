//! No agent can swallow another's SendMessage: the native id of a message is derived under a
//! namespace the mailbox generates once per database and never reveals, and a task found under
//! that id is the same message only if the caller sent it to the agent in the path.

use serde_json::{json, Value};
use sqlx::{Connection, Row};
use uuid::Uuid;

use super::rpc::*;
use crate::common::*;

/// The namespace earlier versions derived task ids from: public, in their source.
const PUBLIC_NS: Uuid = Uuid::from_u128(0x6f1c_2a4e_8b3d_4c5f_9e7a_1d2b_3c4d_5e6f);

fn v5(ns: &Uuid, sender: &str, recipient: &str, key: &str) -> Uuid {
    Uuid::new_v5(ns, json!([sender, recipient, key]).to_string().as_bytes())
}

/// The database's secret namespace, read behind the mailbox's back (as if it had leaked).
async fn leaked_namespace(app: &TestApp) -> Uuid {
    let sql = "SELECT value FROM secrets WHERE name = 'a2a-task-ids'";
    let value: String = match app.engine {
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql).fetch_one(&mut c).await.unwrap().get(0)
        }
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql).fetch_one(&mut c).await.unwrap().get(0)
        }
    };
    Uuid::parse_str(&value).unwrap()
}

/// Mallory (who may send to alice) pre-creates a native task under `id` that carries a copy of
/// alice's message, as the facade keeps it.
async fn plant(app: &TestApp, id: Uuid, m: &Value) {
    let mallory = app.token("mallory", json!(["a2a.send.alice"]));
    let mut t = task("mallory", "alice");
    t["id"] = json!(id);
    t["metadata"] = json!({"urn:a2a-mailbox:v1:a2a": {"message": m}});
    app.send_ok(&mallory, &t).await;
}

/// Alice's message reached bob: he leases a task from alice holding its text (and answers).
async fn bob_receives(app: &TestApp, text: &str) {
    let b = app
        .next(&app.bob(), "?wait_ms=10000")
        .await
        .expect(200)
        .clone();
    assert!(
        b["task"].is_object(),
        "bob received nothing: alice's message was swallowed"
    );
    let (t, lease) = (&b["task"], &b["lease"]);
    assert_eq!(t["sender"], "alice", "{t}");
    assert_eq!(t["content"][0]["text"], text, "{t}");
    let done = json!({"task_id": t["id"], "status": "ok", "lease_id": lease["lease_id"]});
    app.post_result(&app.bob(), &done).await.expect(201);
}

both_engines!(a_task_planted_under_the_public_derivation_swallows_nothing);
async fn a_task_planted_under_the_public_derivation_swallows_nothing(app: TestApp) {
    for blocking in [false, true] {
        let m = message(&format!("pay invoice 77 (blocking: {blocking})"));
        let key = m["messageId"].as_str().unwrap().to_owned();
        let public = v5(&PUBLIC_NS, "alice", "bob", &key);
        plant(&app, public, &m).await;
        let params = match blocking {
            // Answered once bob has answered.
            true => json!({"message": m}),
            false => send_now(m.clone()),
        };
        let (api, alice) = (app.api.clone(), app.alice());
        let call =
            tokio::spawn(async move { rpc(&api, "bob", &alice, "SendMessage", params).await });
        bob_receives(&app, m["parts"][0]["text"].as_str().unwrap()).await;
        let task = rpc_result(&call.await.unwrap())["task"].clone();
        assert_ne!(task["id"], json!(public), "the id anyone could compute");
        if blocking {
            assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
        }
    }
}

both_engines!(each_database_has_its_own_namespace_and_every_instance_shares_it);
async fn each_database_has_its_own_namespace_and_every_instance_shares_it(mut app: TestApp) {
    let m = message("the same message");
    let alice = app.alice();
    let first = rpc_result(&rpc(&app, "bob", &alice, "SendMessage", send_now(m.clone())).await);
    let other = app.second_instance().await;
    let again = rpc_result(&rpc(&other, "bob", &alice, "SendMessage", send_now(m.clone())).await);
    assert_eq!(
        first["task"]["id"], again["task"]["id"],
        "a retry through another instance lands on the same task"
    );
    let ns = leaked_namespace(&app).await;
    let key = m["messageId"].as_str().unwrap();
    assert_eq!(first["task"]["id"], json!(v5(&ns, "alice", "bob", key)));
    let elsewhere = TestApp::spawn(app.engine, AppConfig::default(), "namespace-elsewhere")
        .await
        .unwrap();
    assert_ne!(
        leaked_namespace(&elsewhere).await,
        ns,
        "another database has a namespace of its own"
    );
}

both_engines!(a_task_under_a_leaked_id_is_a_conflict_never_a_success);
async fn a_task_under_a_leaked_id_is_a_conflict_never_a_success(app: TestApp) {
    let ns = leaked_namespace(&app).await;
    let m = message("transfer 500");
    let key = m["messageId"].as_str().unwrap().to_owned();
    plant(&app, v5(&ns, "alice", "bob", &key), &m).await;
    let alice = app.alice();
    let r = rpc(&app, "bob", &alice, "SendMessage", send_now(m.clone())).await;
    let e = rpc_error(&r, -32602, "INVALID_PARAMS");
    assert_eq!(
        e["data"][0]["metadata"]["mailboxError"], "IDEMPOTENCY_CONFLICT",
        "{}",
        r.text
    );
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "nothing was queued for bob"
    );
}
