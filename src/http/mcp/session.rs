//! MCP sessions (docs/mcp.md#sessions): an `Mcp-Session-Id` is issued at `initialize` and names
//! the caller it was issued to and the protocol version agreed on. It is checked, not stored: any
//! instance on the same database recognises it (it carries a MAC under a secret the database
//! keeps), and nothing is lost with it: a client whose session is refused initializes again, and
//! every task stays readable, because tasks are mailbox tasks.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The protocol revisions served, newest first (the first is offered to a client asking for
/// another).
pub const VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The revision that has tasks in the core protocol.
pub const WITH_TASKS: &str = "2025-11-25";

/// The revision to answer a client's `initialize` with: the one it asked for if it is served,
/// else the newest.
pub fn negotiate(asked: Option<&str>) -> &'static str {
    VERSIONS
        .into_iter()
        .find(|v| Some(*v) == asked)
        .unwrap_or(VERSIONS[0])
}

/// An agreed session: its protocol revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    pub version: &'static str,
}

impl Session {
    pub fn has_tasks(self) -> bool {
        self.version == WITH_TASKS
    }
}

/// The MAC of a session id's parts under the database's secret.
fn mac(secret: &Uuid, sub: &str, version: &str, nonce: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        secret.as_bytes().as_slice(),
        sub.as_bytes(),
        version.as_bytes(),
        nonce.as_bytes(),
    ] {
        h.update((part.len() as u32).to_be_bytes());
        h.update(part);
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new session id for `sub` at `version`: `<version index>.<nonce>.<mac>`, visible ASCII.
pub fn issue(secret: &Uuid, sub: &str, version: &'static str) -> String {
    let at = VERSIONS.iter().position(|v| *v == version).unwrap_or(0);
    let nonce = Uuid::new_v4().simple().to_string();
    let mac = mac(secret, sub, version, &nonce);
    format!("{at}.{nonce}.{mac}")
}

/// The session `id` names, if it was issued to `sub` under `secret`.
pub fn check(secret: &Uuid, sub: &str, id: &str) -> Option<Session> {
    let mut parts = id.split('.');
    let (at, nonce, given) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || nonce.len() != 32 {
        return None;
    }
    let version = *VERSIONS.get(at.parse::<usize>().ok()?)?;
    (mac(secret, sub, version, nonce) == given).then_some(Session { version })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_names_its_caller_and_version_and_nothing_else_passes() {
        let secret = Uuid::new_v4();
        let id = issue(&secret, "alice", "2025-06-18");
        assert_eq!(
            check(&secret, "alice", &id),
            Some(Session {
                version: "2025-06-18"
            })
        );
        assert_eq!(check(&secret, "mallory", &id), None, "another caller");
        assert_eq!(
            check(&Uuid::new_v4(), "alice", &id),
            None,
            "another database"
        );
        let forged = id.replacen("1.", "0.", 1);
        assert_eq!(check(&secret, "alice", &forged), None, "another version");
        assert_eq!(check(&secret, "alice", "x"), None);
        assert_eq!(check(&secret, "alice", &format!("{id}.1")), None);
    }

    #[test]
    fn a_client_gets_the_version_it_asks_for_when_served_else_the_newest() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2024-11-05")), "2025-11-25");
        assert_eq!(negotiate(None), "2025-11-25");
    }
}
