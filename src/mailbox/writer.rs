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
        h.update(without_trace(body).to_string().as_bytes());
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

/// A body as its identity sees it: without the trace context of the task or result it is, or of
/// the items of its lists (a batch). A traced client makes a new span per attempt, and its
/// retries must stay the same request (docs/contract.md#trace-context).
pub(crate) fn without_trace(body: &Value) -> std::borrow::Cow<'_, Value> {
    let traced = |v: &Value| v.get("trace").is_some();
    let Some(fields) = body.as_object() else {
        return std::borrow::Cow::Borrowed(body);
    };
    let any = traced(body)
        || fields
            .values()
            .filter_map(Value::as_array)
            .any(|items| items.iter().any(traced));
    if !any {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut body = body.clone();
    if let Some(fields) = body.as_object_mut() {
        fields.remove("trace");
        for items in fields.values_mut().filter_map(Value::as_array_mut) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.remove("trace");
            }
        }
    }
    std::borrow::Cow::Owned(body)
}
