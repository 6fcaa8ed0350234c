//! The elements of PostgreSQL's group commit: a send, a lease claim, a result or a drain, bound
//! as the argument arrays of one `a2a_step_many` call (`step_many.sql`), and the rows it answers
//! mapped back to each element.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::{PgConnection, PgPool};

use super::lane::{Combiner, Element, ElementHold, MAX_DRAIN_RIDERS};
use super::metrics::LaneCounters;
use super::statements::{
    LANE_CLAIM, LANE_DRAIN, LANE_SEND, LANE_SEND_LEASED, LANE_STORED, STEP_MANY,
};
use crate::error::MailboxError;
use crate::metrics::{kind, Metrics, BATCH_KINDS};
use crate::store::new_task::NewTask;
use crate::store::records::{Committed, Drained, TaskRow};
use crate::store::runner::Column;

mod element;
mod handoffs;
mod place;

pub(super) use element::mismatch;
pub use element::{ClaimArgs, DrainArgs, Outcome, ResultArgs, SendArgs, Step};
use place::{place, StepRow};
#[cfg(test)]
mod in_batch_tests;
#[cfg(test)]
mod tests;

/// The kinds of element, as `a2a_step_many` numbers them (`__KIND_*__` in `step_many.sql`) and
/// as [`BATCH_KINDS`] names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    Send = kind::SEND as isize,
    Claim = kind::CLAIM as isize,
    Result = kind::RESULT as isize,
    Drain = kind::DRAIN as isize,
}

impl StepKind {
    pub const ALL: [StepKind; 4] = [
        StepKind::Send,
        StepKind::Claim,
        StepKind::Result,
        StepKind::Drain,
    ];

    /// The mark `step_many.sql` writes in place of this kind's number.
    pub fn mark(self) -> &'static str {
        match self {
            StepKind::Send => "__KIND_SEND__",
            StepKind::Claim => "__KIND_CLAIM__",
            StepKind::Result => "__KIND_RESULT__",
            StepKind::Drain => "__KIND_DRAIN__",
        }
    }
}

/// What each statement mark of `step_many.sql` stands for: the statement every other path runs
/// to queue a task, lease a queue's head, store a result and drain one, on the batch's arrays.
/// (The kinds' marks are [`StepKind::mark`].)
const STATEMENT_MARKS: [(&str, &str); 5] = [
    ("__SEND_LEASED__", LANE_SEND_LEASED),
    ("__SEND__", LANE_SEND),
    ("__CLAIM__", LANE_CLAIM),
    ("__STORED__", LANE_STORED),
    ("__DRAIN__", LANE_DRAIN),
];

/// `step_many.sql` with the kinds' numbers written in.
fn with_kinds() -> String {
    StepKind::ALL
        .iter()
        .fold(include_str!("step_many.sql").to_owned(), |sql, k| {
            sql.replace(k.mark(), &(*k as usize).to_string())
        })
}

/// `step_many.sql` with the kinds' numbers and the shared statements written in: what is
/// installed. `postgres/statements.sql` shows it, each statement laid out on lines.
pub fn step_many_source() -> String {
    STATEMENT_MARKS
        .iter()
        .fold(with_kinds(), |sql, (mark, statement)| {
            sql.replace(mark, statement)
        })
}

/// [`step_many_source`] with each statement as `lay` writes it, given the statement and the
/// text before its mark on the mark's line (the committed `statements.sql` lays them out).
#[cfg(test)]
pub(crate) fn step_many_laid_out(lay: impl Fn(&str, &str) -> String) -> String {
    let mut sql = with_kinds();
    for (mark, statement) in STATEMENT_MARKS {
        while let Some(at) = sql.find(mark) {
            let line = sql
                .get(..at)
                .map_or(0, |before| before.rfind('\n').map_or(0, |n| n + 1));
            let laid = lay(statement, sql.get(line..at).unwrap_or_default());
            sql.replace_range(at..at + mark.len(), &laid);
        }
    }
    sql
}

impl Element for Step {
    type Outcome = Outcome;

    fn kind(&self) -> usize {
        (match self {
            Step::Send(_) => StepKind::Send,
            Step::Claim(_) => StepKind::Claim,
            Step::Result(_) => StepKind::Result,
            Step::Drain(_) => StepKind::Drain,
        }) as usize
    }

    fn found(outcome: &Outcome) -> bool {
        !matches!(outcome, Outcome::Claimed(None) | Outcome::Drained(None))
    }

    fn handed(batch: &[Step], outcomes: &mut [Outcome]) {
        handoffs::mark(batch, outcomes);
    }

    fn ride(&mut self) {
        match self {
            Step::Claim(a) => a.if_sent = true,
            Step::Drain(a) => a.if_stored = true,
            Step::Send(_) | Step::Result(_) => {}
        }
    }

    /// A parked claim rides in a batch that sends a task to its recipient, at most as many
    /// parked claims per recipient as the batch sends it tasks (the oldest first); a parked
    /// drain rides in a batch that stores a result, since a result's sender is known only once
    /// the batch has run (`a2a_step_many` skips the drains whose sender got none, at the cost
    /// of one array lookup each), at most [`MAX_DRAIN_RIDERS`] of them, the oldest first: with
    /// more senders waiting than that, the others are woken after the commit as before.
    fn riders(batch: &[&Step], parked: &[&Step]) -> Vec<bool> {
        let mut sends: Vec<(&str, usize)> = Vec::new();
        let mut results = false;
        let mut drains = 0;
        for step in batch {
            match step {
                Step::Send(a) => match sends.iter_mut().find(|(r, _)| *r == a.task.recipient) {
                    Some((_, n)) => *n = n.saturating_add(1),
                    None => sends.push((&a.task.recipient, 1)),
                },
                Step::Result(_) => results = true,
                Step::Claim(_) | Step::Drain(_) => {}
            }
        }
        parked
            .iter()
            .map(|step| match step {
                Step::Claim(a) => match sends.iter_mut().find(|(r, _)| *r == a.recipient) {
                    Some((_, n)) if *n > 0 => {
                        *n = n.saturating_sub(1);
                        true
                    }
                    _ => false,
                },
                Step::Drain(_) if results && drains < MAX_DRAIN_RIDERS => {
                    drains = drains.saturating_add(1);
                    true
                }
                Step::Drain(_) | Step::Send(_) | Step::Result(_) => false,
            })
            .collect()
    }
}

/// `bind_columns!(query; elements: field, …; …)` binds, for each kind's elements in turn, one
/// array per field: the `a2a_step_many` arguments of that kind, in its parameter order.
macro_rules! bind_columns {
    ($q:expr; $($elements:ident: $($field:ident),+;)+) => {
        $q $($(.bind($elements.iter().map(|a| a.$field.clone()).collect::<Vec<_>>()))+)+
    };
}

/// The group commit of a PostgreSQL mailbox: one lane for the four kinds.
pub struct PgBatches {
    lane: Combiner<Step>,
}

impl PgBatches {
    pub fn new(pool: PgPool, metrics: Arc<Metrics>) -> PgBatches {
        PgBatches {
            lane: Combiner::new(pool, metrics, step_many),
        }
    }

    /// See [`Combiner::run_on_the_http_worker`].
    pub fn run_on_the_http_worker(&self) {
        self.lane.run_on_the_http_worker();
    }

    pub async fn send(&self, a: SendArgs) -> Result<Option<Committed<()>>, MailboxError> {
        match self.lane.call(Step::Send(a)).await? {
            Outcome::Sent(b) => Ok(b),
            other => Err(mismatch(other)),
        }
    }

    /// A long-poll's claim: if it finds nothing, it stays parked, and the hold answers the
    /// batch that leases it a task sent later ([`Outcome::claimed`] reads its outcome).
    pub async fn claim(&self, a: ClaimArgs) -> (Result<Option<TaskRow>, MailboxError>, StepHold) {
        let (outcome, hold) = self.lane.call_parking(Step::Claim(a)).await;
        (outcome.and_then(Outcome::claimed), hold)
    }

    pub async fn result(&self, a: ResultArgs) -> Result<Option<Committed<String>>, MailboxError> {
        match self.lane.call(Step::Result(a)).await? {
            Outcome::Stored(r) => Ok(r),
            other => Err(mismatch(other)),
        }
    }

    /// A long-poll's drain: if it finds nothing, it stays parked, and the hold answers the
    /// batch that drains it a result stored later ([`Outcome::drained`] reads its outcome).
    pub async fn drain(&self, sender: String) -> (Result<Option<Drained>, MailboxError>, StepHold) {
        let (outcome, hold) = self
            .lane
            .call_parking(Step::Drain(DrainArgs {
                sender,
                if_stored: false,
            }))
            .await;
        (outcome.and_then(Outcome::drained), hold)
    }

    /// `(kind, requests waiting for the next batch, polls parked)` per kind, in [`BATCH_KINDS`]
    /// order.
    pub fn waiting(&self) -> [(&'static str, usize, usize); 4] {
        let (waiting, parked) = self.lane.waiting();
        let [k0, k1, k2, k3] = BATCH_KINDS;
        let [w0, w1, w2, w3] = waiting;
        let [p0, p1, p2, p3] = parked;
        [(k0, w0, p0), (k1, w1, p1), (k2, w2, p2), (k3, w3, p3)]
    }

    /// See [`Combiner::counters`].
    pub fn counters(&self) -> &LaneCounters {
        self.lane.counters()
    }
}

/// A long-poll's claim or drain parked in the batch lane.
pub type StepHold = ElementHold<Step>;

/// Binds a batch's elements as the argument arrays of `a2a_step_many` (`step_many.sql`), each
/// kind's arrays holding that kind's elements in batch order, and maps the answered rows back.
fn step_many<'c>(
    conn: &'c mut PgConnection,
    steps: &[Step],
) -> BoxFuture<'c, Result<Vec<Outcome>, sqlx::Error>> {
    let mut at: [Vec<usize>; 4] = Default::default();
    let (mut sends, mut claims, mut results, mut drains) = (vec![], vec![], vec![], vec![]);
    for (i, step) in steps.iter().enumerate() {
        if let Some(of_kind) = at.get_mut(step.kind()) {
            of_kind.push(i);
        }
        match step {
            Step::Send(a) => sends.push(a),
            Step::Claim(a) => claims.push(a),
            Step::Result(a) => results.push(a),
            Step::Drain(a) => drains.push(a),
        }
    }
    let mut query = sqlx::query_as(STEP_MANY);
    for column in NewTask::by_column(sends.iter().map(|a| &a.task)) {
        query = match column {
            Column::Texts(v) => query.bind(v),
            Column::Ints(v) => query.bind(v),
        };
    }
    let query = bind_columns!(query; sends: audit_body;).bind(event_ids(sends.len()));
    let query = bind_columns!(query;
        claims: recipient, lease_id, caller, if_sent;
        results: task_id, status, content, error_message, caller, lease_guard, audit_pre, audit_post;
    );
    let query = bind_columns!(query.bind(event_ids(results.len())); drains: sender, if_stored;)
        .bind(crate::clock::now_ms());
    let kinds: Vec<usize> = steps.iter().map(Element::kind).collect();
    Box::pin(async move {
        let rows: Vec<StepRow> = query.fetch_all(&mut *conn).await?;
        Ok(place(&kinds, rows))
    })
}

/// `n` audit event ids (`s_events`, `r_events`): UUIDv7s, cheaper here than by the default.
fn event_ids(n: usize) -> Vec<String> {
    (0..n).map(|_| uuid::Uuid::now_v7().to_string()).collect()
}
