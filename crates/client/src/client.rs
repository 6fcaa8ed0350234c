//! The client: where the mailbox is, who calls it, and how patiently.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use a2a_mailbox_types::IDLE_CONNECTION_REUSE;

use crate::checkpoint::Ledger;
use crate::tls::Trust;
use crate::{token_subject, AgentId, Backoff, Error, Trace};

/// A typed client of one a2a-mailbox, over TCP or a Unix socket.
///
/// Its `Debug` output names the mailbox and the agent, never the token.
///
/// Cheap to clone: clones share one connection pool and one record of the tasks sent and not
/// yet drained (see [`Client::checkpoint`]). Every method is one logical call: it retries
/// retriable errors with [`Backoff`], reusing the same task id and `Idempotency-Key`.
///
/// ```no_run
/// # async fn demo() -> Result<(), a2a_mailbox_client::Error> {
/// use a2a_mailbox_client::{Client, NewTask};
///
/// let alice = Client::new("http://127.0.0.1:8080", std::env::var("ALICE_TOKEN").unwrap())?;
/// let sent = alice.send(NewTask::new("bob", "summarise the Q3 report")).await?;
/// println!("queued {}", sent.task_id);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) agent: AgentId,
    pub(crate) backoff: Backoff,
    pub(crate) timeout: Duration,
    pub(crate) batch_body_limit: usize,
    pub(crate) ledger: Mutex<Ledger>,
    /// The trace context of [`ClientBuilder::trace`].
    pub(crate) trace: Option<Trace>,
}

/// Options of a [`Client`]: start from [`Client::builder`] or [`ClientBuilder::unix`].
///
/// ```no_run
/// # fn demo() -> Result<(), a2a_mailbox_client::Error> {
/// use std::time::Duration;
/// use a2a_mailbox_client::{Backoff, Client};
///
/// let client = Client::builder("http://127.0.0.1:8080", "<jwt>")
///     .backoff(Backoff::none())
///     .timeout(Duration::from_secs(10))
///     .context_id("conversation-42")
///     .build()?;
/// # Ok(()) }
/// ```
///
/// A mailbox behind a TLS endpoint whose certificate comes from a private CA:
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let ca = std::fs::read("/etc/a2a/private-ca.pem")?;
/// let client = a2a_mailbox_client::Client::builder("https://mailbox.internal", "<jwt>")
///     .add_root_certificate_pem(ca)
///     .build()?;
/// # Ok(()) }
/// ```
///
/// Its `Debug` output shows `token: "<redacted>"`, never the token.
#[derive(Clone)]
pub struct ClientBuilder {
    base: String,
    socket: Option<PathBuf>,
    token: String,
    backoff: Backoff,
    timeout: Duration,
    batch_body_limit: usize,
    context_id: Option<String>,
    trust: Trust,
    trace: Option<Trace>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base", &self.base)
            .field("socket", &self.socket)
            .field("token", &"<redacted>")
            .field("backoff", &self.backoff)
            .field("timeout", &self.timeout)
            .field("batch_body_limit", &self.batch_body_limit)
            .field("context_id", &self.context_id)
            .field("trust", &self.trust)
            .field("trace", &self.trace)
            .finish()
    }
}

impl ClientBuilder {
    /// A client of the mailbox listening on the Unix socket at `path` (docs/contract.md#transports); the token
    /// is still required.
    pub fn unix(path: impl AsRef<Path>, token: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            socket: Some(path.as_ref().to_owned()),
            ..Client::builder("http://localhost", token)
        }
    }

    /// How retriable errors are retried (default [`Backoff::default`]).
    pub fn backoff(mut self, backoff: Backoff) -> ClientBuilder {
        self.backoff = backoff;
        self
    }

    /// How long one HTTP exchange may take, on top of a long-poll's own wait (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.timeout = timeout;
        self
    }

    /// The largest body, in bytes of its JSON, of one `POST /a2a/results/batch` or
    /// `POST /a2a/tasks/heartbeat` (default 8 MiB, the mailbox's default
    /// `A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES`): [`Client::post_results`] splits its results into
    /// requests that fit. Set it to the mailbox's limit when that was lowered.
    pub fn batch_body_limit(mut self, bytes: usize) -> ClientBuilder {
        self.batch_body_limit = bytes;
        self
    }

    /// A trace context every request carries (`traceparent`), and every task sent without a
    /// `trace` of its own: for a process that is one step of a trace, such as a command run
    /// under `TRACEPARENT`. With the `otel` feature, a current span's context comes first.
    pub fn trace(mut self, trace: Trace) -> ClientBuilder {
        self.trace = Some(trace);
        self
    }

    /// The `context_id` given to every task sent without one, and kept in checkpoints.
    pub fn context_id(mut self, context_id: impl Into<String>) -> ClientBuilder {
        self.context_id = Some(context_id.into());
        self
    }

    /// Trusts the root certificate(s) in `pem` (one or more `-----BEGIN CERTIFICATE-----`
    /// blocks) for an `https://` mailbox, besides the system's: for a TLS endpoint whose
    /// certificate comes from a private CA. May be called more than once; a bad certificate
    /// fails [`build`](ClientBuilder::build).
    pub fn add_root_certificate_pem(mut self, pem: impl AsRef<[u8]>) -> ClientBuilder {
        self.trust.roots.push(pem.as_ref().to_vec());
        self
    }

    /// Whether an `https://` mailbox's certificate may chain to the system's root certificates
    /// (default `true`); with `false`, only to those added with
    /// [`add_root_certificate_pem`](ClientBuilder::add_root_certificate_pem).
    pub fn tls_built_in_roots(mut self, trusted: bool) -> ClientBuilder {
        self.trust.added_only = !trusted;
        self
    }

    /// The client. Fails when the base URL is neither `http://…` nor `https://…`, an added
    /// root certificate cannot be read, or the token's `sub` cannot be read.
    pub fn build(self) -> Result<Client, Error> {
        let base = self.base.trim_end_matches('/').to_owned();
        let https = base.starts_with("https://");
        if !https && !base.starts_with("http://") {
            return Err(Error::InvalidInput(format!(
                "the base URL must start with http:// or https://, not {base:?}"
            )));
        }
        let agent = token_subject(&self.token)?;
        let mut http = self.trust.apply(
            // A lease or a drain lost on a connection the mailbox is closing for idleness
            // would lean on its attempt_id's retry: such a connection is never reused.
            reqwest::Client::builder().pool_idle_timeout(IDLE_CONNECTION_REUSE),
            https,
        )?;
        if let Some(path) = &self.socket {
            http = http.unix_socket(path.as_path());
        }
        let http = http
            .build()
            .map_err(|e| Error::InvalidInput(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base,
                token: self.token,
                agent,
                backoff: self.backoff,
                timeout: self.timeout,
                batch_body_limit: self.batch_body_limit,
                ledger: Mutex::new(Ledger::new(self.context_id)),
                trace: self.trace,
            }),
        })
    }
}

impl Client {
    /// A client of the mailbox at `base_url` (e.g. `http://127.0.0.1:8080`, or
    /// `https://mailbox.example` behind a TLS endpoint whose certificate the system trusts)
    /// calling with the bearer `token`, whose `sub` is the agent it speaks for.
    pub fn new(base_url: impl Into<String>, token: impl Into<String>) -> Result<Client, Error> {
        Client::builder(base_url, token).build()
    }

    /// A client of the mailbox listening on the Unix socket at `path` (docs/contract.md#transports).
    ///
    /// ```no_run
    /// # fn demo() -> Result<(), a2a_mailbox_client::Error> {
    /// let client = a2a_mailbox_client::Client::unix("/run/a2a/mailbox.sock", "<jwt>")?;
    /// # Ok(()) }
    /// ```
    pub fn unix(path: impl AsRef<Path>, token: impl Into<String>) -> Result<Client, Error> {
        ClientBuilder::unix(path, token).build()
    }

    /// Options beyond [`Client::new`]'s.
    pub fn builder(base_url: impl Into<String>, token: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base: base_url.into(),
            socket: None,
            token: token.into(),
            backoff: Backoff::default(),
            timeout: Duration::from_secs(30),
            batch_body_limit: crate::batches::DEFAULT_BATCH_BODY_LIMIT,
            context_id: None,
            trust: Trust::default(),
            trace: None,
        }
    }

    /// The agent this client speaks for: its token's `sub`.
    pub fn agent_id(&self) -> &AgentId {
        &self.inner.agent
    }

    pub(crate) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // The ledger holds plain data: a panic elsewhere cannot leave it half-written.
        self.inner
            .ledger
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base)
            .field("agent", &self.inner.agent)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// {"alg":"HS256"} . {"sub":"alice"} . a signature that must never be printed.
    const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2VjcmV0LXNpZ25hdHVyZQ";

    #[test]
    fn debug_never_shows_the_token() {
        let builder = Client::builder("http://127.0.0.1:8080", TOKEN).context_id("c-1");
        let client = builder.clone().build().unwrap();
        for shown in [
            format!("{builder:?}"),
            format!("{builder:#?}"),
            format!("{client:?}"),
            format!("{:?}", crate::Worker::new(client.clone())),
        ] {
            assert!(!shown.contains("c2VjcmV0"), "{shown}");
            assert!(!shown.contains("eyJ"), "{shown}");
            assert!(shown.contains("127.0.0.1:8080"), "{shown}");
        }
        assert!(format!("{builder:?}").contains(r#"token: "<redacted>""#));
    }

    #[test]
    fn bad_base_urls_and_root_certificates_are_refused_at_build() {
        let refused = |b: ClientBuilder| match b.build() {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = refused(Client::builder("ftp://127.0.0.1", TOKEN));
        assert!(m.contains("http:// or https://"), "{m}");
        let m = refused(Client::builder("https://a.test", TOKEN).add_root_certificate_pem("hi"));
        assert!(m.contains("PEM"), "{m}");
        let garbled = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        refused(Client::builder("https://a.test", TOKEN).add_root_certificate_pem(garbled));
        for base in ["http://127.0.0.1:8080", "https://127.0.0.1:8443/"] {
            Client::builder(base, TOKEN).build().unwrap();
        }
    }
}
