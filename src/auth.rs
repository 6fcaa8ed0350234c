//! JWT verification (here) and capability matching (`capabilities.rs`,
//! docs/contract.md#capabilities).
//!
//! The caller's identity is the token subject, so every capability is bound to the calling peer.

mod capabilities;
mod reason;
mod verified;
pub use capabilities::{cap_error, Caller, CapCheck, CapEntry, ScopeCtx, LEEWAY_SECS, OPERATOR};
pub use reason::AuthReason;

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::domain::AgentId;
use crate::error::MailboxError;

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// A string or a list of strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(default)]
    pub caps: Vec<CapEntry>,
}

/// A refused token: why, and the 401 the request answers.
pub type Refused = (AuthReason, MailboxError);

pub fn refused(reason: AuthReason, message: impl Into<String>) -> Refused {
    (reason, MailboxError::unauthenticated(message))
}

/// How tokens are verified.
pub struct Verifier {
    key: DecodingKey,
    validation: Validation,
    verified: verified::Verified,
}

impl Verifier {
    pub fn new(
        alg: Algorithm,
        key: DecodingKey,
        audience: Option<&str>,
        issuer: Option<&str>,
    ) -> Verifier {
        let mut validation = Validation::new(alg);
        let mut required = vec!["exp", "sub"];
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        match audience {
            Some(aud) => {
                validation.set_audience(&[aud]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        if let Some(iss) = issuer {
            validation.set_issuer(&[iss]);
            required.push("iss");
        }
        validation.set_required_spec_claims(&required);
        Verifier {
            key,
            validation,
            verified: verified::Verified::default(),
        }
    }

    pub fn verify(&self, token: &str) -> Result<Caller, Refused> {
        self.verify_expiring(token).map(|(caller, _)| caller)
    }

    /// [`Verifier::verify`], and when the token expires (`exp`, epoch seconds). A token that
    /// passed every check before is answered from memory until it expires (`verified.rs`).
    pub fn verify_expiring(&self, token: &str) -> Result<(Caller, u64), Refused> {
        if let Some(known) = self.verified.get(token, now_secs(), self.validation.leeway) {
            return Ok(known);
        }
        let data =
            jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation).map_err(|e| {
                let reason = AuthReason::of(e.kind());
                refused(
                    reason,
                    format!("invalid bearer token: {}", reason.describe()),
                )
            })?;
        let sub = AgentId::parse(&data.claims.sub).map_err(|e| {
            refused(
                AuthReason::BadSubject,
                format!("invalid token subject: {e}"),
            )
        })?;
        if data.header.crit.is_some() {
            // RFC 7515 §4.1.11: a token whose header names extensions the recipient must
            // understand is refused by one that understands none.
            return Err(refused(
                AuthReason::Malformed,
                "invalid bearer token: its header lists critical extensions (crit), and this \
                 service understands none",
            ));
        }
        let caller = Caller {
            sub,
            caps: data.claims.caps,
            exp: Some(data.claims.exp),
        };
        self.verified.keep(token, &caller, data.claims.exp);
        Ok((caller, data.claims.exp))
    }
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Mints an HS256 token (the `token` command, the `--dev` operator token).
pub fn mint_hs256(
    secret: &[u8],
    sub: &str,
    caps: Vec<CapEntry>,
    ttl_secs: u64,
    audience: Option<String>,
    issuer: Option<String>,
) -> anyhow::Result<String> {
    AgentId::parse(sub).map_err(anyhow::Error::msg)?;
    let now = now_secs();
    let exp = now
        .checked_add(ttl_secs)
        .ok_or_else(|| anyhow::anyhow!("a token lifetime of {ttl_secs} s is too long"))?;
    let claims = Claims {
        sub: sub.to_owned(),
        exp,
        iat: Some(now),
        aud: audience.map(serde_json::Value::String),
        iss: issuer,
        caps,
    };
    Ok(jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret),
    )?)
}
