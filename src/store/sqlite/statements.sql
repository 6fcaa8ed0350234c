-- Every SQL statement SQLite runs, generated from the code: do not edit. Each is declared once in
-- src/store (built from the transitions of src/store/transitions.rs) and shown here expanded under
-- its name and doc, laid out on lines: the text executed is the same with each line break a space.
-- $n are its parameters. Regenerate after changing one (a test fails until then):
-- A2A_MAILBOX_UPDATE_SQL=1 cargo test --lib sql_files
--
-- Composed at run time from a filter, not here: task lists and their counts (src/store/listing.rs,
-- reading tasks), lease pages and counts (src/store/leases.rs), audit feeds (src/store/reads.rs).
-- Not here either: the writer's BEGIN IMMEDIATE and savepoints (src/store/sqlite/writer.rs), the
-- WAL checkpoint (src/store/sqlite/checkpointer.rs), the connections' pragmas
-- (src/store/sqlite/mod.rs), query plans (EXPLAIN QUERY PLAN before a statement,
-- src/store/sqlite/backend.rs) and the schema (migrations/sqlite/).

-- ==== The engine's `Statements` (fields documented in src/store/statements.rs) ====

-- name: claim_head
-- $1 recipient, $2 lease id, $3 lessee, $4 now: leases the head of the recipient's queue when it is
-- live; answers the leased row.
UPDATE tasks
SET state = 'in_flight',
    attempt = attempt + 1,
    lease_id = $2,
    leased_to = $3,
    leased_at_ms = $4,
    heartbeat_at_ms = $4,
    updated_at_ms = $4
WHERE id = (SELECT id FROM tasks WHERE state = 'queued'
    AND recipient = $1 ORDER BY queue_seq LIMIT 1) AND (deadline_ms IS NULL OR deadline_ms >= $4)
RETURNING id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms;

-- name: claim_many
-- $1 recipient, $2 lessee, $3 now, $4 the most to take: leases the recipient's oldest live tasks,
-- each with a new lease id; answers the leased rows with their FIFO positions (in no order).
UPDATE tasks
SET state = 'in_flight',
    attempt = attempt + 1,
    lease_id = (lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))),
    leased_to = $2,
    leased_at_ms = $3,
    heartbeat_at_ms = $3,
    updated_at_ms = $3
WHERE id IN (SELECT id FROM tasks WHERE state = 'queued' AND recipient = $1
    AND (deadline_ms IS NULL OR deadline_ms >= $3) ORDER BY queue_seq LIMIT $4)
RETURNING queue_seq, id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms;

-- name: drain_many
-- $1 sender, $2 now, $3 the most to take: delivers the sender's oldest pending results; answers
-- them with their FIFO positions (in no order).
UPDATE tasks
SET state = 'resolved',
    updated_at_ms = $2
WHERE id IN (SELECT id FROM tasks WHERE state = 'result_pending'
    AND sender = $1 ORDER BY result_seq LIMIT $3)
RETURNING id, result_status, result_content, result_error, result_trace, result_seq;

-- name: queue_head
-- $1 recipient: the head of its queue (id, sender, deadline).
SELECT id, sender, deadline_ms
FROM tasks
WHERE state = 'queued' AND recipient = $1
ORDER BY queue_seq LIMIT 1;

-- name: expire
-- $1 id, $2 now: resolves a queued task whose deadline passed with an error result.
UPDATE tasks
SET state = 'result_pending',
    result_status = 'error',
    result_content = '[]',
    result_error = 'deadline exceeded',
    result_at_ms = $2,
    result_seq = (SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending'),
    updated_at_ms = $2
WHERE id = $1;

-- name: insert_task
-- $1..$11 the task (super::NewTask::by_column order), $12 now: inserts a queued task unless its id
-- exists.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'queued', 0,
    (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued'), $12, $12)
ON CONFLICT (id) DO NOTHING;

-- name: insert_answered
-- $1..$11 the task, $12 source task, $13..$15 the cached result, $16 now: inserts a task already
-- answered from the result cache.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, replayed_from, result_status,
    result_content, result_error, result_at_ms, result_seq, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'result_pending', 0, 0, $12, $13, $14, $15,
    $16, (SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending'), $16,
    $16)
ON CONFLICT (id) DO NOTHING;

-- name: insert_tasks
-- The tasks, then now: inserts them as queued, in order (their FIFO positions follow it), each
-- unless its id exists; answers the ids inserted. One statement whatever the number of tasks, with
-- a fixed number of parameters (SQLite's limit never applies): with insert_tasks_by_column, $1..$11
-- one array per column of super::NewTask::columns (PostgreSQL decodes arrays faster than JSON) and
-- $12 now; otherwise $1 the tasks as a JSON array of objects (the columns by name) and $2 now.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms, updated_at_ms)
SELECT value ->> 'id', value ->> 'sender', value ->> 'recipient', value ->> 'body',
    value ->> 'deadline_ms', value ->> 'duplicate_safety', value ->> 'idem_key', value ->> 'parent',
    value ->> 'context_id', value ->> 'task_kind', value ->> 'cache_key', 'queued', 0,
    (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued') + key, $2, $2
FROM json_each($1)
WHERE true
ORDER BY key
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: insert_audits
-- $1 now, $2 issuer, $3 the rows as a JSON array of {kind, body, task_id}: audit rows in array
-- order.
INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id)
SELECT $1, $2, value ->> 'kind', value ->> 'body', value ->> 'task_id'
FROM json_each($3)
WHERE true
ORDER BY key;

-- name: upsert_audit
-- $1 the row's id or NULL, $2 now, $3 issuer, $4 kind, $5 body, $6 the task the body names or NULL:
-- writes a new audit row ($1 NULL: the next id), or replaces the body of row $1 (written again if
-- it is gone); answers the row's id.
INSERT INTO audit (id, timestamp_ms, issuer, kind, body, task_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
SET body = excluded.body
RETURNING id;

-- name: task_for_update
-- $1 id: the task row, locked against other writers until the transaction ends.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE id = $1;

-- name: tasks_for_update
-- $1 the ids (a column: an array on PostgreSQL, a JSON array on SQLite): those task rows, by the
-- primary key, locked as Statements::task_for_update locks one, in id order (two batches lock the
-- rows they share in the same order).
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE id IN (SELECT value FROM json_each($1))
ORDER BY id;

-- name: store_result
-- $1 id, $2 status, $3 content, $4 error, $5 who, $6 now: stores a result.
UPDATE tasks
SET state = 'result_pending',
    result_status = $2,
    result_content = $3,
    result_error = $4,
    result_at_ms = $6,
    result_seq = (SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending'),
    result_by = $5,
    updated_at_ms = $6
WHERE id = $1;

-- name: force_error
-- $1 id, $2 message, $3 now: ends the lease with an error result for the sender.
UPDATE tasks
SET state = 'result_pending',
    result_status = 'error',
    result_content = '[]',
    result_error = $2,
    result_at_ms = $3,
    result_seq = (SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending'),
    result_by = NULL,
    lease_id = NULL,
    leased_to = NULL,
    leased_at_ms = NULL,
    heartbeat_at_ms = NULL,
    updated_at_ms = $3
WHERE id = $1;

-- name: requeue
-- $1 id, $2 now, $3 lease id, $4 heartbeat: returns an in-flight task to the END of its queue, if
-- its lease is still that lease with that heartbeat (the fence: a heartbeat, a result, a cancel or
-- another requeue since the row was read leaves it alone).
UPDATE tasks
SET state = 'queued',
    queue_seq = (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued'),
    lease_id = NULL,
    leased_to = NULL,
    leased_at_ms = NULL,
    heartbeat_at_ms = NULL,
    updated_at_ms = $2
WHERE id = $1 AND state = 'in_flight' AND lease_id = $3 AND heartbeat_at_ms = $4;

-- name: claim_tick
-- $1 the scan's start, $2 the least spacing between scans: claims the scan row (every enabled scan
-- and every tick claims it) when the previous scan started at least $2 ms before and had finished
-- by $1 (PostgreSQL also skips a row another scan holds); one row changed when claimed.
UPDATE scheduler_ticks
SET started_at_ms = $1
WHERE id = 1 AND started_at_ms <= $1 - $2 AND finished_at_ms <= $1;

-- name: queued_all
-- $1 limit: queued tasks, oldest first (every task).
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued'
ORDER BY queue_seq LIMIT $1;

-- name: queued_visible
-- $1 caller, $2 limit: queued tasks sent by or addressed to the caller, oldest first.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND (sender = $1 OR recipient = $1)
ORDER BY queue_seq LIMIT $2;

-- name: snapshot_queued_all
-- $1 caller (ignored), $2 limit, $3 deadline bound or NULL: the queue snapshot's queued part, for
-- an operator.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND $1 = $1 AND ($3 IS NULL OR deadline_ms <= $3)
ORDER BY queue_seq LIMIT $2;

-- name: snapshot_queued_visible
-- The same for a caller who sees its own tasks: $1 caller, $2 limit, $3 deadline bound or NULL.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND (sender = $1 OR recipient = $1 OR leased_to = $1)
    AND ($3 IS NULL OR deadline_ms <= $3)
ORDER BY queue_seq LIMIT $2;

-- name: snapshot_results_all
-- $1 caller (ignored), $2 limit: pending results, oldest first, for an operator.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'result_pending' AND $1 = $1
ORDER BY result_seq LIMIT $2;

-- name: snapshot_results_visible
-- The same for the caller's own tasks: $1 caller, $2 limit.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'result_pending' AND (sender = $1 OR recipient = $1)
ORDER BY result_seq LIMIT $2;

-- name: oldest_queued
-- When the head of the whole queue was queued.
SELECT updated_at_ms AS at
FROM tasks
WHERE state = 'queued'
ORDER BY queue_seq LIMIT 1;

-- ==== SQLite's own (src/store/sqlite/statements.rs) ====

-- name: send_fast
-- The fast send as one text of the group-commit writer: $1..$10 the task (it has no cache key), $11
-- now, $12 the audit body; changes() carries the insert's outcome to the audit insert. A send's
-- check names its recipient, not a task: its row's task_id is NULL.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, 'queued', 0,
    (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued'), $11, $11)
ON CONFLICT (id) DO NOTHING;
INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id)
SELECT $11, $2, 'capability_check', $12, NULL
WHERE changes() = 1;
SELECT changes();

-- name: result_fast
-- The fast result: $1 task id, $2..$4 the result, $5 the caller, $6 now, $7 the lease id the task
-- must still hold (or NULL), $8/$9 the audit body before and after the sender's name (its scope
-- a2a-respond:<$1> makes $1 its task_id). Answers the sender when the result was stored.
UPDATE tasks
SET state = 'result_pending',
    result_status = $2,
    result_content = $3,
    result_error = $4,
    result_at_ms = $6,
    result_seq = (SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending'),
    result_by = $5,
    updated_at_ms = $6
WHERE id = $1 AND state = 'in_flight' AND leased_to = $5 AND cache_key IS NULL
    AND ($7 IS NULL OR lease_id = $7);
INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id)
SELECT $6, $5, 'capability_check', $8 || sender || $9, id
FROM tasks
WHERE id = $1 AND changes() = 1;
SELECT sender
FROM tasks
WHERE id = $1 AND changes() = 1;

-- name: drain
-- $1 sender, $2 now: drains the sender's oldest pending result.
UPDATE tasks
SET state = 'resolved',
    updated_at_ms = $2
WHERE id = (SELECT id FROM tasks WHERE state = 'result_pending'
    AND sender = $1 ORDER BY result_seq LIMIT 1)
RETURNING id, result_status, result_content, result_error, result_trace;

-- ==== Both engines alike (src/store/statements.rs) ====

-- name: touch_readiness
-- $1 now: the harmless write /readyz commits to learn whether a write can commit.
UPDATE readiness
SET checked_at_ms = $1
WHERE id = 1;

-- name: task_by_id
-- $1 id: the task.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE id = $1;

-- name: set_result_trace
-- $1 id, $2 trace context (JSON text): a stored result's trace context.
UPDATE tasks
SET result_trace = $2
WHERE id = $1;

-- name: task_origin
-- $1 id: the sender, body and replay source of an existing task id.
SELECT sender, body, replayed_from
FROM tasks
WHERE id = $1;

-- name: task_lease
-- $1 id: what the fast result path checks of the task before it answers.
SELECT sender, state, leased_to, lease_id, cache_key
FROM tasks
WHERE id = $1;

-- name: deliver
-- $1 id, $2 sender, $3 now: delivers the task's pending result to its sender, as a drain does
-- (result_pending → resolved).
UPDATE tasks
SET state = 'resolved',
    updated_at_ms = $3
WHERE id = $1 AND sender = $2 AND state = 'result_pending';

-- name: any_queued
-- $1 recipient: whether anything is queued for it (a waiting long-poll's check).
SELECT id
FROM tasks
WHERE state = 'queued' AND recipient = $1
ORDER BY queue_seq LIMIT 1;

-- name: any_pending
-- $1 sender: whether a result is pending for it (a waiting long-poll's check).
SELECT id
FROM tasks
WHERE state = 'result_pending' AND sender = $1
ORDER BY result_seq LIMIT 1;

-- name: lease_task
-- $1 id, $2 lease id, $3 lessee, $4 now: leases the task the rule read and locked.
UPDATE tasks
SET state = 'in_flight',
    attempt = attempt + 1,
    lease_id = $2,
    leased_to = $3,
    leased_at_ms = $4,
    heartbeat_at_ms = $4,
    updated_at_ms = $4
WHERE id = $1
RETURNING id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms;

-- name: heartbeat
-- $1 id, $2 now: refreshes the heartbeat of the task's lease; answers the row.
UPDATE tasks
SET heartbeat_at_ms = $2,
    updated_at_ms = $2
WHERE id = $1
RETURNING id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms;

-- name: cache_lookup
-- $1 cache key, $2 now: the live result-cache entry of the key.
SELECT source_task_id, status, content, error_message
FROM result_cache
WHERE cache_key = $1 AND expires_at_ms > $2;

-- name: cache_put
-- $1 cache key, $2 source task, $3 status, $4 content, $5 error, $6 now, $7 expires: caches a
-- result under the key (an entry still live at $6 is kept).
INSERT INTO result_cache (cache_key, source_task_id, status, content, error_message, created_at_ms,
    expires_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (cache_key) DO UPDATE
SET source_task_id = excluded.source_task_id,
    status = excluded.status,
    content = excluded.content,
    error_message = excluded.error_message,
    created_at_ms = excluded.created_at_ms,
    expires_at_ms = excluded.expires_at_ms
WHERE result_cache.expires_at_ms <= $6;

-- name: in_flight_by_age
-- $1 limit: in-flight tasks, oldest heartbeat first (the retry scan's candidates).
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'in_flight'
ORDER BY heartbeat_at_ms, id LIMIT $1;

-- name: snapshot_in_flight_all
-- $1 caller (ignored for an operator), $2 limit, $3 deadline bound, $4 and $5 the heartbeat's
-- bounds (at or before $4, after $5): the queue snapshot's in-flight part.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'in_flight' AND $1 = $1 AND ($3 IS NULL OR deadline_ms <= $3)
    AND ($4 IS NULL OR heartbeat_at_ms <= $4) AND ($5 IS NULL OR heartbeat_at_ms > $5)
ORDER BY heartbeat_at_ms, id LIMIT $2;

-- name: snapshot_in_flight_visible
-- The same for a caller who sees its own tasks: $1 caller, $2 limit, $3 deadline bound, $4 and $5
-- the heartbeat's bounds.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'in_flight' AND (sender = $1 OR recipient = $1 OR leased_to = $1)
    AND ($3 IS NULL OR deadline_ms <= $3) AND ($4 IS NULL OR heartbeat_at_ms <= $4)
    AND ($5 IS NULL OR heartbeat_at_ms > $5)
ORDER BY heartbeat_at_ms, id LIMIT $2;

-- name: pending_of_sender
-- $1 sender, $2 limit: the results pending for the sender, oldest first.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'result_pending' AND sender = $1
ORDER BY result_seq LIMIT $2;

-- name: count_in_state
-- $1 state: how many tasks are in it (one partial index's entries).
SELECT COUNT(*) AS n
FROM tasks
WHERE state = $1;

-- name: oldest_lease
-- The oldest lease's last heartbeat.
SELECT heartbeat_at_ms AS at
FROM tasks
WHERE state = 'in_flight'
ORDER BY heartbeat_at_ms LIMIT 1;

-- name: delete_resolved
-- Compaction: drops resolved and canceled tasks.
DELETE FROM tasks
WHERE state IN ('resolved', 'canceled');

-- name: cancel
-- $1 id, $2 who, $3 reason, $4 now: cancels a queued or in-flight task (its lease columns keep the
-- ended lease).
UPDATE tasks
SET state = 'canceled',
    canceled_by = $2,
    cancel_reason = $3,
    canceled_from = state,
    canceled_at_ms = $4,
    updated_at_ms = $4
WHERE id = $1 AND state IN ('queued', 'in_flight');

-- name: delete_expired_cache
-- $1 now: compaction drops the expired result-cache entries.
DELETE FROM result_cache
WHERE expires_at_ms <= $1;

-- name: delete_expired_keys
-- $1 now: compaction drops the expired idempotency keys.
DELETE FROM idempotency_keys
WHERE expires_at_ms <= $1;

-- name: finish_tick
-- $1 now: marks the claimed tick's scan finished.
UPDATE scheduler_ticks
SET finished_at_ms = $1
WHERE id = 1;

-- name: insert_secret
-- $1 name, $2 value: keeps the first value written under a name.
INSERT INTO secrets (name, value)
VALUES ($1, $2)
ON CONFLICT (name) DO NOTHING;

-- name: secret
-- $1 name: the secret's value.
SELECT value
FROM secrets
WHERE name = $1;

-- name: delete_old_audit
-- $1 the oldest timestamp kept: drops older audit rows.
DELETE FROM audit
WHERE timestamp_ms < $1;

-- name: insert_audit
-- $1 now, $2 issuer, $3 kind, $4 body, $5 the task the row is about (audit::task_of), or NULL:
-- writes one audit row.
INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id)
VALUES ($1, $2, $3, $4, $5);

-- name: audit_for_task
-- $1 task id, $2 limit: the task's audit rows, newest first (index audit_by_task).
SELECT event_id, timestamp_ms, issuer, kind, body
FROM audit
WHERE task_id = $1 AND task_id IS NOT NULL
ORDER BY id DESC LIMIT $2;

-- name: reserve_key
-- $1 caller, $2 key, $3 fingerprint, $4 now, $5 pending until, $6 expires: reserves the key, or
-- takes over a record whose window passed or whose pending reservation outlived its TTL (its
-- request died before completing: nothing of it was committed).
INSERT INTO idempotency_keys (caller, idem_key, fingerprint, state, response, created_at_ms,
    locked_until_ms, expires_at_ms)
VALUES ($1, $2, $3, 'pending', NULL, $4, $5, $6)
ON CONFLICT (caller, idem_key) DO UPDATE
SET fingerprint = excluded.fingerprint,
    state = 'pending',
    response = NULL,
    created_at_ms = excluded.created_at_ms,
    locked_until_ms = excluded.locked_until_ms,
    expires_at_ms = excluded.expires_at_ms
WHERE idempotency_keys.expires_at_ms <= $4
    OR (idempotency_keys.state = 'pending' AND idempotency_keys.locked_until_ms <= $4);

-- name: key_record
-- $1 caller, $2 key: the key's record.
SELECT fingerprint, state, response, locked_until_ms
FROM idempotency_keys
WHERE caller = $1 AND idem_key = $2;

-- name: complete_key
-- $1 caller, $2 key, $3 the outcome to replay: completes a reserved key.
UPDATE idempotency_keys
SET state = 'complete',
    response = $3
WHERE caller = $1 AND idem_key = $2;

-- name: savepoint
-- Where an all-or-nothing group of writes starts.
SAVEPOINT all_or_nothing;

-- name: rollback_to_savepoint
-- Undoes every write of the group since SAVEPOINT; the group stays open.
ROLLBACK TO SAVEPOINT all_or_nothing;

-- name: release_savepoint
-- Keeps the group's writes (they commit with the transaction).
RELEASE SAVEPOINT all_or_nothing;

-- name: ping
-- The read /readyz makes to learn whether the database answers.
SELECT CAST(1 AS BIGINT);

-- ==== The operator's overview, both engines (src/store/overview.rs) ====

-- name: count_finished
-- $1 cap: resolved and canceled tasks, counted up to the cap (a bounded walk, however many the
-- table holds).
SELECT COUNT(*) AS n
FROM (SELECT 1 FROM tasks WHERE state IN ('resolved', 'canceled') LIMIT $1) AS finished;

-- name: depth_by_recipient
-- $1 limit: the deepest queues.
SELECT recipient, COUNT(*) AS n
FROM tasks
WHERE state = 'queued'
GROUP BY recipient
ORDER BY n DESC, recipient LIMIT $1;

-- name: lease_ages
-- $1..$3 heartbeat bounds, newest first: in-flight leases by age bucket.
SELECT COALESCE(SUM(CASE WHEN heartbeat_at_ms > $1 THEN 1 ELSE 0 END), 0) AS a,
    COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $1 AND heartbeat_at_ms > $2 THEN 1 ELSE 0 END),
    0) AS b,
    COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $2 AND heartbeat_at_ms > $3 THEN 1 ELSE 0 END),
    0) AS c, COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $3 THEN 1 ELSE 0 END), 0) AS d
FROM tasks
WHERE state = 'in_flight';
