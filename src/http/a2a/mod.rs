//! The A2A protocol 1.0 facade (docs/contract.md#a2a): every recipient is an A2A agent with a card, a
//! JSON-RPC 2.0 binding and an HTTP+JSON binding. A thin translation over the mailbox's own
//! operations: a SendMessage is a native send (same gates, same audit rows), a read is a native
//! read, and no rule is written here a second time.
//!
//! Not in the OpenAPI document: these routes follow the A2A specification and its JSON
//! shapes, which A2A clients are generated from.

mod card;
mod errors;
mod jsonrpc;
mod methods;
mod rest;
pub(crate) mod settings;
mod stream;
mod wire;

use actix_web::{web, HttpRequest};

use super::respond::routes;
use crate::domain::AgentId;
use crate::error::{ErrorCode, MailboxError};
use errors::{A2aError, Kind};

pub use settings::Settings;

/// The routes of every agent. `…/tasks/{id}` comes last: the `:cancel` and `:subscribe` paths
/// are matched first.
pub fn configure(cfg: &mut web::ServiceConfig) {
    routes!(cfg;
        "/a2a/agents/{recipient}/.well-known/agent-card.json" => GET card::card;
        "/a2a/agents/{recipient}/.well-known/agent.json" => GET card::card;
        "/a2a/agents/{recipient}/jsonrpc" => POST jsonrpc::endpoint;
        "/a2a/agents/{recipient}/message:send" => POST rest::send_message;
        "/a2a/agents/{recipient}/message:stream" => POST rest::stream_message;
        "/a2a/agents/{recipient}/tasks" => GET rest::list_tasks;
        "/a2a/agents/{recipient}/tasks/{id}:cancel" => POST rest::cancel_task;
        "/a2a/agents/{recipient}/tasks/{id}:subscribe" => GET rest::subscribe, POST rest::subscribe;
        "/a2a/agents/{recipient}/tasks/{id}/pushNotificationConfigs" =>
            GET rest::no_push, POST rest::no_push;
        "/a2a/agents/{recipient}/tasks/{id}/pushNotificationConfigs/{config}" =>
            GET rest::no_push, DELETE rest::no_push;
        "/a2a/agents/{recipient}/tasks/{id}" => GET rest::get_task;
    );
}

/// The agent a path names. A path segment that is not an AgentId names no agent (404).
fn recipient(req: &HttpRequest) -> Result<AgentId, MailboxError> {
    let raw = req.match_info().get("recipient").unwrap_or_default();
    AgentId::parse(raw).map_err(|e| {
        MailboxError::new(
            ErrorCode::NotFound,
            format!("no A2A agent at this path: {raw:?} is not an agent id ({e})"),
        )
    })
}

/// The `A2A-Version` rule: `1.0` or `1.0.x`; a missing header means 0.3, which, like any other
/// version, is not supported.
fn check_version(req: &HttpRequest) -> Result<(), A2aError> {
    let given = req
        .headers()
        .get("A2A-Version")
        .map(|v| v.to_str().unwrap_or("?").trim().to_owned());
    let supported = given.as_deref().is_some_and(|v| {
        v == "1.0"
            || v.strip_prefix("1.0.")
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    });
    if supported {
        return Ok(());
    }
    let named = given.unwrap_or_else(|| "0.3 (no A2A-Version header)".into());
    Err(A2aError::new(
        Kind::VersionNotSupported,
        format!("A2A version {named} is not supported: send A2A-Version: 1.0"),
    ))
}

/// The `Idempotency-Key` header, SendMessage's A2A key (docs/contract.md#a2a).
fn key_header(req: &HttpRequest) -> Result<Option<String>, A2aError> {
    match req.headers().get("Idempotency-Key") {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_owned()))
            .map_err(|_| A2aError::params("the Idempotency-Key header must be visible ASCII")),
    }
}
