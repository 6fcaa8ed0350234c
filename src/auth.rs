//! JWT verification (here; its keys in `keys.rs` and `jwks.rs`, what the claims mean in
//! `claims.rs`) and capability matching (`capabilities.rs`, docs/contract.md#capabilities).
//!
//! The caller's identity is the token subject, so every capability is bound to the calling peer.

mod capabilities;
mod claims;
pub mod jwks;
mod keys;
mod reason;
mod verified;
pub use capabilities::{cap_error, Caller, CapCheck, CapEntry, ScopeCtx, LEEWAY_SECS, OPERATOR};
pub use claims::ClaimNames;
pub use keys::Keys;
pub use reason::{refused, AuthReason, Refused};

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::AgentId;
use keys::Picked;

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

/// What a token must say to be accepted, besides its signature.
#[derive(Clone, Debug, Default)]
pub struct TokenRules {
    /// When set, the token's `aud` must name one of these.
    pub audience: Option<Vec<String>>,
    /// When not empty, the token's `iss` must be one of these.
    pub issuers: Vec<String>,
    pub claims: ClaimNames,
}

/// How tokens are verified: the process's keys, the rules of the surface it guards, and the
/// tokens it verified already.
pub struct Verifier {
    keys: Arc<Keys>,
    rules: TokenRules,
    /// One validation per algorithm a key may verify.
    validations: Vec<(Algorithm, Validation)>,
    verified: verified::Verified,
}

/// What a full check made of a token: a caller, a refusal, or the need to fetch the identity
/// provider's keys first.
enum Checked {
    Done(Result<(Caller, u64), Refused>),
    UnknownKey(Box<Header>),
}

impl Verifier {
    pub fn new(keys: Arc<Keys>, rules: TokenRules) -> Verifier {
        let validations = [
            Algorithm::HS256,
            Algorithm::RS256,
            Algorithm::ES256,
            Algorithm::EdDSA,
        ]
        .into_iter()
        .map(|alg| (alg, validation(alg, &rules)))
        .collect();
        Verifier {
            keys,
            rules,
            validations,
            verified: verified::Verified::default(),
        }
    }

    /// A verifier with the same keys and rules that accepts only tokens for `audience` (the MCP
    /// endpoint as an OAuth resource server).
    pub fn for_audience(&self, audience: &str) -> Verifier {
        let rules = TokenRules {
            audience: Some(vec![audience.to_owned()]),
            ..self.rules.clone()
        };
        Verifier::new(self.keys.clone(), rules)
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub fn rules(&self) -> &TokenRules {
        &self.rules
    }

    pub fn verify(&self, token: &str) -> Result<Caller, Refused> {
        self.verify_expiring(token).map(|(caller, _)| caller)
    }

    /// [`Verifier::verify`], and when the token expires (`exp`, epoch seconds). A token that
    /// passed every check before is answered from memory until it expires, or until a key is
    /// withdrawn (`verified.rs`). A token naming a key the identity provider's set lacks is
    /// refused here; [`Verifier::verify_fetching`] fetches the set first.
    pub fn verify_expiring(&self, token: &str) -> Result<(Caller, u64), Refused> {
        match self.check(token) {
            Checked::Done(outcome) => outcome,
            Checked::UnknownKey(header) => Err(Keys::unknown_key(&header)),
        }
    }

    /// Whether a refusal is one that fetching the identity provider's keys could change.
    pub fn may_fetch(&self, refusal: &Refused) -> bool {
        refusal.0 == AuthReason::UnknownKey && self.keys.jwks.is_some()
    }

    /// [`Verifier::verify_expiring`], fetching the identity provider's keys first when the token
    /// names one the set lacks (at most once per `jwks::UNKNOWN_KID_PAUSE`).
    pub async fn verify_fetching(&self, token: &str) -> Result<(Caller, u64), Refused> {
        if let (Checked::UnknownKey(_), Some(jwks)) = (self.check(token), &self.keys.jwks) {
            jwks.fetch_for_unknown_kid().await;
        }
        self.verify_expiring(token)
    }

    fn check(&self, token: &str) -> Checked {
        let generation = self.keys.generation();
        let now = now_secs();
        if let Some(known) = self.verified.get(token, now, LEEWAY_SECS, generation) {
            return Checked::Done(Ok(known));
        }
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return Checked::Done(Err(invalid(e.kind()))),
        };
        if header.crit.is_some() {
            // RFC 7515 §4.1.11: a token whose header names extensions the recipient must
            // understand is refused by one that understands none.
            return Checked::Done(Err(refused(
                AuthReason::Malformed,
                "invalid bearer token: its header lists critical extensions (crit), and this \
                 service understands none",
            )));
        }
        let decoded = self.keys.with_key(&header, |alg, key| {
            let validation = self
                .validations
                .iter()
                .find_map(|(a, v)| (*a == alg).then_some(v))?;
            Some(jsonwebtoken::decode::<Map<String, Value>>(
                token, key, validation,
            ))
        });
        let data = match decoded {
            Ok(Picked::UnknownKey) => return Checked::UnknownKey(Box::new(header)),
            Err(refusal) => return Checked::Done(Err(refusal)),
            Ok(Picked::Checked(None)) => {
                return Checked::Done(Err(refused(
                    AuthReason::WrongAlgorithm,
                    AuthReason::WrongAlgorithm.describe(),
                )))
            }
            Ok(Picked::Checked(Some(Err(e)))) => return Checked::Done(Err(invalid(e.kind()))),
            Ok(Picked::Checked(Some(Ok(data)))) => data,
        };
        // `exp` is required and numeric: the validation checked it.
        let exp = data
            .claims
            .get("exp")
            .and_then(Value::as_f64)
            .unwrap_or(0.0) as u64;
        let outcome = self.rules.claims.caller(&data.claims, exp);
        if let Ok(caller) = &outcome {
            self.verified.keep(token, caller, exp, generation);
        }
        Checked::Done(outcome.map(|caller| (caller, exp)))
    }
}

/// The validation of tokens of `alg` under `rules`.
fn validation(alg: Algorithm, rules: &TokenRules) -> Validation {
    let mut validation = Validation::new(alg);
    let mut required = vec!["exp"];
    if rules.claims.subject == "sub" {
        required.push("sub");
    }
    validation.leeway = LEEWAY_SECS;
    validation.validate_nbf = true;
    match &rules.audience {
        Some(aud) => {
            validation.set_audience(aud);
            required.push("aud");
        }
        None => validation.validate_aud = false,
    }
    if !rules.issuers.is_empty() {
        validation.set_issuer(&rules.issuers);
        required.push("iss");
    }
    validation.set_required_spec_claims(&required);
    validation
}

/// The refusal of a token the verifier found fault with.
fn invalid(kind: &jsonwebtoken::errors::ErrorKind) -> Refused {
    let reason = AuthReason::of(kind);
    if let jsonwebtoken::errors::ErrorKind::MissingRequiredClaim(claim) = kind {
        let why = format!(
            "invalid bearer token: it lacks the claim {claim:?}, which this service requires"
        );
        return refused(reason, why);
    }
    refused(
        reason,
        format!("invalid bearer token: {}", reason.describe()),
    )
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
