//! The answer bodies the handlers build: one schema per `kind` tag, so the document names every
//! success shape a client can generate a type for. They are defined once, with the other wire
//! types, in the `a2a-mailbox-types` crate.

pub use a2a_mailbox_types::answers::*;
