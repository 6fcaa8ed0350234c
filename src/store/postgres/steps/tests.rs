use crate::store::new_task::NewTask;

use crate::store::records::Committed;

use super::{handoffs, place, ClaimArgs, DrainArgs, Element, Outcome, SendArgs, Step, StepRow};

fn send(to: &str) -> Step {
    Step::Send(SendArgs {
        task: NewTask {
            id: "t".into(),
            sender: "a".into(),
            recipient: to.into(),
            body: "{}".into(),
            deadline_ms: None,
            duplicate_safety: None,
            idem_key: None,
            parent: None,
            context_id: None,
            task_kind: None,
            cache_key: None,
        },
        audit_body: "{}".into(),
    })
}

fn claim(of: &str) -> Step {
    Step::Claim(ClaimArgs {
        recipient: of.into(),
        lease_id: "l".into(),
        caller: of.into(),
        if_sent: true,
    })
}

fn drain() -> Step {
    Step::Drain(DrainArgs {
        sender: "a".into(),
        if_stored: true,
    })
}

#[test]
fn parked_claims_ride_only_with_sends_to_their_recipient_one_per_send() {
    let batch = [send("b"), send("c"), send("b"), claim("b")];
    let parked = [
        claim("b"),
        claim("c"),
        claim("d"),
        claim("b"),
        claim("b"),
        claim("c"),
    ];
    let rides = Step::riders(
        &batch.iter().collect::<Vec<_>>(),
        &parked.iter().collect::<Vec<_>>(),
    );
    // Two sends to b: the two oldest parked claims of b; one send to c: the oldest of c.
    assert_eq!(rides, [true, true, false, true, false, false]);
    // No result in the batch: no parked drain rides.
    assert_eq!(Step::riders(&[&send("b")], &[&drain()]), [false]);
}

#[test]
fn parked_drains_ride_with_any_result() {
    let result = Step::Result(super::ResultArgs {
        task_id: "t".into(),
        status: "ok".into(),
        content: "[]".into(),
        error_message: None,
        caller: "w".into(),
        lease_guard: None,
        audit_pre: String::new(),
        audit_post: String::new(),
    });
    assert_eq!(
        Step::riders(&[&result], &[&drain(), &claim("b"), &drain()]),
        [true, false, true]
    );
    // Many senders waiting: the oldest MAX_DRAIN_RIDERS ride, the others wait for a wake-up.
    let many: Vec<Step> = (0..super::super::lane::MAX_DRAIN_RIDERS + 10)
        .map(|_| drain())
        .collect();
    let rides = Step::riders(&[&result], &many.iter().collect::<Vec<_>>());
    assert!(rides[..super::super::lane::MAX_DRAIN_RIDERS]
        .iter()
        .all(|&r| r));
    assert!(rides[super::super::lane::MAX_DRAIN_RIDERS..]
        .iter()
        .all(|&r| !r));
    assert!(!Step::found(&Outcome::Claimed(None)));
    assert!(!Step::found(&Outcome::Drained(None)));
    assert!(Step::found(&Outcome::Failed("x".into())));
}

/// A leased row as `a2a_step_many` answers it.
const LEASED: &str = r#"{"id":"t1","sender":"a","recipient":"b","body":"{}","state":"in_flight",
    "attempt":1,"lease_id":"l2","leased_to":"b","leased_at_ms":5,"heartbeat_at_ms":5,
    "deadline_ms":null,"duplicate_safety":null,"idem_key":null,"cache_key":null,
    "replayed_from":null,"result_status":null,"result_content":null,"result_error":null,
    "result_by":null,"created_at_ms":1,"updated_at_ms":5,"queue_seq":7,"result_seq":null}"#;

fn row(kind: i32, ord: i32, text: Option<&str>) -> StepRow {
    StepRow {
        o_kind: kind,
        o_ord: ord,
        o_text: text.map(str::to_owned),
        o_status: Some("ok".into()),
        o_content: Some("[]".into()),
        o_error: None,
        o_trace: None,
    }
}

#[test]
fn rows_reach_their_elements_by_kind_and_position() {
    // Batch order: send, drain, send, result, claim, claim.
    let kinds = [0, 3, 0, 2, 1, 1];
    let task = LEASED;
    let out = place(
        &kinds,
        vec![
            row(0, 2, None),       // the second send was inserted
            row(2, 1, Some("a")),  // the result was stored (sender a)
            row(1, 2, Some(task)), // the second claim leased t1
            row(3, 1, Some("t0")), // the drain took t0's result
            row(1, 9, Some(task)), // names no element: ignored
            row(7, 1, None),       // no such kind: ignored
        ],
    );
    assert!(matches!(out[0], Outcome::Sent(None)));
    assert!(matches!(&out[1], Outcome::Drained(Some(d)) if d.id == "t0"));
    assert!(matches!(out[2], Outcome::Sent(Some(_))));
    assert!(matches!(&out[3], Outcome::Stored(Some(s)) if s.made == "a"));
    assert!(matches!(out[4], Outcome::Claimed(None)));
    assert!(matches!(&out[5], Outcome::Claimed(Some(t)) if t.lease_id.as_deref() == Some("l2")));
}

#[test]
fn an_unreadable_claim_fails_only_its_own_element() {
    let out = place(&[1, 0], vec![row(1, 1, Some("not json")), row(0, 1, None)]);
    assert!(matches!(out[0], Outcome::Failed(_)));
    assert!(matches!(out[1], Outcome::Sent(Some(_))));
}

/// Every mark of `step_many.sql` is written in: the kinds, and the shared statements.
#[test]
fn step_many_is_installed_with_every_mark_written_in() {
    use super::{LANE_CLAIM, LANE_DRAIN, LANE_SEND, LANE_SEND_LEASED, LANE_STORED};
    let source = super::step_many_source();
    let marks = super::StepKind::ALL.map(super::StepKind::mark);
    for mark in marks.iter().chain(&[
        "__SEND_LEASED__",
        "__SEND__",
        "__CLAIM__",
        "__STORED__",
        "__DRAIN__",
    ]) {
        assert!(!source.contains(mark), "{mark} is left in step_many.sql");
    }
    for shared in [
        LANE_CLAIM,
        LANE_SEND,
        LANE_SEND_LEASED,
        LANE_STORED,
        LANE_DRAIN,
    ] {
        assert!(source.contains(shared), "{shared}");
    }
}

#[test]
fn a_send_whose_task_a_riding_claim_took_wakes_nobody_else() {
    let sent = || {
        Outcome::Sent(Some(Committed {
            made: (),
            handed: false,
        }))
    };
    let mut not_riding = claim("b");
    if let Step::Claim(a) = &mut not_riding {
        a.if_sent = false;
    }
    let batch = [
        send("b"),
        send("b"),
        send("c"),
        claim("b"),
        not_riding,
        claim("c"),
    ];
    let row = || Outcome::Claimed(Some(Box::new(serde_json::from_str(LEASED).unwrap())));
    let mut out = vec![sent(), sent(), sent(), row(), row(), Outcome::Claimed(None)];
    handoffs::mark(&batch, &mut out);
    let handed: Vec<bool> = out[..3]
        .iter()
        .map(|o| matches!(o, Outcome::Sent(Some(c)) if c.handed))
        .collect();
    // One of bob's two sends: one riding claim of bob's took a task; the claim that was not
    // riding and carol's claim that found nothing hand nothing over.
    assert_eq!(handed, [true, false, false]);
}
