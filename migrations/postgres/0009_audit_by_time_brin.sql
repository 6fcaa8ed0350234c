-- Audit retention (0004_scheduler_ticks.sql) deletes the rows older than a time. Rows are
-- appended in time order, so a block-range index serves that delete; it writes no entry per
-- row (a btree entry on each of the two audit rows of every task's life before).
DROP INDEX audit_by_time;
CREATE INDEX audit_by_time ON audit USING brin (timestamp_ms) WITH (autosummarize = on);
