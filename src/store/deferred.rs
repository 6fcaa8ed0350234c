//! Writes a unit holds back to make together at its end: a batch that judges many items one by
//! one, each as its single form (its gates, its audit rows, its stored result), writes what they
//! made in a few statements instead of one or two an item. Only the statements that write are
//! held back, never a read: a rule that defers reads nothing it wrote.

use super::runner::{args, Column, Deferred, Tx, Val};
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

impl Tx {
    /// From here to the end of the write unit, audit rows ([`Tx::audit`]) and stored results
    /// ([`Tx::store_result`]) wait in memory; the unit makes them, in order, before it ends
    /// ([`Tx::flush_deferred`]). A unit that fails drops them with everything else it wrote.
    pub fn defer_writes(&mut self) {
        self.deferred.get_or_insert_with(Deferred::default);
    }

    /// Makes the writes held back since [`Tx::defer_writes`], if any, and stops holding them
    /// back: the stored results (one statement where the engine has one, else one each), then
    /// the audit rows (one statement per issuer and instant).
    pub(crate) async fn flush_deferred(&mut self) -> Result<()> {
        let Some(held) = self.deferred.take() else {
            return Ok(());
        };
        self.store_results(&held).await?;
        let mut rest = held.audits.as_slice();
        while let Some(first) = rest.first() {
            let run = rest
                .iter()
                .take_while(|d| d.now == first.now && d.issuer == first.issuer)
                .count();
            let (these, later) = rest.split_at_checked(run).unwrap_or((rest, &[]));
            let rows: Vec<(&str, String, bool)> = these
                .iter()
                .map(|d| (d.kind.as_str(), d.body.clone(), d.filed))
                .collect();
            self.audit_many(first.now, &first.issuer, &rows).await?;
            rest = later;
        }
        Ok(())
    }

    /// Drops the writes held back, with the rest of a unit that failed.
    pub(crate) fn drop_deferred(&mut self) {
        self.deferred = None;
    }

    async fn store_results(&mut self, held: &Deferred) -> Result<()> {
        self.store_results_untraced(held).await?;
        for r in &held.results {
            if let Some(trace) = &r.trace {
                self.set_result_trace(&r.id, trace).await?;
            }
        }
        Ok(())
    }

    async fn store_results_untraced(&mut self, held: &Deferred) -> Result<()> {
        let results = &held.results;
        // One statement takes one who answered and one instant (a batch's: its caller's, judged
        // at once); results of several go one by one.
        let first = results.first();
        let uniform = first.filter(|f| results.iter().all(|r| r.by == f.by && r.now == f.now));
        let (Some(stmt), Some(first)) = (self.sql().store_results, uniform) else {
            for r in results {
                let stmt = self.sql().store_result;
                let a = args![
                    r.id.as_str(),
                    r.status.as_str(),
                    r.content.as_str(),
                    r.error_message.as_deref(),
                    r.by.as_str(),
                    r.now
                ];
                self.execute(stmt, a).await?;
            }
            return Ok(());
        };
        let texts = |f: fn(&super::runner::DeferredResult) -> Option<String>| {
            Val::Column(Column::Texts(results.iter().map(f).collect()))
        };
        let a = [
            texts(|r| Some(r.id.clone())),
            texts(|r| Some(r.status.clone())),
            texts(|r| Some(r.content.clone())),
            texts(|r| r.error_message.clone()),
            Val::from(first.by.as_str()),
            Val::from(first.now),
        ];
        self.execute(stmt, &a).await?;
        Ok(())
    }
}
