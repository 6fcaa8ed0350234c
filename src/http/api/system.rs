//! System routes: liveness, readiness, version and metrics. None needs a token.

use actix_web::HttpResponse;

use crate::domain::answers;
use crate::error::MailboxError;
use crate::http::openapi;
use crate::http::respond::api_routes;
use crate::http::state::State;

api_routes! {
    tag = "system";
    healthz;
    readyz;
    version;
    metrics;
}

/// Liveness: the process serves requests.
#[utoipa::path(get, path = "/healthz",
    responses(
        (status = 200, description = "The process serves requests.", body = answers::Health,
            example = openapi::example_health),
    )
)]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(answers::Health {
        kind: answers::HealthKind::Tag,
        status: answers::OkStatus::Ok,
    })
}

/// Readiness: the database answers and a write commits.
#[utoipa::path(get, path = "/readyz",
    responses(
        (status = 200,
            description = "The database answered and a write committed (a one-row write: a full \
                disk or a database that refuses writes answers 503). The check runs at most once \
                a second, however many callers ask: its outcome is answered until it is a second \
                old, and callers that arrive while it runs wait for it. So a fault shows, and its \
                end too, within about a second.",
            body = answers::Ready,
            example = openapi::example_ready),
    )
)]
async fn readyz(state: State) -> Result<HttpResponse, MailboxError> {
    state.mailbox.readiness().await?;
    Ok(HttpResponse::Ok().json(answers::Ready {
        kind: answers::ReadyKind::Tag,
        status: answers::OkStatus::Ok,
    }))
}

/// The service's name, version, storage engine and the transports it listens on.
#[utoipa::path(get, path = "/version",
    responses(
        (status = 200, description = "Name, version and storage engine.", body = answers::Version,
            example = openapi::example_version),
    )
)]
async fn version(state: State) -> HttpResponse {
    HttpResponse::Ok().json(answers::Version {
        kind: answers::VersionKind::Tag,
        name: env!("CARGO_PKG_NAME").to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        engine: state.mailbox.engine(),
        transports: state.transports.get().cloned().unwrap_or_default(),
    })
}

/// Prometheus metrics: queue depth per state, oldest queued age, oldest lease age, leases,
/// requeues, cache hits, request latency; on PostgreSQL also the group commit (batches run, and
/// by operation: batches that carried it, the requests they carried, requests waiting for the
/// next batch).
#[utoipa::path(get, path = "/metrics",
    responses(
        (status = 200, description = "Prometheus text exposition format 0.0.4.",
            content_type = "text/plain", body = String,
            example = "# TYPE a2a_queue_depth gauge\na2a_queue_depth{state=\"queued\"} 3\n"),
    )
)]
async fn metrics(state: State) -> Result<HttpResponse, MailboxError> {
    let gauges = state.mailbox.gauges().await?;
    let mut text = state.mailbox.metrics.render(&gauges);
    if let Some(jwks) = &state.verifier.keys().jwks {
        crate::metrics::render_jwks(&mut text, jwks.fetches());
    }
    if crate::telemetry::on() {
        crate::metrics::render_spans(&mut text, &crate::telemetry::TALLY);
    }
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(text))
}
