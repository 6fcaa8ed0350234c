-- `/readyz` answers whether a write can commit now: it updates this one row through a pooled
-- connection, as every write does, so a database that cannot commit shows there.
CREATE TABLE readiness (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    checked_at_ms BIGINT NOT NULL
);
INSERT INTO readiness (id, checked_at_ms) VALUES (1, 0);
