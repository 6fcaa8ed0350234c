//! PostgreSQL's statements. Claims and drains take the rows no other transaction holds
//! (`FOR UPDATE SKIP LOCKED`); a transaction that decides on a row locks it first (`FOR UPDATE`);
//! FIFO positions come from sequences. The global FIFO indexes are on `queue_seq + 0` and
//! `result_seq + 0` (see the schema), so that a claim (`ORDER BY queue_seq` for one recipient)
//! can only use the per-recipient index; the operator views order by those expressions. Each
//! statement PostgreSQL runs, expanded, and the batch function as installed: `statements.sql`.

use crate::store::statements::{insert_task, named_sql, select_tasks, task_cols, Statements};
use crate::store::transitions::{
    claim_head, claim_many, drain_head, drain_many, expire, force_error, leased_at_birth, live,
    queued, requeue, store_result, stored,
};

pub(crate) static STATEMENTS: Statements = Statements {
    claim_head: concat!(
        claim_head!("$1", "$2", "$3", "$4", " FOR UPDATE SKIP LOCKED"),
        " RETURNING ",
        task_cols!()
    ),
    claim_many: concat!(
        claim_many!(
            "$1",
            "gen_random_uuid()::text",
            "$2",
            "$3",
            "$4",
            pick " = ANY (ARRAY (" " FOR UPDATE SKIP LOCKED))"
        ),
        " RETURNING queue_seq, ",
        task_cols!()
    ),
    drain_many: drain_many!("$1", "$2", "$3", pick " = ANY (ARRAY (" " FOR UPDATE SKIP LOCKED))"),
    queue_head:
        "SELECT id, sender, deadline_ms FROM tasks WHERE state = 'queued' AND recipient = $1 \
                 ORDER BY queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED",
    expire: expire!("nextval('a2a_result_seq')"),
    insert_task: insert_task!(
        "created_at_ms, updated_at_ms",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, ",
        queued!("nextval('a2a_queue_seq')"),
        ", $12, $12) ON CONFLICT (id) DO NOTHING"
    ),
    insert_answered: insert_task!(
        "replayed_from, result_status, result_content, result_error, result_at_ms, result_seq, \
         created_at_ms, updated_at_ms",
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'result_pending', 0, 0, $12, $13, \
            $14, $15, $16, nextval('a2a_result_seq'), $16, $16) ON CONFLICT (id) DO NOTHING"
    ),
    // A function scan yields the array's elements in order, and `nextval` is evaluated row by
    // row as they come, so the FIFO positions follow the array.
    insert_tasks: insert_task!(
        "created_at_ms, updated_at_ms",
        "SELECT t.*, ",
        queued!("nextval('a2a_queue_seq')"),
        ", $12, $12 \
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], \
            $7::text[], $8::text[], $9::text[], $10::text[], $11::text[]) AS t \
         ON CONFLICT (id) DO NOTHING RETURNING id"
    ),
    insert_tasks_by_column: true,
    insert_audits: "INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) \
                    SELECT $1, $2, t.kind, t.body, t.task_id \
                    FROM json_to_recordset($3::json) AS t(kind text, body text, task_id text)",
    upsert_audit: "INSERT INTO audit (id, timestamp_ms, issuer, kind, body, task_id) \
                   VALUES (COALESCE($1::bigint, nextval(pg_get_serial_sequence('audit', 'id'))), \
                           $2, $3, $4, $5, $6) \
                   ON CONFLICT (id) DO UPDATE SET body = excluded.body RETURNING id",
    task_for_update: select_tasks!("WHERE id = $1 FOR UPDATE"),
    tasks_for_update: select_tasks!("WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE"),
    store_result: store_result!("nextval('a2a_result_seq')"),
    // The array's elements come in order from the function scan and `nextval` is taken row by
    // row as they come, before the join: the FIFO positions follow the array.
    store_results: Some(concat!(
        "WITH j AS MATERIALIZED (SELECT r.*, nextval('a2a_result_seq') AS seq \
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS r(id, status, content, error)) \
         UPDATE tasks SET ",
        stored!("j.status", "j.content", "j.error", "$5", "$6", "j.seq"),
        " FROM j WHERE tasks.id = j.id"
    )),
    force_error: force_error!("nextval('a2a_result_seq')"),
    requeue: requeue!("nextval('a2a_queue_seq')"),
    scan_lock: Some("SELECT pg_try_advisory_xact_lock(7262001)"),
    claim_tick: "UPDATE scheduler_ticks SET started_at_ms = $1 \
                 WHERE id = (SELECT id FROM scheduler_ticks WHERE id = 1 \
                   AND started_at_ms <= $1 - $2 AND finished_at_ms <= $1 FOR UPDATE SKIP LOCKED)",
    queued_all: select_tasks!("WHERE state = 'queued' ORDER BY queue_seq + 0 LIMIT $1"),
    queued_visible: select_tasks!(
        "WHERE state = 'queued' AND (sender = $1 OR recipient = $1) \
         ORDER BY queue_seq + 0 LIMIT $2"
    ),
    snapshot_queued_all: select_tasks!(
        "WHERE state = 'queued' AND $1 = $1 AND ($3 IS NULL OR deadline_ms <= $3) \
         ORDER BY queue_seq + 0 LIMIT $2"
    ),
    snapshot_queued_visible: select_tasks!(
        "WHERE state = 'queued' AND (sender = $1 OR recipient = $1 OR leased_to = $1) \
         AND ($3 IS NULL OR deadline_ms <= $3) ORDER BY queue_seq + 0 LIMIT $2"
    ),
    snapshot_results_all: select_tasks!(
        "WHERE state = 'result_pending' AND $1 = $1 ORDER BY result_seq + 0 LIMIT $2"
    ),
    snapshot_results_visible: select_tasks!(
        "WHERE state = 'result_pending' AND (sender = $1 OR recipient = $1) \
         ORDER BY result_seq + 0 LIMIT $2"
    ),
    oldest_queued: "SELECT updated_at_ms AS at FROM tasks WHERE state = 'queued' \
                    ORDER BY queue_seq + 0 LIMIT 1",
    listed: "tasks_listed",
};

/// How the lane answers a task it leased (its claims and the sends handed to them): the
/// columns of [`task_cols!`] as one JSON array, in that order, which `TaskRow` reads field by
/// field. PostgreSQL builds it for less than `row_to_json` of the row (no key a column, only the
/// columns read); `a_leased_row_is_read_as_the_row_its_columns_name` holds the two orders together.
macro_rules! leased_row {
    () => {
        concat!(
            "json_build_array(",
            $crate::store::statements::task_cols!(),
            ")::text"
        )
    };
}
#[cfg(test)]
pub(crate) use leased_row;

/// The lane's send (`__SEND__` in `step_many.sql`): the task of element `i` under its id unless
/// the id exists, queued as every insert queues one.
pub(crate) const LANE_SEND: &str = insert_task!(
    "created_at_ms, updated_at_ms",
    "VALUES (s_ids[i], s_senders[i], s_recipients[i], s_bodies[i], s_deadlines[i], \
        s_safeties[i], s_idem_keys[i], s_parents[i], s_contexts[i], s_kinds[i], s_cache_keys[i], ",
    queued!("nextval('a2a_queue_seq')"),
    ", p_now, p_now) ON CONFLICT (id) DO NOTHING"
);

/// The lane's send handed to a claim (`__SEND_LEASED__` in `step_many.sql`): element `i`'s task
/// inserted already leased by claim `j` of the same batch, as that claim's lease would leave it,
/// if the recipient's queue holds no task (the claim would lease the head, and this task is the
/// head only then) and the task is live ([`claim_head!`]'s two conditions). Inserts nothing
/// otherwise, and the send is queued as any other.
pub(crate) const LANE_SEND_LEASED: &str = insert_task!(
    "lease_id, leased_to, leased_at_ms, heartbeat_at_ms, created_at_ms, updated_at_ms",
    "SELECT s_ids[i], s_senders[i], s_recipients[i], s_bodies[i], s_deadlines[i], \
        s_safeties[i], s_idem_keys[i], s_parents[i], s_contexts[i], s_kinds[i], s_cache_keys[i], ",
    leased_at_birth!("nextval('a2a_queue_seq')"),
    ", c_lease_ids[j], c_callers[j], p_now, p_now, p_now, p_now WHERE ",
    live!("s_deadlines[i]", "p_now"),
    " AND NOT EXISTS (SELECT 1 FROM tasks q WHERE q.state = 'queued' \
                       AND q.recipient = s_recipients[i]) \
     ON CONFLICT (id) DO NOTHING RETURNING sender, ",
    leased_row!()
);

/// The lane's claim (`__CLAIM__` in `step_many.sql`): `claim_head` on element `i`'s arguments,
/// answering the leased task as [`leased_row!`].
pub(crate) const LANE_CLAIM: &str = concat!(
    claim_head!(
        "c_recipients[i]",
        "c_lease_ids[i]",
        "c_callers[i]",
        "p_now",
        " FOR UPDATE SKIP LOCKED"
    ),
    " RETURNING ",
    leased_row!()
);

/// The `SET` list of the lane's results (`__STORED__` in `step_many.sql`): element `i`'s result,
/// stored as every path stores one; delivered at once (`resolved`, as `resolved!` leaves a
/// drained task) when a drain of the same batch that has not answered yet waits for the task's
/// sender (`v_drains`) and the sender has no other result pending (the drain would take the
/// oldest, and this one is the oldest only then).
pub(crate) const LANE_STORED: &str = stored!(
    state "CASE WHEN sender = ANY (v_drains) AND NOT EXISTS (SELECT 1 FROM tasks p \
           WHERE p.state = 'result_pending' AND p.sender = tasks.sender) \
           THEN 'resolved' ELSE 'result_pending' END",
    "r_statuses[i]",
    "r_contents[i]",
    "r_errors[i]",
    "r_callers[i]",
    "p_now",
    "nextval('a2a_result_seq')"
);

/// The lane's drain (`__DRAIN__` in `step_many.sql`): `drain_head` for element `i`'s sender.
pub(crate) const LANE_DRAIN: &str = drain_head!("d_senders[i]", "p_now", " FOR UPDATE SKIP LOCKED");

named_sql! { POSTGRES;
    /// One call of the group-commit function (`step_many.sql`, below as installed) for a whole
    /// batch, each argument an array of one field of that kind's elements in batch order: the
    /// sends' `$1..$11` task columns ([`crate::store::NewTask::by_column`] order), `$12` audit
    /// bodies and `$13` audit event ids; the claims' `$14` recipients, `$15` lease ids, `$16`
    /// callers, `$17` riding flags; the results' `$18` task ids, `$19` statuses, `$20` contents,
    /// `$21` errors, `$22` callers, `$23` lease guards, `$24`/`$25` audit bodies before and after
    /// the sender, `$26` audit event ids; the drains' `$27` senders, `$28` riding flags; `$29`
    /// now.
    pub(crate) const STEP_MANY: &str =
        "SELECT o_kind, o_ord, o_text, o_status, o_content, o_error, o_trace FROM a2a_step_many(\
         $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
         $21, $22, $23, $24, $25, $26, $27, $28, $29)";

    /// `$1` the payloads: tells the other instances on this database whom commits concerned, one
    /// notification per payload, committed without waiting for its WAL flush (nothing durable
    /// rides on it).
    pub(crate) const NOTIFY_PEERS: &str = "SELECT pg_notify('a2a_mailbox', p) \
         FROM set_config('synchronous_commit', 'off', true) AS s, unnest($1::text[]) AS p";
    /// Held while `step_many.sql` is installed, so instances starting together take turns.
    pub(crate) const INSTALL_LOCK: &str = "SELECT pg_advisory_xact_lock(7262002)";
}

/// The channel of [`NOTIFY_PEERS`].
pub(crate) const PEER_CHANNEL: &str = "a2a_mailbox";

/// The committed `statements.sql` beside this file: every statement above, the batch function
/// as installed, and the shared ones, expanded and laid out (`store/sql_files.rs`).
#[cfg(test)]
mod sql_files;
