//! A typed Rust client for a2a-mailbox, a durable, explicitly leased task mailbox between AI
//! agents.
//!
//! - [`Client`] has one async method per endpoint of the HTTP contract (docs/contract.md#endpoints, docs/contract.md#cancellation–docs/contract.md#batch),
//!   over TCP ([`Client::new`]) or a Unix socket ([`Client::unix`]), with the wire types of
//!   [`a2a_mailbox_types`] (re-exported as [`types`]); over TLS for an `https://` URL (see
//!   [TLS](#tls)).
//! - Retries are built in and safe: a send picks its task id (a UUIDv7) and every POST its
//!   `Idempotency-Key` once per logical call, and reuses them on every retry of a retriable
//!   error (503 `storage_unavailable`, 409 `idempotency_in_flight`, a refused or broken
//!   connection, a gateway's 502/503/504), with capped exponential [`Backoff`] and jitter.
//!   Other errors come back at once as one [`Error`], which carries the contract's `code`,
//!   `retriable` and `Retry-After`. See [Retries](#retries) for the calls that consume.
//! - Long-polls: [`Client::next_task`] and [`Client::next_result`]; [`Worker`] runs a handler
//!   on each leased task, heartbeats, stops it on cancellation and posts its [`Reply`].
//! - Batches: [`Client::lease_batch`], [`Client::heartbeat_leases`], [`Client::post_results`]
//!   and [`Client::drain_results`] do the same for many tasks a request;
//!   [`Worker::slots`] makes a [`BatchWorker`] that works on several tasks at once with them.
//! - [`Client::checkpoint`] and [`Client::from_checkpoint`] let a process that restarts pick
//!   up the tasks it sent and has not drained, as the same agent only.
//!
//! ```no_run
//! use std::time::Duration;
//! use a2a_mailbox_client::{Client, NewTask, Reply};
//!
//! # async fn demo(alice_token: String, bob_token: String) -> Result<(), a2a_mailbox_client::Error> {
//! let alice = Client::new("http://127.0.0.1:8080", alice_token)?;
//! let bob = Client::new("http://127.0.0.1:8080", bob_token)?;
//!
//! let sent = alice.send(NewTask::new("bob", "summarise the Q3 report")).await?;
//! let leased = bob.next_task(Duration::from_secs(5)).await?.expect("a task");
//! let reply = Reply::text("Revenue up 4%.").for_task(leased.task.id, Some(leased.lease.lease_id));
//! bob.post_result(&reply).await?;
//! let result = alice.next_result(Duration::from_secs(5)).await?.expect("a result");
//! assert_eq!(result.task_id, sent.task_id);
//! # Ok(()) }
//! ```
//!
//! # TLS
//!
//! An `https://` base URL reaches a mailbox behind a TLS-terminating proxy or load balancer
//! (the service itself speaks plain HTTP). TLS is rustls with the `ring` provider (no OpenSSL).
//! The server's certificate must chain to a root of the system's store (Debian's
//! `ca-certificates`; `SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured), read when the client is
//! built, or to one added with [`ClientBuilder::add_root_certificate_pem`], e.g. a private CA;
//! [`ClientBuilder::tls_built_in_roots`]`(false)` trusts the added ones alone. A client of an
//! `http://` URL reads no store and speaks plain HTTP.
//!
//! ```no_run
//! # fn demo(token: String) -> Result<(), Box<dyn std::error::Error>> {
//! let ca = std::fs::read("/etc/a2a/private-ca.pem")?;
//! let client = a2a_mailbox_client::Client::builder("https://mailbox.internal", token)
//!     .add_root_certificate_pem(ca)
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! # Retries
//!
//! Sends, results, heartbeats, cancels and operator writes carry their task id and
//! `Idempotency-Key`, and reads consume nothing: a second try answers like the first, so they
//! are retried after any retriable error, including a broken connection and a gateway's
//! 502/503/504, when the mailbox may have acted.
//!
//! A lease ([`Client::next_task`], [`Client::lease_next`], [`Client::lease_batch`]) and a
//! drain ([`Client::next_result`], [`Client::drain_results`]) consume what they answer. Each
//! logical call picks an `attempt_id` (a UUIDv4) once and sends the same one on every try; the
//! mailbox answers a second try with what the first one took (the same leases, those still
//! held, or the same results) instead of taking more. So they are retried like the others for
//! 4 minutes after the first try (the mailbox keeps an `attempt_id` 5 minutes); later, only when
//! the connection could not be made ([`Error::Transport`] with `before_sending: true`) or when
//! the mailbox answered its own error body marked `retriable` (it changed nothing). An error
//! that comes back after the mailbox may have acted leaves, after a lease, a task in flight to
//! this agent, for an operator's requeue or the retry gate (the mailbox never hands a lease out
//! again by itself); after a drain, [`Client::get_task`] still reads the result.
//!
//! So that a connection the mailbox closes for idleness (after
//! [`types::IDLE_CONNECTION_CLOSE`], 5 s) never breaks a lease or a drain, the client does not
//! reuse a connection idle for [`types::IDLE_CONNECTION_REUSE`] (4 s) or more: such a request
//! goes out on a new one.

#![warn(missing_docs)]

mod backoff;
mod batch_worker;
mod batches;
mod call;
mod checkpoint;
mod client;
mod durable;
mod error;
mod listing;
mod ops;
mod otel;
mod results;
mod tasks;
mod tls;
mod token;
mod worker;

pub use a2a_mailbox_types as types;
pub use a2a_mailbox_types::answers::{LeaseItem, LeaseRef, ResultItem};
pub use a2a_mailbox_types::{AgentId, ErrorCode, Trace};
pub use backoff::Backoff;
pub use batch_worker::BatchWorker;
pub use checkpoint::{Checkpoint, Resumed, CHECKPOINT_VERSION};
pub use client::{Client, ClientBuilder};
pub use error::{ApiError, Error};
pub use listing::ListQuery;
pub use ops::{AuditQuery, QueueQuery};
pub use results::Reply;
pub use tasks::{Leased, NewTask, Sent, MAX_WAIT};
pub use token::token_subject;
pub use worker::{Outcome, Worker};
