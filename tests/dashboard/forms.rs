//! A form acts only on what its page showed, and says what it did: the retry gate's Run
//! requeues only the tasks its preview listed; a form sent twice answers what the first did;
//! an outcome of a hundred rows lists every row; a button the token may not use is disabled
//! with the capability named; Enter in a text field never submits a repair.

use serde_json::json;

use super::web::*;
use crate::common::*;

fn eager_gate() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
}

/// A task alice → bob declared idempotent with `key`, leased by bob: (task id, lease id).
async fn idempotent_in_flight(app: &TestApp, key: &str) -> (String, String) {
    let mut t = task("alice", "bob");
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
    let id = app.send_ok(&app.alice(), &t).await;
    let (leased, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id);
    (id, lease["lease_id"].as_str().unwrap().to_owned())
}

/// The fields of the form with id `form` as a body to post again.
fn as_form(fields: &[(String, String)]) -> Vec<(&str, &str)> {
    fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The `<button …>` tag of `html` that contains `needle`.
fn button<'a>(html: &'a str, needle: &str) -> &'a str {
    let mut rest = html;
    while let Some(at) = rest.find("<button") {
        let end = at + rest[at..].find('>').unwrap();
        let tag = &rest[at..=end];
        if tag.contains(needle) {
            return tag;
        }
        rest = &rest[end..];
    }
    panic!("no button with {needle:?} in {html}")
}

/// The markup of the form with id `id` in `html`.
fn form_of<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no form {id:?} in {html}"));
    let start = html[..start].rfind("<form").unwrap();
    &html[start..start + html[start..].find("</form>").unwrap()]
}

/// How many `a2a_repair_applied` rows name `task`.
async fn repairs_of(app: &TestApp, task: &str) -> usize {
    let r = app
        .get(
            "/audit/recent?limit=1000&kind=a2a_repair_applied",
            &app.ops(),
        )
        .await;
    let events = r.expect(200)["events"].as_array().unwrap().clone();
    events
        .iter()
        .filter(|e| e["kind"]["task_id"] == task)
        .count()
}

both_engines!(
    the_retry_gate_runs_only_what_its_preview_listed,
    config = eager_gate
);
async fn the_retry_gate_runs_only_what_its_preview_listed(app: TestApp) {
    let ops = operator(&app);
    let (listed, _) = idempotent_in_flight(&app, "k-listed").await;
    let preview = page(&app, "/dashboard/retry", &ops).await;
    preview.expect(200);
    let run = hidden_fields(&preview.text, "retry-run");
    // A task the preview never showed, that a scan would requeue now.
    let (later, later_lease) = idempotent_in_flight(&app, "k-later").await;
    let r = post_form(&app, "/dashboard/retry", &ops, &as_form(&run)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(row_of(&r.text, &listed).contains("requeued"), "{}", r.text);
    assert!(!r.text.contains(&later), "{}", r.text);
    assert_eq!(app.status_ok(&listed).await["state"], "queued");
    let s = app.status_ok(&later).await;
    assert_eq!(
        (s["state"].as_str(), s["lease"]["lease_id"].as_str()),
        (Some("in_flight"), Some(later_lease.as_str())),
        "a task the preview did not list was requeued"
    );
    // Back, and Run again: the same form answers what the first did, and nothing more.
    let r = post_form(&app, "/dashboard/retry", &ops, &as_form(&run)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        row_of(&r.text, &listed).contains("already requeued by you"),
        "{}",
        r.text
    );
    assert!(!r.text.contains(&later), "{}", r.text);
    assert_eq!(app.status_ok(&later).await["state"], "in_flight");
    assert_eq!(repairs_of(&app, &listed).await, 1);
}

both_engines!(a_form_sent_twice_answers_what_the_first_did);
async fn a_form_sent_twice_answers_what_the_first_did(app: TestApp) {
    let ops = operator(&app);
    let (id, _) = idempotent_in_flight(&app, "k-twice").await;
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    let mut form = hidden_fields(&drawn.text, "row-0-requeue");
    form.push(("duplicate_risk".into(), "idempotent".into()));
    form.push(("action".into(), "requeue".into()));
    let first = post_form(&app, "/dashboard/leases/act", &ops, &as_form(&form)).await;
    assert!(first.text.contains("1 of 1 done"), "{}", first.text);
    // A double click, or Back and resubmit.
    let again = post_form(&app, "/dashboard/leases/act", &ops, &as_form(&form)).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert!(again.text.contains("1 of 1 done"), "{}", again.text);
    assert!(
        row_of(&again.text, &id).contains("already requeued by you"),
        "{}",
        again.text
    );
    assert_eq!(repairs_of(&app, &id).await, 1, "requeued once");
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id, "bob's queue holds no other task");
    // A forced error and a cancel, sent twice, likewise.
    for (action, says) in [
        ("force_error", "error already forced by you"),
        ("cancel", "already canceled by you"),
    ] {
        let (id, lease) = in_flight(&app).await;
        let csrf = csrf(&app, &ops).await;
        let target = format!("{id}:{lease}");
        let form = [
            ("csrf", csrf.as_str()),
            ("action", action),
            ("message", "gave up"),
            ("task", target.as_str()),
        ];
        let first = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
        assert!(first.text.contains("1 of 1 done"), "{}", first.text);
        let again = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
        assert!(
            row_of(&again.text, &id).contains(says),
            "{action}: {}",
            again.text
        );
    }
    // Someone else's repair is not yours: the lease changed.
    let (id, lease) = in_flight(&app).await;
    let body = json!({"task_id": id, "reason": "elsewhere",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    let other = app.token("ops-2", json!(["a2a.operator", "a2a.repair.requeue"]));
    app.post("/a2a/repair", &other, &body).await.expect(200);
    let csrf = csrf(&app, &ops).await;
    let target = format!("{id}:{lease}");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("task", target.as_str()),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(
        row_of(&r.text, &id).contains("the lease changed since you looked"),
        "{}",
        r.text
    );
}

both_engines!(requeueing_every_row_of_a_full_page_lists_every_row);
async fn requeueing_every_row_of_a_full_page_lists_every_row(app: TestApp) {
    let ops = operator(&app);
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(in_flight(&app).await.0);
    }
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    let mut form = hidden_fields(&drawn.text, "bulk");
    form.push(("all".into(), "requeue".into()));
    form.push(("duplicate_risk".into(), "operator_accepted".into()));
    let r = post_form(&app, "/dashboard/leases/act", &ops, &as_form(&form)).await;
    assert!(r.text.contains("100 of 100 done"), "{}", r.text);
    for id in &ids {
        assert!(row_of(&r.text, id).contains("requeued"), "{id}: {}", r.text);
    }
}

both_engines!(buttons_a_token_may_not_use_are_disabled_and_say_why);
async fn buttons_a_token_may_not_use_are_disabled_and_say_why(app: TestApp) {
    let viewer = app.token("viewer", json!(["a2a.operator"]));
    let ops = operator(&app);
    let (id, _) = in_flight(&app).await;
    let path = format!("/dashboard/tasks/{id}");
    for (who, token) in [("viewer", &viewer), ("ops", &ops)] {
        let leases = page(&app, "/dashboard/leases", token).await;
        let task = page(&app, &path, token).await;
        let row = row_of(&leases.text, &id);
        let bar = &leases.text[leases.text.find("id=\"bulkbar\"").unwrap()..];
        let buttons = [
            (button(row, "value=\"requeue\""), "a2a.repair.requeue"),
            (
                button(row, "value=\"force_error\""),
                "a2a.repair.force_error",
            ),
            (button(bar, "value=\"requeue\""), "a2a.repair.requeue"),
            (
                button(bar, "value=\"force_error\""),
                "a2a.repair.force_error",
            ),
            (
                button(form_of(&task.text, "repair-requeue"), "value=\"requeue\""),
                "a2a.repair.requeue",
            ),
            (
                button(form_of(&task.text, "repair-error"), "value=\"force_error\""),
                "a2a.repair.force_error",
            ),
        ];
        for (tag, cap) in buttons {
            if who == "viewer" {
                assert!(
                    tag.contains(" disabled") && tag.contains(cap),
                    "{who}: {tag}"
                );
            } else {
                assert!(!tag.contains(" disabled"), "{who}: {tag}");
            }
        }
        if who == "viewer" {
            assert!(row.contains("needs a2a.repair.requeue"), "{row}");
            assert!(
                task.text.contains("needs a2a.repair.force_error"),
                "{}",
                task.text
            );
        }
    }
}

both_engines!(enter_in_a_text_field_never_submits_a_repair);
async fn enter_in_a_text_field_never_submits_a_repair(app: TestApp) {
    let ops = operator(&app);
    let (id, _) = in_flight(&app).await;
    let leases = page(&app, "/dashboard/leases", &ops).await;
    let task = page(&app, &format!("/dashboard/tasks/{id}"), &ops).await;
    // A form's default button (the one Enter presses) is its first: disabled, it submits
    // nothing.
    for (html, form) in [
        (&leases.text, "row-0-requeue"),
        (&leases.text, "row-0-error"),
        (&leases.text, "bulk"),
        (&task.text, "repair-requeue"),
        (&task.text, "repair-error"),
    ] {
        let markup = form_of(html, form);
        let first = button(markup, "<button");
        assert!(first.contains(" disabled"), "{form}: {markup}");
    }
}
