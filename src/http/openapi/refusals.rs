//! The refusals each operation documents, added from the resource modules' tables rather than
//! written out as `ErrorBody` responses in every `#[utoipa::path]` attribute.

use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr};

use super::conventions::{codes_named_in, error_response};
use super::shared::Status;

/// A module's refusals: per operation (by its id, the handler's name), one description per error
/// status. The description names the codes answered with that status (`` `code` ``), and the
/// status is theirs, from the one table of statuses the document is given. Each becomes an
/// `ErrorBody` response; the conventions then add an example body per code.
pub type Refusals = &'static [(&'static str, &'static [&'static str])];

/// The status of the codes `description` names; `None` unless it names at least one and they all
/// share a status.
fn status_of(description: &str, status: Status) -> Option<u16> {
    let statuses: Vec<u16> = codes_named_in(description)
        .into_iter()
        .map(status)
        .collect();
    let first = *statuses.first()?;
    statuses.iter().all(|&s| s == first).then_some(first)
}

/// Adds each operation's refusals to it in `doc`.
pub(super) fn add(doc: &mut OpenApi, refusals: Refusals, code_status: Status) {
    for (route, descriptions) in refusals {
        let op = operation(doc, route).unwrap_or_else(|| panic!("no operation {route}"));
        for description in *descriptions {
            let status = status_of(description, code_status)
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

/// The operation whose id is `id`.
fn operation<'a>(doc: &'a mut OpenApi, id: &str) -> Option<&'a mut Operation> {
    doc.paths
        .paths
        .values_mut()
        .flat_map(|item| [item.get.as_mut(), item.post.as_mut()])
        .flatten()
        .find(|op| op.operation_id.as_deref() == Some(id))
}
