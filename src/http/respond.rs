//! Answering: one path served by one method, a write's 201/200 with the replay header, the
//! contract's 404 for unknown paths, and the latency of every request.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::State;
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::Done;

/// One path served by its methods; any other method answers 405 `method_not_allowed` with
/// `Allow` naming them.
pub(crate) fn endpoint(
    path: &str,
    routes: Vec<(&'static str, actix_web::Route)>,
) -> actix_web::Resource {
    let allow: Arc<str> = routes
        .iter()
        .map(|(m, _)| *m)
        .collect::<Vec<_>>()
        .join(", ")
        .into();
    let mut resource = web::resource(path);
    for (_, route) in routes {
        resource = resource.route(route);
    }
    resource.default_service(web::to(move || {
        let allow = allow.clone();
        async move { Ok::<HttpResponse, MailboxError>(super::error::method_not_allowed(&allow)) }
    }))
}

/// `routes!(cfg; "/path" => GET handler, POST other; "/next" => GET third)` registers each
/// path with its methods through [`endpoint`].
macro_rules! routes {
    ($cfg:expr; $($path:literal => $($method:ident $handler:expr),+);+ $(;)?) => {
        $cfg$(.service($crate::http::respond::endpoint(
            $path,
            vec![$((
                stringify!($method),
                actix_web::web::method(actix_web::http::Method::$method).to($handler),
            )),+],
        )))+
    };
}
pub(crate) use routes;

/// `api_routes! { "/path" => GET handler, POST other; ... }`: a resource module's one table of
/// its documented routes. It defines the module's `configure`, which registers them through
/// [`routes!`], and its `Paths`, which lists their handlers for the OpenAPI document, so that
/// a route is never served undocumented or documented unserved.
macro_rules! api_routes {
    ($($path:literal => $($method:ident $($seg:ident)::+),+);+ $(;)?) => {
        /// This module's operations in the OpenAPI document.
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($($($seg)::+),+),+))]
        pub(super) struct Paths;

        /// Registers this module's routes.
        pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
            $crate::http::respond::routes!(cfg; $($path => $($method $($seg)::+),+);+);
        }
    };
}
pub(crate) use api_routes;

/// What a handler answers: a response, or the error whose body the contract gives.
pub(crate) type Answer = Result<HttpResponse, MailboxError>;

/// A write's answer: 201 when it created something (a task, a result), else 200, with
/// `Idempotent-Replayed: true` when it replays an earlier answer.
pub(crate) fn answer<T, B: serde::Serialize>(done: &Done<T>, body: B) -> HttpResponse {
    let mut res = HttpResponse::build(if done.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    });
    if done.replayed {
        res.insert_header(("Idempotent-Replayed", "true"));
    }
    res.json(body)
}

/// Every unmatched path answers the contract's error shape.
pub async fn not_found_route(req: HttpRequest) -> Result<HttpResponse, MailboxError> {
    Err(MailboxError::new(
        ErrorCode::NotFound,
        format!("no route {} {}", req.method(), req.path()),
    ))
}

/// Records request latency per route pattern.
pub async fn observe_latency(
    req: ServiceRequest,
    next: actix_web::middleware::Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let start = Instant::now();
    let state = req.app_data::<State>().cloned();
    let method = req.method().to_string();
    let res = next.call(req).await?;
    if let Some(state) = state {
        let route = res
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned());
        state.mailbox.metrics.observe(
            &method,
            &route,
            res.status().as_u16(),
            start.elapsed().as_secs_f64(),
        );
    }
    Ok(res)
}
