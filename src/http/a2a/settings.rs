//! What the facade is configured with, once, at start-up.

use std::time::Duration;

/// The facade's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The public base of the cards' absolute URLs (`A2A_MAILBOX_PUBLIC_URL`); `None`: the
    /// first TCP address the service listens on.
    pub public_url: Option<String>,
    /// How long a SendMessage without `returnImmediately` waits for its task to be answered
    /// (`A2A_MAILBOX_A2A_BLOCK_MS`).
    pub block: Duration,
    /// How long a stream lasts at most (`A2A_MAILBOX_A2A_STREAM_MS`).
    pub stream: Duration,
    /// The longest a stream stays silent: a keep-alive comment goes out then
    /// (`A2A_MAILBOX_A2A_KEEP_ALIVE_MS`).
    pub keep_alive: Duration,
}
