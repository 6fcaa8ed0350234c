//! Operator commands: they talk to a running server through the Rust client
//! (`a2a-mailbox-client`) with a bearer token.
//!
//! Every command prints its result on stdout (human text, or the server's JSON with `--json`);
//! on any failure it prints the error on stderr, nothing on stdout, and exits non-zero.

mod args;
mod cancel;
mod check_token;
mod compact;
mod repair;
mod retry;
mod status;
mod tasks;

pub use args::ClientArgs;
pub use cancel::{cancel, CancelArgs};
pub use check_token::{check_token, CheckTokenArgs};
pub use compact::{compact, CompactArgs};
pub use repair::{force_error, requeue, ForceErrorArgs, RequeueArgs};
pub use retry::{retry_stale, RetryStaleArgs};
pub use status::{status, StatusArgs};
pub use tasks::{children, tasks, ChildrenArgs, TasksArgs};
