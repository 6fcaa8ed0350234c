//! The statements both engines run with the same text, and the set each engine fills with its
//! own text (`sqlite/statements.rs`, `postgres/statements.rs`). Only the store reads them. The
//! state transitions they share are in `transitions.rs`.
//!
//! Every statement is declared once, with its doc comment, through [`named_sql!`] (consts) or
//! [`statements_struct!`] (the fields of [`Statements`]), which also list it by name. Expanded
//! and laid out on lines, each engine's statements are committed as `sqlite/statements.sql` and
//! `postgres/statements.sql` (PostgreSQL's batch function with its marks written in too), to read
//! and grep; `sql_files.rs` checks them (regenerate with
//! `A2A_MAILBOX_UPDATE_SQL=1 cargo test --lib sql_files`).

use super::transitions::{lease, resolved};

/// A statement as the committed `.sql` files show it: the name it is declared under, its doc
/// comment (one line each) and its text.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Named {
    pub name: &'static str,
    pub doc: &'static str,
    pub text: &'static str,
}

/// `named_sql! { LIST; /// doc … pub(crate) const NAME: &str = text; … }`: the consts as
/// written, and (in tests) `LIST`, their [`Named`] entries in order: the one declaration both
/// the code and the committed `.sql` files read.
macro_rules! named_sql {
    ($list:ident; $($(#[doc = $doc:literal])* $vis:vis const $name:ident: &str = $text:expr;)*) => {
        $($(#[doc = $doc])* $vis const $name: &str = $text;)*
        /// The statements above, named and documented as declared (the `.sql` files' entries).
        #[cfg(test)]
        pub(crate) const $list: &[$crate::store::statements::Named] = &[$(
            $crate::store::statements::Named {
                name: stringify!($name),
                doc: concat!($($doc, "\n"),*),
                text: $name,
            },
        )*];
    };
}
pub(crate) use named_sql;

/// `statements_struct! { /// doc … pub(crate) struct S { /// doc … pub field: Type, … } }`: the
/// struct as written, and (in tests) `S::named`, the [`Named`] entry of each field that holds a
/// statement ([`SqlField`]), with the field's doc.
macro_rules! statements_struct {
    ($(#[doc = $sdoc:literal])* $svis:vis struct $s:ident {
        $($(#[doc = $doc:literal])* $fvis:vis $field:ident: $ty:ty,)*
    }) => {
        $(#[doc = $sdoc])*
        $svis struct $s {
            $($(#[doc = $doc])* $fvis $field: $ty,)*
        }

        #[cfg(test)]
        impl $s {
            /// The fields that hold a statement, named and documented as declared.
            pub(crate) fn named(&'static self) -> Vec<Named> {
                let mut named = Vec::new();
                $(if let Some(text) = SqlField::statement(&self.$field) {
                    named.push(Named {
                        name: stringify!($field),
                        doc: concat!($($doc, "\n"),*),
                        text,
                    });
                })*
                named
            }
        }
    };
}

/// What a field of [`Statements`] holds, as the `.sql` files see it: a statement, maybe one, or
/// a setting (none).
#[cfg(test)]
trait SqlField {
    fn statement(&self) -> Option<&'static str>;
}
#[cfg(test)]
impl SqlField for &'static str {
    fn statement(&self) -> Option<&'static str> {
        Some(*self)
    }
}
#[cfg(test)]
impl SqlField for Option<&'static str> {
    fn statement(&self) -> Option<&'static str> {
        *self
    }
}
#[cfg(test)]
impl SqlField for bool {
    fn statement(&self) -> Option<&'static str> {
        None
    }
}

/// The columns every task query selects, in [`super::TaskRow`] order. A list reads them from
/// [`Statements::listed`]: a column added here is added to PostgreSQL's view `tasks_listed` too
/// (by a migration that makes it again), or its lists fail.
macro_rules! task_cols {
    () => {
        "id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms, \
         heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from, \
         result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms, \
         canceled_by, cancel_reason, canceled_from, canceled_at_ms"
    };
}
pub(crate) use task_cols;

/// `insert_task!("more columns", "VALUES or SELECT …")`: an insert into `tasks` whose first
/// eleven values are a [`super::NewTask`]'s columns in [`super::NewTask::by_column`] order (its
/// bound parameters, then `cache_key`), then `state, attempt, queue_seq` and the columns
/// named.
macro_rules! insert_task {
    ($more:literal, $($rest:expr),+ $(,)?) => {
        concat!(
            "INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, \
             idem_key, parent, context_id, task_kind, cache_key, state, attempt, queue_seq, ",
            $more,
            ") ",
            $($rest),+
        )
    };
}
pub(crate) use insert_task;

/// `select_tasks!("WHERE …")`: every column of the tasks that match.
macro_rules! select_tasks {
    ($rest:literal) => {
        concat!("SELECT ", task_cols!(), " FROM tasks ", $rest)
    };
}
pub(crate) use select_tasks;

statements_struct! {
    /// The statements whose text differs by engine: where PostgreSQL locks rows (`FOR UPDATE`,
    /// `SKIP LOCKED`) and SQLite relies on its single writer, and how each numbers the FIFO
    /// positions of the queue and of the pending results.
    pub(crate) struct Statements {
        /// `$1` recipient, `$2` lease id, `$3` lessee, `$4` now: leases the head of the
        /// recipient's queue when it is live; answers the leased row.
        pub claim_head: &'static str,
        /// `$1` recipient, `$2` lessee, `$3` now, `$4` the most to take: leases the recipient's
        /// oldest live tasks, each with a new lease id; answers the leased rows with their FIFO
        /// positions (in no order).
        pub claim_many: &'static str,
        /// `$1` sender, `$2` now, `$3` the most to take: delivers the sender's oldest pending
        /// results; answers them with their FIFO positions (in no order).
        pub drain_many: &'static str,
        /// `$1` recipient: the head of its queue (id, sender, deadline).
        pub queue_head: &'static str,
        /// `$1` id, `$2` now: resolves a queued task whose deadline passed with an error result.
        pub expire: &'static str,
        /// `$1..$11` the task ([`super::NewTask::by_column`] order), `$12` now: inserts a queued
        /// task unless its id exists.
        pub insert_task: &'static str,
        /// `$1..$11` the task, `$12` source task, `$13..$15` the cached result, `$16` now:
        /// inserts a task already answered from the result cache.
        pub insert_answered: &'static str,
        /// The tasks, then now: inserts them as queued, in order (their FIFO positions follow
        /// it), each unless its id exists; answers the ids inserted. One statement whatever the
        /// number of tasks, with a fixed number of parameters (SQLite's limit never applies):
        /// with `insert_tasks_by_column`, `$1..$11` one array per column of
        /// [`super::NewTask::columns`] (PostgreSQL decodes arrays faster than JSON) and `$12`
        /// now; otherwise `$1` the tasks as a JSON array of objects (the columns by name) and
        /// `$2` now.
        pub insert_tasks: &'static str,
        pub insert_tasks_by_column: bool,
        /// `$1` now, `$2` issuer, `$3` the rows as a JSON array of `{kind, body, task_id}`:
        /// audit rows in array order.
        pub insert_audits: &'static str,
        /// `$1` the row's id or NULL, `$2` now, `$3` issuer, `$4` kind, `$5` body, `$6` the task
        /// the body names or NULL: writes a new audit row (`$1` NULL: the next id), or replaces
        /// the body of row `$1` (written again if it is gone); answers the row's id.
        pub upsert_audit: &'static str,
        /// `$1` id: the task row, locked against other writers until the transaction ends.
        pub task_for_update: &'static str,
        /// `$1` the ids (a column: an array on PostgreSQL, a JSON array on SQLite): those task
        /// rows, by the primary key, locked as [`Statements::task_for_update`] locks one, in id
        /// order (two batches lock the rows they share in the same order).
        pub tasks_for_update: &'static str,
        /// `$1` id, `$2` status, `$3` content, `$4` error, `$5` who, `$6` now: stores a result.
        pub store_result: &'static str,
        /// `$1..$4` one array each of task ids, statuses, contents and error messages, `$5` who,
        /// `$6` now: stores each result as [`Statements::store_result`] does, their FIFO
        /// positions in array order (none on SQLite, which runs `store_result` once a result).
        pub store_results: Option<&'static str>,
        /// `$1` id, `$2` message, `$3` now: ends the lease with an error result for the sender.
        pub force_error: &'static str,
        /// `$1` id, `$2` now, `$3` lease id, `$4` heartbeat: returns an in-flight task to the END
        /// of its queue, if its lease is still that lease with that heartbeat (the fence: a
        /// heartbeat, a result, a cancel or another requeue since the row was read leaves it
        /// alone).
        pub requeue: &'static str,
        /// A lock that only one retry scan of the database holds at a time (none on SQLite,
        /// which serves one process: its scans share a mutex in the mailbox).
        pub scan_lock: Option<&'static str>,
        /// `$1` the scan's start, `$2` the least spacing between scans: claims the scan row
        /// (every enabled scan and every tick claims it) when the previous scan started at least
        /// `$2` ms before and had finished by `$1` (PostgreSQL also skips a row another scan
        /// holds); one row changed when claimed.
        pub claim_tick: &'static str,
        /// `$1` limit: queued tasks, oldest first (every task).
        pub queued_all: &'static str,
        /// `$1` caller, `$2` limit: queued tasks sent by or addressed to the caller, oldest
        /// first.
        pub queued_visible: &'static str,
        /// `$1` caller (ignored), `$2` limit, `$3` deadline bound or NULL: the queue snapshot's
        /// queued part, for an operator.
        pub snapshot_queued_all: &'static str,
        /// The same for a caller who sees its own tasks: `$1` caller, `$2` limit, `$3` deadline
        /// bound or NULL.
        pub snapshot_queued_visible: &'static str,
        /// `$1` caller (ignored), `$2` limit: pending results, oldest first, for an operator.
        pub snapshot_results_all: &'static str,
        /// The same for the caller's own tasks: `$1` caller, `$2` limit.
        pub snapshot_results_visible: &'static str,
        /// When the head of the whole queue was queued.
        pub oldest_queued: &'static str,
        /// What a list reads: a relation with the columns of `task_cols!` and of a list's
        /// filters, whose listing keys lead its indexes (`tasks` itself, or PostgreSQL's view
        /// `tasks_listed` over its write-once keys).
        pub listed: &'static str,
    }
}

named_sql! { SHARED;
    /// `$1` now: the harmless write `/readyz` commits to learn whether a write can commit.
    pub(crate) const TOUCH_READINESS: &str = "UPDATE readiness SET checked_at_ms = $1 WHERE id = 1";
    /// `$1` id: the task.
    pub(crate) const TASK_BY_ID: &str = select_tasks!("WHERE id = $1");
    /// `$1` id, `$2` trace context (JSON text): a stored result's trace context.
    pub(crate) const SET_RESULT_TRACE: &str = "UPDATE tasks SET result_trace = $2 WHERE id = $1";
    /// `$1` id: the sender, body and replay source of an existing task id.
    pub(crate) const TASK_ORIGIN: &str =
        "SELECT sender, body, replayed_from FROM tasks WHERE id = $1";
    /// `$1` id: what the fast result path checks of the task before it answers.
    pub(crate) const TASK_LEASE: &str =
        "SELECT sender, state, leased_to, lease_id, cache_key FROM tasks WHERE id = $1";
    /// `$1` id, `$2` sender, `$3` now: delivers the task's pending result to its sender, as a
    /// drain does (`result_pending` → `resolved`).
    pub(crate) const DELIVER: &str = concat!(
        "UPDATE tasks SET ",
        resolved!("$3"),
        " WHERE id = $1 AND sender = $2 AND state = 'result_pending'"
    );
    /// `$1` recipient: whether anything is queued for it (a waiting long-poll's check).
    pub(crate) const ANY_QUEUED: &str =
        "SELECT id FROM tasks WHERE state = 'queued' AND recipient = $1 ORDER BY queue_seq LIMIT 1";
    /// `$1` sender: whether a result is pending for it (a waiting long-poll's check).
    pub(crate) const ANY_PENDING: &str =
        "SELECT id FROM tasks WHERE state = 'result_pending' AND sender = $1 ORDER BY result_seq LIMIT 1";
    /// `$1` id, `$2` lease id, `$3` lessee, `$4` now: leases the task the rule read and locked.
    pub(crate) const LEASE_TASK: &str = concat!(
        "UPDATE tasks SET ",
        lease!("$2", "$3", "$4"),
        " WHERE id = $1 RETURNING ",
        task_cols!()
    );
    /// `$1` id, `$2` now: refreshes the heartbeat of the task's lease; answers the row.
    pub(crate) const HEARTBEAT: &str = concat!(
        "UPDATE tasks SET heartbeat_at_ms = $2, updated_at_ms = $2 WHERE id = $1 RETURNING ",
        task_cols!()
    );
    /// `$1` cache key, `$2` now: the live result-cache entry of the key.
    pub(crate) const CACHE_LOOKUP: &str =
        "SELECT source_task_id, status, content, error_message FROM result_cache \
         WHERE cache_key = $1 AND expires_at_ms > $2";
    /// `$1` cache key, `$2` source task, `$3` status, `$4` content, `$5` error, `$6` now, `$7`
    /// expires: caches a result under the key (an entry still live at `$6` is kept).
    pub(crate) const CACHE_PUT: &str =
        "INSERT INTO result_cache (cache_key, source_task_id, status, content, error_message, created_at_ms, expires_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (cache_key) DO UPDATE SET source_task_id = excluded.source_task_id, status = excluded.status, \
            content = excluded.content, error_message = excluded.error_message, \
            created_at_ms = excluded.created_at_ms, expires_at_ms = excluded.expires_at_ms \
         WHERE result_cache.expires_at_ms <= $6";
    /// `$1` limit: in-flight tasks, oldest heartbeat first (the retry scan's candidates).
    pub(crate) const IN_FLIGHT_BY_AGE: &str =
        select_tasks!("WHERE state = 'in_flight' ORDER BY heartbeat_at_ms, id LIMIT $1");
    /// `$1` caller (ignored for an operator), `$2` limit, `$3` deadline bound, `$4` and `$5` the
    /// heartbeat's bounds (at or before `$4`, after `$5`): the queue snapshot's in-flight part.
    pub(crate) const SNAPSHOT_IN_FLIGHT_ALL: &str = select_tasks!(
        "WHERE state = 'in_flight' AND $1 = $1 \
         AND ($3 IS NULL OR deadline_ms <= $3) AND ($4 IS NULL OR heartbeat_at_ms <= $4) \
         AND ($5 IS NULL OR heartbeat_at_ms > $5) \
         ORDER BY heartbeat_at_ms, id LIMIT $2"
    );
    /// The same for a caller who sees its own tasks: `$1` caller, `$2` limit, `$3` deadline
    /// bound, `$4` and `$5` the heartbeat's bounds.
    pub(crate) const SNAPSHOT_IN_FLIGHT_VISIBLE: &str = select_tasks!(
        "WHERE state = 'in_flight' AND (sender = $1 OR recipient = $1 OR leased_to = $1) \
         AND ($3 IS NULL OR deadline_ms <= $3) AND ($4 IS NULL OR heartbeat_at_ms <= $4) \
         AND ($5 IS NULL OR heartbeat_at_ms > $5) \
         ORDER BY heartbeat_at_ms, id LIMIT $2"
    );
    /// `$1` sender, `$2` limit: the results pending for the sender, oldest first.
    pub(crate) const PENDING_OF_SENDER: &str = select_tasks!(
        "WHERE state = 'result_pending' AND sender = $1 ORDER BY result_seq LIMIT $2"
    );
    /// `$1` state: how many tasks are in it (one partial index's entries).
    pub(crate) const COUNT_IN_STATE: &str = "SELECT COUNT(*) AS n FROM tasks WHERE state = $1";
    /// The oldest lease's last heartbeat.
    pub(crate) const OLDEST_LEASE: &str =
        "SELECT heartbeat_at_ms AS at FROM tasks WHERE state = 'in_flight' ORDER BY heartbeat_at_ms LIMIT 1";
    /// Compaction: drops resolved and canceled tasks.
    pub(crate) const DELETE_RESOLVED: &str =
        "DELETE FROM tasks WHERE state IN ('resolved', 'canceled')";
    /// `$1` id, `$2` who, `$3` reason, `$4` now: cancels a queued or in-flight task (its lease
    /// columns keep the ended lease).
    pub(crate) const CANCEL: &str = "UPDATE tasks SET state = 'canceled', canceled_by = $2, \
        cancel_reason = $3, canceled_from = state, canceled_at_ms = $4, updated_at_ms = $4 \
        WHERE id = $1 AND state IN ('queued', 'in_flight')";
    /// `$1` now: compaction drops the expired result-cache entries.
    pub(crate) const DELETE_EXPIRED_CACHE: &str =
        "DELETE FROM result_cache WHERE expires_at_ms <= $1";
    /// `$1` now: compaction drops the expired idempotency keys.
    pub(crate) const DELETE_EXPIRED_KEYS: &str =
        "DELETE FROM idempotency_keys WHERE expires_at_ms <= $1";
    /// `$1` now: marks the claimed tick's scan finished.
    pub(crate) const FINISH_TICK: &str =
        "UPDATE scheduler_ticks SET finished_at_ms = $1 WHERE id = 1";
    /// `$1` name, `$2` value: keeps the first value written under a name.
    pub(crate) const INSERT_SECRET: &str =
        "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";
    /// `$1` name: the secret's value.
    pub(crate) const SECRET: &str = "SELECT value FROM secrets WHERE name = $1";
    /// `$1` the oldest timestamp kept: drops older audit rows.
    pub(crate) const DELETE_OLD_AUDIT: &str = "DELETE FROM audit WHERE timestamp_ms < $1";
    /// `$1` now, `$2` issuer, `$3` kind, `$4` body, `$5` the task the row is about
    /// (`audit::task_of`), or NULL: writes one audit row.
    pub(crate) const INSERT_AUDIT: &str =
        "INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) VALUES ($1, $2, $3, $4, $5)";
    /// `$1` task id, `$2` limit: the task's audit rows, newest first (index `audit_by_task`).
    pub(crate) const AUDIT_FOR_TASK: &str =
        "SELECT event_id, timestamp_ms, issuer, kind, body FROM audit \
         WHERE task_id = $1 AND task_id IS NOT NULL ORDER BY id DESC LIMIT $2";
    /// `$1` caller, `$2` key, `$3` fingerprint, `$4` now, `$5` pending until, `$6` expires:
    /// reserves the key, or takes over a record whose window passed or whose pending reservation
    /// outlived its TTL (its request died before completing: nothing of it was committed).
    pub(crate) const RESERVE_KEY: &str =
        "INSERT INTO idempotency_keys (caller, idem_key, fingerprint, state, response, \
            created_at_ms, locked_until_ms, expires_at_ms) \
         VALUES ($1, $2, $3, 'pending', NULL, $4, $5, $6) \
         ON CONFLICT (caller, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, \
            state = 'pending', response = NULL, created_at_ms = excluded.created_at_ms, \
            locked_until_ms = excluded.locked_until_ms, expires_at_ms = excluded.expires_at_ms \
         WHERE idempotency_keys.expires_at_ms <= $4 \
            OR (idempotency_keys.state = 'pending' AND idempotency_keys.locked_until_ms <= $4)";
    /// `$1` caller, `$2` key: the key's record.
    pub(crate) const KEY_RECORD: &str =
        "SELECT fingerprint, state, response, locked_until_ms FROM idempotency_keys \
         WHERE caller = $1 AND idem_key = $2";
    /// `$1` caller, `$2` key, `$3` the outcome to replay: completes a reserved key.
    pub(crate) const COMPLETE_KEY: &str =
        "UPDATE idempotency_keys SET state = 'complete', response = $3 WHERE caller = $1 AND idem_key = $2";
    /// Where an all-or-nothing group of writes starts.
    pub(crate) const SAVEPOINT: &str = "SAVEPOINT all_or_nothing";
    /// Undoes every write of the group since [`SAVEPOINT`]; the group stays open.
    pub(crate) const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT all_or_nothing";
    /// Keeps the group's writes (they commit with the transaction).
    pub(crate) const RELEASE_SAVEPOINT: &str = "RELEASE SAVEPOINT all_or_nothing";
    /// The read `/readyz` makes to learn whether the database answers.
    pub(crate) const PING: &str = "SELECT CAST(1 AS BIGINT)";
}
