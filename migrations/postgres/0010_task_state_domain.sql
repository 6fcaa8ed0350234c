-- The task state's rule moves from a table CHECK constraint to a domain: the same values, the
-- same text on the wire (a domain column is sent as its base type), cheaper to enforce.
-- PostgreSQL reads a table CHECK constraint's stored expression anew in every INSERT and UPDATE
-- statement it runs on the table (a few percent of its CPU under the closed loop, measured in
-- BENCHMARKS.md), whereas a domain's constraint is read once per connection and kept in its
-- type cache. On an existing database the type change checks every row and rebuilds the
-- table's indexes once; a domain over text needs no rewrite of the table.
CREATE DOMAIN a2a_task_state AS TEXT
    CHECK (VALUE IN ('queued', 'in_flight', 'result_pending', 'resolved', 'canceled'));
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ALTER COLUMN state TYPE a2a_task_state;
