//! Whom a wake-up reaches: a request here, or else the other instances sharing the database.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{WaitFor, WaitingLimits, Wakeups};
use crate::mailbox::wake::{PeerLines, Peers, Wake};

/// bob, whose token never expires.
fn bob_caller() -> crate::auth::Caller {
    crate::auth::Caller {
        sub: crate::domain::AgentId::parse("bob").unwrap(),
        caps: Vec::new(),
        exp: None,
    }
}

/// Another instance is there, and what it was told is kept.
#[derive(Clone, Default)]
struct Told(Arc<Mutex<String>>);

impl Told {
    fn take(&self) -> String {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Peers for Told {
    fn present(&self) -> bool {
        true
    }

    fn tell(&self, lines: PeerLines) {
        let mut told = self.0.lock().unwrap();
        told.push_str(&lines.now);
        told.push_str(&lines.soon);
    }
}

fn wakeups() -> (Wakeups, Told) {
    let told = Told::default();
    let w = Wakeups::new(
        WaitingLimits::default(),
        Arc::default(),
        Box::new(told.clone()),
    );
    (w, told)
}

fn bob() -> Wake {
    Wake::Recipient("bob".into())
}

/// Whether the request was woken (its wait ends at once).
async fn woken(p: &super::Waiter<'_>) -> bool {
    tokio::time::timeout(Duration::from_millis(50), p.wait(Duration::from_secs(60)))
        .await
        .is_ok()
}

#[tokio::test]
async fn a_task_a_waiting_lease_here_takes_is_not_announced() {
    let (w, told) = wakeups();
    let p = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    p.arm();
    w.woke(&bob());
    assert!(woken(&p).await);
    assert_eq!(told.take(), "");
    // It looks and takes its task: nothing is passed on.
    p.arm();
    p.looked();
    drop(p);
    assert_eq!(told.take(), "");
}

#[tokio::test]
async fn a_second_task_for_a_lease_woken_already_is_announced() {
    let (w, told) = wakeups();
    let p = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    p.arm();
    w.woke(&Wake::Many(vec![bob(), bob()]));
    assert_eq!(told.take(), "t bob\n");
    // The same when the second task comes in a commit of its own.
    p.arm();
    p.looked();
    w.woke(&bob());
    w.woke(&bob());
    assert_eq!(told.take(), "t bob\n");
}

#[tokio::test]
async fn a_lease_that_goes_away_after_its_wake_up_passes_it_on() {
    let (w, told) = wakeups();
    // Woken, and gone before it looked: another lease here is woken instead.
    let gone = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    let stays = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    gone.arm();
    stays.arm();
    w.woke(&bob());
    drop(gone);
    assert!(woken(&stays).await);
    assert_eq!(told.take(), "");
    // With nobody else here, the other instances are told.
    stays.arm();
    stays.looked();
    w.woke(&bob());
    drop(stays);
    assert_eq!(told.take(), "t bob\n");
    // Gone while it looked: the look it owed is passed on too.
    let looking = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    looking.arm();
    w.woke(&bob());
    looking.arm();
    drop(looking);
    assert_eq!(told.take(), "t bob\n");
    // A lease that was never woken owes nothing.
    let idle = w.park(WaitFor::Task, "bob", &bob_caller()).unwrap();
    idle.arm();
    drop(idle);
    assert_eq!(told.take(), "");
}
