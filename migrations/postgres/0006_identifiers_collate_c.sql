-- Identifiers compare byte by byte (BENCHMARKS.md, session 7). Task ids, agent names, audit
-- kinds, Idempotency-Keys and result-cache keys are only ever compared for equality (every
-- ORDER BY of the service is on a number), but a TEXT column takes the database's default
-- collation, and under any collation other than "C" PostgreSQL compares two strings through
-- the C library's locale code: every step down a B-tree of these keys (a send's primary-key
-- insert, a claim's or a drain's index scan by recipient or sender, every audit row's index
-- entries) pays for it. "C" compares bytes, which for equality is the same answer. A column
-- compared with a parameter of the default collation takes the column's collation, so the
-- service's statements and the batch function are unchanged.
--
-- ALTER COLUMN ... TYPE rewrites the table and rebuilds its indexes: on a large mailbox this
-- migration takes a while and holds an exclusive lock on each table while it runs.
ALTER TABLE tasks
    ALTER COLUMN id TYPE TEXT COLLATE "C",
    ALTER COLUMN sender TYPE TEXT COLLATE "C",
    ALTER COLUMN recipient TYPE TEXT COLLATE "C";
ALTER TABLE audit
    ALTER COLUMN issuer TYPE TEXT COLLATE "C",
    ALTER COLUMN kind TYPE TEXT COLLATE "C";
ALTER TABLE idempotency_keys
    ALTER COLUMN caller TYPE TEXT COLLATE "C",
    ALTER COLUMN idem_key TYPE TEXT COLLATE "C";
ALTER TABLE result_cache
    ALTER COLUMN cache_key TYPE TEXT COLLATE "C";
