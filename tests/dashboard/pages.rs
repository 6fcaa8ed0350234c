//! The dashboard over HTTP: signing in, the headers every page carries, CSRF on every change, and
//! what each action does to the mailbox (the same operations, and audit rows, as the API).

use serde_json::json;

use super::web::*;
use crate::common::*;

both_engines!(pages_are_self_contained_behind_a_strict_policy);
async fn pages_are_self_contained_behind_a_strict_policy(app: TestApp) {
    let ops = operator(&app);
    in_flight(&app).await;
    for path in [
        "/dashboard",
        "/dashboard/leases",
        "/dashboard/retry",
        "/dashboard/tasks",
        "/dashboard/audit",
    ] {
        let r = page(&app, path, &ops).await;
        r.expect(200);
        let csp = r.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{path}: {csp}"
        );
        assert_eq!(r.header("cache-control"), Some("no-store"), "{path}");
        assert!(
            !r.text.contains("<script>") && !r.text.contains(" style="),
            "{path}: inline code"
        );
        assert!(
            !r.text.contains("https://") && !r.text.contains("http://"),
            "{path}: an outside URL"
        );
    }
    for asset in ["app.css", "app.js"] {
        let r = app.get_anon(&format!("/dashboard/assets/{asset}")).await;
        r.expect(200);
        assert!(
            r.header("cache-control")
                .unwrap_or_default()
                .contains("max-age"),
            "{asset}"
        );
    }
}

both_engines!(only_an_operator_token_signs_in);
async fn only_an_operator_token_signs_in(app: TestApp) {
    let login = |token: String| {
        let api = app.api.clone();
        async move { sign_in(&api, &token).await }
    };
    let r = login("not-a-token".into()).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let r = login(app.alice()).await;
    assert_eq!(r.status, 403);
    assert!(r.text.contains("cannot open the dashboard"), "{}", r.text);
    let r = login(operator(&app)).await;
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/dashboard"));
    let cookie = set_cookies(&r)
        .into_iter()
        .find(|c| c.starts_with("a2a_dashboard="))
        .unwrap_or_default();
    for part in [
        "a2a_dashboard=",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/dashboard",
        "Max-Age=",
    ] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let max_age: i64 = cookie
        .split("Max-Age=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (3500..=3600).contains(&max_age),
        "the token's own expiry: {max_age}"
    );
    // Without a session (signing in returns to the page), or with a session that is not an
    // operator's.
    let r = app.get_anon("/dashboard/leases").await;
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/dashboard/login?next=%2Fdashboard%2Fleases"))
    );
    let r = page(&app, "/dashboard/leases", &app.alice()).await;
    assert_eq!(r.status, 403);
}

both_engines!(every_change_needs_the_csrf_token);
async fn every_change_needs_the_csrf_token(app: TestApp) {
    let ops = operator(&app);
    let (id, lease) = in_flight(&app).await;
    let target = format!("{id}:{lease}");
    let posts: [(&str, Vec<(&str, &str)>); 4] = [
        (
            "/dashboard/leases/act",
            vec![
                ("action", "requeue"),
                ("duplicate_risk", "operator_accepted"),
                ("task", &target),
            ],
        ),
        ("/dashboard/retry", vec![]),
        (
            &format!("/dashboard/tasks/{id}/cancel"),
            vec![("reason", "x")],
        ),
        ("/dashboard/logout", vec![]),
    ]
    .map(|(p, f)| (Box::leak(p.to_owned().into_boxed_str()) as &str, f));
    for (path, form) in &posts {
        for csrf in [None, Some("0123456789abcdef0123456789abcdef")] {
            let mut form = form.clone();
            if let Some(c) = csrf {
                form.push(("csrf", c));
            }
            let r = post_form(&app, path, &ops, &form).await;
            assert_eq!(r.status, 403, "{path} with csrf {csrf:?}: {}", r.text);
            assert!(r.text.contains("CSRF"), "{path}");
        }
    }
    assert_eq!(
        app.status_ok(&id).await["state"],
        "in_flight",
        "nothing changed"
    );
}

both_engines!(a_lease_that_changed_is_explained_not_an_error);
async fn a_lease_that_changed_is_explained_not_an_error(app: TestApp) {
    let ops = operator(&app);
    let (id, old) = in_flight(&app).await;
    // Someone else requeued it and it was leased again meanwhile.
    let body = json!({"task_id": id, "reason": "elsewhere",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    app.post("/a2a/repair", &ops, &body).await.expect(200);
    app.lease_some(&app.bob()).await;
    let csrf = csrf(&app, &ops).await;
    let target = format!("{id}:{old}");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("task", &target),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("the lease changed since you looked"),
        "{}",
        r.text
    );
    assert!(r.text.contains("<h1>"), "a page, not an error body");
    assert_eq!(
        app.status_ok(&id).await["attempt"],
        2,
        "the new lease was left alone"
    );
}

both_engines!(bulk_actions_run_one_audited_operation_per_row);
async fn bulk_actions_run_one_audited_operation_per_row(app: TestApp) {
    let ops = operator(&app);
    let (a, la) = in_flight(&app).await;
    let (b, lb) = in_flight(&app).await;
    let (c, _) = in_flight(&app).await;
    let csrf = csrf(&app, &ops).await;
    let (ta, tb) = (format!("{a}:{la}"), format!("{b}:{lb}"));
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "cancel"),
        ("reason", "cleanup"),
        ("task", &ta),
        ("task", &tb),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    r.expect(200);
    assert!(r.text.contains("2 of 2 done"), "{}", r.text);
    for id in [&a, &b] {
        assert_eq!(app.status_ok(id).await["state"], "canceled");
    }
    // Every row the page shows: only c is left in flight.
    let drawn = page(&app, "/dashboard/leases", &ops).await;
    let fields = hidden_fields(&drawn.text, "bulk");
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.extend([("all", "force_error"), ("message", "gave up")]);
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(r.text.contains("1 of 1 done"), "{}", r.text);
    assert_eq!(app.status_ok(&c).await["state"], "result_pending");
    let feed = app.get("/audit/recent?limit=100", &ops).await;
    let kinds: Vec<String> = feed.expect(200)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["issuer"] == "ops")
        .map(|e| e["kind"]["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "a2a_task_canceled").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "a2a_repair_applied").count(),
        1,
        "{kinds:?}"
    );
}

both_engines!(an_action_needs_the_capability_of_its_api_call);
async fn an_action_needs_the_capability_of_its_api_call(app: TestApp) {
    let viewer = app.token("viewer", json!(["a2a.operator"]));
    let (id, lease) = in_flight(&app).await;
    let csrf = csrf(&app, &viewer).await;
    let target = format!("{id}:{lease}");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("task", &target),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &viewer, &form).await;
    assert!(r.text.contains("a2a.repair.requeue"), "{}", r.text);
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
}

fn eager_gate() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
}

both_engines!(the_retry_gate_is_previewed_then_run, config = eager_gate);
async fn the_retry_gate_is_previewed_then_run(app: TestApp) {
    let ops = operator(&app);
    let mut safe = task("alice", "bob");
    safe["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "k-1"});
    let safe_id = app.send_ok(&app.alice(), &safe).await;
    app.lease_some(&app.bob()).await;
    let (unsafe_id, _) = in_flight(&app).await;
    let r = page(&app, "/dashboard/retry", &ops).await;
    r.expect(200);
    let (requeued, skipped) = r.text.split_once("id=\"skipped\"").unwrap();
    assert!(
        requeued.contains(&safe_id) && !requeued.contains(&unsafe_id),
        "{}",
        r.text
    );
    assert!(
        skipped.contains(&unsafe_id) && skipped.contains("missing_idempotency"),
        "{}",
        r.text
    );
    assert_eq!(
        app.status_ok(&safe_id).await["state"],
        "in_flight",
        "a preview changes nothing"
    );
    let run = hidden_fields(&r.text, "retry-run");
    let run: Vec<(&str, &str)> = run.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = post_form(&app, "/dashboard/retry", &ops, &run).await;
    assert!(r.text.contains("1 of 1 listed requeued"), "{}", r.text);
    assert_eq!(app.status_ok(&safe_id).await["state"], "queued");
    assert_eq!(app.status_ok(&unsafe_id).await["state"], "in_flight");
}

both_engines!(a_task_page_shows_its_graph_and_cancels);
async fn a_task_page_shows_its_graph_and_cancels(app: TestApp) {
    let ops = operator(&app);
    let parent = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let mut child = task("alice", "bob");
    child["parent"] = json!(parent);
    let child = app.send_ok(&app.alice(), &child).await;
    let r = page(&app, &format!("/dashboard/tasks/{parent}"), &ops).await;
    assert!(
        r.expect(200).is_null() && r.text.contains(&format!("/dashboard/tasks/{child}")),
        "{}",
        r.text
    );
    let r = page(&app, &format!("/dashboard/tasks/{child}"), &ops).await;
    assert!(
        r.text.contains(&format!("/dashboard/tasks/{parent}")),
        "the child links its parent"
    );
    let r = page(&app, "/dashboard/tasks?sender=alice&state=queued", &ops).await;
    assert!(r.text.contains(&parent) && r.text.contains(&child));
    let csrf = csrf(&app, &ops).await;
    let r = post_form(
        &app,
        &format!("/dashboard/tasks/{child}/cancel"),
        &ops,
        &[("csrf", &csrf), ("reason", "dup")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(app.status_ok(&child).await["state"], "canceled");
    let r = page(&app, &format!("/dashboard/tasks/{child}"), &ops).await;
    assert!(
        r.text.contains("a2a_task_canceled"),
        "its audit rows: {}",
        r.text
    );
}

both_engines!(the_overview_counts_and_ranks_queues);
async fn the_overview_counts_and_ranks_queues(app: TestApp) {
    let ops = operator(&app);
    for _ in 0..3 {
        app.send_ok(&app.alice(), &task("alice", "bob")).await;
    }
    app.send_ok(
        &app.token("alice", json!(["a2a.send.carol"])),
        &task("alice", "carol"),
    )
    .await;
    let r = page(&app, "/dashboard/live", &ops).await;
    r.expect(200);
    assert!(r.text.contains("id=\"count-queued\">4<"), "{}", r.text);
    let bob = r.text.find(">bob<").expect("bob's queue");
    let carol = r.text.find(">carol<").expect("carol's queue");
    assert!(bob < carol, "the deepest queue first");
    assert!(r.text.contains("<svg"), "the throughput chart");
}

both_engines!(bad_requests_get_the_contract_error_body);
async fn bad_requests_get_the_contract_error_body(app: TestApp) {
    use reqwest::Method;
    let r = app
        .raw(
            Method::POST,
            "/dashboard/login",
            None,
            Some("text/plain"),
            Some(b"x".to_vec()),
        )
        .await;
    assert_error(&r, 415, "unsupported_media_type");
    let r = post_form(&app, "/dashboard/login", "", &[("not_token", "x")]).await;
    assert_error(&r, 400, "invalid_request");
    assert_error(
        &app.get_anon("/dashboard/assets/nope.js").await,
        404,
        "not_found",
    );
    let r = app
        .raw(Method::PUT, "/dashboard/leases", None, None, None)
        .await;
    assert_error(&r, 405, "method_not_allowed");
}

both_engines!(an_address_edited_by_hand_gets_a_page_and_a_refused_token_says_why);
async fn an_address_edited_by_hand_gets_a_page_and_a_refused_token_says_why(app: TestApp) {
    let ops = operator(&app);
    for path in [
        "/dashboard/leases?min_age_ms=1e5",
        "/dashboard/audit?minutes=an-hour",
    ] {
        let r = page(&app, path, &ops).await;
        assert_bad_address(&r, path);
        assert!(r.text.contains("cannot read"), "{path}: {}", r.text);
    }
    // The task search reads every value as text and says on its own page what is wrong.
    let r = page(&app, "/dashboard/tasks?state=queued&sender=%ZZ", &ops).await;
    assert!(r.text.contains("invalid AgentId"), "{}", r.text);
    assert!(r
        .header("content-type")
        .unwrap_or_default()
        .starts_with("text/html"));
    // A refused token is explained in words, never by the verifier's internal name.
    let expired = app.jwt(
        &json!({"sub": "ops", "exp": now_ms() / 1000 - 3600, "caps": ["a2a.operator"]}),
        jsonwebtoken::Algorithm::HS256,
    );
    let r = sign_in(&app, &expired).await;
    assert_eq!(r.status, 401);
    assert!(r.text.contains("the token has expired"), "{}", r.text);
    assert!(!r.text.contains("ExpiredSignature"), "{}", r.text);
    let forged = mint(
        b"another-secret",
        &json!({"sub": "ops", "exp": now_ms() / 1000 + 3600, "caps": ["a2a.operator"]}),
        jsonwebtoken::Algorithm::HS256,
    );
    let r = sign_in(&app, &forged).await;
    assert!(r.text.contains("signature does not match"), "{}", r.text);
    assert!(!r.text.contains("InvalidSignature"), "{}", r.text);
}

both_engines!(an_action_answers_a_redirect_so_showing_its_outcome_again_runs_nothing);
async fn an_action_answers_a_redirect_so_showing_its_outcome_again_runs_nothing(app: TestApp) {
    use reqwest::Method;
    let ops = operator(&app);
    let (id, lease) = in_flight(&app).await;
    let csrf = csrf(&app, &ops).await;
    let target = format!("{id}:{lease}");
    let body = format!("csrf={csrf}&action=force_error&message=gave+up&task={target}");
    let session = format!("a2a_dashboard={ops}");
    let r = app
        .raw_with(
            Method::POST,
            "/dashboard/leases/act",
            None,
            Some("application/x-www-form-urlencoded"),
            Some(body.into_bytes()),
            &[("Cookie", &session)],
        )
        .await;
    // The POST answers a redirect, not the outcome: a refresh of the outcome is a GET.
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/dashboard/done"))
    );
    let shown = crate::common::outcome::follow_outcome(&app, r, &session).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(
        shown.text.contains("Force error: 1 of 1 done"),
        "{}",
        shown.text
    );
    assert!(
        set_cookies(&shown)
            .iter()
            .any(|c| c.starts_with("a2a_dashboard_outcome=;") || c.contains("Max-Age=0")),
        "shown once: the outcome's cookie is removed"
    );
    // Showing the page again (the browser no longer has the outcome) runs nothing.
    let again = page(&app, "/dashboard/done", &ops).await;
    assert!(
        again.text.contains("Nothing more to show"),
        "{}",
        again.text
    );
    let forced = app
        .get(
            "/audit/recent?limit=100&kind=a2a_repair_applied",
            &app.ops(),
        )
        .await;
    let rows = forced.expect(200)["events"].as_array().unwrap().len();
    assert_eq!(rows, 1, "one action, one audit row: {}", forced.text);
    // An outcome cookie another session signed (or one made up) shows nothing.
    let forged = format!("{session}; a2a_dashboard_outcome=5b5d.00");
    let r = app
        .raw_with(
            Method::GET,
            "/dashboard/done",
            None,
            None,
            None,
            &[("Cookie", &forged)],
        )
        .await;
    assert!(r.text.contains("Nothing more to show"), "{}", r.text);
}

both_engines!(the_task_search_finds_an_id_prefix_a_kind_a_result_and_recent_tasks);
async fn the_task_search_finds_an_id_prefix_a_kind_a_result_and_recent_tasks(app: TestApp) {
    let ops = operator(&app);
    let alice = app.alice();
    let mut refund = task("alice", "bob");
    refund["task_kind"] = json!("refund");
    let refund = app.send_ok(&alice, &refund).await;
    let other = app.send_ok(&alice, &task("alice", "bob")).await;
    // The first 8 characters of an id, as a person copies them from a log line.
    let r = page(&app, &format!("/dashboard/tasks?id={}", &refund[..8]), &ops).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains(&refund) && !r.text.contains(&other),
        "{}",
        r.text
    );
    let r = page(&app, "/dashboard/tasks?id=zz-not-hex", &ops).await;
    assert!(
        r.text.contains("neither a task id nor its start"),
        "{}",
        r.text
    );
    let r = page(&app, "/dashboard/tasks?kind=refund", &ops).await;
    assert!(
        r.text.contains(&refund) && !r.text.contains(&other),
        "{}",
        r.text
    );
    // An error answer is found by its result, and shown as one.
    let (leased, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, refund);
    let mut failed = result(&refund, "error", "");
    failed["lease_id"] = lease["lease_id"].clone();
    failed["error_message"] = json!("card declined");
    app.post_result(&app.bob(), &failed).await.expect(201);
    let r = page(&app, "/dashboard/tasks?result=error", &ops).await;
    assert!(
        r.text.contains(&refund) && !r.text.contains(&other),
        "{}",
        r.text
    );
    assert!(r.text.contains("class=\"result r-error\""), "{}", r.text);
    // Created times read as "… ago", the UTC time on hover.
    let r = page(&app, "/dashboard/tasks?created=60", &ops).await;
    assert!(r.text.contains(&refund) && r.text.contains(&other));
    assert!(r.text.contains("class=\"ago\" title=\""), "{}", r.text);
    assert!(r.text.contains(" ago</span>"), "{}", r.text);
}

/// Moves a lease's last heartbeat `ms` into the past, straight in the database.
async fn idle_for(app: &TestApp, id: &str, ms: u64) {
    use sqlx::Connection;
    let at = (now_ms() - ms) as i64;
    let sql = "UPDATE tasks SET heartbeat_at_ms = $1 WHERE id = $2";
    match app.engine {
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql)
                .bind(at)
                .bind(id)
                .execute(&mut c)
                .await
                .unwrap();
        }
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql)
                .bind(at)
                .bind(id)
                .execute(&mut c)
                .await
                .unwrap();
        }
    }
}

both_engines!(each_lease_age_card_opens_the_leases_it_counts);
async fn each_lease_age_card_opens_the_leases_it_counts(app: TestApp) {
    let ops = operator(&app);
    let (old, _) = in_flight(&app).await;
    let (fresh, _) = in_flight(&app).await;
    idle_for(&app, &old, 10 * 60_000).await;
    let overview = page(&app, "/dashboard", &ops).await;
    let links: Vec<&str> = overview
        .text
        .split("href=\"/dashboard/leases?")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(links.len(), 4, "{}", overview.text);
    let under_1 = page(
        &app,
        &format!("/dashboard/leases?{}", links[0].replace("&amp;", "&")),
        &ops,
    )
    .await;
    assert!(
        under_1.text.contains(&fresh) && !under_1.text.contains(&old),
        "{}",
        under_1.text
    );
    let five_to_30 = page(
        &app,
        &format!("/dashboard/leases?{}", links[2].replace("&amp;", "&")),
        &ops,
    )
    .await;
    assert!(five_to_30.text.contains(&old) && !five_to_30.text.contains(&fresh));
    // The state cards open their tasks.
    for href in [
        "/dashboard/tasks?state=queued",
        "/dashboard/leases\"",
        "state=result_pending",
    ] {
        assert!(overview.text.contains(href), "{href}: {}", overview.text);
    }
    // The filter speaks in minutes.
    assert!(under_1.text.contains(">5 min</option>"), "{}", under_1.text);
}

both_engines!(a_task_page_shows_every_field_and_its_childrens_outcomes);
async fn a_task_page_shows_every_field_and_its_childrens_outcomes(app: TestApp) {
    let ops = operator(&app);
    let mut parent = task("alice", "bob");
    parent["task_kind"] = json!("fan-out");
    parent["context_id"] = json!("conv-42");
    parent["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "order-7"});
    parent["deadline_ms"] = json!(now_ms() + 3_600_000);
    parent["content"] = json!([{"type": "text", "text": "split the report"}]);
    let parent = app.send_ok(&app.alice(), &parent).await;
    let mut kids = Vec::new();
    for _ in 0..3 {
        let mut child = task("alice", "bob");
        child["parent"] = json!(parent);
        kids.push(app.send_ok(&app.alice(), &child).await);
    }
    // bob leases the parent, then answers one child ok and one with an error.
    let (first, _) = app.lease_some(&app.bob()).await;
    assert_eq!(first, parent);
    for (status, text) in [("ok", "done"), ("error", "")] {
        let (id, lease) = app.lease_some(&app.bob()).await;
        let mut body = result(&id, status, text);
        body["lease_id"] = lease["lease_id"].clone();
        if status == "error" {
            body["error_message"] = json!("no stock");
        }
        app.post_result(&app.bob(), &body).await.expect(201);
    }
    let r = page(&app, &format!("/dashboard/tasks/{parent}"), &ops).await;
    let html = &r.text;
    for shown in [
        "fan-out",
        "conv-42",
        "idempotent, key <span class=\"mono\">order-7",
        "split the report",
        "last heartbeat",
        "3 children: 1 queued, 2 result_pending; answered 1 ok, 1 error",
        "class=\"result r-error\"",
    ] {
        assert!(html.contains(shown), "{shown:?} is on the page: {html}");
    }
    // A canceled task says who canceled it, when and why.
    app.post(
        &format!("/a2a/tasks/{}/cancel", kids[2]),
        &app.alice(),
        &json!({"reason": "not needed"}),
    )
    .await
    .expect(200);
    let r = page(&app, &format!("/dashboard/tasks/{}", kids[2]), &ops).await;
    assert!(r.text.contains("by alice"), "{}", r.text);
    assert!(r.text.contains("while queued: not needed"), "{}", r.text);
}

both_engines!(a_task_page_repairs_its_lease_with_a_reason_of_its_own);
async fn a_task_page_repairs_its_lease_with_a_reason_of_its_own(app: TestApp) {
    let ops = operator(&app);
    let (id, _) = in_flight(&app).await;
    let r = page(&app, &format!("/dashboard/tasks/{id}"), &ops).await;
    // A task not declared idempotent offers operator_accepted only, and asks first.
    assert!(r.text.contains("id=\"repair-requeue\""), "{}", r.text);
    assert!(!r.text.contains("value=\"idempotent\""), "{}", r.text);
    let fields = hidden_fields(&r.text, "repair-error");
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.extend([
        ("message", "gave up"),
        ("reason", "worker lost its disk"),
        ("action", "force_error"),
    ]);
    let shown = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(
        shown.text.contains("Force error: 1 of 1 done"),
        "{}",
        shown.text
    );
    let rows = app
        .get("/audit/recent?limit=10&kind=a2a_repair_applied", &app.ops())
        .await;
    let row = &rows.expect(200)["events"][0];
    assert_eq!(row["kind"]["reason"], "worker lost its disk", "{row}");
    assert_eq!(app.status_ok(&id).await["state"], "result_pending");
}
