//! The operator dashboard at `/dashboard`: server-rendered pages over the mailbox's own
//! operations (no SQL of its own), signed in with an operator token kept in an HttpOnly cookie,
//! every change behind a CSRF token and the capability its API call needs, and audited as that
//! call is. Two embedded assets; a strict Content-Security-Policy.

mod act;
mod again;
mod assets;
mod audit;
mod chart;
mod events;
mod flash;
mod layout;
mod lease_rows;
mod leases;
mod overview;
mod retry;
mod search;
mod session;
mod tasks;
mod timeline;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::html;
use serde::de::DeserializeOwned;

use super::respond::routes;
use crate::error::MailboxError;
use layout::{outcome_page, Session};

pub fn configure(cfg: &mut web::ServiceConfig) {
    routes!(cfg;
        "/dashboard" => GET overview::overview;
        "/dashboard/live" => GET overview::live;
        "/dashboard/login" => GET session::login_page, POST session::sign_in;
        "/dashboard/logout" => POST session::sign_out;
        "/dashboard/logout-refused" => POST session::sign_out_refused;
        "/dashboard/leases" => GET leases::list;
        "/dashboard/leases/act" => POST act::act;
        "/dashboard/retry" => GET retry::preview, POST retry::run;
        "/dashboard/tasks" => GET search::search;
        "/dashboard/tasks/{id}" => GET tasks::task;
        "/dashboard/tasks/{id}/cancel" => POST tasks::cancel;
        "/dashboard/audit" => GET audit::feed;
        "/dashboard/done" => GET flash::done;
        "/dashboard/assets/{name}" => GET assets::asset;
    );
}

/// The page's query string as a `T`, or a page (400) that says which value it cannot read: an
/// address edited by hand gets a page and a way back, never the API's JSON.
fn read_query<T: DeserializeOwned>(
    s: &Session,
    req: &HttpRequest,
    back: &str,
) -> Result<T, Box<HttpResponse>> {
    web::Query::<T>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| {
            let why = e.to_string();
            let why = why.strip_prefix("Query deserialize error: ").unwrap_or(&why);
            let body = html! {
                p.bad { "This page's address holds a value it cannot read (" (why) "), so it shows nothing." }
                p.hint { "Use the page's own filters: they only send values it reads." }
            };
            let title = "The address has a bad value";
            Box::new(outcome_page(s, title, StatusCode::BAD_REQUEST, body, back))
        })
}

/// A mailbox refusal or failure, as a page: its status, its code and what it says.
fn failure(s: &Session, e: &MailboxError, back: &str) -> HttpResponse {
    let status = crate::http::error::status(e.code);
    let body = html! { p.bad { code { (format!("{:?}", e.code)) } " " (act::explain(e)) } };
    let title = if status == StatusCode::SERVICE_UNAVAILABLE {
        "The database is unavailable"
    } else {
        "Refused"
    };
    outcome_page(s, title, status, body, back)
}
