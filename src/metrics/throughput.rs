//! Sends, leases, answers and errors per minute over the last half hour, for the dashboard: the
//! counters of this instance sampled a few times a minute (no cost on the requests themselves).

use std::collections::VecDeque;
use std::sync::Mutex;

/// Minutes kept.
pub const MINUTES: usize = 30;

/// The counters a sample takes, as [`crate::metrics::Metrics::throughput_counts`] reads them:
/// sends, leases, answers and the answers that were errors.
pub type Counts = [u64; 4];

/// One minute: sends, leases, answers and errors counted in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minute {
    /// Epoch minute.
    pub minute: u64,
    pub sent: u64,
    pub leased: u64,
    /// Results stored: posted by recipients, forced by operators, or a deadline's.
    pub answered: u64,
    /// The answers that were errors (of `answered`).
    pub errors: u64,
}

/// The counters as they stood at the end of each sampled minute, oldest first.
#[derive(Default)]
pub struct Throughput {
    samples: Mutex<VecDeque<(u64, Counts)>>,
}

impl Throughput {
    /// Records the counters as they stand now, in minute `minute`. The first sample also
    /// records zeros in the minute before it: the counters start at zero with the process, so
    /// everything counted so far happened since. A sample of a minute older than the last one
    /// recorded (read before it, stored after it) is dropped.
    pub fn sample(&self, now: Counts, minute: u64) {
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        match samples.back_mut() {
            Some((m, counts)) if *m == minute => *counts = now,
            Some((m, _)) if *m > minute => {}
            Some(_) => samples.push_back((minute, now)),
            None => samples.extend([(minute.saturating_sub(1), [0; 4]), (minute, now)]),
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
                let [e0, e1, e2, e3] = end;
                let [s0, s1, s2, s3] = start;
                let [sent, leased, answered, errors] = [
                    e0.saturating_sub(s0),
                    e1.saturating_sub(s1),
                    e2.saturating_sub(s2),
                    e3.saturating_sub(s3),
                ];
                Minute {
                    minute: m,
                    sent,
                    leased,
                    answered,
                    errors,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_read_before_the_last_one_is_dropped() {
        let t = Throughput::default();
        t.sample([0, 0, 0, 0], 100);
        t.sample([9, 0, 0, 0], 102);
        t.sample([5, 0, 0, 0], 101);
        let minutes = t.minutes(102);
        assert_eq!(minutes[MINUTES - 2].sent, 0, "101 has no sample");
        assert_eq!(
            minutes[MINUTES - 1].sent,
            0,
            "nor has the minute before 102"
        );
    }
}
