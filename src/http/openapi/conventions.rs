//! The rules every operation shares, applied to the generated document so that no operation can
//! forget them: the bearer scheme and its 401 on authenticated routes, the `Idempotency-Key`
//! request header with its 409/422 answers and the `Idempotent-Replayed` / `Retry-After` response
//! headers on every POST, 413/415 on JSON bodies, 500/503 on everything that reads the database,
//! and an example body for every error code a response lists.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::SchemaType;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, Object, ObjectBuilder, RefOr, Required, Response,
    ResponseBuilder, Schema, Type,
};
use utoipa::Modify;

use super::shared::{IDEMPOTENCY_KEY_MAX_LEN, IDEMPOTENCY_KEY_PATTERN, PUBLIC_PATHS, STATIC_PATHS};
use crate::error::ErrorCode;

pub(super) struct Conventions;

/// Text without the NUL character.
const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";

fn string_schema() -> Object {
    ObjectBuilder::new().schema_type(Type::String).build()
}

fn error_body_ref() -> RefOr<Schema> {
    RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ErrorBody"))
}

/// The error codes a response description names (as `` `code` ``), in order of appearance.
pub fn codes_named_in(description: &str) -> Vec<ErrorCode> {
    let mut out = Vec::new();
    for (i, part) in description.split('`').enumerate() {
        if i % 2 == 1 {
            if let Some(code) = ErrorCode::ALL.iter().find(|c| c.as_str() == part) {
                if !out.contains(code) {
                    out.push(*code);
                }
            }
        }
    }
    out
}

pub(crate) fn example_message(code: ErrorCode) -> &'static str {
    use ErrorCode::*;
    match code {
        InvalidRequest => "invalid task: missing field `intent_text`",
        Unauthenticated => "missing Authorization: Bearer <token>",
        SenderMismatch => {
            "the task's sender \"research@acme\" is not the token subject \"intruder\""
        }
        CapabilityMissing => "the token lacks the capability a2a.send.billing@acme",
        CapabilityScopeMismatch => {
            "the token grants a2a.send.billing@acme, but its scope does not admit this request"
        }
        NotLessee => "the caller does not hold the lease of this task",
        NotFound => "no task is visible to the caller with this id",
        UnknownTask => "no task is visible to the caller with this id",
        TaskIdConflict => "task id is already used by a different task",
        NotInFlight => "the task is queued, not leased",
        LeaseMismatch => "the lease is not the current lease of the task",
        ResultConflict => "the task was already answered with a different result",
        IdempotencyInFlight => {
            "the first request with this Idempotency-Key is still running; retry later"
        }
        NotCancelable => "the task is already answered; there is nothing to cancel",
        TaskCanceled => "the task was canceled by its sender; stop working on it",
        DuplicateRiskMismatch => {
            "the task did not declare itself idempotent with a key: requeue it with \
             duplicate_risk operator_accepted if you accept that it may run twice"
        }
        PayloadTooLarge => "the request body is larger than 1048576 bytes",
        HeadersTooLarge => {
            "the request's headers are too large: at most 96 header lines and 128 KiB in all"
        }
        RequestTimeout => "the request's headers did not arrive in time; send them at once",
        UnsupportedMediaType => "the request body must be application/json",
        IdempotencyKeyReused => "this Idempotency-Key was already used for a different request",
        MethodNotAllowed => "this path answers POST only",
        TooManyWaiting => {
            "worker-7 already has 1000 waiting requests on this instance, its limit; retry in a \
             second or wait in fewer requests"
        }
        Overloaded => {
            "this instance already holds 50000 waiting requests, its limit; retry in a second"
        }
        StorageUnavailable => "the database is unreachable or busy; retry later",
        Internal => "internal error",
    }
}

pub(crate) fn error_example(code: ErrorCode) -> Value {
    let body = a2a_mailbox_types::ErrorBody {
        kind: a2a_mailbox_types::answers::ErrorKind::Tag,
        code,
        message: example_message(code).to_owned(),
        retriable: code.retriable(),
        index: None,
    };
    serde_json::to_value(body).expect("an error body serialises")
}

pub(super) fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(error_body_ref())).build(),
        )
        .build()
}

/// The operation's response for `status`; an error response with `description` when it
/// documents none.
fn documented<'r>(
    responses: &'r mut BTreeMap<String, RefOr<Response>>,
    status: &str,
    description: &str,
) -> &'r mut RefOr<Response> {
    responses
        .entry(status.into())
        .or_insert_with(|| RefOr::T(error_response(description)))
}

fn header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(string_schema())
        .description(Some(description))
        .build()
}

const REPLAYED_HEADER: &str = "Idempotent-Replayed";
const REPLAYED_DESCRIPTION: &str = "`true` when this answer is a replay: the stored answer of an \
earlier request with the same `Idempotency-Key` (any status it had), or of the same task id / \
result posted again. Absent otherwise.";
const STORAGE_UNAVAILABLE: &str = "`storage_unavailable`: the database is unreachable or busy \
past its timeout; `retriable: true`, with `Retry-After` (seconds).";
const REQUEST_ID: &str = "The request's id, as the service's log lines name it.";
const RETRY_AFTER_DESCRIPTION: &str = "Seconds to wait before retrying; sent with \
`idempotency_in_flight`, `too_many_waiting`, `overloaded` and `storage_unavailable`.";

impl Conventions {
    fn apply(&self, path: &str, method: &str, op: &mut Operation) {
        let public = PUBLIC_PATHS.contains(&path);
        let touches_db = !STATIC_PATHS.contains(&path);
        let post = method == "post";
        let json_body = op
            .request_body
            .as_ref()
            .is_some_and(|b| b.content.contains_key("application/json"));
        // A long-poll: parked while it waits, within the instance's limits on waiting requests.
        let waits = op
            .parameters
            .as_ref()
            .is_some_and(|ps| ps.iter().any(|p| p.name == "wait_ms"));
        let responses = &mut op.responses.responses;

        if !public {
            op.security = Some(vec![SecurityRequirement::new(
                "bearer",
                Vec::<String>::new(),
            )]);
            let unauthenticated = documented(
                responses,
                "401",
                "`unauthenticated`: the bearer token is missing, malformed, expired, not yet \
                 valid, signed with another key or algorithm, or has the wrong audience or issuer; \
                 the message says which, in words.",
            );
            if let RefOr::T(r) = unauthenticated {
                r.headers.insert(
                    "WWW-Authenticate".into(),
                    header("`Bearer`: the scheme the token must come in (RFC 6750)."),
                );
            }
        }
        // No query value may hold a NUL (`src/http/serve/nul_guard.rs` refuses it with 400): every
        // free-text query parameter says so.
        for param in op.parameters.iter_mut().flatten() {
            if let (ParameterIn::Query, Some(RefOr::T(Schema::Object(o)))) =
                (&param.parameter_in, param.schema.as_mut())
            {
                let text = o.schema_type == SchemaType::Type(Type::String);
                if text && o.pattern.is_none() && o.format.is_none() {
                    o.pattern = Some(NO_NUL_PATTERN.to_owned());
                }
            }
        }
        if post {
            let params = op.parameters.get_or_insert_with(Vec::new);
            params.push(
                ParameterBuilder::new()
                    .name("Idempotency-Key")
                    .parameter_in(ParameterIn::Header)
                    .required(Required::False)
                    .description(Some(
                        "Makes the POST safe to retry (IETF httpapi draft semantics). Per caller: \
                         the same key with the same request answers the stored response (with \
                         `Idempotent-Replayed: true`); with another request → 422 \
                         `idempotency_key_reused`; while the first request still runs → 409 \
                         `idempotency_in_flight` with `Retry-After`. Kept 24 h by default. \
                         1..=255 visible ASCII characters, not blank (else 400 `invalid_request`).",
                    ))
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .min_length(Some(1))
                            .max_length(Some(IDEMPOTENCY_KEY_MAX_LEN))
                            .pattern(Some(IDEMPOTENCY_KEY_PATTERN))
                            .examples([json!("7c1e9f0a-order-1234-refund")]),
                    ))
                    .build(),
            );
            let conflict = documented(
                responses,
                "409",
                "`idempotency_in_flight`: the first request with this `Idempotency-Key` is \
                 still running; retry after `Retry-After` seconds.",
            );
            if let RefOr::T(r) = conflict {
                if !r.description.contains("`idempotency_in_flight`") {
                    r.description.push_str(
                        "\n\n`idempotency_in_flight`: the first request with this \
                         `Idempotency-Key` is still running; retry after `Retry-After` seconds.",
                    );
                }
                r.headers
                    .insert("Retry-After".into(), header(RETRY_AFTER_DESCRIPTION));
            }
            documented(
                responses,
                "422",
                "`idempotency_key_reused`: this `Idempotency-Key` was already used by the \
                 caller for a different request.",
            );
        }
        if waits {
            let overloaded = format!(
                "{STORAGE_UNAVAILABLE}\n\n`overloaded`: with `wait_ms` above 0, this instance \
                 already parks as many requests as it may (`A2A_MAILBOX_MAX_WAITING`, default \
                 50000); nothing was leased or drained; `retriable: true`, retry after `Retry-After` \
                 seconds."
            );
            let too_many = "`too_many_waiting`: with `wait_ms` above 0, the caller already has as \
                many requests parked on this instance as it may \
                (`A2A_MAILBOX_MAX_WAITING_PER_CALLER`, default 1000); nothing was leased or \
                drained; `retriable: true`, retry after `Retry-After` seconds.";
            for (status, description) in [("429", too_many), ("503", overloaded.as_str())] {
                if let RefOr::T(r) = documented(responses, status, description) {
                    r.headers
                        .insert("Retry-After".into(), header(RETRY_AFTER_DESCRIPTION));
                }
            }
        }
        documented(
            responses,
            "405",
            "`method_not_allowed`: this path was called with another HTTP method than the \
             documented one; the `Allow` header names the method it answers.",
        );
        documented(
            responses,
            "408",
            "`request_timeout`: the request's headers did not arrive within 5 seconds; the \
             connection is closed.",
        );
        documented(
            responses,
            "431",
            "`headers_too_large`: the request's headers are past the server's limits (more \
             than 96 header lines, or 128 KiB in all); the connection is closed.",
        );
        if json_body {
            documented(
                responses,
                "413",
                "`payload_too_large`: the body is larger than the configured limit (1 MiB by default).",
            );
            documented(
                responses,
                "415",
                "`unsupported_media_type`: the body is not `application/json`.",
            );
        }
        if touches_db {
            let internal = "`internal`: a bug (no detail in the body; `X-Request-Id` names it).";
            if let RefOr::T(r) = documented(responses, "500", internal) {
                r.headers.insert("X-Request-Id".into(), header(REQUEST_ID));
            }
            documented(responses, "503", STORAGE_UNAVAILABLE);
        }
        for (status, response) in responses.iter_mut() {
            let RefOr::T(response) = response else {
                continue;
            };
            // Every stored answer (success or refusal) may come back as a replay.
            let replayable = post
                && (status.starts_with('2')
                    || matches!(status.as_str(), "400" | "403" | "404" | "409" | "422"));
            if replayable {
                response
                    .headers
                    .insert(REPLAYED_HEADER.into(), header(REPLAYED_DESCRIPTION));
            }
            // Error responses: one example body per code the description names.
            let codes = codes_named_in(&response.description);
            if let Some(content) = response.content.get_mut("application/json") {
                let is_error = matches!(&content.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with("/ErrorBody"));
                if is_error && content.examples.is_empty() {
                    for code in codes {
                        content.examples.insert(
                            code.as_str().to_owned(),
                            RefOr::T(
                                utoipa::openapi::example::ExampleBuilder::new()
                                    .value(Some(error_example(code)))
                                    .build(),
                            ),
                        );
                    }
                }
            }
        }
    }
}

impl Modify for Conventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT (HS256 secret, RS256/ES256/EdDSA public key, or a JWKS key by `kid`). \
                         Claims: `sub` (the AgentId; another claim if configured), `exp`, optional \
                         `nbf`/`iat`, `aud`/`iss` (checked when configured), `caps` (action strings \
                         or `{\"action\", \"scope\"}`) and OAuth `scope`/`scp` names as actions. \
                         Mint one with `a2a-mailbox token --sub NAME --cap ACTION`.",
                    ))
                    .build(),
            ),
        );
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, op) in [
                ("get", &mut item.get),
                ("post", &mut item.post),
                ("put", &mut item.put),
                ("delete", &mut item.delete),
                ("patch", &mut item.patch),
            ] {
                if let Some(op) = op.as_mut() {
                    self.apply(path, method, op);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_in_descriptions() {
        assert_eq!(
            codes_named_in(
                "`task_id_conflict`: x; `idempotency_in_flight` and `nope` `Retry-After`"
            ),
            vec![ErrorCode::TaskIdConflict, ErrorCode::IdempotencyInFlight]
        );
    }

    #[test]
    fn error_codes_list_is_complete() {
        // Every code serialises to its `as_str` and appears once.
        for (i, c) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(serde_json::to_value(c).unwrap(), json!(c.as_str()));
            assert!(!ErrorCode::ALL[..i].contains(c));
        }
    }

    #[test]
    fn idempotency_key_bounds_match_the_server() {
        let ok =
            |k: &str| crate::mailbox::IdemRequest::new(k, "POST", "/a2a/tasks", &json!({})).is_ok();
        assert!(ok("k"));
        assert!(ok(&"k".repeat(IDEMPOTENCY_KEY_MAX_LEN)));
        assert!(!ok(&"k".repeat(IDEMPOTENCY_KEY_MAX_LEN + 1)));
        assert!(!ok(""));
        assert!(!ok(" \t "));
    }
}
