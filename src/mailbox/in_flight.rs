//! The leases an operator looks through before repairing them: in-flight tasks by lessee,
//! recipient, kind, idle time and declared safety, in the order asked, a keyset page at a time.

use super::{now_ms, Mailbox};
use crate::auth::Caller;
use crate::domain::QueueEntry;
use crate::error::MailboxError;
use crate::store::{LeaseAfter, LeaseKey, LeaseQuery, ListColumn, TaskFilter};

/// How a page of leases is sorted ([`LeaseRequest::order`]).
pub use crate::store::LeaseOrder;

/// Which leases a page shows.
#[derive(Clone, Debug, Default)]
pub struct LeaseRequest {
    pub lessee: Option<String>,
    pub recipient: Option<String>,
    pub task_kind: Option<String>,
    /// Idle (since the last heartbeat) at least this long.
    pub min_idle_ms: Option<i64>,
    /// Idle less than this long.
    pub max_idle_ms: Option<i64>,
    pub declared_idempotent: Option<bool>,
    pub order: LeaseOrder,
    /// Where the page starts: a `next` of the page before.
    pub after: Option<String>,
    pub limit: i64,
}

/// One page of leases.
pub struct LeasePage {
    pub entries: Vec<QueueEntry>,
    /// How many leases the filters match, on every page.
    pub matched: i64,
    /// Where the next page starts, if there is one.
    pub next: Option<String>,
}

/// A cursor as pages carry it: `<sort key>~<task id>`.
fn cursor(key: &LeaseKey, id: &str) -> String {
    let key = match key {
        LeaseKey::Int(v) => v.to_string(),
        LeaseKey::Text(v) => v.clone(),
    };
    format!("{key}~{id}")
}

fn read_cursor(text: &str, order: LeaseOrder) -> Result<LeaseAfter, MailboxError> {
    let bad = || MailboxError::invalid("the page cursor is not one this page made");
    let (key, id) = text.rsplit_once('~').ok_or_else(bad)?;
    let key = if order.text_key() {
        LeaseKey::Text(key.to_owned())
    } else {
        LeaseKey::Int(key.parse().map_err(|_| bad())?)
    };
    Ok(LeaseAfter {
        key,
        id: id.to_owned(),
    })
}

impl Mailbox {
    /// In-flight tasks the caller sees (every one, for an operator), filtered and ordered.
    pub async fn lease_page(
        &self,
        caller: &Caller,
        r: &LeaseRequest,
    ) -> Result<LeasePage, MailboxError> {
        let now = now_ms();
        let equal = [
            (ListColumn::LeasedTo, &r.lessee),
            (ListColumn::Recipient, &r.recipient),
            (ListColumn::TaskKind, &r.task_kind),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.clone().map(|v| (c, v)))
        .collect();
        let query = LeaseQuery {
            filter: TaskFilter {
                visible_to: Self::seen_by(caller).map(str::to_owned),
                equal,
                ..TaskFilter::default()
            },
            heartbeat_at_most: r.min_idle_ms.map(|a| now.saturating_sub(a.max(0))),
            heartbeat_after: r.max_idle_ms.map(|a| now.saturating_sub(a.max(0))),
            declared_idempotent: r.declared_idempotent,
            order: r.order,
        };
        let after = r
            .after
            .as_deref()
            .map(|c| read_cursor(c, r.order))
            .transpose()?;
        let limit = r.limit.clamp(1, 1000);
        // One row more than the page: whether another page follows.
        let mut rows = self
            .store
            .lease_page(&query, after.as_ref(), limit.saturating_add(1))
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next = more
            .then(|| rows.last())
            .flatten()
            .map(|last| cursor(&LeaseKey::of(last, r.order), &last.id));
        let matched = self.store.count_leases(&query).await?;
        Ok(LeasePage {
            entries: rows
                .iter()
                .map(crate::store::TaskRow::queue_entry)
                .collect::<Result<_, _>>()?,
            matched,
            next,
        })
    }
}
