//! Who makes a write, and under which `Idempotency-Key` (docs/contract.md#the-idempotency-key-header):
//! the key and the fingerprint of the request it was sent with. What the key does to a write is
//! `idempotency.rs`'s business.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::Caller;
use crate::error::MailboxError;

/// The longest accepted key.
pub const MAX_KEY_LEN: usize = 255;

/// Who makes a write, and under which `Idempotency-Key` (none: the write is not keyed).
#[derive(Clone, Copy, Debug)]
pub struct Author<'a> {
    pub caller: &'a Caller,
    pub idem: Option<&'a IdemRequest>,
}

impl<'a> Author<'a> {
    pub fn keyed(caller: &'a Caller, idem: Option<&'a IdemRequest>) -> Author<'a> {
        Author { caller, idem }
    }
}

/// A write without a key.
impl<'a> From<&'a Caller> for Author<'a> {
    fn from(caller: &'a Caller) -> Author<'a> {
        Author { caller, idem: None }
    }
}

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
