//! Answering: one path served by one method, a write's 201/200 with the replay header, the
//! contract's 404 for unknown paths, and the latency of every request.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::openapi::Part;
use super::state::State;
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

/// A resource module's one table: its documented operations, each with the refusals the
/// document lists for it, and the handlers that serve them. A route's method and path are its
/// handler's `#[utoipa::path]`, so a route is never served undocumented or documented unserved.
pub(crate) struct Table {
    pub part: Part,
    /// Each handler, by its operation id (its name).
    handlers: Vec<(&'static str, actix_web::Route)>,
}

impl Table {
    pub fn new(part: Part, handlers: Vec<(&'static str, actix_web::Route)>) -> Table {
        Table { part, handlers }
    }
}

/// Where each operation of `parts` is served: by operation id, its path and method.
pub(crate) type ServedAt = HashMap<String, (String, &'static str)>;

/// Reads [`ServedAt`] from the parts' documents.
pub(crate) fn served_at<'a>(parts: impl Iterator<Item = &'a Part>) -> ServedAt {
    let mut at = ServedAt::new();
    for part in parts {
        for (path, item) in (part.doc)().paths.paths {
            for (method, op) in [("GET", item.get), ("POST", item.post)] {
                if let Some(id) = op.and_then(|op| op.operation_id) {
                    at.insert(id, (path.clone(), method));
                }
            }
        }
    }
    at
}

/// Registers every table's routes where `at` says, a path with all its methods (fixed paths
/// before templated ones, each in the tables' order: the order paths are matched in).
// Runs once per worker at start-up, on the route tables the code declares (a test serves them
// all); no request reaches it.
#[allow(clippy::expect_used)]
pub(crate) fn serve(cfg: &mut web::ServiceConfig, tables: Vec<Table>, at: &ServedAt) {
    let mut paths: Vec<(&str, Vec<(&'static str, actix_web::Route)>)> = Vec::new();
    for (name, route) in tables.into_iter().flat_map(|t| t.handlers) {
        let (path, method) = at
            .get(name)
            .unwrap_or_else(|| panic!("{name} has no #[utoipa::path]"));
        let route = route.method(method.parse().expect("an HTTP method"));
        match paths.iter_mut().find(|(p, _)| p == path) {
            Some((_, routes)) => routes.push((method, route)),
            None => paths.push((path, vec![(method, route)])),
        }
    }
    // Fixed paths first, then the ones with `{…}` segments, each in the tables' order. A fixed
    // path is matched by comparing strings and a templated one by a regular expression, so every
    // request to a fixed path (the four of a task's life among them) would otherwise run the
    // expression of each templated path registered before it; and a fixed path such as
    // `/a2a/tasks/next` must win over a template that also matches it (`/a2a/tasks/{id}`).
    paths.sort_by_key(|(path, _)| path.contains('{'));
    for (path, routes) in paths {
        cfg.service(endpoint(path, routes));
    }
}

/// `api_routes! { tag = "tasks"; send_task => ["refusal", ...]; get_task => [...]; ... }`: a
/// resource module's [`Table`], as its `table()`: each handler, with the refusals the document
/// lists for it (one description per error status, naming the codes answered with it; see
/// [`Part`]), its operations filed under `tag`. `tag = "…", served_elsewhere = [handler, …];`
/// also documents operations the module serves by other means (a page of the Swagger UI).
macro_rules! api_routes {
    (tag = $tag:literal $(, served_elsewhere = [$($other:ident),+])?;
        $($handler:ident $(=> [$($refusal:literal),* $(,)?])?;)+) => {
        /// This module's operations in the OpenAPI document.
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($handler),+ $($(, $other)+)?))]
        struct Paths;

        /// This module's routes, with their part of the OpenAPI document.
        pub(super) fn table() -> $crate::http::respond::Table {
            let part = $crate::http::openapi::Part {
                tag: $tag,
                doc: <Paths as utoipa::OpenApi>::openapi,
                refusals: &[$((stringify!($handler), &[$($($refusal),*)?])),+],
            };
            let handlers = vec![$((stringify!($handler), actix_web::web::route().to($handler))),+];
            $crate::http::respond::Table::new(part, handlers)
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

#[cfg(test)]
mod tests {
    use actix_web::{test, web, App, HttpResponse};

    use super::*;

    fn no_operations() -> utoipa::openapi::OpenApi {
        utoipa::openapi::OpenApiBuilder::new().build()
    }

    /// A table of one handler that answers `body`.
    fn table(name: &'static str, body: &'static str) -> Table {
        let part = Part {
            tag: name,
            doc: no_operations,
            refusals: &[],
        };
        let route = web::route().to(move || async move { HttpResponse::Ok().body(body) });
        Table::new(part, vec![(name, route)])
    }

    #[actix_web::test]
    async fn a_fixed_path_wins_over_a_template_registered_before_it() {
        let at: ServedAt = [("by_id", ("/x/{id}", "GET")), ("next", ("/x/next", "GET"))]
            .into_iter()
            .map(|(name, (path, method))| (name.to_owned(), (path.to_owned(), method)))
            .collect();
        let app = test::init_service(App::new().configure(|cfg| {
            serve(
                cfg,
                vec![table("by_id", "template"), table("next", "fixed")],
                &at,
            )
        }))
        .await;
        for (path, served_by) in [("/x/next", "fixed"), ("/x/42", "template")] {
            let req = test::TestRequest::get().uri(path).to_request();
            let body = test::call_and_read_body(&app, req).await;
            assert_eq!(String::from_utf8_lossy(&body), served_by, "GET {path}");
        }
    }
}
