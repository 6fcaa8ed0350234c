//! Operator routes: repair, heartbeat, retry gate, scheduler tick, compaction, audit feed.

use actix_web::web;

pub fn configure(_cfg: &mut web::ServiceConfig) {}
