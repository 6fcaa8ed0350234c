//! The refusals each route documents, added from the resource modules' `REFUSALS` tables rather
//! than written out as `ErrorBody` responses in every `#[utoipa::path]` attribute.

use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr};

use super::conventions::{codes_named_in, error_response};

/// A module's refusals: per route (`"METHOD /path"`), one description per error status. The
/// description names the codes answered with that status (`` `code` ``), and the status is theirs,
/// from the one table in [`crate::http::error::status`]. Each becomes an `ErrorBody` response;
/// the conventions then add an example body per code.
pub type Refusals = &'static [(&'static str, &'static [&'static str])];

/// The status of the codes `description` names; `None` unless it names at least one and they all
/// share a status.
pub(crate) fn status_of(description: &str) -> Option<u16> {
    let statuses: Vec<u16> = codes_named_in(description)
        .into_iter()
        .map(|code| crate::http::error::status(code).as_u16())
        .collect();
    let first = *statuses.first()?;
    statuses.iter().all(|&s| s == first).then_some(first)
}

/// Adds each route's refusals to its operation in `doc`.
pub(super) fn add(doc: &mut OpenApi, refusals: Refusals) {
    for (route, descriptions) in refusals {
        let op = operation(doc, route).unwrap_or_else(|| panic!("no operation {route}"));
        for description in *descriptions {
            let status = status_of(description)
                .unwrap_or_else(|| panic!("{route}: no single status for {description:?}"));
            let earlier = op
                .responses
                .responses
                .insert(status.to_string(), RefOr::T(error_response(description)));
            assert!(
                earlier.is_none(),
                "{route}: two refusals with status {status}"
            );
        }
    }
}

fn operation<'a>(doc: &'a mut OpenApi, route: &str) -> Option<&'a mut Operation> {
    let (method, path) = route.split_once(' ')?;
    let item = doc.paths.paths.get_mut(path)?;
    match method {
        "GET" => item.get.as_mut(),
        "POST" => item.post.as_mut(),
        _ => None,
    }
}
