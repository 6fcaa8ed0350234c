//! Capabilities (docs/contract.md#capabilities): the grants a token carries, the caller holding
//! them, and what they admit.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::domain::AgentId;
use crate::error::{ErrorCode, MailboxError};

/// A capability grant: an action, optionally narrowed by a scope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CapEntry {
    Action(String),
    Scoped {
        action: String,
        #[serde(default)]
        scope: Option<BTreeMap<String, String>>,
    },
}

impl CapEntry {
    fn action(&self) -> &str {
        match self {
            CapEntry::Action(a) | CapEntry::Scoped { action: a, .. } => a,
        }
    }
    fn scope(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            CapEntry::Action(_) => None,
            CapEntry::Scoped { scope, .. } => scope.as_ref(),
        }
    }
}

/// The authenticated caller of a request.
#[derive(Clone, Debug)]
pub struct Caller {
    pub sub: AgentId,
    pub caps: Vec<CapEntry>,
    /// When its token expires (`exp`, epoch seconds); `None` for a caller without a token (the
    /// in-process scheduler).
    pub exp: Option<u64>,
}

/// How long after its `exp` a token is still accepted, in seconds (clock skew between the
/// issuer and the mailbox).
pub const LEEWAY_SECS: u64 = 30;

/// The request values a scope may pin. A scope naming a field the request lacks does not admit it.
#[derive(Clone, Debug, Default)]
pub struct ScopeCtx<'a> {
    pub peer: Option<&'a str>,
    pub task_id: Option<String>,
    pub lease_id: Option<String>,
    pub duplicate_risk: Option<&'a str>,
}

impl ScopeCtx<'_> {
    fn get(&self, field: &str) -> Option<&str> {
        match field {
            "peer" => self.peer,
            "task_id" => self.task_id.as_deref(),
            "lease_id" => self.lease_id.as_deref(),
            "duplicate_risk" => self.duplicate_risk,
            _ => None,
        }
    }
}

/// The outcome of a capability check, as recorded in the audit feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapCheck {
    Passed,
    Missing,
    ScopeMismatch,
}

/// The actions whose last segment is an agent id: the only place a wildcard may stand (docs/contract.md#capabilities).
const AGENT_ACTIONS: [&str; 3] = ["a2a.send.", "a2a.respond.", "a2a.lease."];

/// The one wildcard rule of docs/contract.md#capabilities: `*` stands for a whole agent id in the last position of
/// `a2a.send.*`, `a2a.respond.*` and `a2a.lease.*`, never for part of an action (`a2a.*`,
/// `a2a.repair.*` and `*` alone grant nothing). Answers the action family a grant covers
/// whole (`a2a.send.` for `a2a.send.*`), if it is such a wildcard.
fn wildcard_family(grant: &str) -> Option<&'static str> {
    let prefix = grant.strip_suffix('*')?;
    AGENT_ACTIONS.into_iter().find(|family| *family == prefix)
}

/// Does `grant` (e.g. `a2a.send.*`) name the `required` action (e.g. `a2a.send.bob@acme`)?
fn action_matches(grant: &str, required: &str) -> bool {
    if grant == required {
        return true;
    }
    wildcard_family(grant)
        .is_some_and(|family| required.len() > family.len() && required.starts_with(family))
}

/// The operator grant. It is all or nothing: a grant of it with a scope is no operator grant
/// anywhere (its checks answer [`CapCheck::ScopeMismatch`], whatever the request).
pub const OPERATOR: &str = "a2a.operator";

impl Caller {
    /// How much longer the caller's token is accepted (its `exp` plus [`LEEWAY_SECS`]), from
    /// now; `None` when it has no end. A waiting request never outlives it
    /// (docs/contract.md#waiting).
    pub fn time_left(&self) -> Option<Duration> {
        let ends_ms = self.exp?.saturating_add(LEEWAY_SECS).saturating_mul(1000);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Some(Duration::from_millis(ends_ms.saturating_sub(now_ms)))
    }

    pub fn is_operator(&self) -> bool {
        self.check(OPERATOR, &ScopeCtx::default()) == CapCheck::Passed
    }

    /// Refuses a caller that is not an operator: 403 `capability_missing`, or
    /// `capability_scope_mismatch` for a scoped grant of `a2a.operator`.
    pub fn require_operator(&self) -> Result<(), MailboxError> {
        self.require(OPERATOR, &ScopeCtx::default())
    }

    pub fn check(&self, required: &str, ctx: &ScopeCtx) -> CapCheck {
        let mut any = false;
        for cap in self
            .caps
            .iter()
            .filter(|c| action_matches(c.action(), required))
        {
            any = true;
            let admitted = match cap.scope().filter(|s| !s.is_empty()) {
                None => true,
                Some(_) if required == OPERATOR => false,
                Some(scope) => scope.iter().all(|(k, v)| ctx.get(k) == Some(v.as_str())),
            };
            if admitted {
                return CapCheck::Passed;
            }
        }
        if any {
            CapCheck::ScopeMismatch
        } else {
            CapCheck::Missing
        }
    }

    /// Does the caller hold a grant, without a scope, that admits `family` + ANY agent (for
    /// `a2a.respond.`: `a2a.respond.*`)? Then a check of `family<x>` passes whatever `<x>` and
    /// the request are, and need not wait for `<x>`.
    pub fn holds_whole_family(&self, family: &str) -> bool {
        self.caps.iter().any(|c| {
            c.scope().is_none_or(|s| s.is_empty()) && wildcard_family(c.action()) == Some(family)
        })
    }

    /// Checks and turns a refusal into the contract's 403.
    pub fn require(&self, required: &str, ctx: &ScopeCtx) -> Result<(), MailboxError> {
        cap_error(self.check(required, ctx), required)
    }
}

pub fn cap_error(check: CapCheck, required: &str) -> Result<(), MailboxError> {
    match check {
        CapCheck::Passed => Ok(()),
        CapCheck::Missing => Err(MailboxError::new(
            ErrorCode::CapabilityMissing,
            format!("the token lacks the capability {required}"),
        )),
        CapCheck::ScopeMismatch => Err(MailboxError::new(
            ErrorCode::CapabilityScopeMismatch,
            format!("the token grants {required}, but its scope does not admit this request"),
        )),
    }
}

#[cfg(test)]
mod tests;
