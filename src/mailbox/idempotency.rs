//! The `Idempotency-Key` layer (docs/contract.md#the-idempotency-key-header): per caller, a key
//! maps to a request fingerprint and the stored response. The key is reserved and completed inside
//! the transaction of the request's effect, so a key can never be recorded without its effect, nor
//! an effect without its key.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::json;

use super::audit::{audit, kind};
use super::{now_ms, Done, IdemRequest, Mailbox};
use crate::auth::Caller;
use crate::error::{ErrorCode, MailboxError};
use crate::store::{from_stored, Tx};

impl Mailbox {
    /// Reserves the key as pending. `Ok(Some(outcome))` is the stored outcome of a finished
    /// request with the same fingerprint, answered again as a replay.
    pub(super) async fn reserve_key<T: DeserializeOwned>(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: &IdemRequest,
    ) -> Result<Option<Result<Done<T>, MailboxError>>, MailboxError> {
        let now = now_ms();
        let me = caller.sub.as_str();
        let reserved = tx
            .reserve_key(
                me,
                &idem.key,
                &idem.fingerprint,
                now,
                now.saturating_add(self.cfg.idempotency_pending_ttl_ms),
                now.saturating_add(self.cfg.idempotency_window_ms),
            )
            .await?;
        if reserved {
            return Ok(None);
        }
        let record = tx
            .key_record(me, &idem.key)
            .await?
            .ok_or_else(|| MailboxError::internal("idempotency record vanished"))?;
        if record.fingerprint != idem.fingerprint {
            return Err(MailboxError::new(
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was already used for a different request",
            ));
        }
        if record.state == "pending" {
            let wait = record.locked_until_ms.saturating_sub(now).max(0) as u64;
            return Err(MailboxError::new(
                ErrorCode::IdempotencyInFlight,
                "the first request with this Idempotency-Key is still running; retry later",
            )
            .retry_after(Duration::from_millis(wait.max(1000))));
        }
        let stored: Result<Done<T>, MailboxError> =
            from_stored(record.response.as_deref().unwrap_or("null"))
                .map_err(MailboxError::internal)?;
        audit(
            tx,
            now,
            me,
            kind::IDEMPOTENCY_KEY_REPLAYED,
            json!({"key": idem.key, "outcome": match &stored {
                Ok(_) => "success",
                Err(e) => e.code.as_str(),
            }}),
        )
        .await?;
        self.metrics.inc(&self.metrics.idempotency_replays);
        Ok(Some(
            stored
                .map(|done| Done {
                    replayed: true,
                    ..done
                })
                .map_err(|e| MailboxError {
                    replayed: true,
                    ..e
                }),
        ))
    }

    /// Stores the outcome of the request that reserved the key (success or refusal alike, so a
    /// replay never re-executes).
    pub(super) async fn complete_key(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        idem: &IdemRequest,
        stored_outcome: &str,
    ) -> Result<(), MailboxError> {
        tx.complete_key(caller.sub.as_str(), &idem.key, stored_outcome)
            .await
    }
}
