-- Fewer index entries per task life (BENCHMARKS.md, session 8). Every state change of a task is
-- a non-HOT update that writes an entry into each index whose condition the new row meets, and
-- every send and result writes a `capability_check` audit row with an entry in each audit index;
-- on the closed loop that index maintenance is a large share of PostgreSQL's work per task.
--
-- `tasks_resolved_by_age` served no query: compaction deletes every resolved task (a scan of the
-- table, whose resolved rows are then most of it) and /metrics does not count resolved tasks. It
-- cost one entry per drain.
DROP INDEX tasks_resolved_by_age;

-- `audit_by_kind` now leaves out `capability_check`, two of every task's audit rows and nearly all
-- of the table: a feed filtered by that kind walks the primary key backwards and finds its rows at
-- once, while a feed filtered by any rarer kind still reads only that kind's entries. The feed's
-- statement repeats the condition when it filters by another kind.
DROP INDEX audit_by_kind;
CREATE INDEX audit_by_kind ON audit (kind, id) WHERE kind <> 'capability_check';
