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
mod request;
mod rest;
pub(crate) mod settings;
mod stream;
mod wire;

use actix_web::web;

use super::respond::routes;

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
