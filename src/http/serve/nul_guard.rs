//! A NUL character (U+0000) is a client's mistake on every route: no filter, id, agent id,
//! kind, reason or message can contain one, and PostgreSQL refuses it in a statement. A query
//! string, a path or a form body (the dashboard's) holding one (`%00`, or the raw byte in a
//! form) is refused here, before any handler or statement sees it, with the contract's 400. JSON
//! bodies are checked where every one of them is parsed: `extract::parse_json`.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{mime, web, HttpMessage};
use futures_util::StreamExt;

use crate::error::{ErrorCode, MailboxError};
use crate::http::extract::NUL_REFUSED;
use crate::http::state::State;

/// Whether a raw (percent-encoded) query string, path or form body decodes to text with a NUL
/// in it.
fn holds_nul(raw: &[u8]) -> bool {
    raw.contains(&0) || raw.windows(3).any(|w| w == b"%00")
}

/// Whether the body is a form, as the form extractor judges it: the media type (the header up
/// to any `;`), compared without regard to case, as media types are (RFC 9110 §8.3.1).
fn is_form(req: &ServiceRequest) -> bool {
    req.content_type()
        .eq_ignore_ascii_case(mime::APPLICATION_WWW_FORM_URLENCODED.essence_str())
}

/// Answers 400 `invalid_request` to a request whose query, path or form body holds a NUL;
/// passes any other on (a form body read here is handed on whole).
pub async fn refuse_nul<B: MessageBody>(
    mut req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let mut refused =
        holds_nul(req.query_string().as_bytes()) || holds_nul(req.uri().path().as_bytes());
    if !refused && is_form(&req) {
        let limit = req
            .app_data::<State>()
            .map_or(usize::MAX, |s| s.max_body_bytes);
        let mut payload = req.take_payload();
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            body.extend_from_slice(&chunk?);
            if body.len() > limit {
                let e = MailboxError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("the request body is larger than {limit} bytes"),
                );
                return Ok(req.error_response(e).map_into_right_body());
            }
        }
        refused = holds_nul(&body);
        req.set_payload(actix_web::dev::Payload::from(body.freeze()));
    }
    if refused {
        let e = MailboxError::invalid(NUL_REFUSED);
        return Ok(req.error_response(e).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::{holds_nul, is_form};

    #[test]
    fn a_form_is_a_form_in_any_case_and_with_parameters() {
        use actix_web::{http::header::CONTENT_TYPE, test::TestRequest};
        let form = |ct: &str| {
            is_form(
                &TestRequest::default()
                    .insert_header((CONTENT_TYPE, ct))
                    .to_srv_request(),
            )
        };
        assert!(form("application/x-www-form-urlencoded"));
        assert!(form("Application/X-WWW-Form-Urlencoded"));
        assert!(form("APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8"));
        assert!(!form("application/json"));
        assert!(!form("multipart/form-data"));
    }

    #[test]
    fn only_an_encoded_nul_is_a_nul() {
        assert!(holds_nul(b"kind=%00"));
        assert!(holds_nul(b"limit=5&sender=a%00b"));
        assert!(holds_nul(b"reason=a\0b"));
        assert!(!holds_nul(b"kind=%2500"));
        assert!(!holds_nul(b"limit=500&wait_ms=1000"));
        assert!(!holds_nul(b""));
    }
}
