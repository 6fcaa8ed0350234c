//! A query string holding a NUL character (`%00`) is a client's mistake on every route: no
//! filter, agent id or kind can contain one, and the databases refuse it in a statement. It is
//! refused here, before any handler or statement sees it, with the contract's 400.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};

use crate::error::MailboxError;

/// Whether the raw (percent-encoded) query string decodes to text with a NUL in it.
fn holds_nul(query: &str) -> bool {
    query.contains("%00")
}

/// Answers 400 `invalid_request` to a request whose query holds a NUL; passes any other on.
pub async fn refuse_nul_in_query<B: MessageBody>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    if holds_nul(req.query_string()) {
        let e = MailboxError::invalid(
            "a query parameter holds the NUL character (%00), which no value may contain",
        );
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
