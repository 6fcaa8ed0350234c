//! A2A streams (docs/contract.md#a2a-streaming): SendStreamingMessage and SubscribeToTask on
//! both bindings answer `text/event-stream`. The first event is the Task as it is; after it one
//! `statusUpdate` per change of its A2A state (a COMPLETED task's result first, as an
//! `artifactUpdate`), and the stream ends after a terminal state or after
//! `A2A_MAILBOX_A2A_STREAM_MS`.
//!
//! A stream is a waiting request of its caller ([`Follow`]): it looks at the task when a commit
//! that may have changed it wakes it, and once per keep-alive interval (the keep-alive comment
//! line goes out then). It runs as a task of its own that ends as soon as the client is gone.

use actix_web::HttpResponse;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::errors::{A2aError, Fault};
use super::methods::Call;
use super::wire::{self, View};
use crate::auth::Caller;
use crate::domain::{AgentId, TaskStatus};
use crate::error::MailboxError;
use crate::http::sse::{self, Events, Gone};
use crate::http::state::State;
use crate::mailbox::follow::Follow;

/// How each event travels: a JSON-RPC response carrying the request's `id`, or HTTP+JSON's bare
/// StreamResponse.
pub enum Framing {
    Rpc(Value),
    Rest,
}

impl Framing {
    async fn event(&self, out: &Events, result: Value) -> Result<(), Gone> {
        match self {
            Framing::Rpc(id) => {
                let data = json!({"jsonrpc": "2.0", "id": id, "result": result});
                out.data(&data).await
            }
            Framing::Rest => out.data(&result).await,
        }
    }

    async fn error(&self, out: &Events, e: &A2aError) -> Result<(), Gone> {
        match self {
            Framing::Rpc(id) => {
                let data = json!({"jsonrpc": "2.0", "id": id, "error": e.rpc_error()});
                out.data(&data).await
            }
            Framing::Rest => out.named("error", &e.rest_body()).await,
        }
    }
}

/// Which stream a call opens.
#[derive(Clone, Copy, Debug)]
pub enum Opens {
    /// SendStreamingMessage: queues a message and follows its task.
    Send,
    /// SubscribeToTask: follows a task that is not terminal yet.
    Subscribe,
}

/// What a streaming call asks: who, of which agent, with which params.
pub struct Request {
    pub state: State,
    pub caller: Caller,
    pub recipient: AgentId,
    pub key_header: Option<String>,
    pub trace: Option<a2a_mailbox_types::Trace>,
    pub params: Value,
}

/// Answers the stream `opens` asks for, or, before anything is streamed, the refusal: an A2A
/// error, or a native one (the waiting limits of docs/contract.md#waiting among them; a refused
/// SendStreamingMessage queues nothing).
pub async fn respond(r: Request, opens: Opens, framing: Framing) -> Result<HttpResponse, Fault> {
    let (events, response) = sse::channel();
    let (ready_tx, ready) = oneshot::channel::<Result<(), Fault>>();
    actix_web::rt::spawn(async move {
        let call = Call {
            state: &r.state,
            caller: &r.caller,
            recipient: &r.recipient,
            key_header: r.key_header.as_deref(),
            trace: r.trace.as_ref(),
        };
        let opened = match opens {
            Opens::Send => call.stream_message(&r.params).await,
            Opens::Subscribe => call.subscribe(&r.params).await,
        };
        let (follow, view) = match opened {
            Ok(opened) => opened,
            Err(e) => return drop(ready_tx.send(Err(e))),
        };
        if ready_tx.send(Ok(())).is_err() {
            return;
        }
        let out = Out { events, framing };
        if let Err(StreamEnded::Fault(f)) = run(&call, &follow, view, &out).await {
            let _ = out.framing.error(&out.events, &f.in_stream()).await;
        }
    });
    ready.await.map_err(|_| {
        Fault::Native(MailboxError::internal(
            "the stream's task ended before it began",
        ))
    })??;
    Ok(response)
}

/// Why a stream ended early.
enum StreamEnded {
    /// The client went away.
    Gone,
    Fault(Fault),
}

impl From<Fault> for StreamEnded {
    fn from(f: Fault) -> StreamEnded {
        StreamEnded::Fault(f)
    }
}

impl From<MailboxError> for StreamEnded {
    fn from(e: MailboxError) -> StreamEnded {
        StreamEnded::Fault(e.into())
    }
}

impl From<Gone> for StreamEnded {
    fn from(_: Gone) -> StreamEnded {
        StreamEnded::Gone
    }
}

/// Where a stream writes, and how.
struct Out {
    events: Events,
    framing: Framing,
}

impl Out {
    async fn event(&self, result: Value) -> Result<(), StreamEnded> {
        Ok(self.framing.event(&self.events, result).await?)
    }
}

/// The stream's life: the Task, its changes, and its end.
async fn run(
    call: &Call<'_>,
    follow: &Follow<'_>,
    view: View,
    out: &Out,
) -> Result<(), StreamEnded> {
    let settings = &call.state.a2a;
    let deadline = crate::clock::deadline_after(settings.stream);
    let first = call.deliver_one(follow.look().await?).await?;
    out.event(json!({"task": wire::task(&first, view)})).await?;
    if first.state.is_settled() {
        return Ok(());
    }
    let mut shown = wire::state_of(&first);
    let mut written = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let beat = written.checked_add(settings.keep_alive).unwrap_or(deadline);
        if now >= beat {
            out.events.keep_alive().await?;
            written = now;
            continue;
        }
        tokio::select! {
            () = follow.wait(beat.min(deadline).saturating_duration_since(now)) => {}
            () = out.events.closed() => return Err(StreamEnded::Gone),
        }
        let status = follow.look().await?;
        if wire::state_of(&status) == shown {
            continue;
        }
        if status.state.is_settled() {
            return settled(call, status, out).await;
        }
        shown = wire::state_of(&status);
        out.event(wire::status_update(&status)).await?;
        written = Instant::now();
    }
    // Out of time: the task as it is now, and the end.
    let status = follow.look().await?;
    if status.state.is_settled() {
        return settled(call, status, out).await;
    }
    out.event(json!({"task": wire::task(&status, view)})).await
}

/// The last events of a task that reached a terminal state: its result (delivered to its
/// sender, as GetTask would), then its status.
async fn settled(call: &Call<'_>, status: TaskStatus, out: &Out) -> Result<(), StreamEnded> {
    let status = call.deliver_one(status).await?;
    if let Some(artifact) = wire::artifact_update(&status) {
        out.event(artifact).await?;
    }
    out.event(wire::status_update(&status)).await
}
