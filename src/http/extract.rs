//! Extractors: the authenticated [`Caller`] and the contract's answers to malformed input.

use std::future::{ready, Ready};

use futures_util::future::{Either, LocalBoxFuture};

use actix_web::error::{
    JsonPayloadError, PathError, PayloadError, QueryPayloadError, UrlencodedError,
};
use actix_web::{dev::Payload, mime, web, FromRequest, HttpMessage, HttpRequest};
use serde_json::Value;

use super::state::{AppState, State};
use crate::auth::{refused, AuthReason, Caller, Refused, Verifier};
use crate::domain::free_form::{DEFAULT_MAX_JSON_DEPTH, ENVELOPE_DEPTH};
use crate::error::{ErrorCode, MailboxError};

/// An answer given late (a refused token past its address's budget).
pub type Late<T> = LocalBoxFuture<'static, Result<T, MailboxError>>;

impl FromRequest for Caller {
    type Error = MailboxError;
    type Future = CallerFuture;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        caller_of(req, |state| &state.verifier)
    }
}

/// The caller of a request, now or late.
pub type CallerFuture = Either<Ready<Result<Caller, MailboxError>>, Late<Caller>>;

/// The caller of a request, its token verified by the verifier `pick` chooses. A token that
/// names a key the identity provider's set lacks is answered once the set was fetched again
/// (`auth/jwks.rs`). A refused token is counted in memory and audited at most once per client
/// address and minute (docs/contract.md#audit): it costs no database write of its own; past the
/// address's budget it is answered late (`auth_failures`).
pub fn caller_of(req: &HttpRequest, pick: fn(&AppState) -> &Verifier) -> CallerFuture {
    let Some(state) = req.app_data::<State>() else {
        return Either::Left(ready(Err(MailboxError::internal(
            "application state missing",
        ))));
    };
    let refuse =
        |(reason, e): Refused| match state.mailbox.auth_failed(&client_address(req), reason) {
            None => Either::Left(ready(Err(e))),
            Some(late) => Either::Right(Box::pin(async move {
                tokio::time::sleep(late).await;
                Err(e)
            }) as Late<Caller>),
        };
    let token = match bearer(req) {
        Ok(token) => token,
        Err(refusal) => return refuse(refusal),
    };
    let verifier = pick(state);
    match verifier.verify(token) {
        Ok(caller) => Either::Left(ready(Ok(caller))),
        Err(refusal) if verifier.may_fetch(&refusal) => {
            let (state, token, address) = (state.clone(), token.to_owned(), client_address(req));
            Either::Right(Box::pin(async move {
                match pick(&state).verify_fetching(&token).await {
                    Ok((caller, _)) => Ok(caller),
                    Err((reason, e)) => {
                        if let Some(late) = state.mailbox.auth_failed(&address, reason) {
                            tokio::time::sleep(late).await;
                        }
                        Err(e)
                    }
                }
            }))
        }
        Err(refusal) => refuse(refusal),
    }
}

/// The client's address as the audit of refused tokens names it: the peer's IP, or `unix`.
pub(crate) fn client_address(req: &HttpRequest) -> String {
    req.peer_addr().map_or_else(
        || crate::mailbox::auth_failures::UNIX.to_owned(),
        |a| a.ip().to_string(),
    )
}

/// The bearer token of a request.
fn bearer(req: &HttpRequest) -> Result<&str, Refused> {
    let header = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .ok_or_else(|| refused(AuthReason::Missing, "missing Authorization: Bearer <token>"))?;
    header
        .to_str()
        .ok()
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            refused(
                AuthReason::Malformed,
                "the Authorization header must be Bearer <token>",
            )
        })
}

/// JSON bodies: size limit, content type and syntax errors in the contract's shape.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .error_handler(move |err, _req| {
            let e = match &err {
                JsonPayloadError::OverflowKnownLength { .. }
                | JsonPayloadError::Overflow { .. } => too_large(limit),
                JsonPayloadError::ContentType => not_json(),
                other => MailboxError::invalid(format!("malformed JSON body: {other}")),
            };
            e.into()
        })
}

/// Form bodies (the dashboard's): size limit, content type and syntax errors in the contract's
/// shape, as for JSON bodies.
pub fn form_config(limit: usize) -> web::FormConfig {
    web::FormConfig::default()
        .limit(limit)
        .error_handler(move |err, _req| {
            let e = match &err {
                UrlencodedError::Overflow { .. } => too_large(limit),
                UrlencodedError::ContentType => MailboxError::new(
                    ErrorCode::UnsupportedMediaType,
                    "the request body must be application/x-www-form-urlencoded",
                ),
                other => MailboxError::invalid(format!("malformed form body: {other}")),
            };
            e.into()
        })
}

fn too_large(limit: usize) -> MailboxError {
    MailboxError::new(
        ErrorCode::PayloadTooLarge,
        format!("the request body is larger than {limit} bytes"),
    )
}

fn not_json() -> MailboxError {
    MailboxError::new(
        ErrorCode::UnsupportedMediaType,
        "the request body must be application/json",
    )
}

/// The routes whose bodies hold many items, and so take up to the batch limit.
pub const BATCH_ROUTES: [&str; 3] = [
    "/a2a/tasks/batch",
    "/a2a/results/batch",
    "/a2a/tasks/heartbeat",
];

/// The largest body `req`'s route takes.
pub fn body_limit(req: &HttpRequest, state: &State) -> usize {
    // The batch routes have no templated segment: their path is their pattern.
    if BATCH_ROUTES.contains(&req.path()) {
        state.batch_body_bytes
    } else {
        state.max_body_bytes
    }
}

/// A JSON body as bytes (`None` when the body is empty), after the checks every JSON body gets:
/// the size limit and the media type (`application/json` or any `+json`). Its syntax is left to
/// the handler ([`JsonBytes::parse`]).
pub struct JsonBytes {
    pub bytes: Option<web::Bytes>,
    /// The deepest body [`JsonBytes::parse`] reads: the nesting limit of free-form values plus
    /// the envelope's allowance.
    max_depth: usize,
}

impl JsonBytes {
    /// The body as JSON (`None` when it is empty), as [`parse_json`] reads it.
    pub fn parse(&self) -> Option<Result<Value, BodyFault>> {
        self.bytes.as_deref().map(|b| parse_json(b, self.max_depth))
    }
}

impl FromRequest for JsonBytes {
    type Error = MailboxError;
    type Future = LocalBoxFuture<'static, Result<JsonBytes, MailboxError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = req.app_data::<State>();
        let limit = state.map_or(usize::MAX, |s| body_limit(req, s));
        let max_depth = state
            .map_or(DEFAULT_MAX_JSON_DEPTH, |s| s.mailbox.cfg.max_json_depth)
            .saturating_add(ENVELOPE_DEPTH);
        let json = req
            .mime_type()
            .ok()
            .flatten()
            .is_some_and(|m| m.subtype() == mime::JSON || m.suffix() == Some(mime::JSON));
        let declared = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Box::pin(ready(Err(too_large(limit))));
        }
        let bytes = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            let bytes = bytes
                .await
                .map_err(|e| match e.as_error::<PayloadError>() {
                    Some(PayloadError::Overflow) => too_large(limit),
                    _ => MailboxError::invalid(format!("unreadable request body: {e}")),
                })?;
            // Read up to the largest limit of any route (the batch routes'): this route's own.
            if bytes.len() > limit {
                return Err(too_large(limit));
            }
            if bytes.is_empty() {
                return Ok(JsonBytes {
                    bytes: None,
                    max_depth,
                });
            }
            if !json {
                return Err(not_json());
            }
            Ok(JsonBytes {
                bytes: Some(bytes),
                max_depth,
            })
        })
    }
}

/// Why a JSON body is refused before any handler reads it.
pub enum BodyFault {
    /// Not a JSON document (the parser's complaint).
    Malformed(String),
    /// A string of the document (a key or a value) holds the NUL character; the document as
    /// parsed, for an answer that echoes part of it (a JSON-RPC `id`).
    Nul(Value),
    /// The document nests objects and arrays deeper than any request may (what to say).
    TooDeep(String),
}

/// Parses a JSON body: the one place every JSON body is read, on every surface. A body nested
/// more than `max_depth` deep is refused before it is parsed (a scan of its brackets, without
/// recursion: no body can exhaust the stack). It refuses a NUL character (U+0000) in any string
/// of the document, which no value may hold (PostgreSQL refuses it in text; SQLite would store
/// it), before anything is written.
pub fn parse_json(bytes: &[u8], max_depth: usize) -> Result<Value, BodyFault> {
    if !brackets_within(bytes, max_depth) {
        return Err(BodyFault::TooDeep(format!(
            "the body nests objects and arrays more than {max_depth} levels deep; a free-form \
             value may nest at most {} (A2A_MAILBOX_MAX_JSON_DEPTH)",
            max_depth.saturating_sub(ENVELOPE_DEPTH)
        )));
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| BodyFault::Malformed(e.to_string()))?;
    // JSON text can only write a NUL as the escape `\u0000`: a body without it is not walked.
    let escaped = bytes.windows(6).any(|w| w == b"\\u0000");
    if escaped && holds_nul(&value) {
        return Err(BodyFault::Nul(value));
    }
    Ok(value)
}

/// Whether the brackets of JSON text (`[` and `{` outside strings) nest at most `max` deep.
/// Reads any bytes, JSON or not, in one pass.
fn brackets_within(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth = depth.saturating_add(1);
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// Whether a string anywhere in `v` (object keys included) holds NUL.
fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// What a refusal of a NUL says, wherever it was found (a query, a path, a body).
pub const NUL_REFUSED: &str =
    "the request holds the NUL character (U+0000), which no value may contain";

impl From<BodyFault> for MailboxError {
    fn from(fault: BodyFault) -> MailboxError {
        match fault {
            BodyFault::Malformed(e) => MailboxError::invalid(format!("malformed JSON body: {e}")),
            BodyFault::Nul(_) => MailboxError::invalid(NUL_REFUSED),
            BodyFault::TooDeep(why) => MailboxError::invalid(why),
        }
    }
}

/// A JSON body that may be left out: an empty body is `None`; anything else must be JSON
/// (`application/json`, within the size limit), with the same answers as every JSON body.
pub struct OptionalJson(pub Option<Value>);

impl FromRequest for OptionalJson {
    type Error = MailboxError;
    type Future = LocalBoxFuture<'static, Result<OptionalJson, MailboxError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = JsonBytes::from_request(req, payload);
        Box::pin(async move { Ok(OptionalJson(bytes.await?.parse().transpose()?)) })
    }
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let msg = match &err {
            QueryPayloadError::Deserialize(e) => format!("bad query parameter: {e}"),
            other => format!("bad query string: {other}"),
        };
        MailboxError::invalid(msg).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, _req| {
        MailboxError::invalid(format!("bad path parameter: {err}")).into()
    })
}
