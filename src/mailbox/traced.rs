//! The operations a message passes through, each in its messaging span
//! (`telemetry::spans`): send, lease, result and drain, on every surface that calls them (the
//! native API, the batch routes, the A2A facade and the MCP server). Each is its `_untraced`
//! twin in the span; the span learns its links (the leased tasks' trace contexts, the answered
//! task's) and ids from the answer. With export off the span is `Span::none()`.

use std::time::Duration;

use serde_json::Value;
use tracing::{Instrument, Span};
use uuid::Uuid;

use super::batch::BatchItem;
use super::batch_items::ItemOutcomes;
use super::send::Kept;
use super::takes::Attempt;
use super::{Author, Done, Mailbox};
use crate::auth::Caller;
use crate::domain::answers::{
    ResultBatchDrained, ResultOpt, ResultPosted, TaskBatchLeased, TaskOpt, TaskQueued,
};
use crate::domain::PostResult;
use crate::error::MailboxError;
use crate::telemetry::spans;
use a2a_mailbox_types::Trace;

/// The trace context a task as sent names in its `trace` field, if well formed.
fn trace_in(raw: &Value) -> Option<Trace> {
    raw.get("trace").and_then(Trace::in_object)
}

impl Mailbox {
    /// `POST /a2a/tasks` (docs/contract.md#endpoints): see [`Mailbox::send_keeping_untraced`].
    pub async fn send_keeping(
        &self,
        by: Author<'_>,
        raw: &Value,
        kept: Option<Kept>,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        let span = if crate::telemetry::on() {
            let recipient = raw.get("recipient").and_then(Value::as_str);
            spans::send(recipient.unwrap_or_default(), trace_in(raw).as_ref())
        } else {
            Span::none()
        };
        let out = self
            .send_keeping_untraced(by, raw, kept)
            .instrument(span.clone())
            .await;
        if let Ok(done) = &out {
            spans::record_ids(&span, std::iter::once(done.value.task_id));
        }
        out
    }

    /// `POST /a2a/tasks/batch`: see [`Mailbox::send_batch_untraced`].
    pub async fn send_batch(
        &self,
        by: Author<'_>,
        tasks: Vec<Value>,
    ) -> Result<Done<Vec<BatchItem>>, MailboxError> {
        let span = if crate::telemetry::on() {
            let traces: Vec<Option<Trace>> = tasks.iter().map(trace_in).collect();
            spans::send_batch(traces.iter().map(Option::as_ref))
        } else {
            Span::none()
        };
        let out = self
            .send_batch_untraced(by, tasks)
            .instrument(span.clone())
            .await;
        if let Ok(done) = &out {
            spans::record_ids(&span, done.value.iter().map(|i| i.task_id));
        }
        out
    }

    /// `GET /a2a/tasks/next`: see [`Mailbox::lease_next_untraced`].
    pub async fn lease_next(
        &self,
        caller: &Caller,
        recipient: &str,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<TaskOpt, MailboxError> {
        let span = spans::lease(recipient);
        let out = self
            .lease_next_untraced(caller, recipient, wait, attempt)
            .instrument(span.clone())
            .await;
        if let Ok(TaskOpt { task: Some(t), .. }) = &out {
            spans::link_each(&span, [t.trace.as_ref()]);
            spans::record_ids(&span, std::iter::once(t.id));
        }
        out
    }

    /// `GET /a2a/tasks/next?max=`: see [`Mailbox::lease_batch_untraced`].
    pub async fn lease_batch(
        &self,
        caller: &Caller,
        recipient: &str,
        max: u32,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<TaskBatchLeased, MailboxError> {
        let span = spans::lease(recipient);
        let out = self
            .lease_batch_untraced(caller, recipient, max, wait, attempt)
            .instrument(span.clone())
            .await;
        if let Ok(b) = &out {
            spans::link_each(&span, b.leases.iter().map(|l| l.task.trace.as_ref()));
            spans::record_ids(&span, b.leases.iter().map(|l| l.task.id));
        }
        out
    }

    /// `POST /a2a/results`: see [`Mailbox::post_result_untraced`].
    pub async fn post_result(
        &self,
        by: Author<'_>,
        input: &PostResult,
    ) -> Result<Done<ResultPosted>, MailboxError> {
        let span = spans::settle(input.trace.as_ref());
        let out = self
            .post_result_untraced(by, input)
            .instrument(span.clone())
            .await;
        if out.is_ok() {
            self.link_tasks(&span, std::iter::once(input.task_id)).await;
        }
        out
    }

    /// `POST /a2a/results/batch`: see [`Mailbox::post_results_untraced`].
    pub async fn post_results(
        &self,
        by: Author<'_>,
        results: Vec<PostResult>,
    ) -> Result<Done<ItemOutcomes<ResultPosted>>, MailboxError> {
        let span = spans::settle(None);
        let out = self
            .post_results_untraced(by, results)
            .instrument(span.clone())
            .await;
        if let Ok(done) = &out {
            let answered = done
                .value
                .iter()
                .filter(|(_, o)| o.is_ok())
                .map(|(id, _)| *id);
            self.link_tasks(&span, answered.collect::<Vec<_>>().into_iter())
                .await;
        }
        out
    }

    /// `GET /a2a/results/next`: see [`Mailbox::drain_result_untraced`].
    pub async fn drain_result(
        &self,
        caller: &Caller,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<ResultOpt, MailboxError> {
        let span = spans::drain(caller.sub.as_str());
        let out = self
            .drain_result_untraced(caller, wait, attempt)
            .instrument(span.clone())
            .await;
        if let Ok(ResultOpt {
            result: Some(r), ..
        }) = &out
        {
            spans::link_each(&span, [r.trace.as_ref()]);
            spans::record_ids(&span, std::iter::once(r.task_id));
        }
        out
    }

    /// `GET /a2a/results/next?max=`: see [`Mailbox::drain_batch_untraced`].
    pub async fn drain_batch(
        &self,
        caller: &Caller,
        max: u32,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<ResultBatchDrained, MailboxError> {
        let span = spans::drain(caller.sub.as_str());
        let out = self
            .drain_batch_untraced(caller, max, wait, attempt)
            .instrument(span.clone())
            .await;
        if let Ok(b) = &out {
            spans::link_each(&span, b.results.iter().map(|r| r.trace.as_ref()));
            spans::record_ids(&span, b.results.iter().map(|r| r.task_id));
        }
        out
    }

    /// Links `span` to the trace context each of `tasks` was sent with, read from the store
    /// (only while spans are exported: a read per answered task).
    async fn link_tasks(&self, span: &Span, tasks: impl ExactSizeIterator<Item = Uuid>) {
        if span.is_none() {
            return;
        }
        let mut traces = Vec::with_capacity(tasks.len());
        let mut answered = Vec::with_capacity(tasks.len());
        for id in tasks {
            answered.push(id);
            if let Ok(Some(row)) = self.store.task(&id.to_string()).await {
                traces.push(row.task().ok().and_then(|t| t.trace));
            }
        }
        spans::link_each(span, traces.iter().map(Option::as_ref));
        spans::record_ids(span, answered.into_iter());
    }
}
