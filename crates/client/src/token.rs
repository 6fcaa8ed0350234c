//! What the client reads of its bearer token: the `sub` claim, without verifying anything.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::{AgentId, Error};

/// The `sub` claim of a JWT, read from its payload (base64url JSON). The signature is not
/// checked: that is the mailbox's job; the client only needs to know whom it speaks for.
///
/// ```
/// // {"alg":"HS256"} . {"sub":"alice","exp":4102444800} . (signature)
/// let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0.c2ln";
/// assert_eq!(a2a_mailbox_client::token_subject(token).unwrap().as_str(), "alice");
/// ```
pub fn token_subject(token: &str) -> Result<AgentId, Error> {
    let bad = |why: &str| Error::InvalidInput(format!("cannot read the token's subject: {why}"));
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| bad("it is not a JWT (header.payload.signature)"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| bad("its payload is not base64url"))?;
    let claims: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| bad("its payload is not JSON"))?;
    let sub = claims["sub"]
        .as_str()
        .ok_or_else(|| bad("it has no `sub` claim"))?;
    AgentId::parse(sub).map_err(|e| bad(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_tokens_are_refused() {
        for t in ["", "abc", "a.!!!.c", "a.bm90IGpzb24.c", "a.e30.c"] {
            assert!(
                matches!(token_subject(t), Err(Error::InvalidInput(_))),
                "{t}"
            );
        }
    }
}
