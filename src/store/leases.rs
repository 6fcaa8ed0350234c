//! The leases an operator looks through (the dashboard's stale-lease page): in-flight tasks,
//! filtered like a list (`listing.rs`'s conditions) and by how long their lease has been idle and
//! whether they declared themselves idempotent, in one of a few orders, one keyset page at a
//! time, with the number of leases the filter matches. Every statement reads only in-flight rows:
//! their partial index when ordered by heartbeat, else the in-flight rows sorted (there are as
//! many as there are workers at work, not as many as tasks).

use super::facade::Store;
use super::listing::{Sql, TaskFilter};
use super::records::{Count, TaskRow};
use super::statements::task_cols;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// The orders a page of leases may come in; ties go by task id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LeaseOrder {
    /// Longest idle first: the oldest last heartbeat.
    #[default]
    Idle,
    /// Most recently heard from first.
    Recent,
    /// Most attempts first.
    Attempts,
    /// By the agent holding the lease, A to Z.
    Lessee,
    /// By recipient, A to Z.
    Recipient,
}

impl LeaseOrder {
    /// The sort column, whether it descends, and whether it holds text.
    fn column(self) -> (&'static str, bool, bool) {
        match self {
            LeaseOrder::Idle => ("heartbeat_at_ms", false, false),
            LeaseOrder::Recent => ("heartbeat_at_ms", true, false),
            LeaseOrder::Attempts => ("attempt", true, false),
            LeaseOrder::Lessee => ("leased_to", false, true),
            LeaseOrder::Recipient => ("recipient", false, true),
        }
    }

    /// Whether the order's key is text (a cursor's key then is too).
    pub fn text_key(self) -> bool {
        self.column().2
    }
}

/// Where a page starts: just after the lease with this sort key and task id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseAfter {
    pub key: LeaseKey,
    pub id: String,
}

/// A sort key's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseKey {
    Int(i64),
    Text(String),
}

impl LeaseKey {
    /// The key of `row` in `order`.
    pub fn of(row: &TaskRow, order: LeaseOrder) -> LeaseKey {
        match order {
            LeaseOrder::Idle | LeaseOrder::Recent => {
                LeaseKey::Int(row.heartbeat_at_ms.unwrap_or_default())
            }
            LeaseOrder::Attempts => LeaseKey::Int(row.attempt),
            LeaseOrder::Lessee => LeaseKey::Text(row.leased_to.clone().unwrap_or_default()),
            LeaseOrder::Recipient => LeaseKey::Text(row.recipient.clone()),
        }
    }
}

/// Which leases a page holds. `filter.states` is ignored: a lease is an in-flight task.
#[derive(Clone, Debug, Default)]
pub struct LeaseQuery {
    pub filter: TaskFilter,
    /// The last heartbeat at or before this instant (idle at least …).
    pub heartbeat_at_most: Option<i64>,
    /// The last heartbeat after this instant (idle less than …).
    pub heartbeat_after: Option<i64>,
    /// Only tasks declared idempotent with a key (`Some(true)`), or only the others.
    pub declared_idempotent: Option<bool>,
    pub order: LeaseOrder,
}

impl LeaseQuery {
    fn sql(&self, select: &str) -> Sql {
        let mut q = Sql::new(select);
        let filter = TaskFilter {
            states: Vec::new(),
            ..self.filter.clone()
        };
        q.filter(&filter);
        // Spelled out, not bound: SQLite uses the in-flight partial index (`tasks_in_flight_by_age`)
        // only when the query repeats its condition as written.
        q.text.push_str(" AND state = 'in_flight'");
        if let Some(at) = self.heartbeat_at_most {
            let p = q.bind(at);
            q.text.push_str(&format!(" AND heartbeat_at_ms <= {p}"));
        }
        if let Some(at) = self.heartbeat_after {
            let p = q.bind(at);
            q.text.push_str(&format!(" AND heartbeat_at_ms > {p}"));
        }
        // The rule `declared_idempotent` (domain/rules.rs) over its columns.
        let declared = "(duplicate_safety = 'idempotent' AND TRIM(COALESCE(idem_key, '')) <> '')";
        match self.declared_idempotent {
            Some(true) => q.text.push_str(&format!(" AND {declared}")),
            Some(false) => q.text.push_str(&format!(" AND NOT {declared}")),
            None => {}
        }
        q
    }

    fn page_sql(&self, after: Option<&LeaseAfter>, limit: i64) -> Sql {
        let mut q = self.sql(&format!("SELECT {} FROM tasks", task_cols!()));
        let (column, descending, _) = self.order.column();
        let dir = if descending { "DESC" } else { "ASC" };
        if let Some(a) = after {
            let key = match &a.key {
                LeaseKey::Int(v) => q.bind(*v),
                LeaseKey::Text(v) => q.bind(v.as_str()),
            };
            let id = q.bind(a.id.as_str());
            let beyond = if descending { "<" } else { ">" };
            q.text.push_str(&format!(
                " AND ({column} {beyond} {key} OR ({column} = {key} AND id > {id}))"
            ));
        }
        let l = q.bind(limit);
        q.text
            .push_str(&format!(" ORDER BY {column} {dir}, id ASC LIMIT {l}"));
        q
    }
}

impl Store {
    /// The first `limit` leases of `query` after `after`, in its order.
    pub async fn lease_page(
        &self,
        query: &LeaseQuery,
        after: Option<&LeaseAfter>,
        limit: i64,
    ) -> Result<Vec<TaskRow>> {
        let q = query.page_sql(after, limit);
        Ok(self.read_all(&q.text, &q.args).await?)
    }

    /// The query plans of a page of leases and of their count, one line per row: what the tests
    /// read to hold that both walk the in-flight index.
    pub async fn explain_lease_page(
        &self,
        query: &LeaseQuery,
        after: Option<&LeaseAfter>,
        limit: i64,
    ) -> Result<(String, String)> {
        let q = query.page_sql(after, limit);
        let page = self.explain(&q.text, &q.args).await?;
        let c = query.sql("SELECT COUNT(*) AS n FROM tasks");
        Ok((page, self.explain(&c.text, &c.args).await?))
    }

    /// How many leases `query` matches.
    pub async fn count_leases(&self, query: &LeaseQuery) -> Result<i64> {
        let q = query.sql("SELECT COUNT(*) AS n FROM tasks");
        let c: Option<Count> = self.read_optional(&q.text, &q.args).await?;
        Ok(c.map_or(0, |c| c.n))
    }
}
