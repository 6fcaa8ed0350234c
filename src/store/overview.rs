//! The reads of the operator's overview: each walks a partial index or a bounded number of rows,
//! so the overview stays quick with millions of tasks.

use super::facade::Store;
use super::runner::args;
use super::statements::named_sql;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

named_sql! { OVERVIEW;
    /// `$1` cap: resolved and canceled tasks, counted up to the cap (a bounded walk, however
    /// many the table holds).
    const COUNT_FINISHED: &str = "SELECT COUNT(*) AS n FROM \
         (SELECT 1 FROM tasks WHERE state IN ('resolved', 'canceled') LIMIT $1) AS finished";
    /// `$1` limit: the deepest queues.
    const DEPTH_BY_RECIPIENT: &str = "SELECT recipient, COUNT(*) AS n FROM tasks \
         WHERE state = 'queued' GROUP BY recipient ORDER BY n DESC, recipient LIMIT $1";
    /// `$1..$3` heartbeat bounds, newest first: in-flight leases by age bucket.
    const LEASE_AGES: &str = "SELECT \
           COALESCE(SUM(CASE WHEN heartbeat_at_ms > $1 THEN 1 ELSE 0 END), 0) AS a, \
           COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $1 AND heartbeat_at_ms > $2 THEN 1 ELSE 0 END), 0) AS b, \
           COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $2 AND heartbeat_at_ms > $3 THEN 1 ELSE 0 END), 0) AS c, \
           COALESCE(SUM(CASE WHEN heartbeat_at_ms <= $3 THEN 1 ELSE 0 END), 0) AS d \
         FROM tasks WHERE state = 'in_flight'";
}

#[derive(sqlx::FromRow)]
struct Depth {
    recipient: String,
    n: i64,
}

#[derive(sqlx::FromRow)]
struct Ages {
    a: i64,
    b: i64,
    c: i64,
    d: i64,
}

impl Store {
    /// Resolved and canceled tasks, counting no further than `cap`.
    pub async fn count_finished(&self, cap: i64) -> Result<i64> {
        let n: Option<(i64,)> = self.read_optional(COUNT_FINISHED, args![cap]).await?;
        Ok(n.map_or(0, |(n,)| n))
    }

    /// The `limit` deepest queues: recipient and queued tasks.
    pub async fn depth_by_recipient(&self, limit: i64) -> Result<Vec<(String, i64)>> {
        let rows: Vec<Depth> = self.read_all(DEPTH_BY_RECIPIENT, args![limit]).await?;
        Ok(rows.into_iter().map(|d| (d.recipient, d.n)).collect())
    }

    /// In-flight leases whose last heartbeat is after `bounds[0]`, between each pair of bounds,
    /// and at or before `bounds[2]` (bounds newest first).
    pub async fn lease_ages(&self, bounds: [i64; 3]) -> Result<[i64; 4]> {
        let [b0, b1, b2] = bounds;
        let ages: Option<Ages> = self.read_optional(LEASE_AGES, args![b0, b1, b2]).await?;
        Ok(ages.map_or([0; 4], |a| [a.a, a.b, a.c, a.d]))
    }
}
