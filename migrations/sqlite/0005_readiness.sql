-- `/readyz` answers whether a write can commit now: it updates this one row through the same
-- writer every write goes through, so a full disk or a writer that cannot commit shows there.
CREATE TABLE readiness (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    checked_at_ms INTEGER NOT NULL
);
INSERT INTO readiness (id, checked_at_ms) VALUES (1, 0);
