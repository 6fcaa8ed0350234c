//! Fields set on JSON answers without a panic: `value["key"] = …` panics when `value` is not an
//! object (a tool's answer, a row of another writer); [`set`] leaves such a value as it is.

use serde_json::Value;

/// Sets `key` of the object `target` to `value`; a `target` that is not an object is left alone.
pub fn set(target: &mut Value, key: &str, value: Value) {
    if let Some(fields) = target.as_object_mut() {
        fields.insert(key.to_owned(), value);
    }
}

/// The field `key` of `source`, `null` when it is missing or `source` is not an object.
pub fn field(source: &Value, key: &str) -> Value {
    source.get(key).cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_field_is_set_on_an_object_and_nothing_else() {
        let mut object = json!({"a": 1});
        super::set(&mut object, "b", json!(2));
        assert_eq!(object, json!({"a": 1, "b": 2}));
        let mut list = json!([1]);
        super::set(&mut list, "b", json!(2));
        assert_eq!(list, json!([1]));
        assert_eq!(super::field(&list, "b"), json!(null));
    }
}
