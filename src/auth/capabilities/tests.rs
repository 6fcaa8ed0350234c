use super::*;

fn caller(caps: serde_json::Value) -> Caller {
    Caller {
        sub: AgentId::parse("me").unwrap(),
        caps: serde_json::from_value(caps).unwrap(),
        exp: None,
    }
}

#[test]
fn a_wildcard_stands_for_a_whole_agent_id_in_the_last_position_only() {
    let required = [
        "a2a.send.bob@acme",
        "a2a.respond.bob",
        "a2a.lease.bob",
        "a2a.operator",
        "a2a.repair.requeue",
        "a2a.repair.force_error",
        "a2a.compact",
    ];
    // (grant, the required actions it admits)
    let table: [(&str, &[&str]); 12] = [
        ("a2a.send.*", &["a2a.send.bob@acme"]),
        ("a2a.respond.*", &["a2a.respond.bob"]),
        ("a2a.lease.*", &["a2a.lease.bob"]),
        ("a2a.send.bob@acme", &["a2a.send.bob@acme"]),
        ("a2a.operator", &["a2a.operator"]),
        ("a2a.repair.requeue", &["a2a.repair.requeue"]),
        ("a2a.*", &[]),
        ("a2a.repair.*", &[]),
        ("a2a.operator.*", &[]),
        ("*", &[]),
        ("a2a.send*", &[]),
        ("a2a.send.bob*", &[]),
    ];
    for (grant, admits) in table {
        for r in required {
            assert_eq!(
                action_matches(grant, r),
                admits.contains(&r),
                "{grant} against {r}"
            );
        }
    }
    assert!(!action_matches("a2a.send.bob", "a2a.send.bob2"));
    assert!(!action_matches("a2a.send.*", "a2a.send."));
    for grant in ["a2a.*", "*", "a2a.repair.*"] {
        let c = caller(serde_json::json!([grant]));
        assert!(!c.is_operator(), "{grant}");
        assert!(!c.holds_whole_family("a2a.respond."), "{grant}");
    }
    assert!(caller(serde_json::json!(["a2a.respond.*"])).holds_whole_family("a2a.respond."));
}

#[test]
fn scopes_narrow_grants() {
    let c = caller(serde_json::json!([{"action": "a2a.send.*", "scope": {"peer": "bob"}}]));
    let bob = ScopeCtx {
        peer: Some("bob"),
        ..Default::default()
    };
    let carol = ScopeCtx {
        peer: Some("carol"),
        ..Default::default()
    };
    assert_eq!(c.check("a2a.send.bob", &bob), CapCheck::Passed);
    assert_eq!(c.check("a2a.send.carol", &carol), CapCheck::ScopeMismatch);
    assert_eq!(c.check("a2a.respond.bob", &bob), CapCheck::Missing);
    // A scope naming a field the request lacks does not admit it.
    let c = caller(serde_json::json!([{"action": "a2a.send.bob", "scope": {"lease_id": "x"}}]));
    assert_eq!(c.check("a2a.send.bob", &bob), CapCheck::ScopeMismatch);
}

#[test]
fn a_scoped_operator_grant_is_no_operator_grant_even_where_its_scope_matches() {
    let c = caller(serde_json::json!([
        {"action": "a2a.operator", "scope": {"peer": "billing"}},
        "a2a.repair.requeue"
    ]));
    let billing = ScopeCtx {
        peer: Some("billing"),
        ..Default::default()
    };
    assert!(!c.is_operator());
    assert_eq!(c.check(OPERATOR, &billing), CapCheck::ScopeMismatch);
    assert_eq!(
        c.require_operator().unwrap_err().code,
        ErrorCode::CapabilityScopeMismatch
    );
    let empty = caller(serde_json::json!([{"action": "a2a.operator", "scope": {}}]));
    assert!(empty.is_operator(), "an empty scope narrows nothing");
}
