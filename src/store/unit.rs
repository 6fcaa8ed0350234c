//! A write as one unit of work: the mailbox hands the store an operation over a [`Tx`]; the
//! engine runs it in a transaction of its own (PostgreSQL) or in the next group commit (SQLite),
//! and answers only once the transaction that carried it has committed, so nothing is
//! acknowledged before it is durable.

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::runner::Tx;
use crate::error::MailboxError;

/// A write operation: runs inside the transaction it is given. `Ok` keeps what it wrote (a
/// success, or a refusal that only wrote audit rows, which the mailbox answers as `Ok` of its
/// own outcome); `Err` undoes everything it wrote.
pub type Op<R> =
    Box<dyn for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, MailboxError>> + Send>;

/// One write unit of a transaction. `done` is told whether the transaction that carried it
/// committed.
pub(crate) trait Unit: Send {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
    fn done(self: Box<Self>, committed: Result<(), String>);
    /// How the unit is undone when it fails ([`Undo`]).
    fn undo(&self) -> Undo {
        Undo::Alone
    }
}

/// Adapts an [`Op`] to a [`Unit`]: keeps the outcome until the transaction has committed.
struct OpUnit<R> {
    op: Option<Op<R>>,
    undo: Undo,
    outcome: Option<Result<R, MailboxError>>,
    answer: Option<oneshot::Sender<Result<R, MailboxError>>>,
}

impl<R: Send + 'static> Unit for OpUnit<R> {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let Some(op) = self.op.take() else {
                return false;
            };
            let outcome = match op(tx).await {
                Ok(done) => tx.flush_audits().await.map(|()| done),
                Err(e) => {
                    tx.drop_deferred_audits();
                    Err(e)
                }
            };
            let keep = outcome.is_ok();
            self.outcome = Some(outcome);
            keep
        })
    }

    fn undo(&self) -> Undo {
        self.undo
    }

    fn done(mut self: Box<Self>, committed: Result<(), String>) {
        let answer = settle(committed, self.outcome.take());
        if let Some(tx) = self.answer.take() {
            let _ = tx.send(answer);
        }
    }
}

/// What a unit answers once its transaction ended: its own outcome if the transaction
/// committed; if not, its own error, or 503 `storage_unavailable` (retriable) when it had
/// succeeded but the commit failed.
pub(crate) fn settle<R>(
    committed: Result<(), String>,
    outcome: Option<Result<R, MailboxError>>,
) -> Result<R, MailboxError> {
    match (committed, outcome) {
        (Ok(()), Some(outcome)) => outcome,
        (Ok(()), None) => Err(MailboxError::internal("a write unit never ran")),
        (Err(cause), outcome) => {
            if let Some(Err(e)) = outcome {
                Err(e)
            } else {
                tracing::warn!(error = %cause, "write transaction failed");
                Err(MailboxError::storage_unavailable(
                    "the database could not commit the change; retry later",
                ))
            }
        }
    }
}

/// How a unit is undone when it fails. Only SQLite's writer, which runs many units in one
/// transaction, tells the two apart.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undo {
    /// Alone, in a savepoint of its own: the rest of its group still commits.
    Alone,
    /// With its whole group, which then answers as after a failed commit (503, retriable): for
    /// a unit that refuses nothing, whose only failures are faults (a storage fault, or a bug).
    /// It takes no savepoint, so SQLite copies none of the pages it changes.
    WithGroup,
}

/// Runs a write operation as one unit of work through `run` (an engine's way of committing
/// units): `Ok` commits, `Err` undoes everything the operation wrote (as `undo` says). Answers
/// only once the transaction that carried it has ended.
pub(crate) async fn transact<R, F>(
    op: Op<R>,
    undo: Undo,
    run: impl FnOnce(Box<dyn Unit>) -> F,
) -> Result<R, MailboxError>
where
    R: Send + 'static,
    F: std::future::Future<Output = ()>,
{
    let (answer, answered) = oneshot::channel();
    run(Box::new(OpUnit {
        op: Some(op),
        undo,
        outcome: None,
        answer: Some(answer),
    }))
    .await;
    answered.await.unwrap_or_else(|_| {
        Err(MailboxError::internal(
            "a write unit was dropped unanswered",
        ))
    })
}
