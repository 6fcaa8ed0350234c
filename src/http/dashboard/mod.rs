//! The operator dashboard at `/dashboard`: server-rendered pages over the mailbox's own
//! operations (no SQL of its own), signed in with an operator token kept in an HttpOnly cookie,
//! every change behind a CSRF token and the capability its API call needs, and audited as that
//! call is. Two embedded assets; a strict Content-Security-Policy.

mod assets;
mod audit;
mod layout;
mod leases;
mod overview;
mod retry;
mod session;
mod tasks;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use maud::html;

use crate::error::MailboxError;
use layout::outcome_page;
use session::Session;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/dashboard", web::get().to(overview::overview))
        .route("/dashboard/live", web::get().to(overview::live))
        .route("/dashboard/login", web::get().to(session::login_page))
        .route("/dashboard/login", web::post().to(session::sign_in))
        .route("/dashboard/logout", web::post().to(session::sign_out))
        .route(
            "/dashboard/logout-refused",
            web::post().to(session::sign_out_refused),
        )
        .route("/dashboard/leases", web::get().to(leases::list))
        .route("/dashboard/leases/act", web::post().to(leases::act))
        .route("/dashboard/retry", web::get().to(retry::preview))
        .route("/dashboard/retry", web::post().to(retry::run))
        .route("/dashboard/tasks", web::get().to(tasks::search))
        .route("/dashboard/tasks/{id}", web::get().to(tasks::task))
        .route(
            "/dashboard/tasks/{id}/cancel",
            web::post().to(tasks::cancel),
        )
        .route("/dashboard/audit", web::get().to(audit::feed))
        .route("/dashboard/assets/{name}", web::get().to(assets::asset));
}

/// A mailbox refusal or failure, as a page: its status, its code and what it says.
fn failure(s: &Session, e: &MailboxError, back: &str) -> HttpResponse {
    let status = crate::http::error::status(e.code);
    let body = html! { p.bad { code { (format!("{:?}", e.code)) } " " (leases::explain(e)) } };
    let title = if status == StatusCode::SERVICE_UNAVAILABLE {
        "The database is unavailable"
    } else {
        "Refused"
    };
    outcome_page(s, title, status, body, back)
}
