//! The OpenAPI document (`/openapi.json`) and the interactive docs (`/docs`).

use actix_web::web;

pub fn configure(_cfg: &mut web::ServiceConfig) {}
