//! The store itself, opened beside a test's server on its database: for the tests that read a
//! statement's plan.

use std::sync::Arc;
use std::time::Duration;

use a2a_mailbox::store::{PoolSettings, Store};

/// The store of the database at `db_url`, with a small pool of its own.
pub async fn open_store(db_url: &str) -> Store {
    Store::connect(
        db_url,
        &PoolSettings {
            max_connections: 2,
            acquire_timeout: Duration::from_secs(10),
        },
        Arc::new(a2a_mailbox::metrics::Metrics::default()),
    )
    .await
    .expect("connecting to the test database")
}
