//! W3C trace context carried with a task and with its result (Trace Context Level 1): the
//! sender's `traceparent` and `tracestate`, kept as sent so that whoever leases the task, or
//! drains the result, can join the trace.
//!
//! A trace context never refuses a request: one that is not well formed is dropped, as the W3C
//! recommendation asks of a receiver that cannot parse it.

use serde::{Deserialize, Deserializer, Serialize};

/// The longest `tracestate` kept (the recommendation's limit for propagation is 512).
pub const MAX_TRACESTATE: usize = 512;

/// A W3C trace context: `traceparent`, and `tracestate` when one came with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trace {
    /// `00-<trace id: 32 hex>-<parent id: 16 hex>-<flags: 2 hex>`, lower case.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    )]
    pub traceparent: String,
    /// Vendor-specific trace data, at most 512 characters; dropped when not well formed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = "congo=t61rcWkgMzE"))]
    pub tracestate: Option<String>,
}

impl Trace {
    /// The trace context of `traceparent` and `tracestate`: `None` when `traceparent` is not well
    /// formed; a `tracestate` that is not is left out.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Trace> {
        let traceparent = traceparent.trim();
        if !valid_traceparent(traceparent) {
            return None;
        }
        Some(Trace {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate
                .map(str::trim)
                .filter(|s| valid_tracestate(s))
                .map(str::to_owned),
        })
    }

    /// The trace context a JSON object names in its `traceparent` and `tracestate` fields (a
    /// task's or a result's `trace`, MCP's `_meta`): `None` unless well formed.
    pub fn in_object(object: &serde_json::Value) -> Option<Trace> {
        let field = |name| object.get(name).and_then(serde_json::Value::as_str);
        Trace::parse(field("traceparent")?, field("tracestate"))
    }

    /// The trace id (32 hex digits).
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }
}

/// `version-traceid-parentid-flags`. Version `00` is exactly that; a later version (not `ff`) may
/// append fields after a `-`, which are kept as sent.
fn valid_traceparent(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b.get(r)
            .is_some_and(|x| x.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
    };
    let dash = |i: usize| b.get(i) == Some(&b'-');
    let zeros = |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(|c| *c == b'0'));
    let shape =
        hex(0..2) && dash(2) && hex(3..35) && dash(35) && hex(36..52) && dash(52) && hex(53..55);
    if !shape || zeros(3..35) || zeros(36..52) || b.get(0..2) == Some(b"ff") {
        return false;
    }
    match b.get(0..2) {
        Some(b"00") => b.len() == 55,
        _ => b.len() == 55 || (dash(55) && b.len() <= 256 && s.is_ascii()),
    }
}

/// At most 32 comma-separated `key=value` members of printable ASCII, 512 characters in all.
fn valid_tracestate(s: &str) -> bool {
    if s.is_empty() || s.len() > MAX_TRACESTATE {
        return false;
    }
    let members: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    !members.is_empty()
        && members.len() <= 32
        && members.iter().all(|m| {
            m.split_once('=').is_some_and(|(k, v)| {
                !k.is_empty()
                && !v.is_empty()
                && k.bytes().all(
                    |c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/' | b'@'),
                )
                && v.bytes()
                    .all(|c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
            })
        })
}

/// Reads a `trace` field leniently: anything but a well-formed trace context is `None`.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Trace>, D::Error> {
    Ok(Trace::in_object(&serde_json::Value::deserialize(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_traceparent_is_kept_and_anything_else_dropped() {
        let t = Trace::parse(OK, Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(t.tracestate.is_some());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(Trace::parse(bad, None), None, "{bad:?}");
        }
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future";
        assert!(
            Trace::parse(later, None).is_some(),
            "a later version may add fields"
        );
    }

    #[test]
    fn a_malformed_tracestate_is_left_out() {
        for bad in [
            "",
            "no-equals",
            "k=v=w",
            &"a=b,".repeat(40),
            &format!("k={}", "v".repeat(600)),
        ] {
            let t = Trace::parse(OK, Some(bad)).unwrap();
            assert_eq!(t.tracestate, None, "{bad:?}");
        }
    }

    #[test]
    fn a_trace_field_is_read_leniently() {
        #[derive(Deserialize)]
        struct T {
            #[serde(default, deserialize_with = "lenient")]
            trace: Option<Trace>,
        }
        let read = |s: &str| serde_json::from_str::<T>(s).unwrap().trace;
        assert!(read(&format!(r#"{{"trace":{{"traceparent":"{OK}"}}}}"#)).is_some());
        assert!(read(r#"{"trace":{"traceparent":"nope"}}"#).is_none());
        assert!(read(r#"{"trace":7}"#).is_none());
        assert!(read(r#"{"trace":null}"#).is_none());
        assert!(read(r#"{}"#).is_none());
    }
}
