//! Why a token was refused.

use crate::error::MailboxError;

/// A refused token: why, and the 401 the request answers.
pub type Refused = (AuthReason, MailboxError);

pub fn refused(reason: AuthReason, message: impl Into<String>) -> Refused {
    (reason, MailboxError::unauthenticated(message))
}

/// Why a token was refused: a short stable slug, the `reason` label of `a2a_auth_failures_total`
/// and a key of the `reasons` of an `authentication_failed` audit row (docs/contract.md#audit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AuthReason {
    Missing,
    Malformed,
    Expired,
    NotYetValid,
    BadSignature,
    WrongAlgorithm,
    WrongAudience,
    WrongIssuer,
    MissingClaim,
    BadSubject,
    UnknownKey,
    Invalid,
}

impl AuthReason {
    /// Every reason's slug, in the order of the variants (`reason as usize`).
    pub const SLUGS: [&'static str; 12] = [
        AuthReason::Missing.slug(),
        AuthReason::Malformed.slug(),
        AuthReason::Expired.slug(),
        AuthReason::NotYetValid.slug(),
        AuthReason::BadSignature.slug(),
        AuthReason::WrongAlgorithm.slug(),
        AuthReason::WrongAudience.slug(),
        AuthReason::WrongIssuer.slug(),
        AuthReason::MissingClaim.slug(),
        AuthReason::BadSubject.slug(),
        AuthReason::UnknownKey.slug(),
        AuthReason::Invalid.slug(),
    ];

    pub const fn slug(self) -> &'static str {
        match self {
            AuthReason::Missing => "missing",
            AuthReason::Malformed => "malformed",
            AuthReason::Expired => "expired",
            AuthReason::NotYetValid => "not_yet_valid",
            AuthReason::BadSignature => "bad_signature",
            AuthReason::WrongAlgorithm => "wrong_algorithm",
            AuthReason::WrongAudience => "wrong_audience",
            AuthReason::WrongIssuer => "wrong_issuer",
            AuthReason::MissingClaim => "missing_claim",
            AuthReason::BadSubject => "bad_subject",
            AuthReason::UnknownKey => "unknown_key",
            AuthReason::Invalid => "invalid",
        }
    }

    /// What the reason means, for the person who sent the token.
    pub fn describe(self) -> &'static str {
        match self {
            AuthReason::Missing => "no bearer token was sent",
            AuthReason::Malformed => "the token is not a well-formed JWT (header.claims.signature)",
            AuthReason::Expired => "the token has expired; ask for a new one",
            AuthReason::NotYetValid => "the token is not valid yet (its nbf lies in the future)",
            AuthReason::BadSignature => {
                "the token's signature does not match this service's key (was it signed for \
                 another service?)"
            }
            AuthReason::WrongAlgorithm => {
                "the token is signed with an algorithm this service does not accept"
            }
            AuthReason::WrongAudience => "the token was issued for another audience (aud)",
            AuthReason::WrongIssuer => "the token comes from another issuer (iss)",
            AuthReason::MissingClaim => {
                "the token lacks a required claim (sub and exp are required)"
            }
            AuthReason::BadSubject => "the token's subject (sub) is not a valid agent id",
            AuthReason::UnknownKey => {
                "the token's key (kid) is not among the identity provider's keys"
            }
            AuthReason::Invalid => "the token was refused",
        }
    }

    /// What the verifier's error says about the token (anything about the server's own key is
    /// `invalid`).
    pub(super) fn of(kind: &jsonwebtoken::errors::ErrorKind) -> AuthReason {
        use jsonwebtoken::errors::ErrorKind as K;
        match kind {
            K::InvalidToken | K::Base64(_) | K::Json(_) | K::Utf8(_) | K::InvalidClaimFormat(_) => {
                AuthReason::Malformed
            }
            K::InvalidSignature => AuthReason::BadSignature,
            K::InvalidAlgorithm | K::InvalidAlgorithmName | K::UnsupportedAlgorithm => {
                AuthReason::WrongAlgorithm
            }
            K::ExpiredSignature => AuthReason::Expired,
            K::ImmatureSignature => AuthReason::NotYetValid,
            K::InvalidAudience => AuthReason::WrongAudience,
            K::InvalidIssuer => AuthReason::WrongIssuer,
            K::MissingRequiredClaim(_) => AuthReason::MissingClaim,
            K::InvalidSubject => AuthReason::BadSubject,
            _ => AuthReason::Invalid,
        }
    }
}
