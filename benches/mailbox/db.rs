//! Databases: a fresh one per phase, the raw-commit baselines, bulk loads of queued tasks
//! straight into the server's schema, and PostgreSQL's own counters.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, PgConnection, Row};

use crate::progress::Progress;
use crate::server::Engine;
use crate::stats::round1;
use crate::Settings;

fn pg_base(admin_url: &str) -> &str {
    let no_query = admin_url.split('?').next().unwrap_or(admin_url);
    no_query.rsplit_once('/').map_or(no_query, |(b, _)| b)
}

async fn pg_admin(s: &Settings) -> Result<PgConnection> {
    PgConnection::connect(&s.pg_url)
        .await
        .with_context(|| format!("connecting to PostgreSQL at {}", s.pg_url))
}

/// One phase's database: a fresh SQLite file or a fresh PostgreSQL database.
pub struct Store {
    pub engine: Engine,
    pub url: String,
    pg_db: Option<String>,
    sqlite_path: Option<PathBuf>,
}

impl Store {
    pub async fn fresh(s: &Settings, engine: Engine, phase: &str) -> Result<Store> {
        match engine {
            Engine::Sqlite => {
                let path = s.out.join("db").join(format!("sqlite-{phase}.db"));
                remove_sqlite(&path);
                let abs = std::path::absolute(&path)?;
                Ok(Store {
                    engine,
                    url: format!("sqlite://{}?mode=rwc", abs.display()),
                    pg_db: None,
                    sqlite_path: Some(abs),
                })
            }
            Engine::Postgres => {
                let name = format!("a2a_bench_{}_{phase}", s.run_id);
                let mut admin = pg_admin(s).await?;
                drop_database(&mut admin, &name).await?;
                sqlx::query(&format!("CREATE DATABASE \"{name}\""))
                    .execute(&mut admin)
                    .await?;
                Ok(Store {
                    engine,
                    url: format!("{}/{name}", pg_base(&s.pg_url)),
                    pg_db: Some(name),
                    sqlite_path: None,
                })
            }
        }
    }

    pub async fn drop_it(&self, s: &Settings) -> Result<()> {
        if s.keep {
            return Ok(());
        }
        if let Some(name) = &self.pg_db {
            drop_database(&mut pg_admin(s).await?, name).await?;
        }
        if let Some(p) = &self.sqlite_path {
            remove_sqlite(p);
        }
        Ok(())
    }

    async fn sqlite_conn(&self) -> Result<sqlx::SqliteConnection> {
        Ok(SqliteConnectOptions::from_str(&self.url)?
            .journal_mode(SqliteJournalMode::Wal)
            // The load is not what is measured; NORMAL only makes it quicker.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(60))
            .connect()
            .await?)
    }

    async fn pg_conn(&self) -> Result<PgConnection> {
        Ok(PgConnection::connect(&self.url).await?)
    }

    /// Tasks in state `queued` (an exact count, not an estimate).
    pub async fn queued(&self) -> Result<u64> {
        let sql = "SELECT COUNT(*) FROM tasks WHERE state = 'queued'";
        let n: i64 = match self.engine {
            Engine::Sqlite => {
                let mut c = self.sqlite_conn().await?;
                sqlx::query_scalar(sql).fetch_one(&mut c).await?
            }
            Engine::Postgres => {
                let mut c = self.pg_conn().await?;
                sqlx::query_scalar(sql).fetch_one(&mut c).await?
            }
        };
        Ok(n as u64)
    }

    /// Runs one statement of the bench's own (e.g. to age loaded tasks); the rows it changed.
    pub async fn execute(&self, sql: &str) -> Result<u64> {
        Ok(match self.engine {
            Engine::Sqlite => sqlx::query(sql)
                .execute(&mut self.sqlite_conn().await?)
                .await?
                .rows_affected(),
            Engine::Postgres => sqlx::query(sql)
                .execute(&mut self.pg_conn().await?)
                .await?
                .rows_affected(),
        })
    }

    /// Adds `n` queued tasks in bulk, spread round-robin over `worker-0..recipients` (sent by
    /// `alice-<same index>`), each with a unique, increasing `queue_seq` taken from the
    /// server's own counter (SQLite `counters`.'queue', PostgreSQL `a2a_queue_seq`), so the
    /// server's next send lands after them.
    pub async fn bulk_load(
        &self,
        s: &Settings,
        n: u64,
        recipients: usize,
        label: &str,
    ) -> Result<Value> {
        let t0 = Instant::now();
        let p = Progress::start(label, n);
        match self.engine {
            Engine::Sqlite => self.bulk_sqlite(n, recipients, &p).await?,
            Engine::Postgres => self.bulk_pg(n, recipients, &p).await?,
        }
        let load_secs = t0.elapsed().as_secs_f64();
        p.finish();
        let mut analyzed = false;
        if self.engine == Engine::Postgres && s.vacuum_analyze_after_load {
            let mut c = self.pg_conn().await?;
            sqlx::query("VACUUM (ANALYZE) tasks")
                .execute(&mut c)
                .await?;
            analyzed = true;
        }
        Ok(json!({
            "rows": n,
            "secs": crate::stats::round3(load_secs),
            "rows_per_s": round1(n as f64 / load_secs.max(1e-9)),
            "vacuum_analyzed_after_load": analyzed,
        }))
    }

    async fn bulk_sqlite(&self, n: u64, recipients: usize, p: &Progress) -> Result<()> {
        const PER_TX: u64 = 50_000;
        const PER_STMT: u64 = 500;
        let mut c = self.sqlite_conn().await?;
        let sql_for = |rows: u64| {
            let mut sql = String::from(
                "INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, created_at_ms, updated_at_ms) VALUES ",
            );
            for i in 0..rows {
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str("(?, ?, ?, ?, 'queued', 0, ?, ?, ?)");
            }
            sql
        };
        let full_sql = sql_for(PER_STMT);
        let now = now_ms();
        let mut done = 0u64;
        while done < n {
            let in_tx = (n - done).min(PER_TX);
            sqlx::query("BEGIN IMMEDIATE").execute(&mut c).await?;
            // The schema numbers the queue either with a `counters` row or from the largest
            // queue_seq in the table: start past both, and bump the counter when there is one.
            let has_counters: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'counters'",
            )
            .fetch_one(&mut c)
            .await?;
            let max_seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(queue_seq), 0) FROM tasks")
                .fetch_one(&mut c)
                .await?;
            let counter: i64 = if has_counters > 0 {
                sqlx::query_scalar(
                    "SELECT COALESCE(MAX(value), 0) FROM counters WHERE name = 'queue'",
                )
                .fetch_one(&mut c)
                .await?
            } else {
                0
            };
            let base = max_seq.max(counter);
            let mut k = 0u64;
            while k < in_tx {
                let rows = (in_tx - k).min(PER_STMT);
                let partial;
                let sql = if rows == PER_STMT {
                    full_sql.as_str()
                } else {
                    partial = sql_for(rows);
                    partial.as_str()
                };
                let mut q = sqlx::query(sql);
                for j in 0..rows {
                    let seq = base + (k + j) as i64 + 1;
                    let r = seq as u64 % recipients as u64;
                    let id = uuid::Uuid::new_v4().to_string();
                    let body = task_body(&id, r, seq);
                    q = q
                        .bind(id)
                        .bind(format!("alice-{r}"))
                        .bind(format!("worker-{r}"))
                        .bind(body)
                        .bind(seq)
                        .bind(now)
                        .bind(now);
                }
                q.execute(&mut c).await?;
                k += rows;
                p.inc(rows);
            }
            if has_counters > 0 {
                sqlx::query("UPDATE counters SET value = $1 WHERE name = 'queue'")
                    .bind(base + in_tx as i64)
                    .execute(&mut c)
                    .await?;
            }
            sqlx::query("COMMIT").execute(&mut c).await?;
            done += in_tx;
        }
        // Fold the load's WAL into the database so the measurement does not pay for it.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut c)
            .await?;
        c.close().await?;
        Ok(())
    }

    async fn bulk_pg(&self, n: u64, recipients: usize, p: &Progress) -> Result<()> {
        const PER_STMT: u64 = 100_000;
        let mut c = self.pg_conn().await?;
        // Where this load starts numbering bodies (cosmetic; queue_seq comes from the sequence).
        let start: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tasks")
            .fetch_one(&mut c)
            .await?;
        let has_seq: bool = sqlx::query_scalar("SELECT to_regclass('a2a_queue_seq') IS NOT NULL")
            .fetch_one(&mut c)
            .await?;
        // With the server's sequence, each row takes nextval (the sequence stays ahead of every
        // loaded row, as a setval after the load would); without one, past the largest position.
        let seq_expr = if has_seq {
            "nextval('a2a_queue_seq')".to_owned()
        } else {
            let max: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(queue_seq), 0) FROM tasks")
                .fetch_one(&mut c)
                .await?;
            format!("({max} + g)")
        };
        let now = now_ms();
        let mut done = 0u64;
        while done < n {
            let rows = (n - done).min(PER_STMT);
            let from = start + done as i64 + 1;
            let to = from + rows as i64 - 1;
            // One statement per 100k rows.
            sqlx::query(&format!(
                "INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, created_at_ms, updated_at_ms) \
                 SELECT u, 'alice-' || r, 'worker-' || r, \
                    '{{\"id\":\"' || u || '\",\"sender\":\"alice-' || r || '\",\"recipient\":\"worker-' || r || \
                    '\",\"intent_text\":\"bulk task ' || g || '\",\"content\":[]}}', \
                    'queued', 0, {seq_expr}, $3, $3 \
                 FROM (SELECT gen_random_uuid()::text AS u, g, g % $4 AS r \
                       FROM generate_series($1::bigint, $2::bigint) AS g ORDER BY g) AS s"
            ))
            .bind(from)
            .bind(to)
            .bind(now)
            .bind(recipients as i64)
            .execute(&mut c)
            .await?;
            done += rows;
            p.inc(rows);
        }
        c.close().await?;
        Ok(())
    }

    /// PostgreSQL's maintenance of the `tasks` table so far (autovacuum and autoanalyze runs,
    /// and whether one is running now): a VACUUM of freshly loaded rows during a measurement
    /// shows up in its tail.
    pub async fn pg_maintenance(&self) -> Result<Value> {
        let mut c = self.pg_conn().await?;
        let r = sqlx::query(
            "SELECT autovacuum_count, autoanalyze_count, vacuum_count, analyze_count, n_dead_tup, \
                    (SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
                       AND backend_type = 'autovacuum worker') AS running \
             FROM pg_stat_user_tables WHERE relname = 'tasks'",
        )
        .fetch_one(&mut c)
        .await?;
        c.close().await?;
        let g = |k: &str| r.try_get::<i64, _>(k).unwrap_or(0);
        Ok(json!({
            "autovacuum_count": g("autovacuum_count"),
            "autoanalyze_count": g("autoanalyze_count"),
            "vacuum_count": g("vacuum_count"),
            "analyze_count": g("analyze_count"),
            "n_dead_tup": g("n_dead_tup"),
            "autovacuum_workers_running": g("running"),
        }))
    }

    /// PostgreSQL's counters for this database and the cluster's WAL.
    pub async fn pg_counters(&self) -> Result<Value> {
        let mut c = self.pg_conn().await?;
        let db = sqlx::query(
            "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, blks_read, blks_hit \
             FROM pg_stat_database WHERE datname = current_database()",
        )
        .fetch_one(&mut c)
        .await?;
        let wal = sqlx::query(
            "SELECT wal_records, wal_fpi, wal_bytes::bigint AS wal_bytes, wal_write, wal_sync FROM pg_stat_wal",
        )
        .fetch_one(&mut c)
        .await?;
        let bgwriter = sqlx::query(
            "SELECT buffers_backend, buffers_alloc, buffers_checkpoint, buffers_clean FROM pg_stat_bgwriter",
        )
        .fetch_one(&mut c)
        .await?;
        let tables = sqlx::query(
            "SELECT COALESCE(SUM(seq_scan), 0)::bigint AS seq_scan, COALESCE(SUM(idx_scan), 0)::bigint AS idx_scan, \
                    COALESCE(SUM(n_tup_hot_upd), 0)::bigint AS n_tup_hot_upd FROM pg_stat_user_tables",
        )
        .fetch_one(&mut c)
        .await?;
        let xid: i64 =
            sqlx::query_scalar("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
                .fetch_one(&mut c)
                .await?;
        c.close().await?;
        let g = |r: &sqlx::postgres::PgRow, k: &str| r.try_get::<i64, _>(k).unwrap_or(0);
        Ok(json!({
            "xact_commit": g(&db, "xact_commit"),
            "xact_rollback": g(&db, "xact_rollback"),
            "tup_inserted": g(&db, "tup_inserted"),
            "tup_updated": g(&db, "tup_updated"),
            "tup_deleted": g(&db, "tup_deleted"),
            "blks_read": g(&db, "blks_read"),
            "blks_hit": g(&db, "blks_hit"),
            "buffers_backend_written": g(&bgwriter, "buffers_backend"),
            "buffers_alloc": g(&bgwriter, "buffers_alloc"),
            "buffers_checkpoint": g(&bgwriter, "buffers_checkpoint"),
            "buffers_bgwriter": g(&bgwriter, "buffers_clean"),
            "wal_records": g(&wal, "wal_records"),
            "wal_fpi": g(&wal, "wal_fpi"),
            "wal_bytes": g(&wal, "wal_bytes"),
            "wal_write": g(&wal, "wal_write"),
            "wal_sync": g(&wal, "wal_sync"),
            "next_xid": xid,
            "seq_scan": g(&tables, "seq_scan"),
            "idx_scan": g(&tables, "idx_scan"),
            "tup_hot_updated": g(&tables, "n_tup_hot_upd"),
        }))
    }
}

/// Per-unit differences of two `pg_counters` snapshots.
pub fn pg_counter_delta(before: &Value, after: &Value, units: usize) -> Value {
    let mut sum = serde_json::Map::new();
    pg_counter_add(&mut sum, before, after);
    pg_counter_per_unit(&sum, units)
}

/// Adds the differences of two `pg_counters` snapshots to `sum` (several measured windows).
pub fn pg_counter_add(sum: &mut serde_json::Map<String, Value>, before: &Value, after: &Value) {
    if let (Some(b), Some(a)) = (before.as_object(), after.as_object()) {
        for (k, av) in a {
            let d = av.as_i64().unwrap_or(0) - b.get(k).and_then(Value::as_i64).unwrap_or(0);
            let total = sum.get(k).and_then(Value::as_i64).unwrap_or(0) + d;
            sum.insert(k.clone(), json!(total));
        }
    }
}

/// The summed differences of `pg_counter_add`, per unit of work.
pub fn pg_counter_per_unit(sum: &serde_json::Map<String, Value>, units: usize) -> Value {
    let mut out = serde_json::Map::new();
    for (k, d) in sum {
        out.insert(
            format!("{k}_per_unit"),
            json!(crate::stats::round3(
                d.as_i64().unwrap_or(0) as f64 / units.max(1) as f64
            )),
        );
    }
    out.insert("units".into(), json!(units));
    out.insert(
        "note".into(),
        json!("xact_*/tup_*/blks_* count this database only (read-only autocommit statements are transactions too); wal_*, buffers_* (pg_stat_bgwriter: buffers written by backends, allocated, written by checkpoints and by the background writer) and next_xid (write transactions) are cluster-wide, so other users of the server add noise"),
    );
    Value::Object(out)
}

pub fn task_body(id: &str, r: u64, seq: i64) -> String {
    format!(
        r#"{{"id":"{id}","sender":"alice-{r}","recipient":"worker-{r}","intent_text":"bulk task {seq}","content":[]}}"#
    )
}

/// Drops whatever this run's phases left behind: every `a2a_bench_<run id>_...` database and every
/// SQLite file under `<out>/db`. A phase drops its own database when it finishes; this is for the
/// phase that failed and returned before it could (and for the run as a whole, whatever happened).
/// Nothing is dropped with `--keep`.
pub async fn drop_leftovers(s: &Settings) -> Result<()> {
    if s.keep {
        return Ok(());
    }
    if let Ok(dir) = std::fs::read_dir(s.out.join("db")) {
        for entry in dir.flatten() {
            if entry.file_name().to_string_lossy().starts_with("sqlite-") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    if s.engines.contains(&Engine::Postgres) {
        let mut admin = pg_admin(s).await?;
        let prefix = format!("a2a_bench_{}_", s.run_id);
        let left: Vec<String> =
            sqlx::query_scalar("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
                .bind(&prefix)
                .fetch_all(&mut admin)
                .await?;
        for name in left {
            eprintln!("dropping database {name}, left behind by a phase that did not finish");
            drop_database(&mut admin, &name).await?;
        }
    }
    Ok(())
}

/// Drops a database of this harness, whoever is still connected to it.
async fn drop_database(admin: &mut PgConnection, name: &str) -> Result<()> {
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(admin)
        .await?;
    Ok(())
}

pub fn remove_sqlite(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The database settings stated next to every figure.
pub async fn describe(s: &Settings, engine: Engine) -> Result<Value> {
    match engine {
        Engine::Sqlite => {
            let mut c = SqliteConnectOptions::from_str("sqlite::memory:")?
                .connect()
                .await?;
            let v: String = sqlx::query_scalar("SELECT sqlite_version()")
                .fetch_one(&mut c)
                .await?;
            Ok(json!({
                "engine": "sqlite",
                "version": v,
                "journal_mode": "wal",
                "synchronous": "full",
                "durability": "WAL + synchronous=FULL: every commit is fsynced before it is acknowledged (the server's settings)",
                "server_pools": "1 writer connection (BEGIN IMMEDIATE), up to 8 readers",
                "files": s.out.join("db").display().to_string(),
            }))
        }
        Engine::Postgres => {
            let mut c = pg_admin(s).await?;
            let version: String = sqlx::query_scalar("SELECT version()")
                .fetch_one(&mut c)
                .await?;
            let rows = sqlx::query(
                "SELECT name, setting, COALESCE(unit, '') AS unit FROM pg_settings WHERE name IN \
                 ('synchronous_commit', 'fsync', 'wal_sync_method', 'full_page_writes', 'commit_delay', \
                  'shared_buffers', 'wal_level', 'max_connections', 'autovacuum', 'autovacuum_naptime', \
                  'wal_buffers', 'checkpoint_timeout', 'max_wal_size')",
            )
            .fetch_all(&mut c)
            .await?;
            let mut settings = serde_json::Map::new();
            for r in rows {
                let name: String = r.get("name");
                let setting: String = r.get("setting");
                let unit: String = r.get("unit");
                settings.insert(
                    name,
                    json!(format!(
                        "{setting}{}",
                        if unit.is_empty() {
                            String::new()
                        } else {
                            format!(" ({unit})")
                        }
                    )),
                );
            }
            Ok(json!({
                "engine": "postgres",
                "version": version,
                "settings": settings,
                "durability": "synchronous_commit as above (default on): every commit waits for its WAL flush",
                "server_pools": "up to 16 connections (A2A_MAILBOX_DB_MAX_CONNECTIONS default)",
                "url": pg_base(&s.pg_url),
            }))
        }
    }
}
