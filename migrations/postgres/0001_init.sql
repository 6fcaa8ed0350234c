-- a2a-mailbox schema, PostgreSQL flavour. Times are epoch milliseconds; ids are lower-case UUID text.
-- Identifiers are only ever compared for equality, so they use the "C" collation (byte-wise),
-- which spares every B-tree step the locale's comparison. The group-commit function is not
-- here: the server installs src/store/postgres/step_many.sql at start-up.
-- One row per task: its queue position, its lease and its result live together so that every
-- operation is a change of one row (plus its audit row) inside one transaction.
CREATE TABLE tasks (
    id               TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    sender           TEXT COLLATE "C" NOT NULL,
    recipient        TEXT COLLATE "C" NOT NULL,
    body             TEXT NOT NULL,           -- canonical JSON of the A2ATask as accepted
    state            TEXT NOT NULL CHECK (state IN ('queued', 'in_flight', 'result_pending', 'resolved')),
    attempt          BIGINT NOT NULL DEFAULT 0,
    queue_seq        BIGINT NOT NULL,        -- FIFO position; a requeue takes a new (last) one
    lease_id         TEXT,
    leased_to        TEXT,
    leased_at_ms     BIGINT,
    heartbeat_at_ms  BIGINT,
    deadline_ms      BIGINT,
    duplicate_safety TEXT,
    idem_key         TEXT,
    cache_key        TEXT,
    replayed_from    TEXT,
    result_status    TEXT,
    result_content   TEXT,
    result_error     TEXT,
    result_by        TEXT,                    -- who answered: replays are allowed to them only
    result_at_ms     BIGINT,
    result_seq       BIGINT,
    created_at_ms    BIGINT NOT NULL,
    updated_at_ms    BIGINT NOT NULL
);
-- Partial indexes only: each hot query walks exactly the rows of its state.
CREATE INDEX tasks_queued_by_recipient ON tasks (recipient, queue_seq) WHERE state = 'queued';
CREATE INDEX tasks_queued_by_sender ON tasks (sender, queue_seq) WHERE state = 'queued';
-- The global FIFO indexes (operator views, metrics) are on `seq + 0`: the planner cannot use
-- them to order a claim or a drain (`ORDER BY queue_seq` for one recipient), which would walk
-- the whole queue filtering on the recipient once statistics say recipients are few.
CREATE INDEX tasks_queued_fifo ON tasks ((queue_seq + 0)) WHERE state = 'queued';
CREATE INDEX tasks_in_flight_by_age ON tasks (heartbeat_at_ms) WHERE state = 'in_flight';
CREATE INDEX tasks_pending_by_sender ON tasks (sender, result_seq) WHERE state = 'result_pending';
CREATE INDEX tasks_pending_fifo ON tasks ((result_seq + 0)) WHERE state = 'result_pending';

CREATE SEQUENCE a2a_queue_seq;
CREATE SEQUENCE a2a_result_seq;

-- Receiver-side result cache (§6.2).
CREATE TABLE result_cache (
    cache_key      TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    source_task_id TEXT NOT NULL,
    status         TEXT NOT NULL,
    content        TEXT NOT NULL,
    error_message  TEXT,
    created_at_ms  BIGINT NOT NULL,
    expires_at_ms  BIGINT NOT NULL
);
CREATE INDEX result_cache_expiry ON result_cache (expires_at_ms);

-- Idempotency-Key records (§6.3), per caller.
CREATE TABLE idempotency_keys (
    caller          TEXT COLLATE "C" NOT NULL,
    idem_key        TEXT COLLATE "C" NOT NULL,
    fingerprint     TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'complete')),
    response        TEXT,                    -- the outcome, kept to answer a replay
    created_at_ms   BIGINT NOT NULL,
    locked_until_ms BIGINT NOT NULL,
    expires_at_ms   BIGINT NOT NULL,
    PRIMARY KEY (caller, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);

CREATE TABLE audit (
    id           BIGSERIAL PRIMARY KEY,
    timestamp_ms BIGINT NOT NULL,
    issuer       TEXT COLLATE "C" NOT NULL,
    kind         TEXT COLLATE "C" NOT NULL,
    body         TEXT NOT NULL
);
CREATE INDEX audit_by_issuer ON audit (issuer, id);
-- `capability_check` rows (two per task's life, nearly all of the table) are left out: a feed of
-- that kind walks the primary key backwards, a feed of any rarer kind reads only its entries.
CREATE INDEX audit_by_kind ON audit (kind, id) WHERE kind <> 'capability_check';

-- The claim path rewrites rows of a hot table: keep its statistics fresh so the planner keeps
-- using the partial indexes on a deep queue.
ALTER TABLE tasks SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
