-- Audit rows are identified by a UUID like every other id (API.md §10): `event_id`, a
-- time-ordered UUIDv7 that the column's default writes for every insert, whatever statement
-- makes it. The integer `id` stays the rows' order (the feed is newest first by it, and the
-- indexes use it). Rows written before this migration get a UUID made from their integer id.
-- SQLite cannot add a column with a non-constant default: the table is rebuilt, with its indexes.
CREATE TABLE audit_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT NOT NULL DEFAULT (
        substr(printf('%012x', CAST(unixepoch('subsec') * 1000 AS INTEGER)), 1, 8) || '-' ||
        substr(printf('%012x', CAST(unixepoch('subsec') * 1000 AS INTEGER)), 9, 4) || '-7' ||
        lower(substr(hex(randomblob(2)), 2, 3)) || '-' ||
        substr('89ab', 1 + abs(random() % 4), 1) ||
        lower(substr(hex(randomblob(2)), 2, 3)) || '-' ||
        lower(hex(randomblob(6)))),
    timestamp_ms INTEGER NOT NULL,
    issuer       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT NOT NULL
);
INSERT INTO audit_new (id, event_id, timestamp_ms, issuer, kind, body)
    SELECT id, printf('00000000-0000-7000-8000-%012x', id), timestamp_ms, issuer, kind, body
    FROM audit;
DROP TABLE audit;
ALTER TABLE audit_new RENAME TO audit;
CREATE INDEX audit_by_issuer ON audit (issuer, id);
-- See 0001_init.sql: `capability_check` rows are left out of the per-kind index.
CREATE INDEX audit_by_kind ON audit (kind, id) WHERE kind <> 'capability_check';
-- See 0004_scheduler_ticks.sql: compaction drops rows past their retention by time.
CREATE INDEX audit_by_time ON audit (timestamp_ms);
