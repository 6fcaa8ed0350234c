//! HTTP routes: thin handlers that parse a request, call the mailbox and answer. Each resource
//! module has one table of its routes (`table()`, from `api_routes!`): each handler with its
//! refusals. They are gathered here, once: [`configure`] serves them and [`document`] hands them
//! to `openapi`, which documents them.

pub mod a2a;
mod batch;
pub(crate) mod conn;
mod dashboard;
mod docs;
pub mod error;
pub(crate) mod extract;
mod listen;
mod listing;
mod nul_guard;
pub mod openapi;
mod ops;
mod params;
mod respond;
mod results;
mod system;
mod tasks;
pub(crate) mod time;
mod write;

use std::sync::{Arc, LazyLock};

use actix_web::web;

use crate::auth::Verifier;
use crate::mailbox::Mailbox;

pub use extract::{
    form_config, json_config, path_config as extract_path_config,
    query_config as extract_query_config,
};
pub use listen::{listen, Listening};
pub use nul_guard::refuse_nul;
pub use respond::{not_found_route, observe_latency};

/// Shared by every handler; holds no per-request state.
pub struct AppState {
    pub mailbox: Mailbox,
    pub verifier: Verifier,
    pub max_body_bytes: usize,
    /// The policy `POST /a2a/scheduler/tick` runs (from `A2A_MAILBOX_AUTO_RETRY_*`).
    pub scheduler_policy: crate::mailbox::retry::RetryPolicy,
    /// The A2A facade's settings (docs/contract.md#a2a).
    pub a2a: a2a::Settings,
    /// The namespace of the A2A facade's task ids, generated once per database and never
    /// revealed (`Mailbox::secret_namespace`).
    pub a2a_namespace: uuid::Uuid,
    /// What the service listens on (`tcp:ADDR`, `unix:PATH`), set once it is bound.
    pub transports: std::sync::OnceLock<Vec<String>>,
}

pub type State = web::Data<Arc<AppState>>;

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

/// Every route of the service.
pub fn configure(cfg: &mut web::ServiceConfig) {
    respond::serve(cfg, tables(), served_at());
    cfg.configure(a2a::configure)
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
