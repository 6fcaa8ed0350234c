//! The operator dashboard (`/dashboard`), black-box: pages and forms over HTTP, and the whole
//! flow in a real headless Chromium, on SQLite and on PostgreSQL.

#[allow(dead_code)]
#[macro_use]
mod common;

mod dashboard {
    mod audit;
    mod browser;
    mod bulk;
    mod forms;
    mod history;
    mod leases;
    mod overview;
    mod pages;
    mod session_end;
    mod signin;
    mod signin_idp;
    pub mod web;
}
