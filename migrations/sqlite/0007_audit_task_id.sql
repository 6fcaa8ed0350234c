-- Each audit row names the task it is about, so that a task's rows are read by index however
-- many newer rows exist: `task_id`, written on every insert by the store (`src/store/audit.rs`,
-- `task_of`): the body's `task_id`, else the task of a task-scoped `scope_id`
-- (`a2a-respond:`, `a2a-cancel:`, `a2a-repair:`); NULL for rows about no task. Only a UUID names
-- a task, kept lower-case as task ids are.
ALTER TABLE audit ADD COLUMN task_id TEXT;
-- The rows written before: the same rule, in SQL (CASE keeps invalid JSON from being read).
UPDATE audit SET task_id = lower(CASE WHEN json_valid(body) THEN
        CASE
            WHEN json_type(body, '$.task_id') = 'text' THEN json_extract(body, '$.task_id')
            WHEN json_type(body, '$.scope_id') <> 'text' THEN NULL
            WHEN json_extract(body, '$.scope_id') LIKE 'a2a-respond:%'
                THEN substr(json_extract(body, '$.scope_id'), 13)
            WHEN json_extract(body, '$.scope_id') LIKE 'a2a-cancel:%'
                OR json_extract(body, '$.scope_id') LIKE 'a2a-repair:%'
                THEN substr(json_extract(body, '$.scope_id'), 12)
        END
    END)
WHERE body LIKE '%"task_id"%' OR body LIKE '%"scope_id":"a2a-%';
UPDATE audit SET task_id = NULL
WHERE task_id IS NOT NULL AND (length(task_id) <> 36 OR task_id GLOB '*[^0-9a-f-]*'
    OR substr(task_id, 9, 1) || substr(task_id, 14, 1) || substr(task_id, 19, 1)
        || substr(task_id, 24, 1) <> '----');
-- Most rows (a send's check) name no task: they are left out of the index.
CREATE INDEX audit_by_task ON audit (task_id, id) WHERE task_id IS NOT NULL;
