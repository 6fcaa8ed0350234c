//! A write's request: its JSON body, read into the write's input, and the `Idempotency-Key`
//! bound to the request's method, path and body.

use actix_web::{dev::Payload, FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::extract::{JsonBytes, OptionalJson};
use super::params::{idem_request, object, typed};
use crate::auth::Caller;
use crate::domain::{CancelRequest, HeartbeatRequest, PostResult, Validate};
use crate::error::MailboxError;
use crate::mailbox::repair::RepairRequest;
use crate::mailbox::retry::RetryPolicy;
use crate::mailbox::{Author, IdemRequest};

/// A write's JSON body as sent, with its request. Extracting it refuses only what every JSON
/// body is refused for (size, media type, syntax); reading it is left to the handler, once the
/// caller is authenticated.
pub(crate) struct WriteRequest {
    req: HttpRequest,
    body: Value,
}

/// What a write's body is read into.
pub(crate) trait Input: DeserializeOwned {
    /// The body's name in refusals (`invalid <WHAT>: …`).
    const WHAT: &'static str;

    /// The checks of the parsed input that come before the `Idempotency-Key`'s.
    fn check(&self) -> Result<(), MailboxError> {
        Ok(())
    }
}

/// `body` (a JSON object) read into a write's input and checked.
pub(crate) fn read_input<T: Input>(body: &Value) -> Result<T, MailboxError> {
    let input: T = typed(T::WHAT, body)?;
    input.check()?;
    Ok(input)
}

/// A write's input, read from its request, with the request's `Idempotency-Key`.
pub(crate) struct Keyed<T> {
    pub input: T,
    idem: Option<IdemRequest>,
}

impl<T> Keyed<T> {
    /// The write as `caller` makes it, under the request's key.
    pub fn by<'a>(&'a self, caller: &'a Caller) -> Author<'a> {
        Author::keyed(caller, self.idem.as_ref())
    }

    /// The input, and the key on its own.
    pub fn split(self) -> (T, Keyed<()>) {
        let key = Keyed {
            input: (),
            idem: self.idem,
        };
        (self.input, key)
    }
}

impl Keyed<()> {
    /// A write that takes no body: only its `Idempotency-Key`.
    pub fn bodiless(req: &HttpRequest) -> Result<Keyed<()>, MailboxError> {
        let idem = idem_request(req, &Value::Null)?;
        Ok(Keyed { input: (), idem })
    }
}

impl WriteRequest {
    /// The body as a `T` (it must be a JSON object), checked, and the request's
    /// `Idempotency-Key`: refused in that order.
    pub fn read<T: Input>(&self) -> Result<Keyed<T>, MailboxError> {
        let input: T = read_input(&self.body)?;
        let idem = self.idem()?;
        Ok(Keyed { input, idem })
    }

    /// The body as sent, which must be a JSON object (`what` names it in the refusal), and the
    /// request's `Idempotency-Key`.
    pub fn object(self, what: &str) -> Result<Keyed<Value>, MailboxError> {
        object(what, &self.body)?;
        let idem = self.idem()?;
        Ok(Keyed {
            input: self.body,
            idem,
        })
    }

    /// The trace context of the request's headers, if well formed.
    pub fn trace(&self) -> Option<a2a_mailbox_types::Trace> {
        super::trace::from_headers(self.req.headers())
    }

    fn idem(&self) -> Result<Option<IdemRequest>, MailboxError> {
        idem_request(&self.req, &self.body)
    }
}

impl FromRequest for WriteRequest {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<WriteRequest, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = JsonBytes::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let Some(body) = body.await?.parse() else {
                return Err(MailboxError::invalid("malformed JSON body: the body is empty").into());
            };
            let body = body.map_err(MailboxError::from)?;
            Ok(WriteRequest { req, body })
        })
    }
}

/// A [`WriteRequest`] whose body may be left out: no body, or JSON `null`, reads as `{}`.
pub(crate) struct OptionalWriteRequest(pub WriteRequest);

impl FromRequest for OptionalWriteRequest {
    type Error = MailboxError;
    type Future = LocalBoxFuture<'static, Result<OptionalWriteRequest, MailboxError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = OptionalJson::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let body = match body.await?.0 {
                None | Some(Value::Null) => json!({}),
                Some(v) => v,
            };
            Ok(OptionalWriteRequest(WriteRequest { req, body }))
        })
    }
}

impl Input for HeartbeatRequest {
    const WHAT: &'static str = "heartbeat";
}

impl Input for CancelRequest {
    const WHAT: &'static str = "cancel request";

    fn check(&self) -> Result<(), MailboxError> {
        self.validate()
    }
}

impl Input for PostResult {
    const WHAT: &'static str = "result";

    fn check(&self) -> Result<(), MailboxError> {
        self.validate()
    }
}

impl Input for RepairRequest {
    const WHAT: &'static str = "repair request";
}

/// The retry gate's own checks run in the mailbox, after its capability checks.
impl Input for RetryPolicy {
    const WHAT: &'static str = "retry policy";
}
