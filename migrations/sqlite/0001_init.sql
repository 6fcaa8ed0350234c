-- a2a-mailbox schema, SQLite flavour. Times are epoch milliseconds; ids are lower-case UUID text.
-- One row per task: its queue position, its lease and its result live together so that every
-- operation is a change of one row (plus its audit row) inside one transaction.
CREATE TABLE tasks (
    id               TEXT PRIMARY KEY NOT NULL,
    sender           TEXT NOT NULL,
    recipient        TEXT NOT NULL,
    body             TEXT NOT NULL,           -- canonical JSON of the A2ATask as accepted
    state            TEXT NOT NULL CHECK (state IN ('queued', 'in_flight', 'result_pending', 'resolved')),
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
    updated_at_ms    INTEGER NOT NULL
);
-- Partial indexes only: each hot query walks exactly the rows of its state.
CREATE INDEX tasks_queued_by_recipient ON tasks (recipient, queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_queued_by_sender ON tasks (sender, queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_queued_fifo ON tasks (queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_in_flight_by_age ON tasks (heartbeat_at_ms) WHERE state = 'in_flight';
CREATE INDEX tasks_pending_by_sender ON tasks (sender, result_seq) WHERE state = 'result_pending';
CREATE INDEX tasks_pending_fifo ON tasks (result_seq) WHERE state = 'result_pending';

-- Receiver-side result cache (§6.2).
CREATE TABLE result_cache (
    cache_key      TEXT PRIMARY KEY NOT NULL,
    source_task_id TEXT NOT NULL,
    status         TEXT NOT NULL,
    content        TEXT NOT NULL,
    error_message  TEXT,
    created_at_ms  INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL
);
CREATE INDEX result_cache_expiry ON result_cache (expires_at_ms);

-- Idempotency-Key records (§6.3), per caller.
CREATE TABLE idempotency_keys (
    caller          TEXT NOT NULL,
    idem_key        TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'complete')),
    response        TEXT,                    -- the outcome, kept to answer a replay
    created_at_ms   INTEGER NOT NULL,
    locked_until_ms INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (caller, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);

CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp_ms INTEGER NOT NULL,
    issuer       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT NOT NULL
);
CREATE INDEX audit_by_issuer ON audit (issuer, id);
-- `capability_check` rows (two per task's life, nearly all of the table) are left out: a feed of
-- that kind walks the rowid backwards, a feed of any rarer kind reads only its entries (the
-- feed's statement repeats this condition, which SQLite needs to use a partial index).
CREATE INDEX audit_by_kind ON audit (kind, id) WHERE kind <> 'capability_check';
