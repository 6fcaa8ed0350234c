//! The OpenAPI 3.1 document, served by `src/http/api/docs.rs`.
//!
//! The document is generated from the code that the resource modules hand it (their tables'
//! [`Part`]s; this module imports none of them): the `#[utoipa::path]` attributes above the handlers
//! (operation-specific parameters, bodies, success answers and refusals) and the `ToSchema` wire
//! types. [`Conventions`] then applies the rules every operation shares, so that no operation
//! can forget them: the bearer scheme and its 401 on authenticated routes, the `Idempotency-Key`
//! request header with its 409/422 answers and the `Idempotent-Replayed` / `Retry-After` response
//! headers on every POST, 413/415 on JSON bodies, 500/503 on everything that reads the database,
//! and an example body for every error code a response lists.
//!
//! The committed copy lives in `openapi/openapi.json`; `tests/openapi.rs` fails when it differs
//! from `crate::http::document_json`. Regenerate it with
//! `A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi`.

// The document is built from the code's own declarations and constants, once, before it is
// served (`api/mod.rs` keeps it); `tests/openapi.rs` builds it in every test run, so a panic here is
// a failing test, never a request's. No request input reaches this module.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod batch_examples;
pub(crate) mod conventions;
mod examples;
mod refusals;
mod shared;

use utoipa::{Modify, OpenApi};

use crate::error::ErrorCode;

pub use batch_examples::*;
pub use conventions::codes_named_in;
pub use examples::*;
pub use refusals::Refusals;
pub use shared::{
    Status, DOCS_PATH, IDEMPOTENCY_KEY_MAX_LEN, IDEMPOTENCY_KEY_PATTERN, OPENAPI_PATH, PUBLIC_PATHS,
};

/// A resource module's part of the document: its operations, filed under `tag`, and each
/// operation's refusals.
pub struct Part {
    pub tag: &'static str,
    /// Its operations (a function: building them is left to who needs them).
    pub doc: fn() -> utoipa::openapi::OpenApi,
    pub refusals: Refusals,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "a2a-mailbox",
        description = "A durable, explicitly leased task mailbox between AI agents.\n\n\
One agent (the sender) posts a task for another (the recipient); the recipient leases it \
(`GET /a2a/tasks/next`), works, and posts a result (`POST /a2a/results`); the sender drains the \
result (`GET /a2a/results/next`). Nothing is ever redelivered behind anyone's back: a lease stays \
in flight until its holder answers, an operator repairs it, or the opt-in retry gate requeues it.\n\n\
**Conventions.** JSON in, JSON out. Times are unsigned integers in milliseconds since the Unix \
epoch (`*_ms`). Ids are UUIDs, lower-case on output. Every success body is an object tagged by \
`kind`; every error body is an `ErrorBody` (`kind: \"error\"`, a stable `code`, a free-text \
`message`, `retriable`). Request bodies are JSON objects; unknown fields are ignored; enum values \
are exact snake_case; integers are written without a fraction or exponent (`5`, not `5.0`). \
Request bodies are limited (1 MiB by default) → 413. `limit` query parameters default to 10 and \
are clamped to 1..=1000; filters apply before the limit.\n\n\
**Authentication.** `Authorization: Bearer <JWT>` on every route except `/healthz`, `/readyz`, \
`/version`, `/metrics`, `/openapi.json` and `/docs`. The token's `sub` is the caller's AgentId and \
its `caps` claim lists the granted actions (`a2a.send.<recipient>`, `a2a.respond.<sender>`, \
`a2a.lease.<recipient>`, `a2a.repair.requeue`, `a2a.repair.force_error`, `a2a.compact`, \
`a2a.operator`; `<agent>` may be `*`), each optionally narrowed by a scope. A task that is not \
visible to the caller answers exactly like one that does not exist.\n\n\
**Retries.** Every POST accepts an `Idempotency-Key` header: the same key with the same request \
answers the stored response with `Idempotent-Replayed: true`; with a different request → 422 \
`idempotency_key_reused`; while the first request still runs → 409 `idempotency_in_flight` with \
`Retry-After`.\n\n\
**Trace context.** A task carries its sender's W3C trace context to its worker, and a result its \
worker's back to the sender: the `trace` field, else the request's `traceparent`/`tracestate` \
headers; a malformed one is dropped, never refused, and it is never part of a request's \
identity (a retry under another trace replays and keeps the first).\n\n\
**A2A.** Every recipient is also an A2A protocol 1.0 agent under `/a2a/agents/{recipient}` (agent \
card, JSON-RPC and HTTP+JSON bindings). Those routes follow the A2A specification, which A2A \
clients are built from, and are not described in this document.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorCode, a2a_mailbox_types::ErrorBody, a2a_mailbox_types::Role)),
    tags(
        (name = "tasks", description = "Sending, leasing and reading tasks."),
        (name = "results", description = "Posting and draining results."),
        (name = "operator",
            description = "Queue snapshot, lease repair, retry gate, scheduler, compaction and the \
                audit feed."),
        (name = "system", description = "Health, readiness, version, metrics and this document."),
    )
)]
pub struct ApiDoc;

/// The document as the code generates it: the info and tags above, each part's operations (with
/// their refusals, whose statuses `status` gives) under its tag, then the conventions every
/// operation shares.
pub fn document(parts: Vec<Part>, status: Status) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    for part in &parts {
        doc.merge(tagged((part.doc)(), part.tag));
    }
    for part in &parts {
        refusals::add(&mut doc, part.refusals, status);
    }
    conventions::Conventions.modify(&mut doc);
    doc
}

/// Files every operation of `part` under `tag`.
fn tagged(mut part: utoipa::openapi::OpenApi, tag: &str) -> utoipa::openapi::OpenApi {
    for item in part.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.post].into_iter().flatten() {
            op.tags = Some(vec![tag.to_owned()]);
        }
    }
    part
}

/// The document as served at `/openapi.json` and committed at `openapi/openapi.json`.
pub fn document_json(parts: Vec<Part>, status: Status) -> String {
    let mut s = document(parts, status)
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    s.push('\n');
    s
}
