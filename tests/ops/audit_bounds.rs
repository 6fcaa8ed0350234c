//! Audit rows are bounded, whoever asks: a value copied from a request is at most 256 bytes
//! (cut at a character boundary, its field marked `<field>_truncated`), a value of the wrong
//! type is recorded as null, and no row is larger than 4 KiB.

use serde_json::{json, Value};
use sqlx::{Connection, Row};

use super::audit_rows;
use crate::common::*;

/// The largest audit row body in the database, in bytes, read behind the mailbox's back.
async fn largest_row(app: &TestApp) -> i64 {
    let sql = "SELECT COALESCE(MAX(LENGTH(CAST(body AS TEXT))), 0) FROM audit";
    match app.engine {
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            let n: i32 = sqlx::query(sql).fetch_one(&mut c).await.unwrap().get(0);
            n as i64
        }
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql).fetch_one(&mut c).await.unwrap().get(0)
        }
    }
}

both_engines!(a_token_without_capabilities_cannot_fill_the_audit_log);
async fn a_token_without_capabilities_cannot_fill_the_audit_log(app: TestApp) {
    let nobody = app.token("nobody", json!([]));
    let huge = "é".repeat(50_000); // 100 KB, two bytes a character
    for i in 0..20 {
        let id = if i % 2 == 0 {
            json!(huge)
        } else {
            json!({"an": "object", "where": huge})
        };
        let body = json!({"id": id, "sender": huge, "recipient": huge, "intent_text": "x"});
        let r = app.post("/a2a/tasks", &nobody, &body).await;
        assert_error(&r, 403, "sender_mismatch");
        assert!(r.text.len() < 1024, "the refusal echoes no claimed value");
    }
    let rows = audit_rows(&app, "a2a_sender_mismatch").await;
    assert_eq!(rows.len(), 20);
    for row in &rows {
        let k = &row["kind"];
        assert_eq!(k["sender"].as_str().unwrap().len(), 256, "{k}");
        assert_eq!(k["sender_truncated"], true);
        assert_eq!(k["recipient"].as_str().unwrap().len(), 256);
        assert_eq!(k["recipient_truncated"], true);
        match &k["task_id"] {
            Value::Null => assert!(k.get("task_id_truncated").is_none()),
            Value::String(s) => {
                assert_eq!(s.len(), 256);
                assert_eq!(k["task_id_truncated"], true);
            }
            other => panic!("task_id recorded as {other}"),
        }
    }
    let nulls = rows
        .iter()
        .filter(|r| r["kind"]["task_id"].is_null())
        .count();
    assert_eq!(
        nulls, 10,
        "an object where an id belongs is recorded as null"
    );
    let largest = largest_row(&app).await;
    assert!(largest <= 4096, "an audit row of {largest} bytes");
}

both_engines!(a_refusal_quoting_a_huge_value_answers_and_keeps_a_short_message);
async fn a_refusal_quoting_a_huge_value_answers_and_keeps_a_short_message(app: TestApp) {
    let alice = app.alice();
    let mut t = task("alice", "bob");
    t["deadline_ms"] = json!("9".repeat(500_000));
    for _ in 0..2 {
        // The second answer is the first, kept in the key's record.
        let r = app
            .post_with("/a2a/tasks", &alice, &t, &[("Idempotency-Key", "huge-1")])
            .await;
        assert_error(&r, 400, "invalid_request");
        assert!(r.text.len() <= 2048, "a refusal of {} bytes", r.text.len());
    }
}
