-- Listing and the task graph (API.md §13): the filters a list may use are columns, written with
-- the task from its accepted body, and every list walks one index newest first: (created_at_ms,
-- id) alone or after its equality filter. Tasks stored before this migration get theirs from
-- their body here.
ALTER TABLE tasks ADD COLUMN parent TEXT;
ALTER TABLE tasks ADD COLUMN context_id TEXT;
ALTER TABLE tasks ADD COLUMN task_kind TEXT;
UPDATE tasks SET parent = json_extract(body, '$.parent'),
    context_id = json_extract(body, '$.context_id'), task_kind = json_extract(body, '$.task_kind');
CREATE INDEX tasks_newest ON tasks (created_at_ms, id);
CREATE INDEX tasks_by_sender_newest ON tasks (sender, created_at_ms, id);
CREATE INDEX tasks_by_recipient_newest ON tasks (recipient, created_at_ms, id);
CREATE INDEX tasks_by_parent_newest ON tasks (parent, created_at_ms, id);
CREATE INDEX tasks_by_context_newest ON tasks (context_id, created_at_ms, id);
CREATE INDEX tasks_by_kind_newest ON tasks (task_kind, created_at_ms, id);
