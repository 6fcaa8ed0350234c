use super::*;

fn caller(sub: &str) -> Caller {
    Caller {
        sub: AgentId::parse(sub).unwrap(),
        caps: Vec::new(),
        exp: None,
    }
}

#[test]
fn a_kept_token_is_answered_until_its_expiry_and_its_leeway() {
    let v = Verified::default();
    v.keep("t.o.k", &caller("alice"), 1_000, 0);
    let (c, exp) = v.get("t.o.k", 1_000, 30, 0).unwrap();
    assert_eq!((c.sub.as_str(), exp), ("alice", 1_000));
    assert!(v.get("t.o.k", 1_030, 30, 0).is_some());
    assert!(v.get("t.o.k", 1_031, 30, 0).is_none(), "expired");
    assert!(
        v.get("t.o.k", 5_000, 0, 0).is_none(),
        "expired, whatever came before"
    );
}

#[test]
fn only_the_exact_text_is_answered() {
    let v = Verified::default();
    v.keep("t.o.k", &caller("alice"), 1_000, 0);
    for other in ["t.o.K", "t.o.k ", "t.o.", "", "t.o.kk"] {
        assert!(v.get(other, 0, 30, 0).is_none(), "{other:?}");
    }
}

#[test]
fn a_caller_comes_back_exactly_as_it_was_kept() {
    let caps: Vec<CapEntry> = serde_json::from_value(serde_json::json!([
        "a2a-send:*",
        {"action": "a2a-respond"},
        {"action": "a2a-lease", "scope": {"peer": "bob", "task_id": "t-1"}},
        {"action": "operator", "scope": {}},
    ]))
    .unwrap();
    let kept = Caller {
        sub: AgentId::parse("alice@acme").unwrap(),
        caps,
        exp: None,
    };
    let v = Verified::default();
    v.keep("h.p.s", &kept, 7, 0);
    let (back, _) = v.get("h.p.s", 0, 0, 0).unwrap();
    assert_eq!(back.sub, kept.sub);
    assert_eq!(back.caps, kept.caps);
}

#[test]
fn tokens_that_share_slots_are_each_answered_with_their_own_caller() {
    let v = Verified::default();
    for i in 0..1_000 {
        v.keep(&format!("t{i}"), &caller(&format!("agent{i}")), 1_000, 0);
    }
    let answered = (0..1_000)
        .filter(|i| {
            let found = v.get(&format!("t{i}"), 0, 0, 0);
            if let Some((c, _)) = &found {
                assert_eq!(c.sub.as_str(), format!("agent{i}"));
            }
            found.is_some()
        })
        .count();
    assert!(answered >= 990, "{answered} of 1,000 kept");
}

#[test]
fn a_full_set_is_emptied_before_the_next_token() {
    let v = Verified::default();
    let mut i = 0;
    while v.len() < SLOTS / 4 * 3 {
        v.keep(&format!("t{i}"), &caller("alice"), 1_000, 0);
        i += 1;
    }
    v.keep("newest", &caller("bob"), 1_000, 0);
    assert_eq!(v.len(), 1);
    assert!(v.get("t0", 0, 30, 0).is_none());
    assert_eq!(v.get("newest", 0, 30, 0).unwrap().0.sub.as_str(), "bob");
}

#[test]
fn a_full_arena_is_emptied_and_a_token_too_large_is_never_kept() {
    let v = Verified::default();
    let long = "x".repeat(LARGEST / 2);
    let mut i = 0;
    while i < ARENA / long.len() {
        v.keep(&format!("{long}{i}"), &caller("alice"), 1_000, 0);
        i += 1;
    }
    assert!(v.len() < ARENA / long.len(), "emptied on the way");
    assert!(v.get(&format!("{long}{}", i - 1), 0, 0, 0).is_some());
    let huge = "y".repeat(LARGEST + 1);
    v.keep(&huge, &caller("alice"), 1_000, 0);
    assert!(v.get(&huge, 0, 0, 0).is_none());
}

#[test]
fn a_new_key_generation_forgets_every_kept_token() {
    let v = Verified::default();
    v.keep("t.o.k", &caller("alice"), 1_000, 0);
    assert!(v.get("t.o.k", 0, 0, 0).is_some());
    assert!(v.get("t.o.k", 0, 0, 1).is_none(), "a key was withdrawn");
    assert_eq!(v.len(), 0, "forgotten, not hidden");
    v.keep("old.gen", &caller("alice"), 1_000, 0);
    assert_eq!(v.len(), 0, "a check made under the old keys is not kept");
    v.keep("new.gen", &caller("alice"), 1_000, 1);
    assert!(v.get("new.gen", 0, 0, 1).is_some());
}
