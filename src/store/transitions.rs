//! Each state transition of a task as SQL, defined once: the `SET` lists and statements both
//! engines, `LEASE_TASK`/`DELIVER` and PostgreSQL's lane (`step_many.sql`) are built from. An
//! engine gives only what differs by engine: the FIFO position of a row entering a state
//! (SQLite's next sequence subquery, PostgreSQL's `nextval`) and how it takes a queue's head
//! (PostgreSQL's `FOR UPDATE SKIP LOCKED`). The conformance test (`conformance.rs`) holds both
//! engines to the same outcome. Every statement built from them is committed expanded, one file
//! per engine: `sqlite/statements.sql`, `postgres/statements.sql` (`sql_files.rs`).

/// `queued!(position)`: the values of `state, attempt, queue_seq` (after a task's own columns
/// in `insert_task!` (`statements.rs`)) of a task just queued at the FIFO position the engine gives it. Every
/// insert of a queued task uses it: each engine's `insert_task`, `insert_tasks` and fast send
/// (`SEND_FAST`, and PostgreSQL's lane).
macro_rules! queued {
    ($position:expr) => {
        concat!("'queued', 0, ", $position)
    };
}
pub(crate) use queued;

/// `leased_at_birth!(position)`: the values of `state, attempt, queue_seq` of a task inserted
/// already leased: what [`queued!`] then [`lease!`] would leave, in flight at its first attempt.
/// The lease's own columns (`lease_id, leased_to, leased_at_ms, heartbeat_at_ms`) follow among
/// the columns `insert_task!` names. PostgreSQL's lane inserts a send this way when a claim of
/// the same batch would lease it next (`LANE_SEND_LEASED`).
macro_rules! leased_at_birth {
    ($position:expr) => {
        concat!("'in_flight', 1, ", $position)
    };
}
pub(crate) use leased_at_birth;

/// `lease!(lease id, lessee, now)`: the `SET` list of a lease, the one definition every lease
/// writes (`LEASE_TASK`, and [`claim_head!`] for each engine's claim and PostgreSQL's lane): in
/// flight, one more attempt, the new lease, leased and heartbeat now.
macro_rules! lease {
    ($lease_id:literal, $lessee:literal, $now:literal) => {
        concat!(
            "state = 'in_flight', attempt = attempt + 1, lease_id = ",
            $lease_id,
            ", leased_to = ",
            $lessee,
            ", leased_at_ms = ",
            $now,
            ", heartbeat_at_ms = ",
            $now,
            ", updated_at_ms = ",
            $now
        )
    };
}
pub(crate) use lease;

/// `live!(now)`: a queued task may still be leased at `now` (no deadline, or one not passed).
/// `live!(deadline, now)`: the same of a task about to be inserted with that deadline.
macro_rules! live {
    ($now:literal) => {
        $crate::store::transitions::live!("deadline_ms", $now)
    };
    ($deadline:literal, $now:literal) => {
        concat!("(", $deadline, " IS NULL OR ", $deadline, " >= ", $now, ")")
    };
}
pub(crate) use live;

/// `claim_head!(recipient, lease id, lessee, now, lock)`: leases the head of the recipient's
/// queue when it is [`live!`], without a `RETURNING` (each path answers its own). `lock` is how
/// the engine takes the head: PostgreSQL skips a row another transaction holds
/// (`FOR UPDATE SKIP LOCKED`), SQLite's single writer needs nothing. SQLite's and PostgreSQL's
/// `claim_head` and the lane's claims in `step_many.sql` are this one statement.
macro_rules! claim_head {
    ($recipient:literal, $lease_id:literal, $lessee:literal, $now:literal, $lock:literal) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::lease!($lease_id, $lessee, $now),
            " WHERE id = (SELECT id FROM tasks WHERE state = 'queued' AND recipient = ",
            $recipient,
            " ORDER BY queue_seq LIMIT 1",
            $lock,
            ") AND ",
            $crate::store::transitions::live!($now)
        )
    };
}
pub(crate) use claim_head;

/// `claim_many!(recipient, a new lease id, lessee, now, max, pick)`: leases up to `max` of the
/// oldest [`live!`] tasks of the recipient's queue, each with a lease id of its own (`a new
/// lease id`: an expression the engine evaluates once a row), without a `RETURNING`. A batch
/// lease (`GET /a2a/tasks/next?max=`) is this one statement on both engines. `pick` is how the
/// engine takes the tasks' ids: SQLite's single writer an `IN` list; PostgreSQL the ids it locks
/// (`FOR UPDATE SKIP LOCKED`) as an array, so that one cached plan serves every execution.
macro_rules! claim_many {
    ($recipient:literal, $lease_id:literal, $lessee:literal, $now:literal, $max:literal,
     pick $open:literal $close:literal) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::lease!($lease_id, $lessee, $now),
            " WHERE id",
            $open,
            "SELECT id FROM tasks WHERE state = 'queued' AND recipient = ",
            $recipient,
            " AND ",
            $crate::store::transitions::live!($now),
            " ORDER BY queue_seq LIMIT ",
            $max,
            $close
        )
    };
}
pub(crate) use claim_many;

/// `result_pending!(status, content, error, now, position)`: the `SET` list of a result becoming
/// pending for the task's sender, at the FIFO position the engine gives it. Every result uses
/// it: stored ([`stored!`]), forced ([`force_error!`]) or a deadline's ([`expire!`]).
macro_rules! result_pending {
    ($status:literal, $content:literal, $error:literal, $now:literal, $position:expr) => {
        $crate::store::transitions::result_pending!(
            state "'result_pending'", $status, $content, $error, $now, $position
        )
    };
    (state $state:literal, $status:literal, $content:literal, $error:literal, $now:literal,
     $position:expr) => {
        concat!(
            "state = ",
            $state,
            ", result_status = ",
            $status,
            ", result_content = ",
            $content,
            ", result_error = ",
            $error,
            ", result_at_ms = ",
            $now,
            ", result_seq = ",
            $position
        )
    };
}
pub(crate) use result_pending;

/// The `SET` list that ends a lease (its columns cleared).
macro_rules! released {
    () => {
        "lease_id = NULL, leased_to = NULL, leased_at_ms = NULL, heartbeat_at_ms = NULL"
    };
}

/// `stored!(status, content, error, by, now, position)`: the `SET` list of a result its author
/// stored (the exact path's [`store_result!`], SQLite's fast result, PostgreSQL's lane).
/// `stored!(state STATE, …)` writes the state STATE in place of `result_pending`: PostgreSQL's
/// lane delivers a result at once when a drain of the same batch would take it next.
macro_rules! stored {
    ($status:literal, $content:literal, $error:literal, $by:literal, $now:literal, $position:expr) => {
        $crate::store::transitions::stored!(
            state "'result_pending'", $status, $content, $error, $by, $now, $position
        )
    };
    (state $state:literal, $status:literal, $content:literal, $error:literal, $by:literal,
     $now:literal, $position:expr) => {
        concat!(
            $crate::store::transitions::result_pending!(
                state $state, $status, $content, $error, $now, $position
            ),
            ", result_by = ",
            $by,
            ", updated_at_ms = ",
            $now
        )
    };
}
pub(crate) use stored;

/// `store_result!(position)`: `$1` id, `$2` status, `$3` content, `$4` error, `$5` who, `$6`
/// now: stores a result.
macro_rules! store_result {
    ($position:expr) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::stored!("$2", "$3", "$4", "$5", "$6", $position),
            " WHERE id = $1"
        )
    };
}
pub(crate) use store_result;

/// `force_error!(position)`: `$1` id, `$2` message, `$3` now: ends the lease with an error
/// result for the sender.
macro_rules! force_error {
    ($position:expr) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::result_pending!("'error'", "'[]'", "$2", "$3", $position),
            ", result_by = NULL, ",
            $crate::store::transitions::released!(),
            ", updated_at_ms = $3 WHERE id = $1"
        )
    };
}
pub(crate) use force_error;

/// `expire!(position)`: `$1` id, `$2` now: resolves a queued task whose deadline passed with
/// the error result `deadline exceeded`.
macro_rules! expire {
    ($position:expr) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::result_pending!(
                "'error'",
                "'[]'",
                "'deadline exceeded'",
                "$2",
                $position
            ),
            ", updated_at_ms = $2 WHERE id = $1"
        )
    };
}
pub(crate) use expire;

/// `requeue!(position)`: `$1` id, `$2` now, `$3` lease id, `$4` heartbeat: returns an in-flight
/// task to the END of its queue (the position the engine gives), keeping its attempt counter,
/// if its lease is still that lease with that heartbeat.
macro_rules! requeue {
    ($position:expr) => {
        concat!(
            "UPDATE tasks SET state = 'queued', queue_seq = ",
            $position,
            ", ",
            $crate::store::transitions::released!(),
            ", updated_at_ms = $2 \
             WHERE id = $1 AND state = 'in_flight' AND lease_id = $3 AND heartbeat_at_ms = $4"
        )
    };
}
pub(crate) use released;
pub(crate) use requeue;

/// `resolved!(now)`: the `SET` list of a pending result delivered to its sender.
macro_rules! resolved {
    ($now:literal) => {
        concat!("state = 'resolved', updated_at_ms = ", $now)
    };
}
pub(crate) use resolved;

/// `drain_head!(sender, now, lock)`: delivers the sender's oldest pending result and answers it
/// (`id, result_status, result_content, result_error, result_trace`); `lock` as in [`claim_head!`]. SQLite's
/// `DRAIN` and the lane's drains in `step_many.sql` are this one statement.
macro_rules! drain_head {
    ($sender:literal, $now:literal, $lock:literal) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::resolved!($now),
            " WHERE id = (SELECT id FROM tasks WHERE state = 'result_pending' AND sender = ",
            $sender,
            " ORDER BY result_seq LIMIT 1",
            $lock,
            ") RETURNING id, result_status, result_content, result_error, result_trace"
        )
    };
}
pub(crate) use drain_head;

/// `drain_many!(sender, now, max, pick)`: delivers up to `max` of the sender's oldest pending
/// results and answers them with their FIFO position (`id, result_status, result_content,
/// result_error, result_trace, result_seq`); `pick` as in [`claim_many!`]. A batch drain
/// (`GET /a2a/results/next?max=`) is this one statement on both engines.
macro_rules! drain_many {
    ($sender:literal, $now:literal, $max:literal, pick $open:literal $close:literal) => {
        concat!(
            "UPDATE tasks SET ",
            $crate::store::transitions::resolved!($now),
            " WHERE id",
            $open,
            "SELECT id FROM tasks WHERE state = 'result_pending' AND sender = ",
            $sender,
            " ORDER BY result_seq LIMIT ",
            $max,
            $close,
            " RETURNING id, result_status, result_content, result_error, result_trace, result_seq"
        )
    };
}
pub(crate) use drain_many;
