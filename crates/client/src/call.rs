//! One logical call: the HTTP exchange, the contract's error body, and the retries.

use std::time::{Duration, Instant};

use reqwest::header::RETRY_AFTER;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::transport;
use crate::{ApiError, Client, Error};
use a2a_mailbox_types::ErrorBody;

/// Whether a call may be sent again when the mailbox may have acted on it without its answer
/// arriving (a connection broken mid-way, a gateway's 502/503/504, a timeout).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Reads, and writes carrying their `Idempotency-Key`: a second try answers like the first.
    Safe,
    /// Leasing and draining consume what they answer: a second try would lease another task or
    /// drain another result while the first one's answer is lost. Retried only when the request
    /// provably never reached the mailbox (the connection could not be made) or the mailbox
    /// itself answered that it changed nothing (its error body, marked `retriable`).
    OnlyUnsent,
    /// A lease or a drain carrying its `attempt_id`: within [`ATTEMPT_WINDOW`] of the first
    /// try, the mailbox answers a second try with what it answered the first (the same leases,
    /// the same results), so it is retried like [`Replay::Safe`]; later, like
    /// [`Replay::OnlyUnsent`].
    SameAttempt,
}

/// How long after the first try of a lease or a drain a retry carrying the same `attempt_id`
/// is still retried as safe: within the mailbox's 5 minutes, with a margin for the clocks and
/// the exchange itself.
pub(crate) const ATTEMPT_WINDOW: Duration = Duration::from_secs(4 * 60);

impl Replay {
    /// Whether `err` may be tried again under this rule (the backoff aside), `since` the first
    /// try began.
    pub(crate) fn allows(self, err: &Error, since: Duration) -> bool {
        match self {
            Replay::Safe => err.retriable(),
            Replay::SameAttempt if since < ATTEMPT_WINDOW => err.retriable(),
            Replay::SameAttempt => Replay::OnlyUnsent.allows(err, since),
            Replay::OnlyUnsent => matches!(
                err,
                Error::Transport {
                    before_sending: true,
                    ..
                } | Error::Api(ApiError {
                    retriable: true,
                    ..
                })
            ),
        }
    }
}

/// What to ask: method, path, query and JSON body.
pub(crate) struct Call {
    pub method: Method,
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Value>,
    pub replay: Replay,
    /// A long-poll's wait, added to the exchange's timeout.
    pub wait: Duration,
}

impl Call {
    pub(crate) fn get(path: impl Into<String>) -> Call {
        Call {
            method: Method::GET,
            path: path.into(),
            query: Vec::new(),
            body: None,
            replay: Replay::Safe,
            wait: Duration::ZERO,
        }
    }

    pub(crate) fn post(path: impl Into<String>, body: Option<Value>) -> Call {
        Call {
            method: Method::POST,
            body,
            ..Call::get(path)
        }
    }

    pub(crate) fn query(mut self, pairs: Vec<(&'static str, String)>) -> Call {
        self.query.extend(pairs);
        self
    }

    /// A long-poll that consumes what it answers, under an `attempt_id` chosen here, once per
    /// logical call, and sent again on every retry: a retry is answered what the first try took.
    pub(crate) fn consuming(mut self, wait: Duration) -> Call {
        self.replay = Replay::SameAttempt;
        self.wait = wait;
        self.query.push(("wait_ms", wait.as_millis().to_string()));
        self.query
            .push(("attempt_id", uuid::Uuid::new_v4().to_string()));
        self
    }
}

/// A success answer: its body and whether it replays an earlier one (`Idempotent-Replayed`).
pub(crate) struct Answered<T> {
    pub value: T,
    pub replayed: bool,
}

/// The query pairs whose value is present.
pub(crate) fn present<const N: usize>(
    pairs: [(&'static str, Option<String>); N],
) -> Vec<(&'static str, String)> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// The serialised body of a typed request.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("wire types serialise")
}

impl Client {
    /// Runs `call` until it succeeds, fails for good, or the backoff is spent. A POST carries an
    /// `Idempotency-Key` chosen here, once, and the same on every try.
    pub(crate) async fn call<T: DeserializeOwned>(&self, call: Call) -> Result<Answered<T>, Error> {
        let key = (call.method == Method::POST).then(|| uuid::Uuid::now_v7().to_string());
        let backoff = &self.inner.backoff;
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            let err = match self.exchange(&call, key.as_deref()).await {
                Ok(answered) => return Ok(answered),
                Err(e) => e,
            };
            if attempt >= backoff.retries || !call.replay.allows(&err, started.elapsed()) {
                return Err(err);
            }
            tokio::time::sleep(backoff.delay(attempt, err.retry_after())).await;
            attempt += 1;
        }
    }

    /// One try.
    async fn exchange<T: DeserializeOwned>(
        &self,
        call: &Call,
        key: Option<&str>,
    ) -> Result<Answered<T>, Error> {
        let inner = &self.inner;
        let mut req = inner
            .http
            .request(call.method.clone(), format!("{}{}", inner.base, call.path))
            .bearer_auth(&inner.token)
            .timeout(inner.timeout + call.wait);
        if !call.query.is_empty() {
            req = req.query(&call.query);
        }
        if let Some(key) = key {
            req = req.header("Idempotency-Key", key);
        }
        // The current span's trace context (feature `otel`), else the client's own: the
        // mailbox's span of this request joins the caller's trace.
        if let Some(trace) = crate::otel::current().or_else(|| inner.trace.clone()) {
            req = req.header("traceparent", trace.traceparent);
            if let Some(state) = trace.tracestate {
                req = req.header("tracestate", state);
            }
        }
        if let Some(body) = &call.body {
            req = req.json(body);
        }
        let res = req.send().await.map_err(transport)?;
        let status = res.status().as_u16();
        let header = |name| res.headers().get(name).and_then(|v| v.to_str().ok());
        let replayed =
            header("idempotent-replayed").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let retry_after = header(RETRY_AFTER.as_str())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = res.bytes().await.map_err(transport)?;
        if (200..300).contains(&status) {
            let value = serde_json::from_slice(&bytes).map_err(|e| Error::UnexpectedAnswer {
                status,
                message: format!("{e} in {}", excerpt(&bytes)),
            })?;
            return Ok(Answered { value, replayed });
        }
        Err(match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => Error::Api(ApiError {
                status,
                code: body.code,
                message: body.message,
                retriable: body.retriable,
                retry_after,
                index: body.index,
            }),
            Err(_) => Error::UnexpectedAnswer {
                status,
                message: excerpt(&bytes),
            },
        })
    }
}

/// The start of a body, for an error message.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_mailbox_types::ErrorCode;

    fn api(status: u16, code: ErrorCode) -> Error {
        Error::Api(ApiError {
            status,
            code,
            message: String::new(),
            retriable: code.retriable(),
            retry_after: Some(Duration::from_secs(1)),
            index: None,
        })
    }

    fn transport(before_sending: bool) -> Error {
        Error::Transport {
            message: String::new(),
            before_sending,
        }
    }

    fn gateway(status: u16) -> Error {
        Error::UnexpectedAnswer {
            status,
            message: "<html>Bad Gateway</html>".into(),
        }
    }

    #[test]
    fn a_consuming_call_is_retried_only_when_the_mailbox_cannot_have_acted() {
        let late = ATTEMPT_WINDOW + Duration::from_secs(1);
        let cases = [
            // (error, retried when safe, retried when consuming)
            (transport(true), true, true),
            (api(503, ErrorCode::StorageUnavailable), true, true),
            (api(409, ErrorCode::IdempotencyInFlight), true, true),
            (api(429, ErrorCode::TooManyWaiting), true, true),
            (api(503, ErrorCode::Overloaded), true, true),
            (transport(false), true, false),
            (gateway(502), true, false),
            (gateway(503), true, false),
            (gateway(504), true, false),
            (gateway(500), false, false),
            (api(404, ErrorCode::NotFound), false, false),
            (api(500, ErrorCode::Internal), false, false),
        ];
        for (err, safe, consuming) in cases {
            assert_eq!(Replay::Safe.allows(&err, late), safe, "safe: {err:?}");
            assert_eq!(
                Replay::OnlyUnsent.allows(&err, Duration::ZERO),
                consuming,
                "consuming: {err:?}"
            );
            // Under its attempt_id, a lease or a drain is as safe as a read, for a while.
            let soon = Duration::from_secs(10);
            assert_eq!(Replay::SameAttempt.allows(&err, soon), safe, "{err:?}");
            assert_eq!(Replay::SameAttempt.allows(&err, late), consuming, "{err:?}");
        }
    }
}
