//! A query string or a path holding a NUL character (`%00`) is a client's mistake on every
//! route: no filter, id, agent id or kind can contain one, and PostgreSQL refuses it in a
//! statement. It is refused here, before any handler or statement sees it, with the contract's
//! 400. (JSON bodies are checked where they are parsed: `extract::parse_json`.)

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};

use super::extract::NUL_REFUSED;
use crate::error::MailboxError;

/// Whether a raw (percent-encoded) query string or path decodes to text with a NUL in it.
fn holds_nul(raw: &str) -> bool {
    raw.contains("%00")
}

/// Answers 400 `invalid_request` to a request whose query or path holds a NUL; passes any
/// other on.
pub async fn refuse_nul_in_url<B: MessageBody>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    if holds_nul(req.query_string()) || holds_nul(req.uri().path()) {
        let e = MailboxError::invalid(NUL_REFUSED);
        return Ok(req.error_response(e).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::holds_nul;

    #[test]
    fn only_an_encoded_nul_is_a_nul() {
        assert!(holds_nul("kind=%00"));
        assert!(holds_nul("limit=5&sender=a%00b"));
        assert!(!holds_nul("kind=%2500"));
        assert!(!holds_nul("limit=500&wait_ms=1000"));
        assert!(!holds_nul(""));
    }
}
