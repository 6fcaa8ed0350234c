//! The `Idempotency-Key` layer (§6.3): per caller, a key maps to a request fingerprint and the
//! stored response. The key is reserved and completed inside the transaction of the request's
//! effect, so a key can never be recorded without its effect, nor an effect without its key.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::FromRow;

use super::{now_ms, Mailbox, Reply};
use crate::args;
use crate::auth::Caller;
use crate::error::{ErrorCode, MailboxError};
use crate::store::Tx;

/// The longest accepted key.
pub const MAX_KEY_LEN: usize = 255;

#[derive(Clone, Debug)]
pub struct IdemRequest {
    pub key: String,
    pub fingerprint: String,
}

impl IdemRequest {
    /// Validates the header value and fingerprints the request (method, path, canonical body).
    pub fn new(
        key: &str,
        method: &str,
        path: &str,
        body: &Value,
    ) -> Result<IdemRequest, MailboxError> {
        if key.trim().is_empty() {
            return Err(MailboxError::invalid(
                "the Idempotency-Key header must not be blank",
            ));
        }
        if key.len() > MAX_KEY_LEN {
            return Err(MailboxError::invalid(format!(
                "the Idempotency-Key header is longer than {MAX_KEY_LEN} characters"
            )));
        }
        let mut h = Sha256::new();
        h.update(method.as_bytes());
        h.update(b" ");
        h.update(path.as_bytes());
        h.update(b"\n");
        // serde_json maps are ordered by key, so equal documents serialise identically.
        h.update(body.to_string().as_bytes());
        let fingerprint = h
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        Ok(IdemRequest {
            key: key.to_owned(),
            fingerprint,
        })
    }
}

#[derive(FromRow)]
struct KeyRow {
    fingerprint: String,
    state: String,
    status: Option<i64>,
    response: Option<String>,
    locked_until_ms: i64,
}

impl Mailbox {
    /// Reserves the key as pending. `Ok(Some(reply))` is the stored response of a finished
    /// request with the same fingerprint.
    pub(super) async fn reserve_key(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: &IdemRequest,
    ) -> Result<Option<Reply>, MailboxError> {
        let now = now_ms();
        // Insert, or take over a record whose window has passed or whose pending reservation
        // outlived its TTL (its request died before completing: nothing of it was committed).
        let taken = tx
            .execute(
                "INSERT INTO idempotency_keys (caller, idem_key, fingerprint, state, status, response, \
                    created_at_ms, locked_until_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, 'pending', NULL, NULL, $4, $5, $6) \
                 ON CONFLICT (caller, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, \
                    state = 'pending', status = NULL, response = NULL, created_at_ms = excluded.created_at_ms, \
                    locked_until_ms = excluded.locked_until_ms, expires_at_ms = excluded.expires_at_ms \
                 WHERE idempotency_keys.expires_at_ms <= $4 \
                    OR (idempotency_keys.state = 'pending' AND idempotency_keys.locked_until_ms <= $4)",
                args![
                    caller.sub.as_str(),
                    idem.key.as_str(),
                    idem.fingerprint.as_str(),
                    now,
                    now + self.cfg.idempotency_pending_ttl_ms,
                    now + self.cfg.idempotency_window_ms
                ],
            )
            .await?;
        if taken == 1 {
            return Ok(None);
        }
        let row: KeyRow = tx
            .fetch_optional(
                "SELECT fingerprint, state, status, response, locked_until_ms FROM idempotency_keys \
                 WHERE caller = $1 AND idem_key = $2",
                args![caller.sub.as_str(), idem.key.as_str()],
            )
            .await?
            .ok_or_else(|| MailboxError::internal("idempotency record vanished"))?;
        if row.fingerprint != idem.fingerprint {
            return Err(MailboxError::new(
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was already used for a different request",
            ));
        }
        if row.state == "pending" {
            let secs = ((row.locked_until_ms - now).max(0) as u64)
                .div_ceil(1000)
                .max(1);
            let mut e = MailboxError::new(
                ErrorCode::IdempotencyInFlight,
                "the first request with this Idempotency-Key is still running; retry later",
            );
            e.retry_after = Some(std::time::Duration::from_secs(secs));
            return Err(e);
        }
        let body: Value = serde_json::from_str(row.response.as_deref().unwrap_or("null"))
            .map_err(MailboxError::internal)?;
        Ok(Some(
            Reply::new(row.status.unwrap_or(200) as u16, body).replay(),
        ))
    }

    /// Stores the response of the request that reserved the key (success or refusal alike, so a
    /// replay never re-executes).
    pub(super) async fn complete_key(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: &IdemRequest,
        status: u16,
        body: &Value,
    ) -> Result<(), MailboxError> {
        tx.execute(
            "UPDATE idempotency_keys SET state = 'complete', status = $3, response = $4 \
             WHERE caller = $1 AND idem_key = $2",
            args![
                caller.sub.as_str(),
                idem.key.as_str(),
                status as i64,
                body.to_string()
            ],
        )
        .await?;
        Ok(())
    }
}
