//! Black-box tests of the Rust client (`crates/client`) against the real binary, every test on
//! SQLite and on PostgreSQL. Shares the harness in `tests/common`.

#[allow(dead_code)]
#[macro_use]
mod common;

mod client {
    mod batch_worker;
    mod batches;
    mod checkpoint;
    mod checkpoint_file;
    mod gateway;
    mod keep_alive;
    mod listing;
    mod ops;
    mod proxy;
    mod results;
    mod retries;
    mod tasks;
    mod tls;
    mod trace;
    mod transports;
    mod worker;

    use std::time::Duration;

    use a2a_mailbox_client::{Backoff, Client};

    use crate::common::TestApp;

    /// A client of `app` over TCP for `token`, retrying quickly.
    pub fn connect(app: &TestApp, token: String) -> Client {
        connect_to(&app.address, token)
    }

    /// A client of the mailbox at `base` for `token`, retrying quickly.
    pub fn connect_to(base: &str, token: String) -> Client {
        Client::builder(base, token)
            .backoff(quick())
            .build()
            .expect("a client")
    }

    /// Retries spaced by milliseconds, so that tests do not wait on the backoff.
    pub fn quick() -> Backoff {
        Backoff {
            retries: 5,
            initial: Duration::from_millis(10),
            max: Duration::from_millis(200),
        }
    }

    /// How long a long-poll of a test waits for something that is on its way.
    pub const SOON: Duration = Duration::from_secs(10);
}
