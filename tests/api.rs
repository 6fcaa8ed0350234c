//! Black-box integration tests for a2a-mailbox: the real binary, over HTTP, on SQLite and on
//! PostgreSQL (`A2A_MAILBOX_TEST_POSTGRES_URL`). Every test runs on both engines (test names end
//! in `::sqlite` or `::postgres`), but those of `batching`, PostgreSQL's group commit, and of
//! `wal`, SQLite's checkpoints.

#[macro_use]
mod common;

mod api {
    mod auth;
    mod auth_flood;
    mod batch;
    mod batch_races;
    mod batches;
    mod batching;
    mod cancel;
    mod check_token;
    mod concurrency;
    mod crash;
    mod deadline;
    mod disk_full;
    mod expiry;
    mod idempotency;
    mod idempotency_layers;
    mod instances;
    mod jwks;
    mod lease;
    mod listing;
    mod longpoll;
    mod nul;
    mod outage;
    mod panics;
    mod queue;
    mod raw_http;
    mod recent;
    mod results;
    mod send;
    mod strictness;
    mod trace;
    mod transports;
    mod unavailable;
    mod validation;
    mod waiting;
    mod wal;
}
