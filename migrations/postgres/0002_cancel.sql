-- Cancellation (API.md §12): a fifth, terminal state `canceled`, and who canceled, why, from
-- which state and when. The lease columns of a task canceled in flight keep the ended lease, so
-- its former lessee is still recognised (its next heartbeat or result answers `task_canceled`).
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
    CHECK (state IN ('queued', 'in_flight', 'result_pending', 'resolved', 'canceled'));
ALTER TABLE tasks ADD COLUMN canceled_by TEXT;
ALTER TABLE tasks ADD COLUMN cancel_reason TEXT;
ALTER TABLE tasks ADD COLUMN canceled_from TEXT;
ALTER TABLE tasks ADD COLUMN canceled_at_ms BIGINT;
