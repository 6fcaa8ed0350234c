//! HTTP routes: thin handlers that parse a request, call the mailbox and answer. One folder per
//! protocol: the native API (`api/`, the one the OpenAPI document of `openapi/` describes), the
//! A2A facade (`a2a/`), MCP (`mcp/`) and the operator dashboard (`dashboard/`); `serve/` binds
//! the listeners and runs the middleware. The files here are what they share: reading a request
//! (`extract`, `params`, `write`), answering (`respond`, `error`, `sse`, `json`, `time`) and the
//! app's state.

pub mod a2a;
mod api;
mod dashboard;
pub mod error;
pub(crate) mod extract;
pub(crate) mod json;
mod mcp;
pub mod openapi;
mod params;
mod respond;
mod serve;
mod sse;
pub(crate) mod state;
pub(crate) mod time;
pub(crate) mod trace;
mod write;

use actix_web::web;

pub use api::{document, document_json};
pub use extract::{
    form_config, json_config, path_config as extract_path_config,
    query_config as extract_query_config,
};
pub use respond::{not_found_route, observe_latency};
pub use serve::{refuse_nul, Listening};
pub use state::{AppState, McpResource, State};

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
    api::served_at();
    serve::listen(state, max_body, binds, unix_mode, workers, configure)
}

/// Every route of the service.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(api::configure)
        .configure(a2a::configure)
        .configure(mcp::configure)
        .configure(dashboard::configure);
}
