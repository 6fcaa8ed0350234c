//! The state every handler shares.

use std::sync::Arc;

use actix_web::web;

use crate::auth::Verifier;
use crate::mailbox::Mailbox;

/// Shared by every handler; holds no per-request state.
pub struct AppState {
    pub mailbox: Mailbox,
    pub verifier: Verifier,
    /// The MCP endpoint as an OAuth resource server, when `A2A_MAILBOX_MCP_RESOURCE` is set.
    pub mcp_resource: Option<McpResource>,
    pub max_body_bytes: usize,
    /// The largest body a batch route takes (`A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES`).
    pub batch_body_bytes: usize,
    /// The policy `POST /a2a/scheduler/tick` runs (from `A2A_MAILBOX_AUTO_RETRY_*`).
    pub scheduler_policy: crate::mailbox::retry::RetryPolicy,
    /// The A2A facade's settings (docs/contract.md#a2a).
    pub a2a: super::a2a::settings::Settings,
    /// The namespace of the A2A facade's task ids, generated once per database and never
    /// revealed (`Mailbox::secret_namespace`).
    pub a2a_namespace: uuid::Uuid,
    /// The secret under which MCP session ids are signed, generated once per database, so every
    /// instance on it recognises a session another one issued.
    pub mcp_sessions: uuid::Uuid,
    /// The secret under which the dashboard signs its outcome cookies, generated once per
    /// database, so an outcome shows on whichever instance the browser reaches next.
    pub dashboard_outcomes: uuid::Uuid,
    /// The test-only fault injection `A2A_MAILBOX_TEST_PANIC_PATH`: a request to this path
    /// panics (`http/serve/panics.rs`).
    pub panic_path: Option<String>,
    /// What the service listens on (`tcp:ADDR`, `unix:PATH`), set once it is bound.
    pub transports: std::sync::OnceLock<Vec<String>>,
}

/// The MCP endpoint as an OAuth resource server: its settings, and the verifier of the tokens
/// issued for it.
pub struct McpResource {
    pub settings: crate::config::identity::McpResource,
    pub verifier: Verifier,
}

pub type State = web::Data<Arc<AppState>>;
