//! The dashboard's two assets, embedded in the binary: one stylesheet and one script (no CDN,
//! no web font, nothing to build). Their URLs carry the version, so they may be cached long.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::error::{ErrorCode, MailboxError};

const CSS: &str = include_str!("assets/app.css");
const JS: &str = include_str!("assets/app.js");

pub async fn asset(name: web::Path<String>) -> Result<HttpResponse, MailboxError> {
    let (body, kind) = match name.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "app.js" => (JS, "text/javascript; charset=utf-8"),
        other => {
            return Err(MailboxError::new(
                ErrorCode::NotFound,
                format!("the dashboard has no asset {other:?}"),
            ))
        }
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header((header::CACHE_CONTROL, "public, max-age=86400"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body))
}
