//! The stale-lease page as an operator looks through it: filters by lessee, recipient, kind,
//! idle time and declared safety; orders; keyset pages that show every lease once; and the reason
//! a row's own action carries into its audit row.

use serde_json::{json, Value};

use super::web::*;
use crate::common::*;

/// The task ids of the lease rows of a page, in the page's order.
fn lease_ids(html: &str) -> Vec<String> {
    let Some(table) = html.find("id=\"leases\"") else {
        return Vec::new();
    };
    html[table..]
        .split("<tr data-task=\"")
        .skip(1)
        .map(|r| r[..36].to_owned())
        .collect()
}

/// The address a link of the page (`id`) points to.
fn link(html: &str, id: &str) -> Option<String> {
    let pattern = format!("id=\"{id}\" href=\"");
    let at = html.find(&pattern)? + pattern.len();
    let end = at + html[at..].find('"')?;
    Some(html[at..end].replace("&amp;", "&"))
}

/// Sends `alice → recipient` (with `extra` fields) and leases it as the recipient.
async fn lease_one(app: &TestApp, recipient: &str, extra: Value) -> String {
    let sender = app.token("alice", json!(["a2a.send.bob", "a2a.send.dave"]));
    let worker = app.token(recipient, json!(["a2a.respond.alice"]));
    let mut t = task("alice", recipient);
    t.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let id = app.send_ok(&sender, &t).await;
    let (leased, _) = app.lease_some(&worker).await;
    assert_eq!(leased, id);
    id
}

both_engines!(filters_and_orders_narrow_the_stale_leases);
async fn filters_and_orders_narrow_the_stale_leases(app: TestApp) {
    let ops = operator(&app);
    let safe = json!({"task_kind": "refund",
        "idempotency": {"duplicate_safety": "idempotent", "key": "refund-1"}});
    let refund = lease_one(&app, "bob", safe).await;
    let report = lease_one(&app, "dave", json!({"task_kind": "report"})).await;
    let plain = lease_one(&app, "bob", json!({})).await;
    let ids = |q: &'static str| {
        let ops = ops.clone();
        let app = &app;
        async move {
            let r = page(app, &format!("/dashboard/leases?{q}"), &ops).await;
            assert_eq!(r.status, 200, "{q}: {}", r.text);
            lease_ids(&r.text)
        }
    };
    assert_eq!(
        ids("").await,
        [refund.as_str(), report.as_str(), plain.as_str()],
        "longest idle first"
    );
    assert_eq!(
        ids("sort=recent").await,
        [plain.as_str(), report.as_str(), refund.as_str()]
    );
    assert_eq!(ids("lessee=dave").await, [report.as_str()]);
    assert_eq!(
        ids("lessee=bob&sort=recent").await,
        [plain.as_str(), refund.as_str()]
    );
    assert_eq!(ids("recipient=dave").await, [report.as_str()]);
    assert_eq!(ids("kind=refund").await, [refund.as_str()]);
    assert_eq!(ids("safety=idempotent").await, [refund.as_str()]);
    assert_eq!(
        ids("safety=unsafe").await,
        [report.as_str(), plain.as_str()]
    );
    assert_eq!(
        ids("sort=lessee").await.last(),
        Some(&report),
        "bob before dave"
    );
    assert!(ids("recipient=bob&kind=report").await.is_empty());
    assert!(
        ids("min_age_ms=3600000").await.is_empty(),
        "none idle an hour"
    );
    let r = page(&app, "/dashboard/leases?lessee=bob", &ops).await;
    assert!(r.text.contains("2 leases match"), "{}", r.text);
    assert!(
        r.text.contains("value=\"bob\""),
        "the filter shows what it holds"
    );
}

both_engines!(pages_of_leases_show_every_lease_once);
async fn pages_of_leases_show_every_lease_once(app: TestApp) {
    let ops = operator(&app);
    let mut sent = Vec::new();
    for _ in 0..130 {
        sent.push(in_flight(&app).await.0);
    }
    for order in ["", "?sort=recent", "?sort=lessee"] {
        let first = page(&app, &format!("/dashboard/leases{order}"), &ops).await;
        assert_eq!(first.status, 200, "{}", first.text);
        assert!(first.text.contains("130 leases match"), "{order}");
        let mut seen = lease_ids(&first.text);
        assert_eq!(seen.len(), 100, "{order}: a page holds 100 rows");
        assert!(link(&first.text, "first-page").is_none());
        let next = link(&first.text, "next-page").expect("a next page");
        let second = page(&app, &next, &ops).await;
        assert_eq!(second.status, 200, "{next}: {}", second.text);
        seen.extend(lease_ids(&second.text));
        assert!(
            link(&second.text, "next-page").is_none(),
            "{order}: two pages"
        );
        assert!(link(&second.text, "first-page").is_some());
        let mut all = seen.clone();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), seen.len(), "{order}: no lease twice");
        let mut want = sent.clone();
        want.sort();
        assert_eq!(all, want, "{order}: every lease once");
    }
    // In the default order the pages run from the longest idle to the newest lease.
    let first = page(&app, "/dashboard/leases", &ops).await;
    assert_eq!(lease_ids(&first.text)[0], sent[0]);
}

both_engines!(a_rows_own_reason_goes_into_its_audit_row);
async fn a_rows_own_reason_goes_into_its_audit_row(app: TestApp) {
    let ops = operator(&app);
    let (id, lease) = in_flight(&app).await;
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    let fields = hidden_fields(&drawn.text, "row-0-error");
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let target = format!("{id}:{lease}");
    assert!(form.contains(&("task", target.as_str())), "{form:?}");
    form.extend([
        ("action", "force_error"),
        ("message", "gave up"),
        ("reason", "worker host lost"),
    ]);
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(r.text.contains("1 of 1 done"), "{}", r.text);
    let feed = app
        .get("/audit/recent?limit=10&kind=a2a_repair_applied", &app.ops())
        .await;
    let feed = feed.expect(200).to_string();
    assert!(feed.contains("worker host lost"), "{feed}");
}

both_engines!(a_lease_address_edited_by_hand_gets_a_page);
async fn a_lease_address_edited_by_hand_gets_a_page(app: TestApp) {
    let ops = operator(&app);
    in_flight(&app).await;
    for path in [
        "/dashboard/leases?sort=sideways",
        "/dashboard/leases?safety=maybe",
        "/dashboard/leases?after=not-a-cursor",
        "/dashboard/leases?after=abc~def",
    ] {
        assert_bad_address(&page(&app, path, &ops).await, path);
    }
}

both_engines!(a_page_of_leases_walks_the_in_flight_index);
async fn a_page_of_leases_walks_the_in_flight_index(app: TestApp) {
    use a2a_mailbox::store::{LeaseAfter, LeaseKey, LeaseOrder, LeaseQuery};
    let store = crate::common::store::open_store(&app.db_url).await;
    let after = LeaseAfter {
        key: LeaseKey::Int(1_736_240_000_000),
        id: uuid::Uuid::new_v4().to_string(),
    };
    for order in [LeaseOrder::Idle, LeaseOrder::Recent] {
        let query = LeaseQuery {
            order,
            heartbeat_at_most: Some(1_736_250_000_000),
            ..LeaseQuery::default()
        };
        for cursor in [None, Some(&after)] {
            let (page, count) = store.explain_lease_page(&query, cursor, 101).await.unwrap();
            let plan = format!("{page}\n-- count:\n{count}");
            assert!(
                count.contains("tasks_in_flight_by_age"),
                "{order:?}: the count does not walk the in-flight index:\n{plan}"
            );
            assert!(
                plan.contains("tasks_in_flight_by_age"),
                "{order:?}: the page does not walk the in-flight index:\n{plan}"
            );
            assert!(
                !plan.lines().any(|l| l.trim() == "SCAN tasks") && !plan.contains("Seq Scan"),
                "{order:?}: the page scans the table:\n{plan}"
            );
        }
    }
    store.close().await;
}
