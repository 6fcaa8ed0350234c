//! Serving the routes: the listeners and their workers, the connection layer that gives the
//! answers actix-http writes by itself the contract's error body, and the middleware every
//! request passes through before any route (compact headers, NUL refused, panics answered).

mod compact_head;
mod conn;
mod listen;
mod nul_guard;
mod panics;
mod root_span;

pub use listen::{listen, Listening};
pub use nul_guard::refuse_nul;
