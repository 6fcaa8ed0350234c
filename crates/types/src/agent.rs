//! An agent's identity.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// An agent identity: 1..=128 characters of `[A-Za-z0-9_.-]`, optionally `@` and a domain of
/// the same characters, e.g. `research@acme`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct AgentId(String);

/// The AgentId syntax, as an OpenAPI `pattern` (with `maxLength` 128).
pub const AGENT_ID_PATTERN: &str = r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$";

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for AgentId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .description(Some(
                "An agent identity: 1..=128 characters of `[A-Za-z0-9_.-]`, optionally `@` and a \
                 domain of the same characters, e.g. `research@acme`.",
            ))
            .pattern(Some(AGENT_ID_PATTERN))
            .min_length(Some(1))
            .max_length(Some(128))
            .examples([serde_json::json!("research@acme")])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for AgentId {}

impl AgentId {
    /// Checks the syntax and wraps the string; the error says what is wrong.
    ///
    /// ```
    /// use a2a_mailbox_types::AgentId;
    /// assert_eq!(AgentId::parse("research@acme").unwrap().as_str(), "research@acme");
    /// assert!(AgentId::parse("not an id").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<AgentId, String> {
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        };
        let ok = !s.is_empty()
            && s.len() <= 128
            && match s.split_once('@') {
                Some((name, domain)) => valid_part(name) && valid_part(domain),
                None => valid_part(s),
            };
        if ok {
            Ok(AgentId(s.to_owned()))
        } else {
            Err(format!(
                "invalid AgentId {s:?}: expected 1..=128 characters matching ^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$"
            ))
        }
    }
    /// The id as it travels.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for AgentId {
    type Err = String;
    fn from_str(s: &str) -> Result<AgentId, String> {
        AgentId::parse(s)
    }
}

impl<'de> Deserialize<'de> for AgentId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AgentId::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids() {
        for ok in ["a", "research@acme", "a.b-c_d@x.y", &"x".repeat(128)] {
            assert!(AgentId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a@", "@a", "a@b@c", "ü", &"x".repeat(129)] {
            assert!(AgentId::parse(bad).is_err(), "{bad}");
        }
    }
}
