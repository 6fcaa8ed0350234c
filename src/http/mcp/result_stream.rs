//! `tasks/result` answered as a stream of events (the client accepts `text/event-stream`): a
//! `notifications/tasks/status` when the task's status changes, keep-alive comments while it
//! works, and the JSON-RPC response once it is terminal. The stream is a waiting request of its
//! caller (docs/contract.md#waiting), woken only by commits that change the task.

use actix_web::HttpResponse;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::rpc::{failure_with, success, RpcError};
use super::tasks;
use super::tools::ToolCall;
use crate::auth::Caller;
use crate::domain::TaskStatus;
use crate::error::MailboxError;
use crate::http::sse::{self, Events, Gone};
use crate::http::state::State;
use crate::mailbox::follow::Follow;

/// Answers `tasks/result` (request `id`) for task `s` as a stream, or the refusal of the
/// waiting limits before anything is streamed.
pub async fn respond(
    state: State,
    caller: Caller,
    id: Value,
    s: TaskStatus,
) -> Result<HttpResponse, RpcError> {
    let (events, response) = sse::channel();
    let (ready_tx, ready) = oneshot::channel::<Result<(), MailboxError>>();
    actix_web::rt::spawn(async move {
        let follow = match state.mailbox.follow(&caller, s.task.id) {
            Ok(follow) => follow,
            Err(e) => return drop(ready_tx.send(Err(e))),
        };
        if ready_tx.send(Ok(())).is_err() {
            return;
        }
        let call = ToolCall {
            state: &state,
            caller: &caller,
        };
        let last = match run(&call, &follow, &events, &s).await {
            Ok(result) => success(&id, result),
            Err(ResultStreamEnded::Gone) => return,
            Err(ResultStreamEnded::Failed(RpcError::Rpc {
                code,
                message,
                data,
            })) => failure_with(&id, code, &message, data),
            // The HTTP status is sent: a native refusal (an expired token among them) is
            // -32603 naming the mailbox's code.
            Err(ResultStreamEnded::Failed(RpcError::Native(e))) => {
                let named = json!({"mailboxError": e.code.as_str()});
                failure_with(&id, -32603, &e.message, Some(named))
            }
        };
        let _ = events.data(&last).await;
    });
    ready
        .await
        .map_err(|_| MailboxError::internal("the stream's task ended before it began"))??;
    Ok(response)
}

enum ResultStreamEnded {
    Gone,
    Failed(RpcError),
}

impl From<Gone> for ResultStreamEnded {
    fn from(_: Gone) -> ResultStreamEnded {
        ResultStreamEnded::Gone
    }
}

impl From<RpcError> for ResultStreamEnded {
    fn from(e: RpcError) -> ResultStreamEnded {
        ResultStreamEnded::Failed(e)
    }
}

impl From<MailboxError> for ResultStreamEnded {
    fn from(e: MailboxError) -> ResultStreamEnded {
        ResultStreamEnded::Failed(RpcError::Native(e))
    }
}

/// Follows the task until it is terminal: its result.
async fn run(
    call: &ToolCall<'_>,
    follow: &Follow<'_>,
    events: &Events,
    first: &TaskStatus,
) -> Result<Value, ResultStreamEnded> {
    let settings = &call.state.a2a;
    let deadline = crate::clock::deadline_after(settings.stream);
    let mut shown = crate::http::json::field(&call.task(first), "status");
    let mut written = Instant::now();
    loop {
        let s = follow.look().await?;
        let task = call.task(&s);
        let status = crate::http::json::field(&task, "status");
        if status != shown {
            shown = status;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                "params": task});
            events.data(&note).await?;
            written = Instant::now();
        }
        if tasks::is_terminal(&s) {
            return Ok(call.result(s).await?);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(ResultStreamEnded::Failed(tasks::still_working(
                &s,
                settings.stream,
            )));
        }
        let beat = written.checked_add(settings.keep_alive).unwrap_or(deadline);
        if now >= beat {
            events.keep_alive().await?;
            written = now;
            continue;
        }
        tokio::select! {
            () = follow.wait(beat.min(deadline).saturating_duration_since(now)) => {}
            () = events.closed() => return Err(ResultStreamEnded::Gone),
        }
    }
}
