//! The keys a token may be verified with, and which one a token's header picks: the HS256
//! secret, one configured public key, or a key of the identity provider's set (`jwks.rs`).

use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Header};

use super::jwks::{Found, Jwks};
use super::reason::{refused, AuthReason, Refused};

/// The verification keys of the process, shared by every verifier.
#[derive(Default)]
pub struct Keys {
    /// HS256 tokens are verified with this secret.
    pub secret: Option<DecodingKey>,
    /// Tokens of this algorithm (RS256, ES256 or EdDSA) are verified with this key.
    pub public: Option<(Algorithm, DecodingKey)>,
    /// Tokens naming a key (`kid`) are verified with the provider's key of that name.
    pub jwks: Option<Arc<Jwks>>,
}

/// What a token's header found.
pub enum Picked<R> {
    /// What the verification with the chosen key made of the token.
    Checked(R),
    /// The token names a key the identity provider's set lacks (fetching the set may help).
    UnknownKey,
}

impl Keys {
    /// Calls `check` with the key and algorithm a token with `header` is verified by.
    pub fn with_key<R>(
        &self,
        header: &Header,
        check: impl FnOnce(Algorithm, &DecodingKey) -> R,
    ) -> Result<Picked<R>, Refused> {
        let alg = header.alg;
        let wrong = || {
            refused(
                AuthReason::WrongAlgorithm,
                format!(
                    "invalid bearer token: it is signed with {alg:?}, which this service does \
                     not accept{}",
                    self.accepted()
                ),
            )
        };
        if alg == Algorithm::HS256 {
            let key = self.secret.as_ref().ok_or_else(wrong)?;
            return Ok(Picked::Checked(check(alg, key)));
        }
        if let Some(jwks) = &self.jwks {
            return match jwks.with_key(header.kid.as_deref(), alg, |key| check(alg, key)) {
                Found::Key(r) => Ok(Picked::Checked(r)),
                Found::Unknown => Ok(Picked::UnknownKey),
                Found::OtherAlgorithm(own) => Err(refused(
                    AuthReason::WrongAlgorithm,
                    format!(
                        "invalid bearer token: its header says {alg:?}, but the identity \
                         provider's key {:?} is a {own:?} key",
                        header.kid.as_deref().unwrap_or_default()
                    ),
                )),
            };
        }
        match &self.public {
            Some((own, key)) if *own == alg => Ok(Picked::Checked(check(alg, key))),
            _ => Err(wrong()),
        }
    }

    /// Changes whenever a key is withdrawn, so that what was verified with it is checked again.
    pub fn generation(&self) -> u64 {
        self.jwks.as_ref().map_or(0, |j| j.generation())
    }

    /// The refusal of a token whose key the set lacks, after the set was fetched again.
    pub fn unknown_key(header: &Header) -> Refused {
        let why = match &header.kid {
            Some(kid) => format!(
                "invalid bearer token: its key (kid {:?}) is not among the identity provider's \
                 keys (A2A_MAILBOX_JWT_JWKS_URL)",
                kid.chars().take(64).collect::<String>()
            ),
            None => "invalid bearer token: it names no key (kid), and the identity provider \
                     publishes more than one key (or none) of its algorithm"
                .to_owned(),
        };
        refused(AuthReason::UnknownKey, why)
    }

    /// ", only …": the algorithms this service accepts, for a refusal.
    fn accepted(&self) -> String {
        let mut algs = Vec::new();
        if self.secret.is_some() {
            algs.push("HS256".to_owned());
        }
        if let Some((alg, _)) = &self.public {
            algs.push(format!("{alg:?}"));
        }
        if self.jwks.is_some() {
            algs.push("the identity provider's RS256, ES256 and EdDSA keys".to_owned());
        }
        match algs.is_empty() {
            true => String::new(),
            false => format!(" (it accepts {})", algs.join(", ")),
        }
    }
}
