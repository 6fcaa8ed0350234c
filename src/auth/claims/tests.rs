use serde_json::json;

use super::*;

fn claims(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn actions(caller: &Caller) -> Vec<String> {
    caller
        .caps
        .iter()
        .map(|c| match c {
            CapEntry::Action(a) => a.clone(),
            CapEntry::Scoped { action, .. } => format!("{action} (scoped)"),
        })
        .collect()
}

#[test]
fn the_agent_id_comes_from_the_configured_claim() {
    let names = ClaimNames {
        subject: "agent_id".into(),
        caps: "caps".into(),
    };
    let c = claims(json!({"sub": "auth0|5f7c8ec7c33c6c004bbafe82", "agent_id": "alice"}));
    assert_eq!(names.caller(&c, 9).unwrap().sub.as_str(), "alice");
    let (reason, e) = ClaimNames::default().caller(&c, 9).unwrap_err();
    assert_eq!(reason, AuthReason::BadSubject);
    assert!(
        e.message.contains("auth0|5f7c8ec7c33c6c004bbafe82"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("A2A_MAILBOX_JWT_SUBJECT_CLAIM"),
        "{}",
        e.message
    );
    let (reason, e) = names
        .caller(&claims(json!({"sub": "alice"})), 9)
        .unwrap_err();
    assert_eq!(reason, AuthReason::MissingClaim);
    assert!(e.message.contains("agent_id"), "{}", e.message);
}

#[test]
fn capabilities_come_from_the_caps_claim_and_oauth_scopes() {
    let c = claims(json!({
        "sub": "alice",
        "caps": ["a2a.send.bob", {"action": "a2a.send.*", "scope": {"peer": "carol"}}],
        "scope": "openid  a2a.respond.bob",
        "scp": ["a2a.lease.dave", 7],
    }));
    let caller = ClaimNames::default().caller(&c, 9).unwrap();
    assert_eq!(
        actions(&caller),
        [
            "a2a.send.bob",
            "a2a.send.* (scoped)",
            "openid",
            "a2a.respond.bob",
            "a2a.lease.dave"
        ]
    );
    let entra = claims(json!({"sub": "alice", "scp": "a2a.operator a2a.compact"}));
    assert_eq!(
        actions(&ClaimNames::default().caller(&entra, 9).unwrap()),
        ["a2a.operator", "a2a.compact"]
    );
    let roles = ClaimNames {
        subject: "sub".into(),
        caps: "roles".into(),
    };
    let c = claims(json!({"sub": "alice", "roles": ["a2a.compact"], "caps": ["a2a.operator"]}));
    assert_eq!(actions(&roles.caller(&c, 9).unwrap()), ["a2a.compact"]);
}

#[test]
fn a_caps_claim_that_is_no_list_of_capabilities_is_refused() {
    let c = claims(json!({"sub": "alice", "caps": "a2a.operator"}));
    let (reason, _) = ClaimNames::default().caller(&c, 9).unwrap_err();
    assert_eq!(reason, AuthReason::Malformed);
}
