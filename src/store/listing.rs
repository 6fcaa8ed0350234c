//! The task list (docs/contract.md#listing) as the store runs it: one keyset page, newest first
//! (creation time, then id, both descending), after equality filters that each lead an index of
//! `migrations/*/0003_listing.sql` (on PostgreSQL, indexes of the write-once keys of
//! `0011_listing_keys.sql`); and the tally of a filter's tasks by state. What a caller may see
//! and what a role means are the mailbox's; here they arrive as plain filters.

use super::facade::Store;
use super::records::{Count, TaskRow};
use super::runner::Val;
use super::statements::task_cols;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// A column a list may filter on by equality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListColumn {
    Sender,
    Recipient,
    Parent,
    ContextId,
    TaskKind,
    /// The agent holding the lease (the stale-lease page's filter).
    LeasedTo,
}

impl ListColumn {
    fn name(self) -> &'static str {
        match self {
            ListColumn::Sender => "sender",
            ListColumn::Recipient => "recipient",
            ListColumn::Parent => "parent",
            ListColumn::ContextId => "context_id",
            ListColumn::TaskKind => "task_kind",
            ListColumn::LeasedTo => "leased_to",
        }
    }
}

/// Which tasks a list keeps. Every condition holds at once.
#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    /// Only tasks this agent sent, receives or holds the lease of (`None`: every task).
    pub visible_to: Option<String>,
    /// Only tasks in one of these states (empty: any state).
    pub states: Vec<&'static str>,
    /// Only answered tasks whose result has one of these statuses (empty: no such condition).
    pub result_statuses: Vec<&'static str>,
    /// `column = value`, each.
    pub equal: Vec<(ListColumn, String)>,
    /// `created_at_ms > after` and `< before`.
    pub created_after_ms: Option<i64>,
    pub created_before_ms: Option<i64>,
    /// `updated_at_ms > after`: tasks whose state changed since.
    pub updated_after_ms: Option<i64>,
    /// Only tasks whose id starts with this (a range of the primary key).
    pub id_prefix: Option<String>,
}

/// Where a page starts: just after this task in the newest-first order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageAfter {
    pub created_at_ms: i64,
    pub id: String,
}

/// A statement and its bound parameters, numbered `$1`.. as it grows.
pub(super) struct Sql {
    pub(super) text: String,
    pub(super) args: Vec<Val>,
}

impl Sql {
    /// A statement that starts with `text`, nothing bound yet.
    pub(super) fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
        }
    }

    pub(super) fn bind(&mut self, v: impl Into<Val>) -> String {
        self.args.push(v.into());
        format!("${}", self.args.len())
    }

    /// `AND column IN (values)`, unless `values` is empty.
    fn any_of(&mut self, column: &str, values: &[&'static str]) {
        if values.is_empty() {
            return;
        }
        let list: Vec<String> = values.iter().map(|v| self.bind(*v)).collect();
        self.text
            .push_str(&format!(" AND {column} IN ({})", list.join(", ")));
    }

    /// Appends the filter's conditions (`WHERE` included).
    pub(super) fn filter(&mut self, f: &TaskFilter) {
        self.text.push_str(" WHERE 1 = 1");
        if let Some(me) = &f.visible_to {
            let p = self.bind(me.as_str());
            self.text.push_str(&format!(
                " AND (sender = {p} OR recipient = {p} OR leased_to = {p})"
            ));
        }
        self.any_of("state", &f.states);
        self.any_of("result_status", &f.result_statuses);
        for (col, value) in &f.equal {
            let p = self.bind(value.as_str());
            self.text.push_str(&format!(" AND {} = {p}", col.name()));
        }
        if let Some(after) = f.created_after_ms {
            let p = self.bind(after);
            self.text.push_str(&format!(" AND created_at_ms > {p}"));
        }
        if let Some(before) = f.created_before_ms {
            let p = self.bind(before);
            self.text.push_str(&format!(" AND created_at_ms < {p}"));
        }
        if let Some(after) = f.updated_after_ms {
            let p = self.bind(after);
            self.text.push_str(&format!(" AND updated_at_ms > {p}"));
        }
        if let Some(prefix) = &f.id_prefix {
            // Ids are UUIDs: every character they hold sorts below '~'.
            let (from, to) = (self.bind(prefix.as_str()), self.bind(format!("{prefix}~")));
            self.text
                .push_str(&format!(" AND id >= {from} AND id < {to}"));
        }
    }
}

/// The page statement: the newest `limit` tasks of `filter` after `after`.
fn page_sql(listed: &str, filter: &TaskFilter, after: Option<&PageAfter>, limit: i64) -> Sql {
    let mut q = Sql::new(format!("SELECT {} FROM {listed}", task_cols!()));
    q.filter(filter);
    if let Some(a) = after {
        let (ms, id) = (q.bind(a.created_at_ms), q.bind(a.id.as_str()));
        q.text
            .push_str(&format!(" AND (created_at_ms, id) < ({ms}, {id})"));
    }
    let l = q.bind(limit);
    q.text
        .push_str(&format!(" ORDER BY created_at_ms DESC, id DESC LIMIT {l}"));
    q
}

#[derive(sqlx::FromRow)]
struct StateCount {
    state: String,
    n: i64,
}

impl Store {
    /// The newest `limit` tasks of `filter` after `after`.
    pub async fn task_page(
        &self,
        filter: &TaskFilter,
        after: Option<&PageAfter>,
        limit: i64,
    ) -> Result<Vec<TaskRow>> {
        let q = page_sql(self.statements().listed, filter, after, limit);
        Ok(self.read_all(&q.text, &q.args).await?)
    }

    /// How many of `filter`'s tasks are in each state (states without tasks left out).
    pub async fn count_by_state(&self, filter: &TaskFilter) -> Result<Vec<(String, i64)>> {
        let listed = self.statements().listed;
        let mut q = Sql::new(format!("SELECT state, COUNT(*) AS n FROM {listed}"));
        q.filter(filter);
        q.text.push_str(" GROUP BY state");
        let rows: Vec<StateCount> = self.read_all(&q.text, &q.args).await?;
        Ok(rows.into_iter().map(|r| (r.state, r.n)).collect())
    }

    /// How many of `filter`'s tasks there are, counted up to `cap`: a filter of more tasks
    /// answers `cap`, and no count walks more than `cap` rows, however many match.
    pub async fn count_up_to(&self, filter: &TaskFilter, cap: i64) -> Result<u64> {
        let listed = self.statements().listed;
        let mut q = Sql::new(format!(
            "SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM {listed}"
        ));
        q.filter(filter);
        let l = q.bind(cap);
        q.text.push_str(&format!(" LIMIT {l}) AS capped"));
        let count: Option<Count> = self.read_optional(&q.text, &q.args).await?;
        Ok(count.map_or(0, |c| u64::try_from(c.n).unwrap_or(0)))
    }

    /// The plans of the reads a waiting long-poll repeats (is anything queued for this
    /// recipient, pending for this sender?): they must walk their state's partial index, not
    /// every task of the agent.
    pub async fn explain_wakeup_checks(&self) -> Result<String> {
        let queued = self
            .explain(super::statements::ANY_QUEUED, super::runner::args!["bob"])
            .await?;
        let pending = self
            .explain(
                super::statements::ANY_PENDING,
                super::runner::args!["alice"],
            )
            .await?;
        Ok(format!("{queued}\n{pending}"))
    }

    /// The query plan of a page (`EXPLAIN QUERY PLAN` on SQLite, `EXPLAIN` on PostgreSQL), one
    /// line per row: what the tests read to hold that a page is an index range scan.
    pub async fn explain_task_page(
        &self,
        filter: &TaskFilter,
        after: Option<&PageAfter>,
        limit: i64,
    ) -> Result<String> {
        let q = page_sql(self.statements().listed, filter, after, limit);
        Ok(self.explain(&q.text, &q.args).await?)
    }
}
