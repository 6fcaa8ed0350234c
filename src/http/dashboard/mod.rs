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
mod refusal;
mod retry;
mod search;
mod session;
mod tasks;
mod timeline;

use actix_web::web;

use super::respond::routes;

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
