-- Group commit on PostgreSQL: the four fast paths (send, lease claim, result, drain) as
-- functions over arrays, so that concurrent requests of one kind share one round trip and one
-- commit. Each function runs its elements one after another, in order, inside the caller's
-- single transaction, each element one statement (a later element sees the rows an earlier one
-- changed). PL/pgSQL keeps a plan per statement, so a batch of any size plans nothing.
-- No element waits for a row another transaction holds (claims, drains and results skip locked
-- rows; only a send whose id another transaction is inserting at that moment waits for it), and
-- no element fails on its own: conflicts and lost races are outcomes (no row), not errors. An
-- error (a lock wait past lock_timeout) rolls back the whole batch, and the server then runs each
-- element alone.

-- Sends: inserts each task under its id unless the id exists, with its capability_check audit
-- row when it was inserted. Answers the ordinals (1-based) of the tasks inserted.
CREATE FUNCTION a2a_send_many(
    p_ids TEXT[], p_senders TEXT[], p_recipients TEXT[], p_bodies TEXT[], p_deadlines BIGINT[],
    p_safeties TEXT[], p_idem_keys TEXT[], p_audits TEXT[], p_now BIGINT)
RETURNS TABLE (o_ord INT) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. COALESCE(array_length(p_ids, 1), 0) LOOP
        INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, deadline_ms,
            duplicate_safety, idem_key, created_at_ms, updated_at_ms)
        VALUES (p_ids[i], p_senders[i], p_recipients[i], p_bodies[i], 'queued', 0,
            nextval('a2a_queue_seq'), p_deadlines[i], p_safeties[i], p_idem_keys[i], p_now, p_now)
        ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
            INSERT INTO audit (timestamp_ms, issuer, kind, body)
            VALUES (p_now, p_senders[i], 'capability_check', p_audits[i]);
            o_ord := i;
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;

-- Lease claims: leases the head of each recipient's queue under the element's lease id when
-- that head is live and not locked by another transaction. Answers the leased rows (each carries
-- its lease id, which the caller matches to its element).
CREATE FUNCTION a2a_claim_many(
    p_recipients TEXT[], p_lease_ids TEXT[], p_callers TEXT[], p_now BIGINT)
RETURNS SETOF tasks LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. COALESCE(array_length(p_recipients, 1), 0) LOOP
        RETURN QUERY
        UPDATE tasks SET state = 'in_flight', attempt = attempt + 1, lease_id = p_lease_ids[i],
            leased_to = p_callers[i], leased_at_ms = p_now, heartbeat_at_ms = p_now,
            updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.state = 'queued'
                      AND h.recipient = p_recipients[i]
                    ORDER BY h.queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND (deadline_ms IS NULL OR deadline_ms >= p_now)
        RETURNING *;
    END LOOP;
END $$;

-- Results: stores each result if its task is still in flight to its caller (and, when a guard
-- is given, still under that lease id), with the capability_check audit row built from the
-- task's sender. Answers the ordinals of the results stored and their tasks' senders. A task row
-- another transaction holds (a repair, say) is skipped, not waited for: that element answers
-- nothing and the server runs it through its own transaction, which waits for the row alone,
-- so one locked row never holds up the results batched with it.
CREATE FUNCTION a2a_store_result_many(
    p_ids TEXT[], p_statuses TEXT[], p_contents TEXT[], p_errors TEXT[], p_callers TEXT[],
    p_guards TEXT[], p_now BIGINT)
RETURNS TABLE (o_ord INT, o_sender TEXT) LANGUAGE plpgsql AS $$
DECLARE
    v_sender TEXT;
BEGIN
    FOR i IN 1 .. COALESCE(array_length(p_ids, 1), 0) LOOP
        UPDATE tasks SET state = 'result_pending', result_status = p_statuses[i],
            result_content = p_contents[i], result_error = p_errors[i], result_by = p_callers[i],
            result_at_ms = p_now, result_seq = nextval('a2a_result_seq'), updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.id = p_ids[i] FOR UPDATE SKIP LOCKED)
          AND state = 'in_flight' AND leased_to = p_callers[i]
          AND cache_key IS NULL AND (p_guards[i] IS NULL OR lease_id = p_guards[i])
        RETURNING sender INTO v_sender;
        IF FOUND THEN
            INSERT INTO audit (timestamp_ms, issuer, kind, body)
            VALUES (p_now, p_callers[i], 'capability_check', json_build_object(
                'scope_id', 'a2a-respond:' || p_ids[i],
                'required_actions', json_build_array('a2a.respond.' || v_sender),
                'missing_actions', json_build_array(),
                'passed', true)::text);
            o_ord := i;
            o_sender := v_sender;
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;

-- Drains: resolves the oldest pending result of each sender not locked by another transaction.
-- Answers the ordinals and the results drained.
CREATE FUNCTION a2a_drain_many(p_senders TEXT[], p_now BIGINT)
RETURNS TABLE (o_ord INT, id TEXT, result_status TEXT, result_content TEXT, result_error TEXT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    FOR i IN 1 .. COALESCE(array_length(p_senders, 1), 0) LOOP
        RETURN QUERY
        WITH drained AS (
            UPDATE tasks SET state = 'resolved', updated_at_ms = p_now
            WHERE tasks.id = (SELECT h.id FROM tasks h WHERE h.state = 'result_pending'
                                AND h.sender = p_senders[i]
                              ORDER BY h.result_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING tasks.id, tasks.result_status, tasks.result_content, tasks.result_error)
        SELECT i, d.id, d.result_status, d.result_content, d.result_error FROM drained d;
    END LOOP;
END $$;
