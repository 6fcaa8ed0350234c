//! Who a verified token speaks for and what it grants: the agent id from the subject claim
//! (`sub`, or the claim `A2A_MAILBOX_JWT_SUBJECT_CLAIM` names) and the capabilities from the caps
//! claim (`caps`, or `A2A_MAILBOX_JWT_CAPS_CLAIM`) and from an OAuth `scope` or `scp`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::capabilities::{Caller, CapEntry};
use super::reason::{refused, AuthReason, Refused};
use crate::domain::AgentId;

/// Where a token's claims say who it is and what it may do.
#[derive(Clone, Debug)]
pub struct ClaimNames {
    pub subject: String,
    pub caps: String,
}

impl Default for ClaimNames {
    fn default() -> Self {
        ClaimNames {
            subject: "sub".to_owned(),
            caps: "caps".to_owned(),
        }
    }
}

impl ClaimNames {
    /// The caller a verified token's claims describe.
    pub fn caller(&self, claims: &Map<String, Value>, exp: u64) -> Result<Caller, Refused> {
        let name = &self.subject;
        let subject = match claims.get(name) {
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err(refused(
                    AuthReason::BadSubject,
                    format!("invalid bearer token: its claim {name:?} is not a string"),
                ))
            }
            None => {
                return Err(refused(
                    AuthReason::MissingClaim,
                    format!(
                        "invalid bearer token: it lacks the claim {name:?} that names the agent \
                         (A2A_MAILBOX_JWT_SUBJECT_CLAIM)"
                    ),
                ))
            }
        };
        let sub = AgentId::parse(subject).map_err(|e| {
            let shown: String = subject.chars().take(64).collect();
            refused(
                AuthReason::BadSubject,
                format!(
                    "invalid token subject: the claim {name:?} holds {shown:?}, which is not an \
                     agent id ({e}). Identity providers whose subjects are opaque ids (Auth0's \
                     \"auth0|…\", Entra's object ids) can put the agent id in a claim of its own: \
                     name that claim in A2A_MAILBOX_JWT_SUBJECT_CLAIM"
                ),
            )
        })?;
        let mut caps = match claims.get(&self.caps) {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => Vec::<CapEntry>::deserialize(v).map_err(|e| {
                refused(
                    AuthReason::Malformed,
                    format!(
                        "invalid bearer token: its claim {:?} is not a list of capabilities: {e}",
                        self.caps
                    ),
                )
            })?,
        };
        for claim in ["scope", "scp"] {
            caps.extend(scopes(claims.get(claim)).map(|s| CapEntry::Action(s.to_owned())));
        }
        Ok(Caller {
            sub,
            caps,
            exp: Some(exp),
        })
    }
}

/// The names in an OAuth scope claim: a space-separated string, or a list of strings.
fn scopes(claim: Option<&Value>) -> impl Iterator<Item = &str> {
    let (text, list) = match claim {
        Some(Value::String(s)) => (Some(s.as_str()), None),
        Some(Value::Array(a)) => (None, Some(a)),
        _ => (None, None),
    };
    let words = text.into_iter().flat_map(str::split_ascii_whitespace);
    let items = list.into_iter().flatten().filter_map(Value::as_str);
    words.chain(items).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
