//! Wire types of the contract (docs/contract.md#wire-types) and their validation.
//!
//! The types are defined once, in the `a2a-mailbox-types` crate the Rust client shares, and
//! re-exported here. Deserialisation enforces the shape (types, enums, AgentId syntax);
//! [`Validate`] enforces the rules serde cannot express (non-blank strings, ranges).

pub mod free_form;
mod limits;
mod rules;

pub use a2a_mailbox_types::{answers, integral};
pub use a2a_mailbox_types::{
    A2ATask, A2ATaskResult, AgentId, CancelRequest, Cancellation, Content, DuplicateSafety,
    HeartbeatRequest, Idempotency, Lease, PostResult, QueueEntry, QueueState, ResultStatus,
    TaskBatch, TaskState, TaskStatus, AGENT_ID_PATTERN,
};
pub use limits::{no_nul, MAX_MS};
pub use rules::{cache_key, declared_idempotent, stated, Validate, MAX_STATED_CHARS};

/// The OpenAPI `pattern` of a non-blank string: it contains a character that is not white space
/// (Unicode `White_Space`, what [`str::trim`] removes). The schema attributes below repeat it
/// literally (utoipa takes only literals); a unit test holds them equal.
pub const NON_BLANK_PATTERN: &str =
    r"[^\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

/// Non-blank and free of NUL (U+0000): for strings kept in text columns, which cannot hold NUL
/// on PostgreSQL (`idempotency.key`, a `force_error` message).
pub const NON_BLANK_TEXT_PATTERN: &str = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$";

/// Free of NUL (U+0000): `error_message`.
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_blank_pattern_matches_trim() {
        // The pattern's class is exactly the characters `trim` removes, written as ECMA-262 and
        // Python `re` both read them.
        let ws: Vec<u32> = (0..=0x10FFFF_u32)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .map(u32::from)
            .collect();
        let esc = |c: u32| match c {
            0x09 => r"\t".to_owned(),
            0x0A => r"\n".to_owned(),
            0x0C => r"\f".to_owned(),
            0x0D => r"\r".to_owned(),
            0x20 => " ".to_owned(),
            c if c < 0x100 => format!(r"\x{c:02X}"),
            c => format!(r"\u{c:04X}"),
        };
        let mut class = String::new();
        let mut i = 0;
        while i < ws.len() {
            let mut j = i;
            while j + 1 < ws.len() && ws[j + 1] == ws[j] + 1 && ws[i] > 0x7F {
                j += 1;
            }
            if j >= i + 2 {
                class.push_str(&format!("{}-{}", esc(ws[i]), esc(ws[j])));
                i = j + 1;
            } else {
                class.push_str(&esc(ws[i]));
                i += 1;
            }
        }
        assert_eq!(NON_BLANK_PATTERN, format!("[^{class}]"));
        assert_eq!(
            NON_BLANK_TEXT_PATTERN,
            format!(r"^[^\u0000]*[^\u0000{class}][^\u0000]*$")
        );
        // And the schema carries it.
        let schema = serde_json::to_string(
            &<a2a_mailbox_types::RepairRequest as utoipa::PartialSchema>::schema(),
        )
        .unwrap();
        assert!(schema.contains(&serde_json::to_string(NON_BLANK_PATTERN).unwrap()));
        let schema = serde_json::to_string(&<A2ATask as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NON_BLANK_TEXT_PATTERN).unwrap()));
        assert!(schema.contains(&serde_json::to_string(NO_NUL_PATTERN).unwrap()));
        let schema =
            serde_json::to_string(&<Idempotency as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NON_BLANK_TEXT_PATTERN).unwrap()));
        let schema =
            serde_json::to_string(&<PostResult as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NO_NUL_PATTERN).unwrap()));
    }
}
