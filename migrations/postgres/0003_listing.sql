-- Listing and the task graph (API.md §13): the filters a list may use are columns, written with
-- the task from its accepted body, and every list walks one index newest first: (created_at_ms,
-- id) alone or after its equality filter. Tasks stored before this migration get theirs from
-- their body here (but for a body holding an escaped NUL, which PostgreSQL's JSON cannot read).
ALTER TABLE tasks
    ADD COLUMN parent TEXT COLLATE "C",
    ADD COLUMN context_id TEXT COLLATE "C",
    ADD COLUMN task_kind TEXT COLLATE "C";
UPDATE tasks SET parent = body::json ->> 'parent', context_id = body::json ->> 'context_id',
    task_kind = body::json ->> 'task_kind'
WHERE strpos(body, '\u0000') = 0;
CREATE INDEX tasks_newest ON tasks (created_at_ms, id);
CREATE INDEX tasks_by_sender_newest ON tasks (sender, created_at_ms, id);
CREATE INDEX tasks_by_recipient_newest ON tasks (recipient, created_at_ms, id);
CREATE INDEX tasks_by_parent_newest ON tasks (parent, created_at_ms, id) WHERE parent IS NOT NULL;
CREATE INDEX tasks_by_context_newest ON tasks (context_id, created_at_ms, id) WHERE context_id IS NOT NULL;
CREATE INDEX tasks_by_kind_newest ON tasks (task_kind, created_at_ms, id) WHERE task_kind IS NOT NULL;
