//! The agent card of a recipient: public, cacheable, and naming the two bindings by absolute URL.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use super::request::recipient;
use super::wire::SKILL_NAME;
use crate::error::MailboxError;
use crate::http::state::{AppState, State};

/// The base of the cards' absolute URLs: `A2A_MAILBOX_PUBLIC_URL`, else `http://` and the first
/// TCP address the service listens on.
fn public_base(state: &AppState) -> String {
    if let Some(url) = &state.a2a.public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let tcp = state
        .transports
        .get()
        .and_then(|t| t.iter().find_map(|b| b.strip_prefix("tcp:")))
        .unwrap_or("localhost");
    format!("http://{tcp}")
}

pub async fn card(state: State, req: HttpRequest) -> Result<HttpResponse, MailboxError> {
    let recipient = recipient(&req)?;
    let base = format!("{}/a2a/agents/{recipient}", public_base(&state));
    let card = json!({
        "name": recipient,
        "description": format!(
            "Tasks for {recipient}, held by a2a-mailbox: durable, leased to one worker at a \
             time, never silently redelivered, and idempotent per message."
        ),
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": format!("{base}/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{
            "id": "mailbox-task",
            "name": SKILL_NAME,
            "description": format!(
                "Queue a task for {recipient}; poll GetTask until it is completed, failed or canceled."
            ),
            "tags": ["mailbox", "task"],
        }],
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT",
                "description": "The same JWT as the mailbox's native API."}},
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    });
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "max-age=300"))
        .json(card))
}
