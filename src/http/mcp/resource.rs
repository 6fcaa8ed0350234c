//! The MCP endpoint as an OAuth 2.1 resource server (docs/mcp.md#signing-in-with-oauth), opt-in with
//! `A2A_MAILBOX_MCP_RESOURCE`: its protected-resource metadata (RFC 9728), a 401 that points at
//! it, and a caller whose token was issued for this resource (RFC 8707).

use std::fmt;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};
use futures_util::future::LocalBoxFuture;
use serde_json::json;

use crate::auth::Caller;
use crate::error::{ErrorCode, MailboxError};
use crate::http::extract::caller_of;
use crate::http::state::{AppState, State};

/// `GET /.well-known/oauth-protected-resource/mcp`: the resource, the authorization servers
/// that issue tokens for it, and how to send them. 404 when the resource is not configured.
pub async fn metadata(state: State) -> Result<HttpResponse, MailboxError> {
    let Some(mcp) = &state.mcp_resource else {
        return Err(MailboxError::new(
            ErrorCode::NotFound,
            "the MCP endpoint is not an OAuth resource server here (A2A_MAILBOX_MCP_RESOURCE is \
             not set)",
        ));
    };
    let s = &mcp.settings;
    Ok(HttpResponse::Ok().json(json!({
        "resource": s.resource,
        "authorization_servers": s.authorization_servers,
        "scopes_supported": s.scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "a2a-mailbox MCP server",
    })))
}

/// The caller of a request to `/mcp`: with a resource configured, its token must have been
/// issued for it (`aud`), and a refusal says where the resource's metadata is.
pub struct McpCaller(pub Caller);

impl FromRequest for McpCaller {
    type Error = McpRefusal;
    type Future = LocalBoxFuture<'static, Result<McpCaller, McpRefusal>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let metadata_url = req
            .app_data::<State>()
            .and_then(|s| s.mcp_resource.as_ref())
            .map(|m| m.settings.metadata_url.clone());
        let caller = caller_of(req, verifier);
        Box::pin(async move {
            caller.await.map(McpCaller).map_err(|error| McpRefusal {
                error,
                metadata_url,
            })
        })
    }
}

fn verifier(state: &AppState) -> &crate::auth::Verifier {
    state
        .mcp_resource
        .as_ref()
        .map_or(&state.verifier, |m| &m.verifier)
}

/// A refused MCP caller: the native refusal, whose 401 names the resource's metadata.
#[derive(Debug)]
pub struct McpRefusal {
    error: MailboxError,
    metadata_url: Option<String>,
}

impl fmt::Display for McpRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl ResponseError for McpRefusal {
    fn status_code(&self) -> StatusCode {
        self.error.status_code()
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = self.error.error_response();
        if self.error.code == ErrorCode::Unauthenticated {
            let challenge = self
                .metadata_url
                .as_ref()
                .map(|url| format!("Bearer resource_metadata=\"{url}\""))
                .and_then(|v| HeaderValue::from_str(&v).ok());
            if let Some(challenge) = challenge {
                res.headers_mut().insert(WWW_AUTHENTICATE, challenge);
            }
        }
        res
    }
}
