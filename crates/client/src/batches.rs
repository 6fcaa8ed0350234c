//! Batches (docs/contract.md#batches): lease, answer, heartbeat and drain many tasks per request.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::call::{json, Call};
use crate::tasks::MAX_WAIT;
use crate::{AgentId, ApiError, Client, Error, Leased};
use a2a_mailbox_types::answers::{
    HeartbeatBatch, LeaseItem, LeaseRef, LeasedTask, LeasesExtended, ResultBatch,
    ResultBatchDrained, ResultItem, ResultsPosted, TaskBatchLeased, MAX_ITEMS, MAX_TAKE,
};
use a2a_mailbox_types::{A2ATaskResult, ErrorCode, PostResult};

/// The mailbox's default limit on the body of a batch request
/// (`A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES`): 8 MiB.
pub(crate) const DEFAULT_BATCH_BODY_LIMIT: usize = 8 * 1024 * 1024;

impl From<LeasedTask> for Leased {
    fn from(leased: LeasedTask) -> Leased {
        Leased {
            task: leased.task,
            lease: leased.lease,
        }
    }
}

impl Client {
    /// Leases up to `max` of the oldest tasks addressed to `recipient` (default: this agent) in
    /// one transaction, each under its own lease, oldest first; waits up to `wait` (at most
    /// 30 s) for at least one, not for `max`. A `max` above
    /// [`MAX_TAKE`](a2a_mailbox_types::answers::MAX_TAKE) leases 100; 0 leases nothing and
    /// asks nothing.
    ///
    /// A retry after a lost answer carries the call's `attempt_id` and is answered the same
    /// leases (see [the crate's retries](crate#retries)).
    ///
    /// ```no_run
    /// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
    /// use std::time::Duration;
    /// use a2a_mailbox_client::Reply;
    /// let leased = client.lease_batch(None, 10, Duration::from_secs(20)).await?;
    /// let replies = leased
    ///     .iter()
    ///     .map(|l| Reply::text("done").for_task(l.task.id, Some(l.lease.lease_id)))
    ///     .collect();
    /// for item in client.post_results(replies).await? {
    ///     println!("{}: {}", item.task_id, item.status);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lease_batch(
        &self,
        recipient: Option<&AgentId>,
        max: u32,
        wait: Duration,
    ) -> Result<Vec<Leased>, Error> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let mut query = vec![("max", max.min(MAX_TAKE).to_string())];
        query.extend(recipient.map(|r| ("recipient", r.to_string())));
        let call = Call::get("/a2a/tasks/next")
            .query(query)
            .consuming(wait.min(MAX_WAIT));
        let leased = self.call::<TaskBatchLeased>(call).await?.value.leases;
        Ok(leased.into_iter().map(Leased::from).collect())
    }

    /// Posts results, each fenced by its `lease_id` when given, and answers one item per
    /// result in the caller's order: 201 stored, 200 the same result again (`replayed`), or the
    /// refusal a single [`Client::post_result`] would have had (e.g. 409 `lease_mismatch`,
    /// 409 `task_canceled`).
    ///
    /// The results go out in as few `POST /a2a/results/batch` requests as fit 500 items and
    /// the [batch body limit](crate::ClientBuilder::batch_body_limit) each, one after the other,
    /// each one logical call with its own `Idempotency-Key`. A result too large to fit a
    /// request alone is refused before anything is sent. When a request fails, the error comes
    /// back and the requests before it stay posted: posting the same results again is safe
    /// (those already stored answer 200 `replayed`).
    pub async fn post_results(&self, results: Vec<PostResult>) -> Result<Vec<ResultItem>, Error> {
        let wrapper = ResultBatch {
            results: Vec::new(),
        };
        let items = results.iter().map(json).collect();
        let mut answered = Vec::with_capacity(results.len());
        for chunk in split(items, &wrapper, self.inner.batch_body_limit)? {
            let n = chunk.len();
            let body = json(&ResultBatch { results: chunk });
            let call = Call::post("/a2a/results/batch", Some(body));
            let items = self.call::<ResultsPosted>(call).await?.value.results;
            answered.extend(one_per_item(items, n)?);
        }
        Ok(answered)
    }

    /// Extends leases, one item per lease in the caller's order: 200 with the refreshed lease,
    /// or the refusal a single [`Client::heartbeat`] would have had (409 `task_canceled` says to
    /// stop working on that task). Sent in requests of at most 500 leases.
    pub async fn heartbeat_leases(&self, leases: &[LeaseRef]) -> Result<Vec<LeaseItem>, Error> {
        let wrapper = HeartbeatBatch { leases: Vec::new() };
        let items = leases.iter().map(json).collect();
        let mut answered = Vec::with_capacity(leases.len());
        for chunk in split(items, &wrapper, self.inner.batch_body_limit)? {
            let n = chunk.len();
            let body = json(&HeartbeatBatch { leases: chunk });
            let call = Call::post("/a2a/tasks/heartbeat", Some(body));
            let items = self.call::<LeasesExtended>(call).await?.value.leases;
            answered.extend(one_per_item(items, n)?);
        }
        Ok(answered)
    }

    /// Drains up to `max` (at most 100) of the oldest pending results of tasks this agent sent,
    /// in one transaction, waiting up to `wait` (at most 30 s) for at least one; their tasks
    /// become `resolved` and leave [`Client::checkpoint`]. A retry after a lost answer is
    /// answered the same results.
    pub async fn drain_results(
        &self,
        max: u32,
        wait: Duration,
    ) -> Result<Vec<A2ATaskResult>, Error> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let call = Call::get("/a2a/results/next")
            .query(vec![("max", max.min(MAX_TAKE).to_string())])
            .consuming(wait.min(MAX_WAIT));
        let results = self.call::<ResultBatchDrained>(call).await?.value.results;
        let mut ledger = self.ledger();
        for r in &results {
            ledger.forget(r.task_id);
        }
        Ok(results)
    }
}

/// `items` in order, cut into runs of at most [`MAX_ITEMS`] whose body (`wrapper` holding the
/// run) is at most `limit` bytes of JSON. Refuses an item too large for a body of its own.
fn split<W: Serialize>(
    items: Vec<Value>,
    wrapper: &W,
    limit: usize,
) -> Result<Vec<Vec<Value>>, Error> {
    // `{"results":[]}` and one comma between two items.
    let empty = serde_json::to_vec(wrapper).map_or(0, |b| b.len());
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    let mut current = Vec::new();
    let mut size = empty;
    for (index, item) in items.into_iter().enumerate() {
        let len = serde_json::to_vec(&item).map_or(0, |b| b.len());
        if empty + len > limit {
            return Err(Error::InvalidInput(format!(
                "item {index} is {len} bytes of JSON: a batch request holding it alone would \
                 exceed the batch body limit of {limit} bytes"
            )));
        }
        let comma = usize::from(!current.is_empty());
        if current.len() == MAX_ITEMS || size + comma + len > limit {
            chunks.push(std::mem::take(&mut current));
            size = empty;
        }
        size += usize::from(!current.is_empty()) + len;
        current.push(item);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    Ok(chunks)
}

/// The items of a batch answer, checked to be one per item asked.
fn one_per_item<T>(items: Vec<T>, asked: usize) -> Result<Vec<T>, Error> {
    if items.len() == asked {
        return Ok(items);
    }
    Err(Error::UnexpectedAnswer {
        status: 200,
        message: format!("{} items answered for {asked} asked", items.len()),
    })
}

/// The refusal an item of a batch answer carries, as the single call would have failed;
/// `None` when the item succeeded (2xx).
pub(crate) fn refusal(
    status: u16,
    code: Option<ErrorCode>,
    message: Option<&str>,
) -> Option<Error> {
    if (200..300).contains(&status) {
        return None;
    }
    let message = message.unwrap_or_default().to_owned();
    Some(match code {
        Some(code) => Error::Api(ApiError {
            status,
            code,
            message,
            retriable: code.retriable(),
            retry_after: None,
            index: None,
        }),
        None => Error::UnexpectedAnswer { status, message },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize, text_len: usize) -> Vec<Value> {
        (0..n)
            .map(|i| serde_json::json!({"i": i, "text": "x".repeat(text_len)}))
            .collect()
    }

    fn body_len(chunk: &[Value]) -> usize {
        serde_json::to_vec(&ResultBatch {
            results: chunk.to_vec(),
        })
        .unwrap()
        .len()
    }

    fn wrapper() -> ResultBatch {
        ResultBatch {
            results: Vec::new(),
        }
    }

    #[test]
    fn batches_are_cut_at_500_items_in_order() {
        let chunks = split(items(1201, 3), &wrapper(), DEFAULT_BATCH_BODY_LIMIT).unwrap();
        let lens: Vec<_> = chunks.iter().map(Vec::len).collect();
        assert_eq!(lens, [500, 500, 201]);
        let order: Vec<_> = chunks.concat().iter().map(|v| v["i"].clone()).collect();
        assert_eq!(
            order,
            (0..1201).map(|i| serde_json::json!(i)).collect::<Vec<_>>()
        );
        assert!(split(Vec::new(), &wrapper(), 100).unwrap().is_empty());
    }

    #[test]
    fn batches_are_cut_to_the_body_limit_exactly() {
        let all = items(40, 1000);
        for limit in [1100, 2500, 4000, 10_007, 40_000] {
            let chunks = split(all.clone(), &wrapper(), limit).unwrap();
            assert_eq!(chunks.concat(), all, "limit {limit}");
            for (i, chunk) in chunks.iter().enumerate() {
                assert!(
                    body_len(chunk) <= limit,
                    "limit {limit}: {}",
                    body_len(chunk)
                );
                // Fullest possible: the next item would not have fit.
                if let Some(next) = chunks.get(i + 1) {
                    let grown = [chunk.clone(), vec![next[0].clone()]].concat();
                    assert!(body_len(&grown) > limit, "limit {limit}");
                }
            }
        }
        let exact = body_len(&all[..3]);
        assert_eq!(split(all.clone(), &wrapper(), exact).unwrap()[0].len(), 3);
    }

    #[test]
    fn an_item_too_large_for_a_body_of_its_own_is_refused() {
        let mut all = items(3, 10);
        all.push(serde_json::json!({"text": "y".repeat(5000)}));
        match split(all, &wrapper(), 4096) {
            Err(Error::InvalidInput(m)) => assert!(m.contains("item 3"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refused_item_reads_as_the_single_call_would_have_failed() {
        assert!(refusal(201, None, None).is_none());
        assert!(refusal(200, None, None).is_none());
        let e = refusal(409, Some(ErrorCode::TaskCanceled), Some("canceled")).unwrap();
        assert!(e.is(ErrorCode::TaskCanceled) && !e.retriable());
        assert_eq!(e.status(), Some(409));
        let e = refusal(503, Some(ErrorCode::StorageUnavailable), None).unwrap();
        assert!(e.retriable());
    }
}
