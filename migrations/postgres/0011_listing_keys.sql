-- The listing's keys move to a table of their own, written once per task. A task's row changes
-- with every step of its life (lease, heartbeat, result, drain), and each change is a new row
-- version that PostgreSQL enters into every index of `tasks` (the partial indexes name `state`,
-- so no change is a heap-only update). With the listing indexes of 0003_listing.sql on `tasks`,
-- that was three to six listing entries per step, twelve and more per task life, for keys that
-- never change. Here they are entered once, when the task is inserted.
--
-- `task_keys` holds the columns a list filters on by equality and its order; `tasks_listed` is
-- what a list reads: those keys joined to the task's current row. Triggers keep the keys in
-- step with `tasks`, whatever statement inserts or deletes tasks (the group-commit function's
-- included). SQLite enters an index entry only when its columns change and keeps its listing
-- indexes on `tasks`.
CREATE TABLE task_keys (
    id            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    sender        TEXT COLLATE "C" NOT NULL,
    recipient     TEXT COLLATE "C" NOT NULL,
    parent        TEXT COLLATE "C",
    context_id    TEXT COLLATE "C",
    task_kind     TEXT COLLATE "C",
    created_at_ms BIGINT NOT NULL
);
INSERT INTO task_keys (id, sender, recipient, parent, context_id, task_kind, created_at_ms)
    SELECT id, sender, recipient, parent, context_id, task_kind, created_at_ms FROM tasks;

DROP INDEX tasks_newest;
DROP INDEX tasks_by_sender_newest;
DROP INDEX tasks_by_recipient_newest;
DROP INDEX tasks_by_parent_newest;
DROP INDEX tasks_by_context_newest;
DROP INDEX tasks_by_kind_newest;
CREATE INDEX tasks_newest ON task_keys (created_at_ms, id);
CREATE INDEX tasks_by_sender_newest ON task_keys (sender, created_at_ms, id);
CREATE INDEX tasks_by_recipient_newest ON task_keys (recipient, created_at_ms, id);
CREATE INDEX tasks_by_parent_newest ON task_keys (parent, created_at_ms, id)
    WHERE parent IS NOT NULL;
CREATE INDEX tasks_by_context_newest ON task_keys (context_id, created_at_ms, id)
    WHERE context_id IS NOT NULL;
CREATE INDEX tasks_by_kind_newest ON task_keys (task_kind, created_at_ms, id)
    WHERE task_kind IS NOT NULL;

-- One statement's inserted or deleted tasks at once (a transition table), not row by row.
CREATE FUNCTION task_keys_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_keys (id, sender, recipient, parent, context_id, task_kind, created_at_ms)
        SELECT id, sender, recipient, parent, context_id, task_kind, created_at_ms FROM added;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_keys_added AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION task_keys_added();

CREATE FUNCTION task_keys_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM task_keys k USING removed r WHERE k.id = r.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_keys_removed AFTER DELETE ON tasks
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION task_keys_removed();

-- A task's keys never change: no statement updates these columns of `tasks`.
CREATE VIEW tasks_listed AS
    SELECT k.id, k.sender, k.recipient, t.body, t.state, t.attempt, t.lease_id, t.leased_to,
        t.leased_at_ms, t.heartbeat_at_ms, t.deadline_ms, t.duplicate_safety, t.idem_key,
        t.cache_key, t.replayed_from, t.result_status, t.result_content, t.result_error,
        t.result_by, k.created_at_ms, t.updated_at_ms, t.canceled_by, t.cancel_reason,
        t.canceled_from, t.canceled_at_ms, k.parent, k.context_id, k.task_kind
    FROM task_keys k JOIN tasks t ON t.id = k.id;
