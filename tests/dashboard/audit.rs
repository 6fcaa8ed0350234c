//! The audit page: rows read as sentences (task ids linked, the row itself folded), the kind
//! menu, passed capability checks hidden while refusals show, and pages that go back through any
//! number of rows at a bounded cost with no row twice or skipped. A task's history is
//! `audit/history.rs`.

use serde_json::json;
use sqlx::{Connection, Executor};

use super::web::*;
use crate::common::*;

mod history;

/// The audit rows' ids (`data-event`) on a page, in order.
fn events_of(html: &str) -> Vec<String> {
    html.split("data-event=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_owned())
        .collect()
}

/// The `href` of the link with id `id`, its `&amp;`s read.
fn link(html: &str, id: &str) -> Option<String> {
    let key = format!("id=\"{id}\" href=\"");
    let at = html.find(&key)? + key.len();
    Some(html[at..at + html[at..].find('"')?].replace("&amp;", "&"))
}

/// The page without its folded rows (`<details>` … `</details>`): what a reader sees at once.
fn unfolded(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(at) = rest.find("<details") {
        out.push_str(&rest[..at]);
        rest = &rest[at + rest[at..].find("</details>").unwrap() + 10..];
    }
    out + rest
}

/// The ids of the API's feed (`/audit/recent?limit=1000&…`), newest first.
async fn api_feed(app: &TestApp, ops: &str, query: &str) -> Vec<String> {
    let feed = app
        .get(&format!("/audit/recent?limit=1000{query}"), ops)
        .await;
    let events = feed.expect(200)["events"].as_array().unwrap().clone();
    events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs one statement on the app's database, behind the mailbox's back.
async fn execute(app: &TestApp, sql: &str) {
    match app.engine {
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            c.execute(sql).await.unwrap();
        }
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            c.execute(sql).await.unwrap();
        }
    }
}

both_engines!(passed_checks_hide_unless_asked_and_refusals_always_show);
async fn passed_checks_hide_unless_asked_and_refusals_always_show(app: TestApp) {
    let ops = operator(&app);
    // Passed checks: a send, and a result (each engine's fast path writes its row).
    let (id, lease) = in_flight(&app).await;
    let mut answer = result(&id, "ok", "done");
    answer["lease_id"] = json!(lease);
    app.post_result(&app.bob(), &answer).await.expect(201);
    // A refused check, and a send under another name.
    let mallory = app.token("mallory", json!([]));
    let r = app.send(&mallory, &task("mallory", "bob")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    app.send(&mallory, &task("alice", "bob")).await;
    let r = page(&app, "/dashboard/audit", &ops).await;
    r.expect(200);
    let html = &r.text;
    assert!(
        html.contains("Refused to send to <strong>bob</strong>"),
        "{html}"
    );
    assert!(html.contains("lacks <code>a2a.send.bob</code>"), "{html}");
    assert!(html.contains("class=\"what refused\" data-kind=\"capability_check\""));
    assert!(html.contains("data-kind=\"a2a_sender_mismatch\""), "{html}");
    assert!(html.contains("id=\"passing-hidden\""), "{html}");
    assert!(!html.contains("Allowed to"), "no passed check: {html}");
    // Asked for: every check, the result's with its task linked.
    let r = page(&app, "/dashboard/audit?passing=true", &ops).await;
    let html = &r.text;
    let linked =
        format!("Allowed to answer task <a class=\"task mono\" href=\"/dashboard/tasks/{id}\">");
    assert!(html.contains(&linked), "{html}");
    assert!(
        html.contains("Allowed to send to <strong>bob</strong>"),
        "{html}"
    );
    assert!(html.contains("Refused to send to"), "{html}");
    assert!(
        html.contains("name=\"passing\" value=\"true\" checked"),
        "{html}"
    );
    // The kind menu: every kind the mailbox writes, and "all"; the choice kept.
    let r = page(&app, "/dashboard/audit?kind=capability_check", &ops).await;
    let html = &r.text;
    for kind in [
        "capability_check",
        "authentication_failed",
        "a2a_sender_mismatch",
        "a2a_result_rejected",
        "a2a_repair_applied",
        "a2a_task_canceled",
        "a2a_auto_retry_scheduler_scan",
        "a2a_compacted",
        "a2a_result_cache_replayed",
        "idempotency_key_replayed",
    ] {
        assert!(
            html.contains(&format!("<option value=\"{kind}\"")),
            "{kind}: {html}"
        );
    }
    assert!(
        html.contains("<option value=\"\">all kinds</option>"),
        "{html}"
    );
    assert!(
        html.contains("<option value=\"capability_check\" selected>"),
        "{html}"
    );
    assert!(
        !html.contains("<input type=\"text\" name=\"kind\""),
        "{html}"
    );
    // Of that kind, the refused check only; the mismatch is another kind.
    assert_eq!(events_of(html).len(), 1, "{html}");
    assert!(
        !html.contains("data-kind=\"a2a_sender_mismatch\""),
        "{html}"
    );
}

both_engines!(rows_read_as_sentences_and_keep_the_row_folded);
async fn rows_read_as_sentences_and_keep_the_row_folded(app: TestApp) {
    let ops = operator(&app);
    let (id, lease) = in_flight(&app).await;
    // A long reason without a space: it is cut to 256 bytes in the row, and must wrap.
    let reason = "x".repeat(900);
    let body = json!({"task_id": id, "reason": reason,
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted", "lease_id": lease}});
    app.post("/a2a/repair", &ops, &body).await.expect(200);
    let r = page(&app, "/dashboard/audit?kind=a2a_repair_applied", &ops).await;
    let html = &r.text;
    let sentence = format!(
        "Requeued task <a class=\"task mono\" href=\"/dashboard/tasks/{id}\">{id}</a> \
         (attempt 1, lease {lease}, as operator_accepted): {}",
        "x".repeat(256)
    );
    assert!(html.contains(&sentence), "{html}");
    assert!(
        html.contains("<span class=\"ago\" title=\""),
        "a relative time: {html}"
    );
    assert!(
        html.contains("<details class=\"raw\"><summary>row</summary><pre>"),
        "{html}"
    );
    // The row itself is only ever folded, in a stylesheet rule that wraps it.
    let open = unfolded(html);
    assert!(
        !open.contains("&quot;"),
        "raw JSON outside its fold: {open}"
    );
    assert!(!open.contains("<pre"), "{open}");
    let css = app.get_anon("/dashboard/assets/app.css").await.text;
    assert!(
        css.contains("table.events { table-layout: fixed; display: table; }"),
        "{css}"
    );
    assert!(
        css.contains("white-space: pre-wrap; overflow-wrap: anywhere;"),
        "{css}"
    );
}

both_engines!(older_rows_go_back_through_the_feed_with_no_row_twice_or_skipped);
async fn older_rows_go_back_through_the_feed_with_no_row_twice_or_skipped(app: TestApp) {
    let ops = operator(&app);
    // 450 passed checks (a fan-out to 450 recipients) and a few more rows.
    fan_out(&app, 450).await;
    in_flight(&app).await;
    let want = api_feed(&app, &ops, "").await;
    assert!(want.len() > 450, "{}", want.len());
    let mut seen = Vec::new();
    let mut at = "/dashboard/audit?passing=true".to_owned();
    let mut pages = 0;
    loop {
        let r = page(&app, &at, &ops).await;
        r.expect(200);
        pages += 1;
        let rows = events_of(&r.text);
        assert!(rows.len() <= 200, "{}", rows.len());
        assert!(
            !r.text.contains("id=\"scan-stopped\""),
            "a full stretch: {}",
            r.text
        );
        seen.extend(rows);
        if pages > 1 {
            let newest = link(&r.text, "newest").expect("a way back to the newest rows");
            assert_eq!(newest, "/dashboard/audit?passing=true");
        }
        match link(&r.text, "older") {
            Some(older) => {
                assert!(older.contains("passing=true&before="), "{older}");
                at = older;
            }
            None => break,
        }
    }
    assert_eq!(pages, 3, "450+ rows, 200 a page");
    assert_eq!(
        seen, want,
        "every row once, newest first, as the API's feed"
    );
}

both_engines!(a_page_looks_through_a_bounded_stretch_and_says_where_it_stopped);
async fn a_page_looks_through_a_bounded_stretch_and_says_where_it_stopped(app: TestApp) {
    let ops = operator(&app);
    let mallory = app.token("mallory", json!([]));
    app.send(&mallory, &task("mallory", "bob")).await;
    app.send(&mallory, &task("alice", "bob")).await;
    let r = page(&app, "/dashboard/audit", &ops).await;
    assert_eq!(events_of(&r.text).len(), 2, "{}", r.text);
    let at = r.text.find("data-scan=\"").expect("the bound") + 11;
    let scan: i64 = r.text[at..at + r.text[at..].find('"').unwrap()]
        .parse()
        .unwrap();
    // Then more passed checks than two stretches hold.
    let filler = 2 * scan + 100;
    let body = r#"{"missing_actions":[],"passed":true,"required_actions":["a2a.send.bob"],"scope_id":"a2a-send:bob"}"#;
    let sql = format!(
        "INSERT INTO audit (timestamp_ms, issuer, kind, body) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {filler}) \
         SELECT {}, 'filler', 'capability_check', '{body}' FROM n",
        now_ms()
    );
    execute(&app, &sql).await;
    // The first two pages look through a stretch each, find nothing, and say so.
    let mut at = "/dashboard/audit".to_owned();
    for stretch in 1..=2 {
        let r = page(&app, &at, &ops).await;
        r.expect(200);
        assert!(
            events_of(&r.text).is_empty(),
            "stretch {stretch}: {}",
            r.text
        );
        assert!(r.text.contains("id=\"scan-stopped\""), "{}", r.text);
        at = link(&r.text, "older").expect("older rows");
    }
    let r = page(&app, &at, &ops).await;
    assert_eq!(
        events_of(&r.text).len(),
        2,
        "the refusals, reached: {}",
        r.text
    );
    assert!(r.text.contains("Refused to send to"), "{}", r.text);
    assert!(
        link(&r.text, "older").is_none(),
        "nothing older: {}",
        r.text
    );
    // A kind with its index starts at its newest row, however many rows are newer.
    let r = page(&app, "/dashboard/audit?kind=a2a_sender_mismatch", &ops).await;
    assert_eq!(events_of(&r.text).len(), 1, "{}", r.text);
    assert!(!r.text.contains("id=\"scan-stopped\""), "{}", r.text);
}

both_engines!(a_kind_with_its_index_pages_through_its_own_rows_and_its_time_window);
async fn a_kind_with_its_index_pages_through_its_own_rows_and_its_time_window(app: TestApp) {
    let ops = operator(&app);
    // 600 sends under another name between 600 passed checks: the older half two hours old.
    let (now, old) = (now_ms(), now_ms() - 7_200_000);
    let body = r#"{"recipient":"bob","sender":"alice","task_id":null}"#;
    let sql = format!(
        "INSERT INTO audit (timestamp_ms, issuer, kind, body) \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) \
         SELECT CASE WHEN i <= 600 THEN {old} ELSE {now} END, 'mallory', \
           CASE WHEN i % 2 = 0 THEN 'a2a_sender_mismatch' ELSE 'capability_check' END, '{body}' \
         FROM n"
    );
    execute(&app, &sql).await;
    let want = api_feed(&app, &ops, "&kind=a2a_sender_mismatch").await;
    assert_eq!(want.len(), 600);
    for (query, rows) in [
        ("kind=a2a_sender_mismatch", 600usize),
        ("kind=a2a_sender_mismatch&minutes=60", 300),
    ] {
        let (mut seen, mut at, mut pages) = (Vec::new(), format!("/dashboard/audit?{query}"), 0);
        loop {
            let r = page(&app, &at, &ops).await;
            pages += 1;
            assert!(
                !r.text.contains("id=\"scan-stopped\""),
                "{query}: {}",
                r.text
            );
            seen.extend(events_of(&r.text));
            match link(&r.text, "older") {
                Some(older) => at = older,
                None => break,
            }
        }
        assert_eq!(pages, rows.div_ceil(200), "{query}: full pages of 200");
        assert_eq!(
            seen,
            want[..rows],
            "{query}: its rows, newest first, each once"
        );
    }
}

both_engines!(a_bad_value_in_the_audit_address_gets_a_page_that_says_so);
async fn a_bad_value_in_the_audit_address_gets_a_page_that_says_so(app: TestApp) {
    let ops = operator(&app);
    for query in [
        "kind=nope",
        "before=newest",
        "passing=yes",
        "minutes=an-hour",
    ] {
        let path = format!("/dashboard/audit?{query}");
        let r = page(&app, &path, &ops).await;
        assert_bad_address(&r, &path);
        assert!(r.text.contains("cannot read"), "{path}: {}", r.text);
    }
    assert!(page(&app, "/dashboard/audit?kind=nope", &ops)
        .await
        .text
        .contains("not an audit kind"));
    for query in ["kind=&minutes=0&before=-5", "before=0&passing=false"] {
        let r = page(&app, &format!("/dashboard/audit?{query}"), &ops).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert!(
            r.text.contains("No audit row matches."),
            "{query}: {}",
            r.text
        );
    }
}
