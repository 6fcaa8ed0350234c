-- Every SQL statement PostgreSQL runs, generated from the code: do not edit. Each is declared once
-- in src/store (built from the transitions of src/store/transitions.rs) and shown here expanded
-- under its name and doc, laid out on lines: the text executed is the same with each line break a
-- space. $n are its parameters. Regenerate after changing one (a test fails until then):
-- A2A_MAILBOX_UPDATE_SQL=1 cargo test --lib sql_files
--
-- Composed at run time from a filter, not here: task lists and their counts (src/store/listing.rs,
-- reading tasks_listed), lease pages and counts (src/store/leases.rs), audit feeds
-- (src/store/reads.rs). Not here either: the LISTEN of src/store/postgres/peers.rs (sqlx's
-- PgListener), query plans (EXPLAIN before a statement, with SET LOCAL enable_seqscan and
-- enable_sort off, src/store/postgres/backend.rs), the connections' lock_timeout
-- (src/store/postgres/mod.rs) and the schema (migrations/postgres/).

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
    AND recipient = $1 ORDER BY queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    AND (deadline_ms IS NULL OR deadline_ms >= $4)
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
    lease_id = gen_random_uuid()::text,
    leased_to = $2,
    leased_at_ms = $3,
    heartbeat_at_ms = $3,
    updated_at_ms = $3
WHERE id = ANY (ARRAY (SELECT id FROM tasks WHERE state = 'queued' AND recipient = $1 AND (deadline_ms IS NULL OR deadline_ms >= $3) ORDER BY queue_seq LIMIT $4 FOR UPDATE SKIP LOCKED))
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
WHERE id = ANY (ARRAY (SELECT id FROM tasks WHERE state = 'result_pending' AND sender = $1 ORDER BY result_seq LIMIT $3 FOR UPDATE SKIP LOCKED))
RETURNING id, result_status, result_content, result_error, result_trace, result_seq;

-- name: queue_head
-- $1 recipient: the head of its queue (id, sender, deadline).
SELECT id, sender, deadline_ms
FROM tasks
WHERE state = 'queued' AND recipient = $1
ORDER BY queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED;

-- name: expire
-- $1 id, $2 now: resolves a queued task whose deadline passed with an error result.
UPDATE tasks
SET state = 'result_pending',
    result_status = 'error',
    result_content = '[]',
    result_error = 'deadline exceeded',
    result_at_ms = $2,
    result_seq = nextval('a2a_result_seq'),
    updated_at_ms = $2
WHERE id = $1;

-- name: insert_task
-- $1..$11 the task (super::NewTask::by_column order), $12 now: inserts a queued task unless its id
-- exists.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'queued', 0, nextval('a2a_queue_seq'), $12,
    $12)
ON CONFLICT (id) DO NOTHING;

-- name: insert_answered
-- $1..$11 the task, $12 source task, $13..$15 the cached result, $16 now: inserts a task already
-- answered from the result cache.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, replayed_from, result_status,
    result_content, result_error, result_at_ms, result_seq, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'result_pending', 0, 0, $12, $13, $14, $15,
    $16, nextval('a2a_result_seq'), $16, $16)
ON CONFLICT (id) DO NOTHING;

-- name: insert_tasks
-- The tasks, then now: inserts them as queued, in order (their FIFO positions follow it), each
-- unless its id exists; answers the ids inserted. One statement whatever the number of tasks, with
-- a fixed number of parameters (SQLite's limit never applies): with insert_tasks_by_column, $1..$11
-- one array per column of super::NewTask::columns (PostgreSQL decodes arrays faster than JSON) and
-- $12 now; otherwise $1 the tasks as a JSON array of objects (the columns by name) and $2 now.
INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key, parent,
    context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms, updated_at_ms)
SELECT t.*, 'queued', 0, nextval('a2a_queue_seq'), $12, $12
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[]) AS t
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: insert_audits
-- $1 now, $2 issuer, $3 the rows as a JSON array of {kind, body, task_id}: audit rows in array
-- order.
INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id)
SELECT $1, $2, t.kind, t.body, t.task_id
FROM json_to_recordset($3::json) AS t(kind text, body text, task_id text);

-- name: upsert_audit
-- $1 the row's id or NULL, $2 now, $3 issuer, $4 kind, $5 body, $6 the task the body names or NULL:
-- writes a new audit row ($1 NULL: the next id), or replaces the body of row $1 (written again if
-- it is gone); answers the row's id.
INSERT INTO audit (id, timestamp_ms, issuer, kind, body, task_id)
VALUES (COALESCE($1::bigint, nextval(pg_get_serial_sequence('audit', 'id'))), $2, $3, $4, $5, $6)
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
WHERE id = $1 FOR UPDATE;

-- name: tasks_for_update
-- $1 the ids (a column: an array on PostgreSQL, a JSON array on SQLite): those task rows, by the
-- primary key, locked as Statements::task_for_update locks one, in id order (two batches lock the
-- rows they share in the same order).
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE id = ANY($1::text[])
ORDER BY id FOR UPDATE;

-- name: store_result
-- $1 id, $2 status, $3 content, $4 error, $5 who, $6 now: stores a result.
UPDATE tasks
SET state = 'result_pending',
    result_status = $2,
    result_content = $3,
    result_error = $4,
    result_at_ms = $6,
    result_seq = nextval('a2a_result_seq'),
    result_by = $5,
    updated_at_ms = $6
WHERE id = $1;

-- name: store_results
-- $1..$4 one array each of task ids, statuses, contents and error messages, $5 who, $6 now: stores
-- each result as Statements::store_result does, their FIFO positions in array order (none on
-- SQLite, which runs store_result once a result).
WITH j AS MATERIALIZED (SELECT r.*,
    nextval('a2a_result_seq') AS seq FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS r(id, status, content, error)) UPDATE tasks
SET state = 'result_pending',
    result_status = j.status,
    result_content = j.content,
    result_error = j.error,
    result_at_ms = $6,
    result_seq = j.seq,
    result_by = $5,
    updated_at_ms = $6
FROM j
WHERE tasks.id = j.id;

-- name: force_error
-- $1 id, $2 message, $3 now: ends the lease with an error result for the sender.
UPDATE tasks
SET state = 'result_pending',
    result_status = 'error',
    result_content = '[]',
    result_error = $2,
    result_at_ms = $3,
    result_seq = nextval('a2a_result_seq'),
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
    queue_seq = nextval('a2a_queue_seq'),
    lease_id = NULL,
    leased_to = NULL,
    leased_at_ms = NULL,
    heartbeat_at_ms = NULL,
    updated_at_ms = $2
WHERE id = $1 AND state = 'in_flight' AND lease_id = $3 AND heartbeat_at_ms = $4;

-- name: scan_lock
-- A lock that only one retry scan of the database holds at a time (none on SQLite, which serves one
-- process: its scans share a mutex in the mailbox).
SELECT pg_try_advisory_xact_lock(7262001);

-- name: claim_tick
-- $1 the scan's start, $2 the least spacing between scans: claims the scan row (every enabled scan
-- and every tick claims it) when the previous scan started at least $2 ms before and had finished
-- by $1 (PostgreSQL also skips a row another scan holds); one row changed when claimed.
UPDATE scheduler_ticks
SET started_at_ms = $1
WHERE id = (SELECT id FROM scheduler_ticks WHERE id = 1 AND started_at_ms <= $1 - $2
    AND finished_at_ms <= $1 FOR UPDATE SKIP LOCKED);

-- name: queued_all
-- $1 limit: queued tasks, oldest first (every task).
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued'
ORDER BY queue_seq + 0 LIMIT $1;

-- name: queued_visible
-- $1 caller, $2 limit: queued tasks sent by or addressed to the caller, oldest first.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND (sender = $1 OR recipient = $1)
ORDER BY queue_seq + 0 LIMIT $2;

-- name: snapshot_queued_all
-- $1 caller (ignored), $2 limit, $3 deadline bound or NULL: the queue snapshot's queued part, for
-- an operator.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND $1 = $1 AND ($3 IS NULL OR deadline_ms <= $3)
ORDER BY queue_seq + 0 LIMIT $2;

-- name: snapshot_queued_visible
-- The same for a caller who sees its own tasks: $1 caller, $2 limit, $3 deadline bound or NULL.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'queued' AND (sender = $1 OR recipient = $1 OR leased_to = $1)
    AND ($3 IS NULL OR deadline_ms <= $3)
ORDER BY queue_seq + 0 LIMIT $2;

-- name: snapshot_results_all
-- $1 caller (ignored), $2 limit: pending results, oldest first, for an operator.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'result_pending' AND $1 = $1
ORDER BY result_seq + 0 LIMIT $2;

-- name: snapshot_results_visible
-- The same for the caller's own tasks: $1 caller, $2 limit.
SELECT id, sender, recipient, body, state, attempt, lease_id, leased_to, leased_at_ms,
    heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from,
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms,
    canceled_by, cancel_reason, canceled_from, canceled_at_ms
FROM tasks
WHERE state = 'result_pending' AND (sender = $1 OR recipient = $1)
ORDER BY result_seq + 0 LIMIT $2;

-- name: oldest_queued
-- When the head of the whole queue was queued.
SELECT updated_at_ms AS at
FROM tasks
WHERE state = 'queued'
ORDER BY queue_seq + 0 LIMIT 1;

-- ==== PostgreSQL's own (src/store/postgres/statements.rs) ====

-- name: step_many
-- One call of the group-commit function (step_many.sql, below as installed) for a whole batch, each
-- argument an array of one field of that kind's elements in batch order: the sends' $1..$11 task
-- columns (crate::store::NewTask::by_column order), $12 audit bodies and $13 audit event ids; the
-- claims' $14 recipients, $15 lease ids, $16 callers, $17 riding flags; the results' $18 task ids,
-- $19 statuses, $20 contents, $21 errors, $22 callers, $23 lease guards, $24/$25 audit bodies
-- before and after the sender, $26 audit event ids; the drains' $27 senders, $28 riding flags; $29
-- now.
SELECT o_kind, o_ord, o_text, o_status, o_content, o_error, o_trace
FROM a2a_step_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
    $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29);

-- name: notify_peers
-- $1 the payloads: tells the other instances on this database whom commits concerned, one
-- notification per payload, committed without waiting for its WAL flush (nothing durable rides on
-- it).
SELECT pg_notify('a2a_mailbox', p)
FROM set_config('synchronous_commit', 'off', true) AS s, unnest($1::text[]) AS p;

-- name: install_lock
-- Held while step_many.sql is installed, so instances starting together take turns.
SELECT pg_advisory_xact_lock(7262002);

-- name: install_step_many
-- The group-commit function a2a_step_many, as it is installed at start-up (under INSTALL_LOCK):
-- src/store/postgres/step_many.sql with the kinds' numbers and its marks' statements written in
-- (LANE_SEND_LEASED, LANE_SEND, LANE_CLAIM, LANE_STORED and LANE_DRAIN of
-- src/store/postgres/statements.rs, by steps::step_many_source). Installed, each of those
-- statements is one line.
-- The group commit of PostgreSQL's four fast paths: one call runs a whole batch of sends,
-- results, lease claims and drains in one transaction (see `lane.rs`). Installed at start-up
-- with CREATE OR REPLACE (`backend.rs`). The `__KIND_*__` marks are the kinds of `steps.rs`'s
-- `StepKind`, written in when it is installed; the `SEND`, `CLAIM`, `STORED` and `DRAIN` marks
-- are what every other path runs to queue a task, lease a queue's head, store a result and
-- drain one (`LANE_SEND`, `LANE_CLAIM`, `LANE_STORED`, `LANE_DRAIN` in `statements.rs`, built
-- from the shared `queued!`, `claim_head!`, `stored!` and `drain_head!`), written in too, and
-- `SEND_LEASED` a send handed to a claim of the batch (`LANE_SEND_LEASED`, below). A claim and
-- such a send end with their `RETURNING` of the leased task (`leased_row!`: a JSON array).
-- `statements.sql` beside this file shows the function as installed, every mark written in
-- (regenerated by `A2A_MAILBOX_UPDATE_SQL=1 cargo test --lib sql_files`).
--
-- The elements run one after another, each the statement its path runs alone, so the outcome of
-- each is what it would have been alone in that order. No element waits for a row another
-- transaction holds: results, claims and drains skip it and answer no row, which sends the
-- request down its own transaction. A row answered names its kind and its 1-based position
-- among that kind's elements; an element without a row did nothing.
--
-- A riding element (a long-poll parked in the lane) runs only when its batch made work for it:
-- a claim flagged in `c_if_sent` only if a send of this batch queued a task for its recipient,
-- a drain flagged in `d_if_stored` only if a result of this batch was stored for its sender.
--
-- Hand-offs inside the batch: when a claim of the batch would lease the task a send of the batch
-- queues (the first claim for that recipient not answered yet, the recipient's queue otherwise
-- empty, the task live), the send inserts the task already leased by that claim (`SEND_LEASED`)
-- and answers both; when a drain of the batch would take the result a result of the batch
-- stores (the first drain for that sender not answered yet, no other result of the sender
-- pending), the result is stored delivered and answers both. The rows answered are the ones the
-- two statements in turn would have answered; a task life written once instead of twice.
--
-- The listing keys of the tasks the sends inserted are written by one insert after the sends,
-- for the same reason as the audit rows below; the trigger on `tasks` writes them for every
-- other statement.
--
-- The audit rows of the sends and results that did something are gathered as they run and
-- written by one insert after them, in the order of their elements: each statement on a table
-- costs its executor's start, and the audit table is then started once a batch. Their event ids
-- come with the elements (`s_events`, `r_events`, made by the server as the column's default
-- would make them: a UUIDv7 each), which costs PostgreSQL less than the default's SQL per row.
-- CREATE OR REPLACE keeps a function of another signature beside this one, and cannot change
-- the columns a function answers: drop any earlier version first (this one takes 29 arguments
-- and answers `o_trace`).
DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT oid::regprocedure FROM pg_proc
             WHERE proname = 'a2a_step_many'
               AND (pronargs <> 29 OR pg_get_function_result(oid) NOT LIKE '%o_trace%') LOOP
        EXECUTE 'DROP FUNCTION ' || f;
    END LOOP;
END $$;
CREATE OR REPLACE FUNCTION a2a_step_many(
    s_ids TEXT[], s_senders TEXT[], s_recipients TEXT[], s_bodies TEXT[], s_deadlines BIGINT[],
    s_safeties TEXT[], s_idem_keys TEXT[], s_parents TEXT[], s_contexts TEXT[], s_kinds TEXT[],
    s_cache_keys TEXT[], s_audits TEXT[], s_events TEXT[],
    c_recipients TEXT[], c_lease_ids TEXT[], c_callers TEXT[], c_if_sent BOOLEAN[],
    r_ids TEXT[], r_statuses TEXT[], r_contents TEXT[], r_errors TEXT[], r_callers TEXT[],
    r_guards TEXT[], r_audit_pre TEXT[], r_audit_post TEXT[], r_events TEXT[],
    d_senders TEXT[], d_if_stored BOOLEAN[],
    p_now BIGINT)
RETURNS TABLE (o_kind INT, o_ord INT, o_text TEXT, o_status TEXT, o_content TEXT, o_error TEXT,
               o_trace TEXT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_text TEXT;
    v_id TEXT;
    v_state TEXT;
    v_status TEXT;
    v_content TEXT;
    v_error TEXT;
    v_trace TEXT;
    j INT;
    -- What set_config answers (not read).
    v_setting TEXT;
    -- Recipients a send of this batch queued a task for; senders a result was stored for.
    v_sent TEXT[] := '{}';
    v_stored TEXT[] := '{}';
    -- The claims' recipients and the drains' senders, each set to NULL once answered.
    v_claims TEXT[] := c_recipients;
    v_drains TEXT[] := d_senders;
    -- The audit rows of the sends and results that did something, in their order: written by
    -- one insert once both have run (one statement on `audit` a batch, not one an element).
    -- These arrays and `k_sent` start NULL, not empty: `||` appends to NULL, `cardinality` of
    -- NULL is NULL (read as false), and each expression PL/pgSQL evaluates costs the call its
    -- setting up again in every transaction.
    a_issuers TEXT[];
    a_bodies TEXT[];
    a_tasks TEXT[];
    a_events TEXT[];
    -- The sends that inserted a task, whose listing keys the batch writes.
    k_sent INT[];
BEGIN
    -- The batch writes its sends' listing keys itself, after them: until then the trigger on
    -- `tasks` returns at once for this transaction's inserts (migration 0012). (An assignment,
    -- not PERFORM: PL/pgSQL evaluates it as a simple expression, without starting an executor.)
    v_setting := set_config('a2a.keys_written', 'on', true);
    -- Sends: the task under its id unless the id exists, and its capability_check audit row
    -- (whose scope names the recipient, not a task: no task_id; issued by the sender). Their
    -- rows leave o_status, o_content and o_error NULL, as nothing before the results sets them.
    FOR i IN 1 .. COALESCE(array_length(s_ids, 1), 0) LOOP
        -- A claim to hand the task to, unless this batch already queued one for the recipient
        -- (then the task is not the queue's head). A recipient with a backlog costs its first
        -- send of a batch one insert that inserts nothing, when a claim of it is in the batch.
        -- v_text: the leased row when the task went to that claim, NULL when it was queued.
        j := array_position(v_claims, s_recipients[i]);
        v_text := NULL;
        IF j IS NOT NULL AND NOT (s_recipients[i] = ANY (v_sent)) THEN
            INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key,
                parent, context_id, task_kind, cache_key, state, attempt, queue_seq, lease_id,
                leased_to, leased_at_ms, heartbeat_at_ms, created_at_ms, updated_at_ms)
            SELECT s_ids[i], s_senders[i], s_recipients[i], s_bodies[i], s_deadlines[i],
                s_safeties[i], s_idem_keys[i], s_parents[i], s_contexts[i], s_kinds[i],
                s_cache_keys[i], 'in_flight', 1, nextval('a2a_queue_seq'), c_lease_ids[j],
                c_callers[j], p_now, p_now, p_now, p_now
            WHERE (s_deadlines[i] IS NULL OR s_deadlines[i] >= p_now)
                AND NOT EXISTS (SELECT 1 FROM tasks q WHERE q.state = 'queued'
                AND q.recipient = s_recipients[i])
            ON CONFLICT (id) DO NOTHING
            RETURNING sender,
                json_build_array(id, sender, recipient, body, state, attempt, lease_id, leased_to,
                leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key,
                replayed_from, result_status, result_content, result_error, result_by,
                created_at_ms, updated_at_ms, canceled_by, cancel_reason, canceled_from,
                canceled_at_ms)::text
            INTO v_id, v_text;
        END IF;
        IF v_text IS NULL THEN
            INSERT INTO tasks (id, sender, recipient, body, deadline_ms, duplicate_safety, idem_key,
                parent, context_id, task_kind, cache_key, state, attempt, queue_seq, created_at_ms,
                updated_at_ms)
            VALUES (s_ids[i], s_senders[i], s_recipients[i], s_bodies[i], s_deadlines[i],
                s_safeties[i], s_idem_keys[i], s_parents[i], s_contexts[i], s_kinds[i],
                s_cache_keys[i], 'queued', 0, nextval('a2a_queue_seq'), p_now, p_now)
            ON CONFLICT (id) DO NOTHING
            RETURNING sender INTO v_id;
            CONTINUE WHEN NOT FOUND;
            v_sent := v_sent || s_recipients[i];
        END IF;
        a_issuers := a_issuers || v_id;
        a_bodies := a_bodies || s_audits[i];
        a_tasks := a_tasks || NULL::text;
        a_events := a_events || s_events[i];
        k_sent := k_sent || i;
        o_kind := 0; o_ord := i; o_text := NULL;
        RETURN NEXT;
        IF v_text IS NOT NULL THEN
            v_claims[j] := NULL;
            o_kind := 1; o_ord := j; o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Results: stored if the task is still in flight to the caller (under the guard's lease id
    -- when one is given) and has no cache key, with its audit row, issued by the caller, whose
    -- body names the task's sender between the two halves the server gave; its scope
    -- `a2a-respond:<id>` names the task.
    FOR i IN 1 .. COALESCE(array_length(r_ids, 1), 0) LOOP
        UPDATE tasks SET state = CASE WHEN sender = ANY (v_drains)
                AND NOT EXISTS (SELECT 1 FROM tasks p WHERE p.state = 'result_pending'
                AND p.sender = tasks.sender) THEN 'resolved' ELSE 'result_pending' END,
            result_status = r_statuses[i],
            result_content = r_contents[i],
            result_error = r_errors[i],
            result_at_ms = p_now,
            result_seq = nextval('a2a_result_seq'),
            result_by = r_callers[i],
            updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.id = r_ids[i] FOR UPDATE SKIP LOCKED)
          AND state = 'in_flight' AND leased_to = r_callers[i]
          AND cache_key IS NULL AND (r_guards[i] IS NULL OR lease_id = r_guards[i])
        RETURNING sender, id, state, result_status, result_content, result_error, result_trace
        INTO v_text, v_id, v_state, v_status, v_content, v_error, v_trace;
        IF FOUND THEN
            a_issuers := a_issuers || r_callers[i];
            a_bodies := a_bodies || (r_audit_pre[i] || v_text || r_audit_post[i]);
            a_tasks := a_tasks || v_id;
            a_events := a_events || r_events[i];
            o_kind := 2; o_ord := i; o_text := v_text;
            o_status := NULL; o_content := NULL; o_error := NULL; o_trace := NULL;
            RETURN NEXT;
            IF v_state = 'resolved' THEN
                j := array_position(v_drains, v_text);
                v_drains[j] := NULL;
                o_kind := 3; o_ord := j; o_text := v_id;
                o_status := v_status; o_content := v_content; o_error := v_error;
                o_trace := v_trace;
                RETURN NEXT;
            ELSE
                v_stored := v_stored || v_text;
            END IF;
        END IF;
    END LOOP;
    -- The sent tasks' listing keys (`task_keys`, the columns its trigger copies), in one statement.
    IF cardinality(k_sent) > 0 THEN
        INSERT INTO task_keys (id, sender, recipient, parent, context_id, task_kind, created_at_ms)
        SELECT s_ids[x], s_senders[x], s_recipients[x], s_parents[x], s_contexts[x], s_kinds[x],
            p_now
        FROM unnest(k_sent) AS x;
    END IF;
    v_setting := set_config('a2a.keys_written', 'off', true);
    IF cardinality(a_issuers) > 0 THEN
        INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id, event_id)
        SELECT p_now, x.issuer, 'capability_check', x.body, x.task_id, x.event_id
        FROM unnest(a_issuers, a_bodies, a_tasks, a_events) AS x(issuer, body, task_id, event_id);
    END IF;
    -- Lease claims: the head of the recipient's queue, when it is live and not locked.
    o_kind := 1; o_status := NULL; o_content := NULL; o_error := NULL;
    o_trace := NULL;
    FOR i IN 1 .. COALESCE(array_length(c_recipients, 1), 0) LOOP
        CONTINUE WHEN v_claims[i] IS NULL;
        CONTINUE WHEN c_if_sent[i] AND NOT (c_recipients[i] = ANY (v_sent));
        UPDATE tasks
        SET state = 'in_flight',
            attempt = attempt + 1,
            lease_id = c_lease_ids[i],
            leased_to = c_callers[i],
            leased_at_ms = p_now,
            heartbeat_at_ms = p_now,
            updated_at_ms = p_now
        WHERE id = (SELECT id FROM tasks WHERE state = 'queued'
            AND recipient = c_recipients[i] ORDER BY queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
            AND (deadline_ms IS NULL OR deadline_ms >= p_now)
        RETURNING json_build_array(id, sender, recipient, body, state, attempt, lease_id, leased_to,
            leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key,
            replayed_from, result_status, result_content, result_error, result_by, created_at_ms,
            updated_at_ms, canceled_by, cancel_reason, canceled_from, canceled_at_ms)::text
        INTO v_text;
        IF FOUND THEN
            o_ord := i;
            o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Drains: the oldest pending result of the sender that no other transaction holds.
    o_kind := 3;
    FOR i IN 1 .. COALESCE(array_length(d_senders, 1), 0) LOOP
        CONTINUE WHEN v_drains[i] IS NULL;
        CONTINUE WHEN d_if_stored[i] AND NOT (d_senders[i] = ANY (v_stored));
        UPDATE tasks
        SET state = 'resolved',
            updated_at_ms = p_now
        WHERE id = (SELECT id FROM tasks WHERE state = 'result_pending'
            AND sender = d_senders[i] ORDER BY result_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id, result_status, result_content, result_error, result_trace
        INTO o_text, o_status, o_content, o_error, o_trace;
        IF FOUND THEN
            o_ord := i;
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;

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
