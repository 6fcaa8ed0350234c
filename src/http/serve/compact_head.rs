//! A request's header map sized to the headers it holds. The HTTP layer gives every new request
//! head a map with room for 16 headers (about 6.6 KiB), and a request holds its head for as long
//! as it runs: a parked long-poll, a waiting `SendMessage` or an open stream keeps it for up to
//! its whole wait. Clients send five or six headers, so each waiting request would hold about
//! 5 KiB it never uses; at 10,000 parked polls that is 50 MiB. A map much larger than its
//! headers is swapped here, before any handler runs, for one of their size. Heads are pooled,
//! so a map once sized is reused as it is: on the hot path this is a comparison of two numbers.

use std::future::{ready, Ready};

use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::HeaderMap;

/// A map with room for more than this many times its headers, and for more than 16 in all,
/// is swapped for one of their size.
const SPARE: usize = 2;

/// Swaps `headers` for a map of their size when it has much more room than they use; keeps
/// every header and every value of a repeated one, in order.
fn compact(headers: &mut HeaderMap) {
    let needed = headers.len().max(8);
    if headers.capacity() <= SPARE.saturating_mul(needed) {
        return;
    }
    let old = std::mem::replace(headers, HeaderMap::with_capacity(headers.len()));
    for (name, value) in old {
        headers.append(name, value);
    }
}

/// The middleware that [`compact`]s every request's headers before it is served.
pub(crate) struct CompactHead;

impl<S, B> Transform<S, ServiceRequest> for CompactHead
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Transform = CompactHeadService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(CompactHeadService { service }))
    }
}

pub(crate) struct CompactHeadService<S> {
    service: S,
}

impl<S, B> Service<ServiceRequest> for CompactHeadService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Future = S::Future;

    actix_web::dev::forward_ready!(service);

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        compact(req.headers_mut());
        self.service.call(req)
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn fresh(headers: &[(&str, &str)]) -> HeaderMap {
        // What the HTTP layer gives a new request head.
        let mut map = HeaderMap::with_capacity(16);
        for (n, v) in headers {
            map.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn a_fresh_head_is_sized_to_its_headers_and_keeps_every_value_in_order() {
        let mut map = fresh(&[
            ("host", "a"),
            ("authorization", "Bearer t"),
            ("accept", "text/plain"),
            ("accept", "application/json"),
            ("x-custom", "1"),
        ]);
        let before = map.capacity();
        compact(&mut map);
        assert!(
            map.capacity() < before / 2,
            "{} of {before}",
            map.capacity()
        );
        assert_eq!(map.len(), 5);
        let accept: Vec<_> = map.get_all("accept").collect();
        assert_eq!(accept, ["text/plain", "application/json"]);
        assert_eq!(map.get("x-custom").unwrap(), "1");
        assert_eq!(map.get("authorization").unwrap(), "Bearer t");
    }

    #[test]
    fn a_map_already_of_its_size_is_left_as_it_is() {
        let mut map = fresh(&[("host", "a")]);
        compact(&mut map);
        let sized = map.capacity();
        compact(&mut map);
        assert_eq!(map.capacity(), sized);
        let mut many = fresh(&(0..20).map(|_| ("x-a", "b")).collect::<Vec<_>>());
        let cap = many.capacity();
        compact(&mut many);
        assert_eq!(many.capacity(), cap);
        assert_eq!(many.len(), 20);
    }
}
