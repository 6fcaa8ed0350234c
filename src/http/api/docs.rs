//! The document's routes: the OpenAPI 3.1 document (`GET /openapi.json`) and the interactive
//! docs (`GET /docs`).

use actix_web::{web, HttpResponse};
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::http::openapi;
use crate::http::respond::api_routes;

api_routes! {
    tag = "system", served_elsewhere = [docs_index];
    openapi_json;
    docs;
}

/// The document `GET /openapi.json` serves, as JSON: made of every table, this one's among them,
/// so it is handed to this module's routes (`super::configure` registers it) rather than made here.
pub(super) struct Document(pub &'static str);

/// Serves the Swagger UI's pages (the routes of the table are served with every other table's).
pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg
        // The Swagger UI answers GET; any other method on its pages is a 405 like everywhere.
        .service(
            web::resource("/docs/{_:.*}")
                .guard(actix_web::guard::Not(actix_web::guard::Get()))
                .to(|| async {
                    Ok::<HttpResponse, crate::error::MailboxError>(
                        crate::http::error::method_not_allowed("GET"),
                    )
                }),
        )
        .service(
            SwaggerUi::new("/docs/{_:.*}").config(
                Config::new([openapi::OPENAPI_PATH])
                    // No badge: it would ask a public validator about the document.
                    .validator_url("none")
                    .persist_authorization(true)
                    .display_request_duration(true)
                    .filter(true)
                    .try_it_out_enabled(true),
            ),
        );
}

/// The OpenAPI 3.1 document of this service.
#[utoipa::path(
    get,
    path = "/openapi.json",
    responses(
        (status = 200, description = "This document.", content_type = "application/json", body = Object),
    )
)]
async fn openapi_json(document: web::Data<Document>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document.0)
}

/// The interactive docs live at `/docs/`.
#[utoipa::path(
    get,
    path = "/docs",
    responses(
        (status = 301, description = "Redirect to `/docs/`.",
            headers(("Location" = String, description = "`/docs/`"))),
    )
)]
async fn docs() -> HttpResponse {
    HttpResponse::MovedPermanently()
        .insert_header((actix_web::http::header::LOCATION, "/docs/"))
        .finish()
}

/// The interactive docs (Swagger UI, served from the binary: no network access needed).
#[utoipa::path(
    get,
    path = "/docs/",
    responses(
        (status = 200, description = "The Swagger UI page.", content_type = "text/html", body = String),
    )
)]
#[allow(dead_code)] // documents the page that `SwaggerUi` serves
async fn docs_index() {}
