-- Scheduler ticks are coalesced across every instance on the database (API.md §7): this one row
-- holds when the last tick that ran started and when its scan finished. A tick claims it with a
-- conditional UPDATE inside its own transaction and keeps it locked until that commits; a tick
-- that finds it locked (another tick's scan runs) skips it.
CREATE TABLE scheduler_ticks (
    id             SMALLINT PRIMARY KEY CHECK (id = 1),
    started_at_ms  BIGINT NOT NULL,
    finished_at_ms BIGINT NOT NULL
);
INSERT INTO scheduler_ticks (id, started_at_ms, finished_at_ms) VALUES (1, 0, 0);

-- Audit retention (§10): compaction drops the rows older than A2A_MAILBOX_AUDIT_RETENTION_MS.
CREATE INDEX audit_by_time ON audit (timestamp_ms);
