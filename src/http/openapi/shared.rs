//! What the document's parts share: the status of an error code, where the document and the
//! docs are served, which routes are public or static, and the `Idempotency-Key` rule.

use crate::error::ErrorCode;

/// The HTTP status of an error code (the one table is `src/http/error.rs`'s).
pub type Status = fn(ErrorCode) -> u16;

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Where the interactive docs are served (`/docs` redirects to `/docs/`).
pub const DOCS_PATH: &str = "/docs";

/// Routes that need no bearer token (docs/contract.md#conventions).
pub const PUBLIC_PATHS: [&str; 7] = [
    "/healthz",
    "/readyz",
    "/version",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/docs/",
];

/// Routes that never touch the database, so they cannot answer 500/503.
pub(crate) const STATIC_PATHS: [&str; 5] =
    ["/healthz", "/version", "/openapi.json", "/docs", "/docs/"];

/// The `Idempotency-Key` header accepts 1..=255 visible ASCII characters, at least one of them
/// not a space (a blank key is refused).
pub const IDEMPOTENCY_KEY_PATTERN: &str = r"^[\t\x20-\x7E]*[\x21-\x7E][\t\x20-\x7E]*$";
/// The longest accepted `Idempotency-Key` (the mailbox's `MAX_KEY_LEN`; a unit test holds them equal).
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 255;
