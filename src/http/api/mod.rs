//! The native REST API (docs/contract.md), which the OpenAPI document describes: one module per
//! resource, each with one table of its routes (`api_routes!`: each handler with its refusals),
//! gathered here once: [`configure`] serves them, [`document`] documents them.

mod batch;
mod docs;
mod listing;
mod ops;
mod results;
mod system;
mod tasks;

use std::sync::LazyLock;

use actix_web::web;

use crate::http::respond::{self, ServedAt, Table};
use crate::http::{error, openapi};

/// Every resource module's table, in the order their paths are matched (`/a2a/tasks/batch`
/// before `/a2a/tasks/{id}`, which would take `batch` for an id).
fn tables() -> Vec<Table> {
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

/// Where every table's operations are served, read once from their `#[utoipa::path]`s (read
/// before the listeners bind, so that no worker spends its start-up on it).
pub(super) fn served_at() -> &'static ServedAt {
    static SERVED_AT: LazyLock<ServedAt> =
        LazyLock::new(|| respond::served_at(tables().iter().map(|t| &t.part)));
    &SERVED_AT
}

/// Every route of the API, and the document its `GET /openapi.json` serves.
pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    static DOCUMENT_JSON: LazyLock<String> = LazyLock::new(document_json);
    respond::serve(cfg, tables(), served_at());
    cfg.app_data(web::Data::new(docs::Document(DOCUMENT_JSON.as_str())))
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
