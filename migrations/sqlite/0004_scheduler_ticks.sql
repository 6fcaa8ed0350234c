-- Scheduler ticks are coalesced across every instance on the database (API.md §7): this one row
-- holds when the last tick that ran started and when its scan finished. A tick claims it with a
-- conditional UPDATE inside its own transaction (SQLite's single writer orders the claims).
CREATE TABLE scheduler_ticks (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    started_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER NOT NULL
);
INSERT INTO scheduler_ticks (id, started_at_ms, finished_at_ms) VALUES (1, 0, 0);

-- Audit retention (§10): compaction drops the rows older than A2A_MAILBOX_AUDIT_RETENTION_MS.
CREATE INDEX audit_by_time ON audit (timestamp_ms);
