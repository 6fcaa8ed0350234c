//! What every binding reads from a request before its method: the agent its path names, its
//! `A2A-Version` and its `Idempotency-Key`.

use actix_web::HttpRequest;

use super::errors::{A2aError, Kind};
use crate::domain::AgentId;
use crate::error::{ErrorCode, MailboxError};

/// The agent a path names. A path segment that is not an AgentId names no agent (404).
pub(super) fn recipient(req: &HttpRequest) -> Result<AgentId, MailboxError> {
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
pub(super) fn check_version(req: &HttpRequest) -> Result<(), A2aError> {
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
pub(super) fn key_header(req: &HttpRequest) -> Result<Option<String>, A2aError> {
    match req.headers().get("Idempotency-Key") {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_owned()))
            .map_err(|_| A2aError::params("the Idempotency-Key header must be visible ASCII")),
    }
}
