//! Refused tokens (docs/contract.md#audit): a failed authentication is not a request from anyone and never
//! costs a database write of its own. Failures are counted in memory per client address and
//! minute; [`flush`] writes each (address, minute) as ONE `authentication_failed` row, issuer
//! `anonymous`, body `{address, count, reasons}`: the first failure of the minute writes it
//! promptly, later ones update its counts, every second at most. Memory stays bounded: an entry
//! is dropped once written and its minute over, and past [`MAX_ADDRESSES`] a new address is
//! counted under [`OVERFLOW`]. Past `auth_failures_per_minute` refusals from one address in a
//! minute, each further refusal is answered [`SLOW_DOWN`] late: a flood then costs the server a
//! timer per request instead of its CPU, and authenticated callers keep their latency.

pub(super) mod counts;

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Mailbox;
use crate::auth::AuthReason;
use crate::clock::now_ms;

pub use counts::{AuthFailures, MAX_ADDRESSES, OVERFLOW};

/// The audit slug, and the issuer of its rows.
pub use super::audit::kind::AUTHENTICATION_FAILED;
pub const ANONYMOUS: &str = "anonymous";
/// The address of a client over a Unix socket (it has no IP).
pub const UNIX: &str = "unix";
/// How often counts are written while failures keep coming.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How late a refusal past the address's budget is answered.
pub const SLOW_DOWN: Duration = Duration::from_millis(100);
/// The shortest gap between two writes, however many new addresses fail meanwhile.
const MIN_GAP: Duration = Duration::from_millis(100);

impl Mailbox {
    /// A refused token from `address`: counted by reason, and in the audit feed at the next
    /// flush. Costs no database write of its own. Answers how long to hold the refusal back:
    /// [`SLOW_DOWN`] once the address is past its budget for the minute.
    pub fn auth_failed(&self, address: &str, reason: AuthReason) -> Option<Duration> {
        if let Some(counter) = self.metrics.auth_failures.get(reason as usize) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let count = self.auth_failures.record(address, reason, now_ms());
        let budget = self.cfg.auth_failures_per_minute;
        (budget > 0 && count > budget).then_some(SLOW_DOWN)
    }

    /// Writes the counts that changed (all in one transaction); answers how many rows it wrote.
    pub async fn flush_auth_failures(&self) -> Result<usize, crate::error::MailboxError> {
        let pending = self.auth_failures.changed();
        if pending.is_empty() {
            self.auth_failures.written(&[], now_ms());
            return Ok(0);
        }
        let done = self
            .store
            .transact(Box::new(move |tx| {
                Box::pin(async move {
                    let mut done = Vec::with_capacity(pending.len());
                    for p in pending {
                        let row = tx
                            .upsert_audit(
                                p.row,
                                p.first_ms,
                                ANONYMOUS,
                                AUTHENTICATION_FAILED,
                                &p.body,
                            )
                            .await?;
                        done.push((p, row));
                    }
                    Ok(done)
                })
            }))
            .await?;
        self.auth_failures.written(&done, now_ms());
        Ok(done.len())
    }
}

/// Writes refused tokens' counts for as long as the server runs: promptly after the first
/// failure of an (address, minute), and every second while counts change. A write that fails
/// keeps its counts for the next one.
pub async fn flush(mailbox: Mailbox) {
    loop {
        let _ = tokio::time::timeout(FLUSH_EVERY, mailbox.auth_failures.fresh.notified()).await;
        if let Err(e) = mailbox.flush_auth_failures().await {
            tracing::warn!(error = %e, "could not write the audit rows of refused tokens");
        }
        tokio::time::sleep(MIN_GAP).await;
    }
}
