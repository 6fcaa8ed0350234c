//! HTTP routes: thin handlers that parse a request, call the mailbox and answer. Each resource
//! module has one table of its routes (`table()`, from `api_routes!`): each handler with its
//! refusals. They are gathered here, once: [`configure`] serves them and [`document`] hands them
//! to `openapi`, which documents them.

pub mod a2a;
mod batch;
mod compact_head;
pub(crate) mod conn;
mod dashboard;
mod docs;
pub mod error;
pub(crate) mod extract;
pub(crate) mod json;
mod listen;
mod listing;
mod mcp;
mod nul_guard;
pub mod openapi;
mod ops;
mod panics;
mod params;
mod respond;
mod results;
mod sse;
pub(crate) mod state;
mod system;
mod tasks;
pub(crate) mod time;
mod write;

use std::sync::LazyLock;

use actix_web::web;

pub use extract::{
    form_config, json_config, path_config as extract_path_config,
    query_config as extract_query_config,
};
pub use listen::Listening;
pub use nul_guard::refuse_nul;
pub use respond::{not_found_route, observe_latency};
pub use state::{AppState, State};

/// Every resource module's table, in the order their paths are matched (`/a2a/tasks/batch`
/// before `/a2a/tasks/{id}`, which would take `batch` for an id).
fn tables() -> Vec<respond::Table> {
    vec![
        system::table(),
        batch::table(),
        tasks::table(),
        listing::table(),
        results::table(),
        ops::table(),
        docs::table(),
    ]
}

/// Where every table's operations are served, read once from their `#[utoipa::path]`s
/// ([`listen`] reads it before it binds, so that no worker spends its start-up on it).
fn served_at() -> &'static respond::ServedAt {
    static SERVED_AT: LazyLock<respond::ServedAt> =
        LazyLock::new(|| respond::served_at(tables().iter().map(|t| &t.part)));
    &SERVED_AT
}

/// Binds every entry of `binds` (a Unix socket file gets `unix_mode`) for `workers` threads and
/// serves every route of the service on each.
pub fn listen(
    state: State,
    max_body: usize,
    binds: &[crate::transport::Bind],
    unix_mode: u32,
    workers: usize,
) -> anyhow::Result<Listening> {
    // Before any bind: a worker's routes are then ready as soon as it starts.
    served_at();
    listen::listen(state, max_body, binds, unix_mode, workers, configure)
}

/// Every route of the service.
pub fn configure(cfg: &mut web::ServiceConfig) {
    respond::serve(cfg, tables(), served_at());
    cfg.configure(a2a::configure)
        .configure(mcp::configure)
        .configure(dashboard::configure)
        .configure(docs::configure);
}

/// The OpenAPI document of every table's operations.
pub fn document() -> utoipa::openapi::OpenApi {
    let parts = tables().into_iter().map(|t| t.part).collect();
    openapi::document(parts, |code| error::status(code).as_u16())
}

/// The document as served at `/openapi.json` and committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let parts = tables().into_iter().map(|t| t.part).collect();
    openapi::document_json(parts, |code| error::status(code).as_u16())
}
