//! The OpenAPI 3.1 document (`GET /openapi.json`) and the interactive docs (`GET /docs`).
//!
//! The document is generated from the code: the `#[utoipa::path]` attributes above the handlers
//! (operation-specific parameters, bodies, success answers and refusals) and the `ToSchema` wire
//! types. [`Conventions`] then applies the rules every operation shares, so that no operation
//! can forget them: the bearer scheme and its 401 on authenticated routes, the `Idempotency-Key`
//! request header with its 409/422 answers and the `Idempotent-Replayed` / `Retry-After` response
//! headers on every POST, 413/415 on JSON bodies, 500/503 on everything that reads the database,
//! and an example body for every error code a response lists.
//!
//! The committed copy lives in `openapi/openapi.json`; `tests/openapi.rs` fails when it differs
//! from [`document_json`]. Regenerate it with
//! `A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi`.

mod bodies;
mod conventions;
mod examples;
mod refusals;

use std::sync::LazyLock;

use actix_web::{web, HttpResponse};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::{Config, SwaggerUi};

use super::respond::endpoint;
use crate::error::ErrorCode;

pub use bodies::*;
pub use conventions::codes_named_in;
pub use examples::*;
pub use refusals::Refusals;

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Where the interactive docs are served (`/docs` redirects to `/docs/`).
pub const DOCS_PATH: &str = "/docs";

/// Routes that need no bearer token (API.md §1).
pub const PUBLIC_PATHS: [&str; 7] = [
    "/healthz",
    "/readyz",
    "/version",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/docs/",
];

/// Routes that never touch the database, so they cannot answer 500/503.
pub(crate) const STATIC_PATHS: [&str; 5] =
    ["/healthz", "/version", "/openapi.json", "/docs", "/docs/"];

/// The `Idempotency-Key` header accepts 1..=255 visible ASCII characters, at least one of them
/// not a space (a blank key is refused).
pub const IDEMPOTENCY_KEY_PATTERN: &str = r"^[\t\x20-\x7E]*[\x21-\x7E][\t\x20-\x7E]*$";
/// The longest accepted `Idempotency-Key` (the mailbox's `MAX_KEY_LEN`; a unit test holds them equal).
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 255;

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
**A2A.** Every recipient is also an A2A protocol 1.0 agent under `/a2a/agents/{recipient}` (agent \
card, JSON-RPC and HTTP+JSON bindings). Those routes follow the A2A specification, which A2A \
clients are built from, and are not described in this document.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorCode, crate::http::error::ErrorBody, crate::mailbox::listing::Role)),
    tags(
        (name = "tasks", description = "Sending, leasing and reading tasks."),
        (name = "results", description = "Posting and draining results."),
        (name = "operator", description = "Queue snapshot, lease repair, retry gate, scheduler, compaction and the audit feed."),
        (name = "system", description = "Health, readiness, version, metrics and this document."),
    )
)]
pub struct ApiDoc;

/// The document as the code generates it: the info and tags above, each resource module's
/// operations (with their refusals) under its tag, then the conventions every operation shares.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    for (tag, part) in [
        ("tasks", super::tasks::Paths::openapi()),
        ("tasks", super::listing::Paths::openapi()),
        ("tasks", super::batch::Paths::openapi()),
        ("results", super::results::Paths::openapi()),
        ("operator", super::ops::Paths::openapi()),
        ("system", super::system::Paths::openapi()),
        ("system", Paths::openapi()),
    ] {
        doc.merge(tagged(part, tag));
    }
    for table in [
        super::tasks::REFUSALS,
        super::batch::REFUSALS,
        super::listing::REFUSALS,
        super::results::REFUSALS,
        super::ops::REFUSALS,
    ] {
        refusals::add(&mut doc, table);
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

/// The document's own operations.
#[derive(OpenApi)]
#[openapi(paths(openapi_json, docs, docs_index))]
struct Paths;

/// The document as served at `/openapi.json` and committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let mut s = document()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    s.push('\n');
    s
}

static DOCUMENT_JSON: LazyLock<String> = LazyLock::new(document_json);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(endpoint(
        OPENAPI_PATH,
        vec![("GET", web::get().to(openapi_json))],
    ))
    .service(endpoint(DOCS_PATH, vec![("GET", web::get().to(docs))]))
    // The Swagger UI answers GET; any other method on its pages is a 405 like everywhere.
    .service(
        web::resource("/docs/{_:.*}")
            .guard(actix_web::guard::Not(actix_web::guard::Get()))
            .to(|| async {
                Ok::<HttpResponse, crate::error::MailboxError>(super::error::method_not_allowed(
                    "GET",
                ))
            }),
    )
    .service(
        SwaggerUi::new("/docs/{_:.*}").config(
            Config::new([OPENAPI_PATH])
                // No badge: it would ask a public validator about the document.
                .validator_url("none")
                .persist_authorization(true)
                .display_request_duration(true)
                .filter(true)
                .try_it_out_enabled(true),
        ),
    );
}

/// The OpenAPI 3.1 document of this service.
#[utoipa::path(
    get,
    path = "/openapi.json",
    responses(
        (status = 200, description = "This document.", content_type = "application/json", body = Object),
    )
)]
async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT_JSON.as_str())
}

/// The interactive docs live at `/docs/`.
#[utoipa::path(
    get,
    path = "/docs",
    responses(
        (status = 301, description = "Redirect to `/docs/`.",
            headers(("Location" = String, description = "`/docs/`"))),
    )
)]
async fn docs() -> HttpResponse {
    HttpResponse::MovedPermanently()
        .insert_header((actix_web::http::header::LOCATION, "/docs/"))
        .finish()
}

/// The interactive docs (Swagger UI, served from the binary: no network access needed).
#[utoipa::path(
    get,
    path = "/docs/",
    responses(
        (status = 200, description = "The Swagger UI page.", content_type = "text/html", body = String),
    )
)]
#[allow(dead_code)] // documents the page that `SwaggerUi` serves
async fn docs_index() {}
