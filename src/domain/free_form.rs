//! The free-form JSON a caller supplies (a task's `content[].value` and `metadata`, a result's
//! content values, an A2A message's `data` parts and `metadata`, MCP tool arguments): how deep it
//! may nest, and the key of a task's `metadata` that belongs to the A2A facade
//! (docs/contract.md#free-form-json).

use serde_json::{Map, Value};

use a2a_mailbox_types::Content;

use crate::error::MailboxError;

/// How deep a free-form value may nest by default (`A2A_MAILBOX_MAX_JSON_DEPTH`).
pub const DEFAULT_MAX_JSON_DEPTH: usize = 64;

/// The largest `A2A_MAILBOX_MAX_JSON_DEPTH` the service starts with: a value this deep, inside
/// the deepest answer that shows it (a listing of a task sent through the A2A facade adds 10
/// levels), stays within the 128 levels common JSON parsers read by default.
pub const MAX_MAX_JSON_DEPTH: usize = 100;

/// The levels a request's envelope may add above the free-form values it carries (a batch's
/// `tasks[].content[].value`, a JSON-RPC request's `params.message.parts[].data`, an MCP
/// `params.arguments.content[].value`: 5 at most), with room to spare. A body nested deeper
/// than the limit plus this is refused before it is parsed.
pub const ENVELOPE_DEPTH: usize = 8;

/// The key of a task's `metadata` under which the A2A facade keeps the message a task was sent
/// as. Only the facade writes it: a native send drops it.
pub const A2A_METADATA_KEY: &str = "urn:a2a-mailbox:v1:a2a";

/// Whether `v` nests objects and arrays at most `limit` deep (a scalar is no level, `v` itself
/// is level 1). Walks without recursion and stops at the first level past the limit.
pub fn nests_within(v: &Value, limit: usize) -> bool {
    // Each entry: a value and its level.
    let mut pending: Vec<(&Value, usize)> = vec![(v, 1)];
    while let Some((v, level)) = pending.pop() {
        if !(v.is_array() || v.is_object()) {
            continue;
        }
        if level > limit {
            return false;
        }
        match v {
            Value::Array(items) => {
                pending.extend(items.iter().map(|c| (c, level.saturating_add(1))))
            }
            Value::Object(map) => {
                pending.extend(map.values().map(|c| (c, level.saturating_add(1))))
            }
            _ => {}
        }
    }
    true
}

/// The refusal of a free-form value nested deeper than `limit`; `Ok` when it is not.
pub fn within(field: &str, v: &Value, limit: usize) -> Result<(), MailboxError> {
    if nests_within(v, limit) {
        return Ok(());
    }
    Err(MailboxError::invalid(format!(
        "{field} nests objects and arrays more than {limit} levels deep (the limit of \
         A2A_MAILBOX_MAX_JSON_DEPTH)"
    )))
}

/// Checks the free-form values of content blocks (a task's or a result's): each `value`.
pub fn content_within(content: &[Content], limit: usize) -> Result<(), MailboxError> {
    content.iter().enumerate().try_for_each(|(i, c)| match c {
        Content::Json { value } => within(&format!("content[{i}].value"), value, limit),
        Content::Text { .. } => Ok(()),
    })
}

/// Checks the free-form values of a task's or a result's body as JSON, before it is read as its
/// type: each `content[].value` and the `metadata`, wherever they are present.
pub fn body_within(body: &Value, limit: usize) -> Result<(), MailboxError> {
    if let Some(content) = body.get("content").and_then(Value::as_array) {
        for (i, block) in content.iter().enumerate() {
            if let Some(value) = block.get("value") {
                within(&format!("content[{i}].value"), value, limit)?;
            }
        }
    }
    match body.get("metadata") {
        Some(metadata) => within("metadata", metadata, limit),
        None => Ok(()),
    }
}

/// A native send's `metadata` as it is stored: without the facade's key.
pub fn without_reserved(metadata: &mut Option<Map<String, Value>>) {
    if let Some(m) = metadata {
        m.remove(A2A_METADATA_KEY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |v, _| json!([v]))
    }

    #[test]
    fn depth_counts_containers_only() {
        assert!(nests_within(&json!(1), 0));
        assert!(nests_within(&json!("x"), 0));
        assert!(!nests_within(&json!([]), 0));
        assert!(nests_within(&json!([]), 1));
        assert!(nests_within(&json!({"a": [1, {}]}), 3));
        assert!(!nests_within(&json!({"a": [1, {}]}), 2));
        assert!(nests_within(&json!({"a": [1, {"b": 2}]}), 3));
        for limit in [1, 64, 100] {
            assert!(nests_within(&nested(limit), limit));
            assert!(!nests_within(&nested(limit + 1), limit));
        }
    }

    #[test]
    fn a_task_body_is_checked_where_it_is_free_form() {
        let deep = nested(5);
        let ok = json!({"content": [{"type": "json", "value": nested(4)}], "metadata": {"a": [1]}});
        assert!(body_within(&ok, 4).is_ok());
        let e = body_within(
            &json!({"content": [{"type": "text", "text": "x"},
            {"type": "json", "value": deep}]}),
            4,
        )
        .unwrap_err();
        assert!(e.message.starts_with("content[1].value "), "{}", e.message);
        let e = body_within(&json!({"metadata": {"a": nested(4)}}), 4).unwrap_err();
        assert!(e.message.starts_with("metadata "), "{}", e.message);
        // Elsewhere the body's type decides.
        assert!(body_within(&json!({"intent_text": nested(9)}), 4).is_ok());
    }
}
