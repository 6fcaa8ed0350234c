-- The group commit of PostgreSQL's four fast paths: one call runs a whole batch of sends,
-- results, lease claims and drains in one transaction (see `lane.rs`). Installed at start-up
-- with CREATE OR REPLACE (`backend.rs`). The `__KIND_*__` marks are the kinds of `steps.rs`'s
-- `StepKind`, written in when it is installed; the `SEND`, `CLAIM`, `STORED` and `DRAIN` marks
-- are what every other path runs to queue a task, lease a queue's head, store a result and
-- drain one (`LANE_SEND`, `LANE_CLAIM`, `LANE_STORED`, `LANE_DRAIN` in `statements.rs`, built
-- from the shared `queued!`, `claim_head!`, `stored!` and `drain_head!`), written in too, and
-- `SEND_LEASED` a send handed to a claim of the batch (`LANE_SEND_LEASED`, below). A claim and
-- such a send end with their `RETURNING` of the leased task (`leased_row!`: a JSON array).
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
-- CREATE OR REPLACE keeps a function of another signature beside this one: drop any such
-- earlier version first (this one takes 29 arguments).
DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT oid::regprocedure FROM pg_proc
             WHERE proname = 'a2a_step_many' AND pronargs <> 29 LOOP
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
RETURNS TABLE (o_kind INT, o_ord INT, o_text TEXT, o_status TEXT, o_content TEXT, o_error TEXT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_text TEXT;
    v_id TEXT;
    v_state TEXT;
    v_status TEXT;
    v_content TEXT;
    v_error TEXT;
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
            __SEND_LEASED__
            INTO v_id, v_text;
        END IF;
        IF v_text IS NULL THEN
            __SEND__
            RETURNING sender INTO v_id;
            CONTINUE WHEN NOT FOUND;
            v_sent := v_sent || s_recipients[i];
        END IF;
        a_issuers := a_issuers || v_id;
        a_bodies := a_bodies || s_audits[i];
        a_tasks := a_tasks || NULL::text;
        a_events := a_events || s_events[i];
        k_sent := k_sent || i;
        o_kind := __KIND_SEND__; o_ord := i; o_text := NULL;
        RETURN NEXT;
        IF v_text IS NOT NULL THEN
            v_claims[j] := NULL;
            o_kind := __KIND_CLAIM__; o_ord := j; o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Results: stored if the task is still in flight to the caller (under the guard's lease id
    -- when one is given) and has no cache key, with its audit row, issued by the caller, whose
    -- body names the task's sender between the two halves the server gave; its scope
    -- `a2a-respond:<id>` names the task.
    FOR i IN 1 .. COALESCE(array_length(r_ids, 1), 0) LOOP
        UPDATE tasks SET __STORED__
        WHERE id = (SELECT h.id FROM tasks h WHERE h.id = r_ids[i] FOR UPDATE SKIP LOCKED)
          AND state = 'in_flight' AND leased_to = r_callers[i]
          AND cache_key IS NULL AND (r_guards[i] IS NULL OR lease_id = r_guards[i])
        RETURNING sender, id, state, result_status, result_content, result_error
        INTO v_text, v_id, v_state, v_status, v_content, v_error;
        IF FOUND THEN
            a_issuers := a_issuers || r_callers[i];
            a_bodies := a_bodies || (r_audit_pre[i] || v_text || r_audit_post[i]);
            a_tasks := a_tasks || v_id;
            a_events := a_events || r_events[i];
            o_kind := __KIND_RESULT__; o_ord := i; o_text := v_text;
            o_status := NULL; o_content := NULL; o_error := NULL;
            RETURN NEXT;
            IF v_state = 'resolved' THEN
                j := array_position(v_drains, v_text);
                v_drains[j] := NULL;
                o_kind := __KIND_DRAIN__; o_ord := j; o_text := v_id;
                o_status := v_status; o_content := v_content; o_error := v_error;
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
    o_kind := __KIND_CLAIM__; o_status := NULL; o_content := NULL; o_error := NULL;
    FOR i IN 1 .. COALESCE(array_length(c_recipients, 1), 0) LOOP
        CONTINUE WHEN v_claims[i] IS NULL;
        CONTINUE WHEN c_if_sent[i] AND NOT (c_recipients[i] = ANY (v_sent));
        __CLAIM__
        INTO v_text;
        IF FOUND THEN
            o_ord := i;
            o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Drains: the oldest pending result of the sender that no other transaction holds.
    o_kind := __KIND_DRAIN__;
    FOR i IN 1 .. COALESCE(array_length(d_senders, 1), 0) LOOP
        CONTINUE WHEN v_drains[i] IS NULL;
        CONTINUE WHEN d_if_stored[i] AND NOT (d_senders[i] = ANY (v_stored));
        __DRAIN__
        INTO o_text, o_status, o_content, o_error;
        IF FOUND THEN
            o_ord := i;
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;
