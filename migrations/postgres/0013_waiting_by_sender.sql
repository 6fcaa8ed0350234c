-- One index on `tasks` for what waits on a sender, its queued tasks and its pending results, in
-- place of one for each state. Every statement that writes a task opens every index of the
-- table and prepares each partial index's condition again, so an index costs more than its
-- entries (BENCHMARKS.md, "Kept tokens in memory taken once"): one index fewer is about 3 % of
-- PostgreSQL's work a task life in the batch function. The entries are the same, one as a task
-- is queued and one as its result becomes pending.
--
-- A drain (`state = 'result_pending' AND sender = $1 ORDER BY result_seq LIMIT 1`) walks the
-- sender's pending results in order on the second and third columns, as it walked the old
-- index; a sender's queued tasks (the queue views for a caller) are the range of its first two.
CREATE INDEX tasks_waiting_by_sender ON tasks (sender, state, result_seq)
    WHERE state IN ('queued', 'result_pending');
DROP INDEX tasks_queued_by_sender;
DROP INDEX tasks_pending_by_sender;
