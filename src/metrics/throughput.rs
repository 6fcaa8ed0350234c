//! Sends, leases and results per minute over the last half hour, for the dashboard: the
//! counters of this instance sampled a few times a minute (no cost on the requests themselves).

use std::collections::VecDeque;
use std::sync::Mutex;

/// Minutes kept.
pub const MINUTES: usize = 30;

/// One minute: sends, leases and results counted in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minute {
    /// Epoch minute.
    pub minute: u64,
    pub sent: u64,
    pub leased: u64,
    pub answered: u64,
}

/// The counters as they stood at the end of each sampled minute, oldest first.
#[derive(Default)]
pub struct Throughput {
    samples: Mutex<VecDeque<(u64, [u64; 3])>>,
}

impl Throughput {
    /// Records the counters (sends, leases, results) as they stand now, in minute `minute`.
    pub fn sample(&self, now: [u64; 3], minute: u64) {
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        match samples.back_mut() {
            Some((m, counts)) if *m == minute => *counts = now,
            _ => samples.push_back((minute, now)),
        }
        while samples.len() > MINUTES + 1 {
            samples.pop_front();
        }
    }

    /// The last [`MINUTES`] minutes up to `minute`, oldest first; a minute without two samples
    /// to compare counts nothing.
    pub fn minutes(&self, minute: u64) -> Vec<Minute> {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let at = |m: u64| samples.iter().find(|(s, _)| *s == m).map(|(_, c)| *c);
        (0..MINUTES as u64)
            .rev()
            .map(|back| {
                let m = minute.saturating_sub(back);
                let (Some(end), Some(start)) = (at(m), at(m.saturating_sub(1))) else {
                    return Minute {
                        minute: m,
                        ..Minute::default()
                    };
                };
                Minute {
                    minute: m,
                    sent: end[0].saturating_sub(start[0]),
                    leased: end[1].saturating_sub(start[1]),
                    answered: end[2].saturating_sub(start[2]),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    #[test]
    fn a_minute_counts_what_happened_since_the_previous_sample() {
        let metrics = Metrics::default();
        let t = Throughput::default();
        t.sample(metrics.throughput_counts(), 100);
        metrics.add(&metrics.tasks_sent, 5);
        metrics.add(&metrics.leases, 2);
        t.sample(metrics.throughput_counts(), 101);
        metrics.add(&metrics.results_posted, 1);
        t.sample(metrics.throughput_counts(), 101);
        let minutes = t.minutes(101);
        assert_eq!(minutes.len(), MINUTES);
        let last = minutes.last().unwrap();
        assert_eq!(
            (last.minute, last.sent, last.leased, last.answered),
            (101, 5, 2, 1)
        );
        assert_eq!(
            minutes[MINUTES - 2].sent,
            0,
            "minute 100 has no sample before it"
        );
    }
}
