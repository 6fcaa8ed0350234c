-- The listing indexes of the optional filters (parent, context, kind) hold only the tasks that
-- have a value there, as PostgreSQL's 0003_listing.sql does: a task sent without one (most of
-- them) writes three index entries fewer when it is stored, and compaction deletes three fewer.
-- A list filtered by `parent = $x` still walks its index: SQLite reads `x = ?` as implying the
-- index's `x IS NOT NULL` (tests/api/listing.rs holds every filter's plan to its index).
DROP INDEX tasks_by_parent_newest;
DROP INDEX tasks_by_context_newest;
DROP INDEX tasks_by_kind_newest;
CREATE INDEX tasks_by_parent_newest ON tasks (parent, created_at_ms, id) WHERE parent IS NOT NULL;
CREATE INDEX tasks_by_context_newest ON tasks (context_id, created_at_ms, id) WHERE context_id IS NOT NULL;
CREATE INDEX tasks_by_kind_newest ON tasks (task_kind, created_at_ms, id) WHERE task_kind IS NOT NULL;
