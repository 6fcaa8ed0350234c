//! The same-run baselines of raw commits: single-row commits per second with the server's
//! durability settings, on one connection and at the service's concurrency, and (after the
//! lifecycle) the latter once more, so that the lifecycle's line can divide by the mean of two
//! loops on either side of it.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::db::{now_ms, pg_counter_delta, remove_sqlite, Store};
use crate::progress::Progress;
use crate::server::Engine;
use crate::stats::{round1, Samples};
use crate::Settings;

/// A payload of about the size of a small task body.
const BODY: &str = r#"{"intent_text":"summarise the attached report and answer with three bullet points","content":[],"padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#;

/// The one statement of every raw commit.
const INSERT: &str = "INSERT INTO commits (id, body, created_at_ms) VALUES ($1, $2, $3)";

macro_rules! commit_loop {
    ($pool:expr, $sql:expr, $conc:expr, $dur:expr, $label:expr, $pg:expr) => {{
        let deadline = Instant::now() + $dur;
        let p = Progress::start($label, 0);
        let cpu = crate::stats::CpuMeter::start(0, $pg);
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for _ in 0..$conc {
            let pool = $pool.clone();
            let p = p.clone();
            handles.push(tokio::spawn(async move {
                let mut s = Samples::default();
                while Instant::now() < deadline {
                    let id = uuid::Uuid::new_v4().to_string();
                    let t = Instant::now();
                    sqlx::query($sql)
                        .bind(id)
                        .bind(BODY)
                        .bind(now_ms())
                        .execute(&pool)
                        .await?;
                    s.push(t.elapsed());
                    p.inc(1);
                }
                Ok::<_, anyhow::Error>(s)
            }));
        }
        let mut all = Samples::default();
        for h in handles {
            all.extend(&h.await??);
        }
        let secs = t0.elapsed().as_secs_f64();
        let cpu = cpu.finish(all.0.len());
        p.finish();
        let mut v = all.summary();
        v["concurrency"] = json!($conc);
        v["secs"] = json!(crate::stats::round3(secs));
        v["per_s"] = json!(round1(all.0.len() as f64 / secs));
        v["cpu"] = cpu;
        v["cpu_unit"] = json!("commit (server_* is unused here; generator_* is this harness)");
        v
    }};
}

/// Raw single-row commits per second with the server's durability settings: one connection,
/// and the service's concurrency.
pub async fn raw_commits(s: &Settings, engine: Engine) -> Result<Value> {
    let c16 = s.pairs;
    match engine {
        Engine::Sqlite => {
            let (pool, path) = sqlite_pool(s).await?;
            let sql = INSERT;
            let one = commit_loop!(
                pool,
                sql,
                1usize,
                s.baseline,
                "sqlite raw commits c=1",
                false
            );
            let many = commit_loop!(
                pool,
                sql,
                c16,
                s.baseline,
                format!("sqlite raw commits c={c16}"),
                false
            );
            pool.close().await;
            if !s.keep {
                remove_sqlite(&path);
            }
            Ok(json!({
                "what": "one INSERT of a ~230-byte row with a random UUID text key per autocommit transaction, WAL + synchronous=FULL",
                "c1": one,
                "cn": many,
                "cn_note": format!("{c16} concurrent callers through ONE connection, as the server's single writer"),
            }))
        }
        Engine::Postgres => {
            let store = Store::fresh(s, engine, "raw").await?;
            let pool1 = pg_pool(&store.url, 1, false).await?;
            pg_table(&pool1).await?;
            let sql = INSERT;
            let one = commit_loop!(
                pool1,
                sql,
                1usize,
                s.baseline,
                "postgres raw commits c=1",
                true
            );
            pool1.close().await;
            let pool = pg_pool(&store.url, c16, false).await?;
            let before = store.pg_counters().await?;
            let mut many = commit_loop!(
                pool,
                sql,
                c16,
                s.baseline,
                format!("postgres raw commits c={c16}"),
                true
            );
            pool.close().await;
            // Backends flush their statistics when they exit.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let after = store.pg_counters().await?;
            let n = many["n"].as_u64().unwrap_or(1) as usize;
            many["postgres"] = pg_counter_delta(&before, &after, n);
            // sqlx's default pool pings every connection it hands out (`test_before_acquire`,
            // one extra round trip per acquire), as the server's pool does: the same commits
            // through such a pool.
            let pinging = pg_pool(&store.url, c16, true).await?;
            let ping = commit_loop!(
                pinging,
                sql,
                c16,
                s.baseline,
                format!("postgres commits, pool ping c={c16}"),
                true
            );
            pinging.close().await;
            let pool = pg_pool(&store.url, c16, false).await?;
            // The same commit with a NOTIFY in it (what every send and result does): PostgreSQL
            // holds one cluster-wide lock from a notifying transaction's pre-commit until after
            // its commit record is flushed, so notifying commits are serialised, fsync by fsync.
            let notify_sql = "WITH i AS (INSERT INTO commits (id, body, created_at_ms) VALUES ($1, $2, $3) RETURNING 1) \
                              SELECT pg_notify('a2a_bench', '') FROM i";
            let notify = commit_loop!(
                pool,
                notify_sql,
                c16,
                s.baseline,
                format!("postgres commits+NOTIFY c={c16}"),
                true
            );
            // The NOTIFY sent after the commit instead, as its own statement: that transaction
            // writes no WAL and waits for no flush, so the lock is held only briefly.
            let after_sql = "WITH i AS (INSERT INTO commits (id, body, created_at_ms) VALUES ($1, $2, $3) RETURNING 1) \
                             SELECT 1 FROM i";
            let notify_after = {
                let deadline = Instant::now() + s.baseline;
                let p = Progress::start(format!("postgres commit, then NOTIFY c={c16}"), 0);
                let t0 = Instant::now();
                let mut handles = Vec::new();
                for _ in 0..c16 {
                    let pool = pool.clone();
                    let p = p.clone();
                    handles.push(tokio::spawn(async move {
                        let mut smp = Samples::default();
                        while Instant::now() < deadline {
                            let t = Instant::now();
                            sqlx::query(after_sql)
                                .bind(uuid::Uuid::new_v4().to_string())
                                .bind(BODY)
                                .bind(now_ms())
                                .execute(&pool)
                                .await?;
                            sqlx::query("SELECT pg_notify('a2a_bench', '')")
                                .execute(&pool)
                                .await?;
                            smp.push(t.elapsed());
                            p.inc(1);
                        }
                        Ok::<_, anyhow::Error>(smp)
                    }));
                }
                let mut all = Samples::default();
                for h in handles {
                    all.extend(&h.await??);
                }
                let secs = t0.elapsed().as_secs_f64();
                p.finish();
                let mut v = all.summary();
                v["concurrency"] = json!(c16);
                v["secs"] = json!(crate::stats::round3(secs));
                v["per_s"] = json!(round1(all.0.len() as f64 / secs));
                v
            };
            pool.close().await;
            store.drop_it(s).await?;
            Ok(json!({
                "what": "one INSERT of a ~230-byte row with a random UUID text key per autocommit transaction, synchronous_commit as stated",
                "c1": one,
                "cn": many,
                "cn_notify": notify,
                "cn_pool_ping": ping,
                "cn_notify_after_commit": notify_after,
                "cn_note": format!("{c16} connections, one caller each"),
            }))
        }
    }
}

/// The raw commits at the service's concurrency once more, each in a place of its own (a fresh
/// file, a fresh database), as [`raw_commits`]'s `cn`.
pub async fn raw_commits_again(s: &Settings, engine: Engine) -> Result<Value> {
    let c16 = s.pairs;
    let label = format!("{} raw commits c={c16}, again", engine.name());
    match engine {
        Engine::Sqlite => {
            let (pool, path) = sqlite_pool(s).await?;
            let again = commit_loop!(pool, INSERT, c16, s.baseline, label, false);
            pool.close().await;
            if !s.keep {
                remove_sqlite(&path);
            }
            Ok(again)
        }
        Engine::Postgres => {
            let store = Store::fresh(s, engine, "raw-again").await?;
            let pool = pg_pool(&store.url, c16, false).await?;
            pg_table(&pool).await?;
            let again = commit_loop!(pool, INSERT, c16, s.baseline, label, true);
            pool.close().await;
            store.drop_it(s).await?;
            Ok(again)
        }
    }
}

/// A fresh SQLite file with the server's durability settings, behind ONE connection like the
/// server's single writer (concurrent callers queue on it), with the commits table.
async fn sqlite_pool(s: &Settings) -> Result<(SqlitePool, PathBuf)> {
    let path = std::path::absolute(s.out.join("db").join("sqlite-raw.db"))?;
    remove_sqlite(&path);
    let opts = SqliteConnectOptions::from_str(&format!("sqlite://{}?mode=rwc", path.display()))?
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect_with(opts)
        .await?;
    sqlx::query("CREATE TABLE commits (id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, created_at_ms INTEGER NOT NULL)")
        .execute(&pool)
        .await?;
    Ok((pool, path))
}

/// `n` connections to `url`, opened at once; `ping`: sqlx's check of each connection it hands
/// out (one round trip more per acquire), as its default pool does.
async fn pg_pool(url: &str, n: usize, ping: bool) -> Result<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(n as u32)
        .min_connections(n as u32)
        .test_before_acquire(ping)
        .connect_with(PgConnectOptions::from_str(url)?)
        .await?)
}

async fn pg_table(pool: &PgPool) -> Result<()> {
    sqlx::query("CREATE TABLE commits (id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, created_at_ms BIGINT NOT NULL)")
        .execute(pool)
        .await?;
    Ok(())
}
