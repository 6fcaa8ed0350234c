-- Group commit across kinds: ONE call carries the waiting sends, results, lease claims and
-- drains together (one round trip, one transaction, one commit for all of them), where 0002 made
-- one call per kind. Each element is the same statement as its 0002 function ran, with the same
-- guards (no element waits for a row another transaction holds, except a send whose id another
-- transaction is inserting at that moment). Kinds run in this order: sends, results, claims,
-- drains (the requests of one batch are concurrent, so any order is one they could have had
-- alone; this one lets a claim take a task sent in the same batch, and a drain a result stored
-- in it). Answers one row per element that did something:
--   o_kind 0 (send):   o_ord (1-based, within its kind's arrays);
--   o_kind 1 (claim):  o_ord, o_text = the leased row as JSON;
--   o_kind 2 (result): o_ord, o_text = the task's sender;
--   o_kind 3 (drain):  o_ord, o_text = the task id, o_status, o_content, o_error.
CREATE FUNCTION a2a_step_many(
    s_ids TEXT[], s_senders TEXT[], s_recipients TEXT[], s_bodies TEXT[], s_deadlines BIGINT[],
    s_safeties TEXT[], s_idem_keys TEXT[], s_audits TEXT[],
    c_recipients TEXT[], c_lease_ids TEXT[], c_callers TEXT[],
    r_ids TEXT[], r_statuses TEXT[], r_contents TEXT[], r_errors TEXT[], r_callers TEXT[],
    r_guards TEXT[],
    d_senders TEXT[],
    p_now BIGINT)
RETURNS TABLE (o_kind INT, o_ord INT, o_text TEXT, o_status TEXT, o_content TEXT, o_error TEXT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_text TEXT;
BEGIN
    o_status := NULL; o_content := NULL; o_error := NULL;
    -- Sends: the task under its id unless the id exists, and its capability_check audit row.
    o_kind := 0; o_text := NULL;
    FOR i IN 1 .. COALESCE(array_length(s_ids, 1), 0) LOOP
        INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, deadline_ms,
            duplicate_safety, idem_key, created_at_ms, updated_at_ms)
        VALUES (s_ids[i], s_senders[i], s_recipients[i], s_bodies[i], 'queued', 0,
            nextval('a2a_queue_seq'), s_deadlines[i], s_safeties[i], s_idem_keys[i], p_now, p_now)
        ON CONFLICT (id) DO NOTHING;
        IF FOUND THEN
            INSERT INTO audit (timestamp_ms, issuer, kind, body)
            VALUES (p_now, s_senders[i], 'capability_check', s_audits[i]);
            o_ord := i;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Results: stored if the task is still in flight to the caller (under the guard's lease id
    -- when one is given), with the audit row built from the task's sender. A row another
    -- transaction holds is skipped: that request runs through its own transaction.
    o_kind := 2;
    FOR i IN 1 .. COALESCE(array_length(r_ids, 1), 0) LOOP
        UPDATE tasks SET state = 'result_pending', result_status = r_statuses[i],
            result_content = r_contents[i], result_error = r_errors[i], result_by = r_callers[i],
            result_at_ms = p_now, result_seq = nextval('a2a_result_seq'), updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.id = r_ids[i] FOR UPDATE SKIP LOCKED)
          AND state = 'in_flight' AND leased_to = r_callers[i]
          AND cache_key IS NULL AND (r_guards[i] IS NULL OR lease_id = r_guards[i])
        RETURNING sender INTO v_text;
        IF FOUND THEN
            INSERT INTO audit (timestamp_ms, issuer, kind, body)
            VALUES (p_now, r_callers[i], 'capability_check', json_build_object(
                'scope_id', 'a2a-respond:' || r_ids[i],
                'required_actions', json_build_array('a2a.respond.' || v_text),
                'missing_actions', json_build_array(),
                'passed', true)::text);
            o_ord := i;
            o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Lease claims: the head of the recipient's queue, when it is live and not locked.
    o_kind := 1;
    FOR i IN 1 .. COALESCE(array_length(c_recipients, 1), 0) LOOP
        UPDATE tasks SET state = 'in_flight', attempt = attempt + 1, lease_id = c_lease_ids[i],
            leased_to = c_callers[i], leased_at_ms = p_now, heartbeat_at_ms = p_now,
            updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.state = 'queued'
                      AND h.recipient = c_recipients[i]
                    ORDER BY h.queue_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND (deadline_ms IS NULL OR deadline_ms >= p_now)
        RETURNING row_to_json(tasks)::text INTO v_text;
        IF FOUND THEN
            o_ord := i;
            o_text := v_text;
            RETURN NEXT;
        END IF;
    END LOOP;
    -- Drains: the oldest pending result of the sender that no other transaction holds.
    o_kind := 3;
    FOR i IN 1 .. COALESCE(array_length(d_senders, 1), 0) LOOP
        UPDATE tasks SET state = 'resolved', updated_at_ms = p_now
        WHERE id = (SELECT h.id FROM tasks h WHERE h.state = 'result_pending'
                      AND h.sender = d_senders[i]
                    ORDER BY h.result_seq LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id, result_status, result_content, result_error
        INTO o_text, o_status, o_content, o_error;
        IF FOUND THEN
            o_ord := i;
            RETURN NEXT;
        END IF;
    END LOOP;
END $$;

-- 0002's per-kind functions are replaced by the one above.
DROP FUNCTION a2a_send_many(TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], BIGINT);
DROP FUNCTION a2a_claim_many(TEXT[], TEXT[], TEXT[], BIGINT);
DROP FUNCTION a2a_store_result_many(TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT);
DROP FUNCTION a2a_drain_many(TEXT[], BIGINT);
