//! The lane's queue with an element of its own (no database): which parked polls ride, in what
//! order, and that a burst of thousands leaves no large allocation behind.

use tokio::sync::oneshot;

use super::queue::{Element, Item, Queue, MAX_BATCH};

/// A poll or a send for recipient `.0`: a send makes work for the polls of its recipient.
struct El(u32, bool);

impl Element for El {
    type Outcome = bool;
    fn kind(&self) -> usize {
        usize::from(self.1)
    }
    fn found(outcome: &bool) -> bool {
        *outcome
    }
    fn handed(_: &[Self], _: &mut [bool]) {}
    fn ride(&mut self) {}
    fn riders(batch: &[&Self], parked: &[&Self]) -> Vec<bool> {
        parked
            .iter()
            .map(|p| batch.iter().any(|b| b.1 && b.0 == p.0))
            .collect()
    }
}

fn item(id: u64, el: El) -> Item<El> {
    Item {
        id,
        arg: el,
        answer: oneshot::channel().0,
        park: None,
        rider: false,
    }
}

#[test]
fn a_send_takes_along_the_parked_polls_of_its_recipient_oldest_first_and_no_other() {
    let mut q = Queue::<El>::default();
    for id in 0..10_000u64 {
        q.park(id, El((id % 1000) as u32, false), oneshot::channel().0);
    }
    q.items.push(item(20_000, El(7, true)));
    let batch = q.take();
    let ids: Vec<u64> = batch.iter().map(|i| i.id).collect();
    let mut expected = vec![20_000];
    expected.extend((0..10).map(|k| 7 + 1000 * k));
    assert_eq!(ids, expected);
    assert!(batch[1..].iter().all(|i| i.rider));
    assert_eq!(q.parked.len(), 9_990);
    assert_eq!(q.riding.len(), 10);
    assert!(q
        .parked
        .keys()
        .zip(q.parked.keys().skip(1))
        .all(|(a, b)| a < b));
}

#[test]
fn a_served_burst_gives_its_queue_back_and_its_parked_polls_ride_out() {
    let mut q = Queue::<El>::default();
    for id in 0..10_000u64 {
        q.items.push(item(id, El(1, false)));
    }
    while !q.items.is_empty() {
        assert!(q.take().len() <= MAX_BATCH);
    }
    assert!(
        q.items.capacity() <= 4 * MAX_BATCH,
        "{}",
        q.items.capacity()
    );
    for id in 0..10_000u64 {
        q.park(id, El(1, false), oneshot::channel().0);
    }
    q.items.push(item(20_000, El(1, true)));
    let batch = q.take();
    assert_eq!(batch.len(), 10_001);
    assert!(batch[1..].windows(2).all(|w| w[0].id < w[1].id));
    assert!(q.parked.is_empty());
}
