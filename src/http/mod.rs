//! HTTP routes: thin handlers that parse a request, call the mailbox and answer. Each resource
//! module registers its routes (`configure`) and lists its operations for the OpenAPI document
//! (`Paths`).

pub mod a2a;
mod batch;
pub(crate) mod conn;
mod dashboard;
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

use std::sync::Arc;

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
    /// The A2A facade's settings (§16).
    pub a2a: a2a::Settings,
    /// The namespace of the A2A facade's task ids, generated once per database and never
    /// revealed (`Mailbox::secret_namespace`).
    pub a2a_namespace: uuid::Uuid,
    /// What the service listens on (`tcp:ADDR`, `unix:PATH`), set once it is bound.
    pub transports: std::sync::OnceLock<Vec<String>>,
}

pub type State = web::Data<Arc<AppState>>;

/// Every route of the service.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(system::configure)
        .configure(batch::configure)
        .configure(tasks::configure)
        .configure(listing::configure)
        .configure(results::configure)
        .configure(ops::configure)
        .configure(a2a::configure)
        .configure(dashboard::configure)
        .configure(openapi::configure);
}
