-- The group-commit function (`step_many.sql`) writes the listing keys of the tasks its sends
-- insert itself: one statement a batch, after its sends, instead of the trigger's statement
-- after each send. Each of those statements builds its executor again, and on the closed loop
-- that was most of what the keys cost. The trigger still writes the keys of every other
-- statement that inserts tasks; it returns at once for the statements of a transaction that
-- says it writes them itself (`a2a.keys_written`, set for its own transaction by the function,
-- and set back once its sends are done). The test is in the function, not in a `WHEN` of the
-- trigger: PostgreSQL reads a statement trigger's `WHEN` again from its stored text on every
-- statement, which cost more than the call it spares. An instance of an earlier version, whose
-- function does not say so, still has its keys written by the trigger.
CREATE OR REPLACE FUNCTION task_keys_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('a2a.keys_written', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO task_keys (id, sender, recipient, parent, context_id, task_kind, created_at_ms)
        SELECT id, sender, recipient, parent, context_id, task_kind, created_at_ms FROM added;
    RETURN NULL;
END
$$;
