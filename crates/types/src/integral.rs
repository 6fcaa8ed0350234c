//! Integer fields of JSON bodies accept any JSON number with an integral value, as JSON Schema
//! (and so every generated client) counts integers: `121`, `121.0` and `1.21e2` are 121;
//! `121.5`, a negative number or one past the field's range is refused (docs/contract.md#details).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// The value of a JSON number that is a whole, non-negative number within `T`'s range.
fn whole<T: TryFrom<u64>>(n: &serde_json::Number) -> Option<T> {
    let v = match n.as_u64() {
        Some(v) => v,
        None => {
            let f = n.as_f64()?;
            // 2^64 is the first value past u64; below it an f64 converts exactly.
            if f.fract() != 0.0 || !(0.0..18_446_744_073_709_551_616.0).contains(&f) {
                return None;
            }
            f as u64
        }
    };
    T::try_from(v).ok()
}

/// `#[serde(deserialize_with = "integral::number")]` for an unsigned integer field.
pub fn number<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    whole(&n).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a whole non-negative number within {}, found {n}",
            std::any::type_name::<T>()
        ))
    })
}

/// The same for an optional field (`null` or absent is `None`).
pub fn optional<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    #[derive(Deserialize)]
    struct Whole<T: TryFrom<u64>>(#[serde(deserialize_with = "number")] T);
    Ok(Option::<Whole<T>>::deserialize(d)?.map(|Whole(v)| v))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Body {
        #[serde(deserialize_with = "super::number")]
        limit: u32,
        #[serde(default, deserialize_with = "super::optional")]
        at: Option<u64>,
    }

    fn parse(v: serde_json::Value) -> Option<Body> {
        serde_json::from_value(v).ok()
    }

    #[test]
    fn integral_numbers_are_integers_and_others_are_refused() {
        for limit in [json!(121), json!(121.0), json!(1.21e2)] {
            assert_eq!(parse(json!({"limit": limit})).map(|b| b.limit), Some(121));
        }
        for limit in [
            json!(121.5),
            json!(-1),
            json!(-1.0),
            json!(4294967296_u64),
            json!(1e300),
            json!("121"),
        ] {
            assert_eq!(parse(json!({"limit": limit})), None, "{limit}");
        }
        assert_eq!(parse(json!({"limit": 1, "at": 5.0})).unwrap().at, Some(5));
        assert_eq!(parse(json!({"limit": 1, "at": null})).unwrap().at, None);
        assert_eq!(parse(json!({"limit": 1})).unwrap().at, None);
        assert_eq!(parse(json!({"limit": 1, "at": 0.5})), None);
        assert_eq!(
            parse(json!({"limit": 1, "at": u64::MAX})).unwrap().at,
            Some(u64::MAX)
        );
    }
}
