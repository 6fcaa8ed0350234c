//! Results (docs/contract.md#endpoints): post one fenced by its lease, drain them, peek at them.

use std::time::Duration;

use uuid::Uuid;

use crate::call::{json, Call};
use crate::tasks::MAX_WAIT;
use crate::{Client, Error};
use a2a_mailbox_types::answers::{ResultOpt, ResultPosted, Results};
use a2a_mailbox_types::{A2ATaskResult, Content, PostResult, ResultStatus, Trace};

/// What a recipient answers for a task: a status, content, and for errors a message.
///
/// ```
/// use a2a_mailbox_client::Reply;
/// let reply = Reply::text("Revenue up 4%.");
/// let failed = Reply::error("the report is missing");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// `ok`, `error` or `partial`.
    pub status: ResultStatus,
    /// The answer's content.
    pub content: Vec<Content>,
    /// Why it failed, for `error`.
    pub error_message: Option<String>,
    /// The W3C trace context of the span that did the work, handed to the sender with the result.
    pub trace: Option<Trace>,
}

impl Reply {
    /// Success with `content`.
    pub fn ok(content: Vec<Content>) -> Reply {
        Reply {
            status: ResultStatus::Ok,
            content,
            error_message: None,
            trace: None,
        }
    }
    /// Success with one text block.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::ok(vec![Content::Text { text: text.into() }])
    }
    /// Part of the work was done.
    pub fn partial(content: Vec<Content>) -> Reply {
        Reply {
            status: ResultStatus::Partial,
            ..Reply::ok(content)
        }
    }
    /// Failure, said in `message`.
    pub fn error(message: impl Into<String>) -> Reply {
        Reply {
            status: ResultStatus::Error,
            content: Vec::new(),
            error_message: Some(message.into()),
            trace: None,
        }
    }

    /// With the W3C trace context of the span that did the work: the sender finds it in the
    /// drained result's `trace`. Never part of the result's identity.
    pub fn trace(mut self, trace: Trace) -> Reply {
        self.trace = Some(trace);
        self
    }

    /// The body of `POST /a2a/results` for `task_id`, fenced by `lease_id` when given.
    pub fn for_task(self, task_id: Uuid, lease_id: Option<Uuid>) -> PostResult {
        PostResult {
            task_id,
            status: self.status,
            content: self.content,
            error_message: self.error_message,
            lease_id,
            trace: self.trace,
        }
    }
}

impl Client {
    /// Posts a result. With `lease_id` set, it is refused (409 `lease_mismatch`) unless that is
    /// still the task's lease; 409 `task_canceled` when the task was canceled. Posting the same
    /// result again is answered like the first time.
    ///
    /// ```no_run
    /// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
    /// use std::time::Duration;
    /// use a2a_mailbox_client::Reply;
    /// if let Some(leased) = client.next_task(Duration::from_secs(20)).await? {
    ///     let reply = Reply::text(format!("done: {}", leased.task.intent_text));
    ///     client.post_result(&reply.for_task(leased.task.id, Some(leased.lease.lease_id))).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn post_result(&self, result: &PostResult) -> Result<ResultPosted, Error> {
        let call = Call::post("/a2a/results", Some(json(result)));
        Ok(self.call::<ResultPosted>(call).await?.value)
    }

    /// Drains the oldest pending result of a task this agent sent, waiting up to `wait` (at
    /// most 30 s); the task becomes `resolved` and leaves [`Client::checkpoint`].
    pub async fn next_result(&self, wait: Duration) -> Result<Option<A2ATaskResult>, Error> {
        let call = Call::get("/a2a/results/next").consuming(wait.min(MAX_WAIT));
        let result = self.call::<ResultOpt>(call).await?.value.result;
        if let Some(r) = &result {
            self.ledger().forget(r.task_id);
        }
        Ok(result)
    }

    /// Pending results of this agent's tasks, oldest first (at most `limit`); drains nothing.
    pub async fn recent_results(&self, limit: u32) -> Result<Vec<A2ATaskResult>, Error> {
        let call = Call::get("/a2a/results/recent").query(vec![("limit", limit.to_string())]);
        Ok(self.call::<Results>(call).await?.value.results)
    }
}
