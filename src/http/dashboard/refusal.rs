//! What a page says when it cannot do what it was asked: an address whose query it cannot read
//! (400), or the mailbox's refusal or failure, explained.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::html;
use serde::de::DeserializeOwned;

use super::layout::{outcome_page, SignedIn};
use crate::error::{ErrorCode, MailboxError};

/// The page's query string as a `T`, or a page (400) that says which value it cannot read: an
/// address edited by hand gets a page and a way back, never the API's JSON.
pub(super) fn read_query<T: DeserializeOwned>(
    s: &SignedIn,
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
pub(super) fn failure(s: &SignedIn, e: &MailboxError, back: &str) -> HttpResponse {
    let status = crate::http::error::status(e.code);
    let body = html! { p.bad { code { (format!("{:?}", e.code)) } " " (explain(e)) } };
    let title = if status == StatusCode::SERVICE_UNAVAILABLE {
        "The database is unavailable"
    } else {
        "Refused"
    };
    outcome_page(s, title, status, body, back)
}

/// A refusal explained.
pub(super) fn explain(e: &MailboxError) -> String {
    match e.code {
        ErrorCode::LeaseMismatch | ErrorCode::NotInFlight => "the lease changed since you \
             looked (the task was answered, requeued or leased again), so nothing was done"
            .to_owned(),
        ErrorCode::DuplicateRiskMismatch => "the task was not declared idempotent with a key by \
             its sender, so it cannot be requeued as idempotent and nothing was done; requeue it \
             as operator_accepted if you accept that it may run twice"
            .to_owned(),
        _ => e.message.clone(),
    }
}
