//! Refused tokens (docs/contract.md#audit): a failed authentication costs no database write of its own. A
//! burst of them from one client is ONE `authentication_failed` row for its address and minute,
//! issuer `anonymous`, whose `count` and `reasons` reach the burst's once flushed, and
//! `a2a_auth_failures_total` counts them by reason. Nor does a flood of anonymous `/readyz`
//! probes cost a write each: readiness is checked at most once a second, whoever asks.

use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use jsonwebtoken::Algorithm;
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{Connection, Executor};

use crate::common::*;

/// The `authentication_failed` rows, as an operator sees them.
async fn failure_rows(app: &TestApp) -> Vec<Value> {
    let r = app
        .get(
            "/audit/recent?limit=1000&kind=authentication_failed",
            &app.ops(),
        )
        .await;
    r.expect(200)["events"].as_array().unwrap().clone()
}

async fn metric(app: &TestApp, sample: &str) -> u64 {
    app.metric(sample).await as u64
}

/// A burst must not straddle two minutes (it would rightly be two rows): start it early in one.
async fn not_near_the_end_of_a_minute() {
    let into = now_ms() % 60_000;
    if into > 45_000 {
        tokio::time::sleep(Duration::from_millis(60_000 - into + 50)).await;
    }
}

both_engines!(a_burst_of_bad_tokens_is_one_audit_row_with_its_counts);
async fn a_burst_of_bad_tokens_is_one_audit_row_with_its_counts(app: TestApp) {
    let now = now_ms() / 1000;
    let good = json!({"sub": "alice", "exp": now + 3600, "caps": []});
    let expired = app.jwt(
        &json!({"sub": "alice", "exp": now - 3600, "caps": []}),
        Algorithm::HS256,
    );
    let forged = mint(b"some-other-secret", &good, Algorithm::HS256);
    let hs512 = app.jwt(&good, Algorithm::HS512);
    // (Authorization header, reason), 200 requests each.
    let kinds: Vec<(Option<String>, &str)> = vec![
        (None, "missing"),
        (Some("Bearer garbage".into()), "malformed"),
        (Some(format!("Bearer {expired}")), "expired"),
        (Some(format!("Bearer {forged}")), "bad_signature"),
        (Some(format!("Bearer {hs512}")), "wrong_algorithm"),
    ];
    let sample = |reason: &str| format!("a2a_auth_failures_total{{reason=\"{reason}\"}}");
    let mut before = Vec::new();
    for (_, reason) in &kinds {
        before.push(metric(&app, &sample(reason)).await);
    }
    assert!(failure_rows(&app).await.is_empty());

    not_near_the_end_of_a_minute().await;
    let requests = (0..1000).map(|i| kinds[i % kinds.len()].0.clone());
    let statuses: Vec<Resp> = stream::iter(requests)
        .map(|auth| {
            let api = app.api.clone();
            async move {
                api.raw(Method::GET, "/a2a/queue", auth.as_deref(), None, None)
                    .await
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for r in &statuses {
        assert_error(r, 401, "unauthenticated");
    }

    // Flushed at least every second: await the full counts.
    let deadline = Instant::now() + Duration::from_secs(15);
    let row = loop {
        let rows = failure_rows(&app).await;
        assert_eq!(
            rows.len(),
            1,
            "one row for the address and minute: {rows:?}"
        );
        if rows[0]["kind"]["count"] == 1000 {
            break rows[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the row's count never reached 1000: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(row["issuer"], "anonymous", "{row}");
    assert_eq!(row["kind"]["type"], "authentication_failed", "{row}");
    assert_eq!(row["kind"]["address"], "127.0.0.1", "{row}");
    let reasons = row["kind"]["reasons"].as_object().unwrap();
    assert_eq!(
        reasons.values().map(|n| n.as_u64().unwrap()).sum::<u64>(),
        1000
    );
    for (_, reason) in &kinds {
        assert_eq!(reasons[*reason], 200, "{reason}: {row}");
    }
    assert_eq!(
        row["kind"].as_object().unwrap().len(),
        4,
        "{{type, address, count, reasons}}: {row}"
    );
    for ((_, reason), was) in kinds.iter().zip(before) {
        let sample = sample(reason);
        assert_eq!(metric(&app, &sample).await, was + 200, "{sample}");
    }
    // Nothing else was written: the row stays one, with the same id.
    let again = failure_rows(&app).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["id"], row["id"]);
    app.assert_empty("after refused tokens").await;
}

both_engines!(the_first_refused_token_of_a_minute_is_audited_promptly);
async fn the_first_refused_token_of_a_minute_is_audited_promptly(app: TestApp) {
    not_near_the_end_of_a_minute().await;
    let r = app.get("/a2a/queue", "not-a-jwt").await;
    assert_error(&r, 401, "unauthenticated");
    let deadline = Instant::now() + Duration::from_secs(5);
    let rows = loop {
        let rows = failure_rows(&app).await;
        if !rows.is_empty() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0]["kind"],
        json!({"type": "authentication_failed", "address": "127.0.0.1", "count": 1,
               "reasons": {"malformed": 1}})
    );
    // An agent does not see anonymous rows; a valid token writes none.
    let alice = app.alice();
    let mine = app
        .get("/audit/recent?kind=authentication_failed", &alice)
        .await;
    assert_eq!(mine.expect(200)["events"], json!([]));
}

fn small_budget() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_AUTH_FAILURES_PER_MINUTE", "5")
}

both_engines!(
    refusals_past_an_address_budget_are_answered_late,
    config = small_budget
);
async fn refusals_past_an_address_budget_are_answered_late(app: TestApp) {
    let bad = Some("Bearer not-a-token");
    for _ in 0..5 {
        let r = app.raw(Method::GET, "/a2a/queue", bad, None, None).await;
        assert_error(&r, 401, "unauthenticated");
    }
    // The sixth refusal of the minute from this address waits before it answers...
    let t = Instant::now();
    let r = app.raw(Method::GET, "/a2a/queue", bad, None, None).await;
    assert_error(&r, 401, "unauthenticated");
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
    // ... while a caller with a good token from the same address is served as ever.
    app.queue(&app.ops(), "").await;
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
}

/// Counts the committed writes of the `readiness` row: a trigger installed in the test's
/// database adds a row to `readiness_writes` for each.
struct ReadinessWrites {
    engine: Engine,
    url: String,
}

impl ReadinessWrites {
    async fn install(app: &TestApp) -> ReadinessWrites {
        let counter = ReadinessWrites {
            engine: app.engine,
            url: app.db_url.clone(),
        };
        let table = "CREATE TABLE readiness_writes (n INTEGER NOT NULL)";
        match app.engine {
            Engine::Sqlite => {
                let mut c = sqlx::SqliteConnection::connect(&counter.url).await.unwrap();
                c.execute(table).await.unwrap();
                c.execute(
                    "CREATE TRIGGER count_readiness_writes AFTER UPDATE ON readiness \
                     BEGIN INSERT INTO readiness_writes (n) VALUES (1); END",
                )
                .await
                .unwrap();
            }
            Engine::Postgres => {
                let mut c = sqlx::PgConnection::connect(&counter.url).await.unwrap();
                c.execute(table).await.unwrap();
                c.execute(
                    "CREATE FUNCTION count_readiness_writes() RETURNS trigger LANGUAGE plpgsql \
                     AS $$ BEGIN INSERT INTO readiness_writes (n) VALUES (1); RETURN NULL; END $$",
                )
                .await
                .unwrap();
                c.execute(
                    "CREATE TRIGGER count_readiness_writes AFTER UPDATE ON readiness \
                     FOR EACH ROW EXECUTE FUNCTION count_readiness_writes()",
                )
                .await
                .unwrap();
            }
        }
        counter
    }

    async fn count(&self) -> i64 {
        let count = "SELECT COUNT(*) FROM readiness_writes";
        match self.engine {
            Engine::Sqlite => {
                let mut c = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
                sqlx::query_scalar(count).fetch_one(&mut c).await.unwrap()
            }
            Engine::Postgres => {
                let mut c = sqlx::PgConnection::connect(&self.url).await.unwrap();
                sqlx::query_scalar(count).fetch_one(&mut c).await.unwrap()
            }
        }
    }
}

both_engines!(a_flood_of_readiness_probes_is_a_handful_of_writes);
async fn a_flood_of_readiness_probes_is_a_handful_of_writes(app: TestApp) {
    let writes = ReadinessWrites::install(&app).await;
    // 500 probes at once.
    let start = Instant::now();
    let probes = (0..500).map(|_| app.get_anon("/readyz"));
    let answers = futures_util::future::join_all(probes).await;
    let took = start.elapsed();
    let burst = writes.count().await;
    println!("500 concurrent /readyz in {took:?}: {burst} readiness writes");
    // One check, and at most one more per second it took (the first is a second old by then).
    assert!(
        burst >= 1 && burst as f64 <= 2.0 + took.as_secs_f64(),
        "500 concurrent /readyz in {took:?} wrote the readiness row {burst} times"
    );
    for r in &answers {
        assert_eq!(r.status, 200, "{}: {}", r.what, r.text);
    }

    // A sustained flood, 32 probes in flight for 2.5 s: still at most one write a second.
    let start = Instant::now();
    let mut probes = 0;
    while start.elapsed() < Duration::from_millis(2_500) {
        let batch = (0..32).map(|_| app.get_anon("/readyz"));
        for r in futures_util::future::join_all(batch).await {
            assert_eq!(r.status, 200, "{}: {}", r.what, r.text);
            probes += 1;
        }
    }
    let took = start.elapsed();
    let sustained = writes.count().await - burst;
    println!("{probes} /readyz over {took:?}: {sustained} readiness writes");
    assert!(
        sustained as f64 <= 1.0 + took.as_secs_f64(),
        "{probes} /readyz over {took:?} wrote the readiness row {sustained} times"
    );
}
