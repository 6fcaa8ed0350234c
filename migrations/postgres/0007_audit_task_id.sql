-- Each audit row names the task it is about, so that a task's rows are read by index however
-- many newer rows exist: `task_id`, written on every insert by the store (`src/store/audit.rs`,
-- `task_of`; the group-commit function's rows included): the body's `task_id`, else the task of
-- a task-scoped `scope_id` (`a2a-respond:`, `a2a-cancel:`, `a2a-repair:`); NULL for rows about no
-- task. Only a UUID names a task, kept lower-case as task ids are.
ALTER TABLE audit ADD COLUMN task_id TEXT COLLATE "C";
-- The rows written before: the same rule, in SQL (every body is JSON the server wrote).
UPDATE audit SET task_id = lower(COALESCE(
        CASE WHEN json_typeof(body::json -> 'task_id') = 'string' THEN body::json ->> 'task_id' END,
        substring(CASE WHEN json_typeof(body::json -> 'scope_id') = 'string'
                       THEN body::json ->> 'scope_id' END
                  FROM '^a2a-(?:respond|cancel|repair):(.*)$')))
WHERE body LIKE '%"task_id"%' OR body LIKE '%"scope_id":"a2a-%';
UPDATE audit SET task_id = NULL
WHERE task_id IS NOT NULL
  AND task_id !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
-- Most rows (a send's check) name no task: they are left out of the index.
CREATE INDEX audit_by_task ON audit (task_id, id) WHERE task_id IS NOT NULL;
