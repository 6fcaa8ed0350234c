//! SQLite's statements. `BEGIN IMMEDIATE` makes every write transaction the only writer, so
//! nothing is locked row by row; a FIFO position is one past the largest among the rows now in
//! that state (read from the state's partial index), which is enough since order only matters
//! among rows in the same state. Each statement SQLite runs, expanded: `statements.sql`.

use crate::store::statements::{insert_task, named_sql, select_tasks, task_cols, Statements};
use crate::store::transitions::{
    claim_head, claim_many, drain_head, drain_many, expire, force_error, queued, requeue,
    store_result,
};

macro_rules! next_queue_seq {
    () => {
        "(SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued')"
    };
}
macro_rules! next_result_seq {
    () => {
        "(SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending')"
    };
}

pub(crate) static STATEMENTS: Statements = Statements {
    claim_head: concat!(
        claim_head!("$1", "$2", "$3", "$4", ""),
        " RETURNING ",
        task_cols!()
    ),
    claim_many: concat!(
        // The lease id: a new random (version 4) UUID a row, as text like every other id.
        claim_many!(
            "$1",
            "(lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || \
             substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (random() & 3), 1) || \
             substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))))",
            "$2",
            "$3",
            "$4",
            pick " IN (" ")"
        ),
        " RETURNING queue_seq, ",
        task_cols!()
    ),
    drain_many: drain_many!("$1", "$2", "$3", pick " IN (" ")"),
    queue_head:
        "SELECT id, sender, deadline_ms FROM tasks WHERE state = 'queued' AND recipient = $1 \
                 ORDER BY queue_seq LIMIT 1",
    expire: expire!(next_result_seq!()),
    insert_task: insert_task!(
        "created_at_ms, updated_at_ms",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, ",
        queued!(next_queue_seq!()),
        ", $12, $12) ON CONFLICT (id) DO NOTHING"
    ),
    insert_answered: insert_task!(
        "replayed_from, result_status, result_content, result_error, result_at_ms, result_seq, \
         created_at_ms, updated_at_ms",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'result_pending', 0, 0, $12, $13, \
            $14, $15, $16, ",
        next_result_seq!(),
        ", $16, $16) ON CONFLICT (id) DO NOTHING"
    ),
    insert_tasks: insert_task!(
        "created_at_ms, updated_at_ms",
        "SELECT value ->> 'id', value ->> 'sender', value ->> 'recipient', value ->> 'body', \
            value ->> 'deadline_ms', value ->> 'duplicate_safety', value ->> 'idem_key', \
            value ->> 'parent', value ->> 'context_id', value ->> 'task_kind', \
            value ->> 'cache_key', ",
        queued!(next_queue_seq!()),
        " + key, $2, $2 \
         FROM json_each($1) WHERE true ORDER BY key ON CONFLICT (id) DO NOTHING RETURNING id"
    ),
    insert_tasks_by_column: false,
    insert_audits: "INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) \
                    SELECT $1, $2, value ->> 'kind', value ->> 'body', value ->> 'task_id' \
                    FROM json_each($3) WHERE true ORDER BY key",
    upsert_audit: "INSERT INTO audit (id, timestamp_ms, issuer, kind, body, task_id) \
                   VALUES ($1, $2, $3, $4, $5, $6) \
                   ON CONFLICT (id) DO UPDATE SET body = excluded.body RETURNING id",
    task_for_update: select_tasks!("WHERE id = $1"),
    tasks_for_update: select_tasks!("WHERE id IN (SELECT value FROM json_each($1)) ORDER BY id"),
    store_result: store_result!(next_result_seq!()),
    store_results: None,
    force_error: force_error!(next_result_seq!()),
    requeue: requeue!(next_queue_seq!()),
    scan_lock: None,
    claim_tick: "UPDATE scheduler_ticks SET started_at_ms = $1 \
                 WHERE id = 1 AND started_at_ms <= $1 - $2 AND finished_at_ms <= $1",
    queued_all: select_tasks!("WHERE state = 'queued' ORDER BY queue_seq LIMIT $1"),
    queued_visible: select_tasks!(
        "WHERE state = 'queued' AND (sender = $1 OR recipient = $1) \
         ORDER BY queue_seq LIMIT $2"
    ),
    snapshot_queued_all: select_tasks!(
        "WHERE state = 'queued' AND $1 = $1 AND ($3 IS NULL OR deadline_ms <= $3) \
         ORDER BY queue_seq LIMIT $2"
    ),
    snapshot_queued_visible: select_tasks!(
        "WHERE state = 'queued' AND (sender = $1 OR recipient = $1 OR leased_to = $1) \
         AND ($3 IS NULL OR deadline_ms <= $3) ORDER BY queue_seq LIMIT $2"
    ),
    snapshot_results_all: select_tasks!(
        "WHERE state = 'result_pending' AND $1 = $1 ORDER BY result_seq LIMIT $2"
    ),
    snapshot_results_visible: select_tasks!(
        "WHERE state = 'result_pending' AND (sender = $1 OR recipient = $1) \
         ORDER BY result_seq LIMIT $2"
    ),
    oldest_queued: "SELECT updated_at_ms AS at FROM tasks WHERE state = 'queued' \
                    ORDER BY queue_seq LIMIT 1",
    listed: "tasks",
};

named_sql! { SQLITE;
    /// The fast send as one text of the group-commit writer: `$1..$10` the task (it has no cache
    /// key), `$11` now, `$12` the audit body; `changes()` carries the insert's outcome to the
    /// audit insert. A send's check names its recipient, not a task: its row's `task_id` is NULL.
    pub(crate) const SEND_FAST: &str = insert_task!(
        "created_at_ms, updated_at_ms",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, ",
        queued!(next_queue_seq!()),
        ", $11, $11) ON CONFLICT (id) DO NOTHING; \
         INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) \
           SELECT $11, $2, 'capability_check', $12, NULL WHERE changes() = 1; \
         SELECT changes()"
    );

    /// The fast result: `$1` task id, `$2..$4` the result, `$5` the caller, `$6` now, `$7` the
    /// lease id the task must still hold (or NULL), `$8`/`$9` the audit body before and after the
    /// sender's name (its scope `a2a-respond:<$1>` makes `$1` its `task_id`). Answers the sender
    /// when the result was stored.
    pub(crate) const RESULT_FAST: &str = concat!(
        store_result!(next_result_seq!()),
        " AND state = 'in_flight' AND leased_to = $5 AND cache_key IS NULL \
           AND ($7 IS NULL OR lease_id = $7); \
         INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) \
           SELECT $6, $5, 'capability_check', $8 || sender || $9, id FROM tasks WHERE id = $1 AND changes() = 1; \
         SELECT sender FROM tasks WHERE id = $1 AND changes() = 1"
    );

    /// `$1` sender, `$2` now: drains the sender's oldest pending result.
    pub(crate) const DRAIN: &str = drain_head!("$1", "$2", "");
}

/// The committed `statements.sql` beside this file: every statement above and the shared ones,
/// expanded and laid out (`store/sql_files.rs`).
#[cfg(test)]
mod sql_files {
    use crate::store::sql_files::{sql_file_tests, Section, SqlFile};

    fn file() -> SqlFile {
        SqlFile::new(
            "src/store/sqlite/statements.sql",
            "SQLite",
            "the writer's BEGIN IMMEDIATE and savepoints (src/store/sqlite/writer.rs), the WAL \
             checkpoint (src/store/sqlite/checkpointer.rs), the connections' pragmas \
             (src/store/sqlite/mod.rs), query plans (EXPLAIN QUERY PLAN before a statement, \
             src/store/sqlite/backend.rs) and the schema (migrations/sqlite/).",
            &super::STATEMENTS,
            Section::new(
                "SQLite's own (src/store/sqlite/statements.rs)",
                super::SQLITE,
            ),
        )
    }

    sql_file_tests!(file);
}
