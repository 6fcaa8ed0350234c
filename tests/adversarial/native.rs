//! Every route of the native API, called with every kind of token against a fixture of tasks
//! in every state. The table states the outcome class the contract gives each pair; a refusal
//! must change nothing, an allowed read must show nothing of the fixture, and no answer is 5xx.

use serde_json::{json, Value};

use super::kit::*;
use super::world::{audit_bounded, fixture, snapshot, unchanged, Fix};
use crate::common::{result, task, Resp, TestApp};

#[derive(Clone, Copy, Debug)]
enum Op {
    Send,
    SendAsTheSender,
    Batch,
    LeaseForTheRecipient,
    LeaseOwn,
    Heartbeat,
    PostResult,
    Drain,
    ResultsRecent,
    /// `GET /a2a/tasks/{id}` of the fixture's task in this state (queued, in flight, pending,
    /// resolved, canceled).
    Status(usize),
    CancelQueued,
    CancelInFlight,
    Requeue,
    ForceError,
    RetryStaleDry,
    RetryStaleEnabled,
    SchedulerTick,
    Compact,
    List,
    ListTheSendersTasks,
    Children,
    Queue,
    Audit,
    Recent,
}

/// Columns: caps-less, wildcard, scoped (peer `x`), scoped operator (peer `billing`, plus
/// `a2a.repair.requeue`). No token, an expired one and a forged one: 401 everywhere.
const TABLE: &[(Op, [Want; 4])] = &[
    (Op::Send, [CM, OK, CSM, CM]),
    (Op::SendAsTheSender, [SM, SM, SM, SM]),
    (Op::Batch, [CM, OK, CSM, CM]),
    (Op::LeaseForTheRecipient, [CM, OK, CSM, CM]),
    (Op::LeaseOwn, [R, R, R, R]),
    (Op::Heartbeat, [H, H, H, H]),
    (Op::PostResult, [H, H, H, H]),
    (Op::Drain, [R, R, R, R]),
    (Op::ResultsRecent, [R, R, R, R]),
    (Op::Status(0), [H, H, H, H]),
    (Op::Status(1), [H, H, H, H]),
    (Op::Status(2), [H, H, H, H]),
    (Op::Status(3), [H, H, H, H]),
    (Op::Status(4), [H, H, H, H]),
    (Op::CancelQueued, [H, H, H, H]),
    (Op::CancelInFlight, [H, H, H, H]),
    // The capability comes first (403 even for ids the caller cannot see); the scoped operator
    // holds `a2a.repair.requeue` but sees only its own tasks.
    (Op::Requeue, [CM, CM, CM, H]),
    (Op::ForceError, [CM, CM, CM, CM]),
    (Op::RetryStaleDry, [CM, CM, CM, CSM]),
    (Op::RetryStaleEnabled, [CM, CM, CM, CSM]),
    (Op::SchedulerTick, [CM, CM, CM, CSM]),
    (Op::Compact, [CM, CM, CM, CM]),
    (Op::List, [R, R, R, R]),
    (Op::ListTheSendersTasks, [R, R, R, R]),
    (Op::Children, [H, H, H, H]),
    (Op::Queue, [R, R, R, R]),
    (Op::Audit, [R, R, R, R]),
    (Op::Recent, [R, R, R, R]),
];

fn request(op: Op, fix: &Fix, sub: &str) -> Req {
    let f = &fix.in_flight;
    let mut posted = result(f, "ok", "stolen");
    posted["lease_id"] = json!(fix.lease);
    let repair = |command: Value| {
        Req::post(
            "/a2a/repair",
            &json!({"task_id": f, "reason": "taking over", "command": command}),
        )
    };
    let bare = |path: &str| Req {
        body: None,
        content_type: None,
        ..Req::post(path, &Value::Null)
    };
    match op {
        Op::Send => Req::post("/a2a/tasks", &task(sub, &fix.recipient)),
        Op::SendAsTheSender => Req::post("/a2a/tasks", &task(&fix.sender, &fix.recipient)),
        Op::Batch => Req::post(
            "/a2a/tasks/batch",
            &json!({"tasks": [task(sub, &fix.recipient)]}),
        ),
        Op::LeaseForTheRecipient => {
            Req::get(format!("/a2a/tasks/next?recipient={}", fix.recipient))
        }
        Op::LeaseOwn => Req::get("/a2a/tasks/next"),
        Op::Heartbeat => Req::post(
            format!("/a2a/tasks/{f}/heartbeat"),
            &json!({"lease_id": fix.lease}),
        ),
        Op::PostResult => Req::post("/a2a/results", &posted),
        Op::Drain => Req::get("/a2a/results/next"),
        Op::ResultsRecent => Req::get("/a2a/results/recent?limit=1000"),
        Op::Status(i) => Req::get(format!("/a2a/tasks/{}", fix.ids()[i])),
        Op::CancelQueued => Req::post(
            format!("/a2a/tasks/{}/cancel", fix.queued),
            &json!({"reason": "mine now"}),
        ),
        Op::CancelInFlight => Req::post(format!("/a2a/tasks/{f}/cancel"), &json!({})),
        Op::Requeue => repair(json!({"action": "requeue", "lease_id": fix.lease,
            "duplicate_risk": "operator_accepted"})),
        Op::ForceError => repair(json!({"action": "force_error", "message": "no"})),
        Op::RetryStaleDry => Req::post("/a2a/retry-stale", &json!({"min_lease_age_ms": 0})),
        Op::RetryStaleEnabled => Req::post(
            "/a2a/retry-stale",
            &json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 100}),
        ),
        Op::SchedulerTick => bare("/a2a/scheduler/tick"),
        Op::Compact => bare("/a2a/compact"),
        Op::List => Req::get("/a2a/tasks?limit=1000"),
        Op::ListTheSendersTasks => Req::get(format!(
            "/a2a/tasks?role=any&sender={}&limit=1000",
            fix.sender
        )),
        Op::Children => Req::get(format!("/a2a/tasks/{}/children", fix.queued)),
        Op::Queue => Req::get("/a2a/queue?limit=1000"),
        Op::Audit => Req::get("/audit/recent?limit=1000"),
        Op::Recent => Req::get("/a2a/tasks/recent?limit=1000"),
    }
}

/// What an allowed read may show: its own audit rows only, and none of the fixture's tasks.
fn read_shows_nothing_foreign(
    judge: &mut Judge,
    case: &str,
    op: Op,
    fix: &Fix,
    sub: &str,
    r: &Resp,
) {
    if let Op::Audit = op {
        let events = r.body["events"].as_array().cloned().unwrap_or_default();
        let foreign: Vec<&Value> = events.iter().filter(|e| e["issuer"] != sub).collect();
        judge.check(
            foreign.is_empty(),
            case,
            format!(
                "the feed shows others' rows: {}",
                short(&json!(foreign).to_string())
            ),
        );
    } else {
        judge.check(
            !fix.leaks_into(&r.text),
            case,
            format!("an allowed read shows the fixture: {}", short(&r.text)),
        );
    }
}

both_engines!(every_native_route_with_every_token, config = eager);
async fn every_native_route_with_every_token(app: TestApp) {
    let mut judge = Judge::default();
    let mut n = 0;
    let mut fix = fixture(&app, n).await;
    let mut before = snapshot(&app).await;
    for (op, row) in TABLE {
        for tok in Tok::ALL {
            let want = want(*row, tok);
            let case = format!("native {op:?} as {tok:?}");
            let req = request(*op, &fix, tok.sub());
            let r = call(&app, &req, tok.auth(&app).as_deref()).await;
            let got = native(&r);
            judge.outcome(&case, want, &got, &r);
            let after = snapshot(&app).await;
            if want == Want::Ok {
                // An allowed write may spend the fixture: the next case gets a fresh one.
                n += 1;
                fix = fixture(&app, n).await;
                before = snapshot(&app).await;
                continue;
            }
            unchanged(&mut judge, &case, &before, &after);
            if want == Want::Read && got == Got::Ok {
                read_shows_nothing_foreign(&mut judge, &case, *op, &fix, tok.sub(), &r);
            }
            if before != after {
                n += 1;
                fix = fixture(&app, n).await;
                before = snapshot(&app).await;
            } else {
                before = after;
            }
        }
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("the native API under attack");
}
