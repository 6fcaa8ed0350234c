//! The queued depth of the deepest queues per minute over the last half hour, for the
//! dashboard: read from the database by this instance once a minute (and by each overview it
//! serves), and kept in its memory only, so each instance keeps its own and starts empty.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::throughput::MINUTES;

/// One minute: the queued tasks of each recipient asked for, in the order asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DepthMinute {
    /// Epoch minute.
    pub minute: u64,
    /// `None` when not known: nothing was sampled in that minute, or the recipient was not
    /// among the deepest queues sampled (and there were more queues than those).
    pub queued: Vec<Option<u64>>,
}

struct Sample {
    minute: u64,
    deepest: Vec<(String, u64)>,
    every_queue: bool,
}

/// The deepest queues as they stood at the last sample of each minute, oldest first.
#[derive(Default)]
pub struct Depths {
    samples: Mutex<VecDeque<Sample>>,
}

impl Depths {
    /// Records the deepest queues (recipient, queued tasks) as they stand now, in minute
    /// `minute`; `every_queue` when they are all the queues holding a task, so that a recipient
    /// not among them has none. A sample of a minute older than the last one is dropped.
    pub fn sample(&self, minute: u64, deepest: Vec<(String, u64)>, every_queue: bool) {
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let sample = Sample {
            minute,
            deepest,
            every_queue,
        };
        match samples.back_mut() {
            Some(last) if last.minute == minute => *last = sample,
            Some(last) if last.minute > minute => {}
            _ => samples.push_back(sample),
        }
        while samples.len() > MINUTES {
            samples.pop_front();
        }
    }

    /// The queued tasks of `recipients` in each of the last [`MINUTES`] minutes up to `minute`,
    /// oldest first.
    pub fn minutes(&self, minute: u64, recipients: &[String]) -> Vec<DepthMinute> {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        (0..MINUTES as u64)
            .rev()
            .map(|back| {
                let m = minute.saturating_sub(back);
                let sample = samples.iter().find(|s| s.minute == m);
                let queued = recipients
                    .iter()
                    .map(|r| {
                        let s = sample?;
                        let n = s.deepest.iter().find(|(q, _)| q == r).map(|(_, n)| *n);
                        n.or(s.every_queue.then_some(0))
                    })
                    .collect();
                DepthMinute { minute: m, queued }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(q: &[(&str, u64)]) -> Vec<(String, u64)> {
        q.iter().map(|(r, n)| (r.to_string(), *n)).collect()
    }

    #[test]
    fn each_minute_keeps_its_last_sample_and_says_what_it_does_not_know() {
        let d = Depths::default();
        d.sample(100, queues(&[("bob", 3), ("carol", 1)]), true);
        d.sample(101, queues(&[("bob", 9)]), true);
        d.sample(101, queues(&[("bob", 7), ("carol", 2)]), false);
        d.sample(100, queues(&[("bob", 1)]), true);
        let who = ["carol".to_owned(), "bob".to_owned()];
        let minutes = d.minutes(102, &who);
        assert_eq!(minutes.len(), MINUTES);
        let at = |m: u64| {
            minutes
                .iter()
                .find(|x| x.minute == m)
                .unwrap()
                .queued
                .clone()
        };
        assert_eq!(
            at(100),
            [Some(1), Some(3)],
            "the late sample of 100 is dropped"
        );
        assert_eq!(at(101), [Some(2), Some(7)], "the last sample of 101");
        assert_eq!(at(102), [None, None], "nothing sampled");
        d.sample(102, queues(&[("bob", 7)]), false);
        d.sample(103, queues(&[("bob", 7)]), true);
        let minutes = d.minutes(103, &who);
        let last_two: Vec<_> = minutes[MINUTES - 2..].iter().map(|m| m.queued[0]).collect();
        assert_eq!(
            last_two,
            [None, Some(0)],
            "carol, absent: unknown beside other queues, none when those were all"
        );
    }

    #[test]
    fn half_an_hour_is_kept() {
        let d = Depths::default();
        for m in 0..100 {
            d.sample(m, queues(&[("bob", m)]), true);
        }
        let minutes = d.minutes(99, &["bob".to_owned()]);
        assert_eq!(minutes.first().unwrap().queued, [Some(70)]);
        assert_eq!(d.samples.lock().unwrap().len(), MINUTES);
    }
}
