//! The stale-lease page's actions on several rows: they act on the rows the operator saw, each
//! fenced by the lease it showed, and a requeue states its duplicate-risk posture, which rows
//! that did not declare themselves idempotent cannot take.

use serde_json::json;

use super::web::*;
use crate::common::*;

/// The hidden fields of the page's bulk form, as the page drew them, and more.
fn bulk_form<'a>(
    fields: &'a [(String, String)],
    more: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.extend_from_slice(more);
    form
}

both_engines!(every_row_shown_means_the_rows_drawn_not_rows_found_later);
async fn every_row_shown_means_the_rows_drawn_not_rows_found_later(app: TestApp) {
    let ops = operator(&app);
    let (a, _) = in_flight(&app).await;
    let (b, _) = in_flight(&app).await;
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    assert!(
        drawn.text.contains("all 2 "),
        "the count is in the button: {}",
        drawn.text
    );
    let fields = hidden_fields(&drawn.text, "bulk");
    // After the page was drawn: a new stale lease appears, and b is requeued and leased again.
    let (c, lc) = in_flight(&app).await;
    let body = json!({"task_id": b, "reason": "elsewhere",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    app.post("/a2a/repair", &ops, &body).await.expect(200);
    let (again, lb) = app.lease_some(&app.bob()).await;
    assert_eq!(again, b);
    let more = [
        ("all", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("reason", "worker pool restarted"),
    ];
    let r = post_form(
        &app,
        "/dashboard/leases/act",
        &ops,
        &bulk_form(&fields, &more),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("1 of 2 done"), "{}", r.text);
    assert_eq!(
        app.status_ok(&a).await["state"],
        "queued",
        "a row shown is requeued"
    );
    // The lease that appeared later is not touched.
    let s = app.status_ok(&c).await;
    assert_eq!(
        (s["state"].as_str(), s["lease"]["lease_id"].as_str()),
        (Some("in_flight"), Some(lc.as_str())),
        "a lease found after the page was drawn was requeued"
    );
    assert!(
        !r.text.contains(&c),
        "the outcome lists only rows shown: {}",
        r.text
    );
    // The row whose lease changed is reported, and its new lease left alone.
    assert!(
        row_of(&r.text, &b).contains("the lease changed since you looked"),
        "{}",
        r.text
    );
    let s = app.status_ok(&b).await;
    assert_eq!(
        (
            s["state"].as_str(),
            s["lease"]["lease_id"].as_str(),
            s["attempt"].as_u64()
        ),
        (
            Some("in_flight"),
            Some(lb["lease_id"].as_str().unwrap()),
            Some(2)
        )
    );
    // A worker of a lease left alone answers as usual.
    let res = result(&c, "ok", "done");
    app.post_result(&app.bob(), &res).await.expect(201);
}

both_engines!(a_bulk_requeue_states_its_posture_and_skips_rows_it_does_not_fit);
async fn a_bulk_requeue_states_its_posture_and_skips_rows_it_does_not_fit(app: TestApp) {
    let ops = operator(&app);
    let mut safe = task("alice", "bob");
    safe["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "k-1"});
    let safe = app.send_ok(&app.alice(), &safe).await;
    let (_, ls) = app.lease_some(&app.bob()).await;
    let ls = ls["lease_id"].as_str().unwrap().to_owned();
    let (risky, lr) = in_flight(&app).await;
    // Per row, only the postures the task allows.
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    let (safe_row, risky_row) = (row_of(&drawn.text, &safe), row_of(&drawn.text, &risky));
    assert!(safe_row.contains("value=\"idempotent\""), "{safe_row}");
    assert!(!risky_row.contains("value=\"idempotent\""), "{risky_row}");
    for row in [safe_row, risky_row] {
        assert!(
            row.contains("value=\"operator_accepted\"") && row.contains("may run twice"),
            "{row}"
        );
    }
    // Both rows, as idempotent: the one that declared it is requeued, the other skipped.
    let csrf = csrf(&app, &ops).await;
    let (ts, tr) = (format!("{safe}:{ls}"), format!("{risky}:{lr}"));
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "idempotent"),
        ("task", &ts),
        ("task", &tr),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("as idempotent") && r.text.contains("1 of 2 done"),
        "{}",
        r.text
    );
    assert!(row_of(&r.text, &safe).contains("requeued"), "{}", r.text);
    assert!(
        row_of(&r.text, &risky).contains("not declared idempotent"),
        "{}",
        r.text
    );
    assert_eq!(app.status_ok(&safe).await["state"], "queued");
    assert_eq!(app.status_ok(&risky).await["state"], "in_flight", "skipped");
    // A row that carries no lease id is not repaired unfenced.
    for bare in [risky.clone(), format!("{risky}:")] {
        let form = [
            ("csrf", csrf.as_str()),
            ("action", "requeue"),
            ("duplicate_risk", "operator_accepted"),
            ("task", &bare),
        ];
        let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
        assert!(row_of(&r.text, &risky).contains("no lease"), "{}", r.text);
        assert_eq!(app.status_ok(&risky).await["state"], "in_flight");
    }
    // Without a posture, nothing is requeued.
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("task", &tr),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(
        row_of(&r.text, &risky).contains("duplicate risk"),
        "{}",
        r.text
    );
    assert_eq!(app.status_ok(&risky).await["state"], "in_flight");
    // Stated as operator_accepted, it is requeued.
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("task", &tr),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(
        r.text.contains("as operator_accepted") && r.text.contains("1 of 1 done"),
        "{}",
        r.text
    );
    assert_eq!(app.status_ok(&risky).await["state"], "queued");
}
