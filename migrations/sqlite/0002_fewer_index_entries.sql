-- Fewer index entries per task life, as PostgreSQL's migration 0007 (BENCHMARKS.md, session 8).
--
-- `tasks_resolved_by_age` served no query: compaction deletes every resolved task (a scan of the
-- table, whose resolved rows are then most of it) and /metrics does not count resolved tasks. It
-- cost one entry per drain.
DROP INDEX tasks_resolved_by_age;

-- `audit_by_kind` now leaves out `capability_check`, two of every task's audit rows and nearly all
-- of the table: a feed filtered by that kind walks the rowid backwards and finds its rows at once,
-- while a feed filtered by any rarer kind still reads only that kind's entries (the feed's
-- statement repeats the index's condition, which SQLite needs to use a partial index).
DROP INDEX audit_by_kind;
CREATE INDEX audit_by_kind ON audit (kind, id) WHERE kind <> 'capability_check';
