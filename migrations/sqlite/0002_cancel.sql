-- Cancellation (API.md §12): a fifth, terminal state `canceled`, and who canceled, why, from
-- which state and when. The lease columns of a task canceled in flight keep the ended lease, so
-- its former lessee is still recognised (its next heartbeat or result answers `task_canceled`).
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt, with its indexes.
CREATE TABLE tasks_new (
    id               TEXT PRIMARY KEY NOT NULL,
    sender           TEXT NOT NULL,
    recipient        TEXT NOT NULL,
    body             TEXT NOT NULL,           -- canonical JSON of the A2ATask as accepted
    state            TEXT NOT NULL CHECK (state IN ('queued', 'in_flight', 'result_pending', 'resolved', 'canceled')),
    attempt          INTEGER NOT NULL DEFAULT 0,
    queue_seq        INTEGER NOT NULL,        -- FIFO position; a requeue takes a new (last) one
    lease_id         TEXT,
    leased_to        TEXT,
    leased_at_ms     INTEGER,
    heartbeat_at_ms  INTEGER,
    deadline_ms      INTEGER,
    duplicate_safety TEXT,
    idem_key         TEXT,
    cache_key        TEXT,
    replayed_from    TEXT,
    result_status    TEXT,
    result_content   TEXT,
    result_error     TEXT,
    result_by        TEXT,                    -- who answered: replays are allowed to them only
    result_at_ms     INTEGER,
    result_seq       INTEGER,
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    canceled_by      TEXT,
    cancel_reason    TEXT,
    canceled_from    TEXT,                    -- the state it was canceled in
    canceled_at_ms   INTEGER
);
INSERT INTO tasks_new (id, sender, recipient, body, state, attempt, queue_seq, lease_id, leased_to, leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from, result_status, result_content, result_error, result_by, result_at_ms, result_seq, created_at_ms, updated_at_ms)
    SELECT id, sender, recipient, body, state, attempt, queue_seq, lease_id, leased_to, leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from, result_status, result_content, result_error, result_by, result_at_ms, result_seq, created_at_ms, updated_at_ms FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
-- Partial indexes only: each hot query walks exactly the rows of its state.
CREATE INDEX tasks_queued_by_recipient ON tasks (recipient, queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_queued_by_sender ON tasks (sender, queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_queued_fifo ON tasks (queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_in_flight_by_age ON tasks (heartbeat_at_ms) WHERE state = 'in_flight';
CREATE INDEX tasks_pending_by_sender ON tasks (sender, result_seq) WHERE state = 'result_pending';
CREATE INDEX tasks_pending_fifo ON tasks (result_seq) WHERE state = 'result_pending';
