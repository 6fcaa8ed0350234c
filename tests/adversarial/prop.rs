//! Random interleavings of send, lease, heartbeat, result, drain, cancel, repair (requeue in
//! both postures, force_error) and enabled retry scans, from two senders, two workers and an
//! operator, against the real server on both engines, beside the model of `model.rs`. After
//! every step: each answer's status is the one the model predicts, and the mailbox's tasks are
//! the model's: at most one live lease, attempts never go down, a canceled or resolved task
//! never changes again, a result is drained at most once, and an unsafe task (or one without
//! idempotency) is requeued only by an explicit `operator_accepted` repair (its audit rows
//! say so). One server per engine serves every case; each case has agents of its own.

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::model::Safety;
use super::prop_case::{Case, Check};
use crate::common::{now_ms, Api, AppConfig, Engine, TestApp};

#[derive(Clone, Debug)]
pub enum Step {
    Send {
        sender: usize,
        recipient: usize,
        safety: Safety,
    },
    Lease {
        worker: usize,
    },
    Heartbeat {
        worker: usize,
        pick: usize,
    },
    Result {
        worker: usize,
        pick: usize,
        ok: bool,
    },
    Drain {
        sender: usize,
    },
    Cancel {
        by_operator: bool,
        pick: usize,
    },
    /// `guard`: the current lease (`Some(true)`), a stale one (`Some(false)`) or none.
    Requeue {
        pick: usize,
        idempotent: bool,
        guard: Option<bool>,
    },
    ForceError {
        pick: usize,
    },
    Scan {
        max_requeues: u64,
    },
}

pub fn step() -> impl Strategy<Value = Step> {
    let safety = prop_oneof![
        Just(Safety::Undeclared),
        Just(Safety::Unsafe),
        Just(Safety::Idempotent)
    ];
    let guard = prop_oneof![Just(None), Just(Some(true)), Just(Some(false))];
    prop_oneof![
        4 => (0..2usize, 0..2usize, safety)
            .prop_map(|(sender, recipient, safety)| Step::Send { sender, recipient, safety }),
        5 => (0..2usize).prop_map(|worker| Step::Lease { worker }),
        2 => (0..2usize, 0..8usize).prop_map(|(worker, pick)| Step::Heartbeat { worker, pick }),
        4 => (0..2usize, 0..8usize, any::<bool>())
            .prop_map(|(worker, pick, ok)| Step::Result { worker, pick, ok }),
        3 => (0..2usize).prop_map(|sender| Step::Drain { sender }),
        2 => (any::<bool>(), 0..8usize)
            .prop_map(|(by_operator, pick)| Step::Cancel { by_operator, pick }),
        4 => (0..8usize, any::<bool>(), guard)
            .prop_map(|(pick, idempotent, guard)| Step::Requeue { pick, idempotent, guard }),
        1 => (0..8usize).prop_map(|pick| Step::ForceError { pick }),
        2 => prop_oneof![Just(1u64), Just(2), Just(100)].prop_map(|max_requeues| Step::Scan { max_requeues }),
    ]
}

pub async fn run_case(api: &Api, tag: String, steps: &[Step]) -> Check {
    let since = now_ms();
    let mut case = Case::new(api, &tag);
    let mut outcome = Ok(());
    for (n, step) in steps.iter().enumerate() {
        let checked = match case.run(step).await {
            Ok(()) => case.compare().await,
            e => e,
        };
        if let Err(e) = checked {
            outcome = Err(format!("step {n} {step:?}: {e}"));
            break;
        }
    }
    if outcome.is_ok() {
        outcome = case.audit(since).await;
    }
    case.clean_up().await;
    outcome
}

fn interleavings(engine: Engine) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let test = format!("adversarial::prop::{engine:?}");
    // Scans run one after another here, each meant to run: no spacing between them.
    let unspaced = AppConfig::default().env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS", "0");
    let Some(app) = rt.block_on(TestApp::spawn(engine, unspaced, &test)) else {
        return;
    };
    let config = Config {
        cases: 32,
        failure_persistence: None,
        max_shrink_iters: 150,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counter = Cell::new(0);
    let result = runner.run(&proptest::collection::vec(step(), 2..=40), |steps| {
        counter.set(counter.get() + 1);
        let tag = format!("p{}", counter.get());
        rt.block_on(run_case(&app.api, tag, &steps))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{engine:?}: {e}");
    }
}

#[test]
fn random_interleavings_keep_the_invariants_sqlite() {
    interleavings(Engine::Sqlite);
}

#[test]
fn random_interleavings_keep_the_invariants_postgres() {
    interleavings(Engine::Postgres);
}
