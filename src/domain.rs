//! Wire types of the contract (API.md §2) and their validation.
//!
//! Deserialisation enforces the shape (types, enums, AgentId syntax); [`A2ATask::validate`] and
//! friends enforce the rules serde cannot express (non-blank strings, ranges).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::MailboxError;

/// Largest value a `*_ms` field may carry: timestamps are stored as signed 64-bit integers.
pub const MAX_MS: u64 = i64::MAX as u64;

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

/// An agent identity: 1..=128 characters of `[A-Za-z0-9_.-]`, optionally `@` and a domain of
/// the same characters, e.g. `research@acme`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct AgentId(String);

/// The AgentId syntax, as an OpenAPI `pattern` (with `maxLength` 128).
pub const AGENT_ID_PATTERN: &str = r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$";

impl utoipa::PartialSchema for AgentId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .description(Some(
                "An agent identity: 1..=128 characters of `[A-Za-z0-9_.-]`, optionally `@` and a \
                 domain of the same characters, e.g. `research@acme`.",
            ))
            .pattern(Some(AGENT_ID_PATTERN))
            .min_length(Some(1))
            .max_length(Some(128))
            .examples([serde_json::json!("research@acme")])
            .into()
    }
}

impl ToSchema for AgentId {}

impl AgentId {
    pub fn parse(s: &str) -> Result<AgentId, String> {
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        };
        let ok = !s.is_empty()
            && s.len() <= 128
            && match s.split_once('@') {
                Some((name, domain)) => valid_part(name) && valid_part(domain),
                None => valid_part(s),
            };
        if ok {
            Ok(AgentId(s.to_owned()))
        } else {
            Err(format!(
                "invalid AgentId {s:?}: expected 1..=128 characters matching ^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$"
            ))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AgentId::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// One block of structured content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    #[schema(title = "TextContent")]
    Text { text: String },
    /// Any JSON value.
    #[schema(title = "JsonContent")]
    Json { value: serde_json::Value },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateSafety {
    /// Duplicate execution may cause external effects: never retried automatically.
    Unsafe,
    /// Executing the task more than once is safe; eligible for the result cache and the retry gate.
    Idempotent,
}

impl DuplicateSafety {
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateSafety::Unsafe => "unsafe",
            DuplicateSafety::Idempotent => "idempotent",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Idempotency {
    pub duplicate_safety: DuplicateSafety,
    /// Stable key of the logical work unit, chosen by the outermost retrying layer. Non-blank.
    #[schema(
        min_length = 1,
        pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
        example = "refund-order-1234"
    )]
    pub key: String,
}

/// A task from one agent to another. Absent `idempotency` means `unsafe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct A2ATask {
    /// Chosen by the sender (the outermost retrying layer) and reused on every retry.
    pub id: Uuid,
    /// Must equal the token subject.
    pub sender: AgentId,
    pub recipient: AgentId,
    pub intent_text: String,
    /// Typed kind of the task; when present it must be non-blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
        example = "refund"
    )]
    pub task_kind: Option<String>,
    /// Structured input; defaults to `[]`.
    #[serde(default)]
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Absolute deadline in epoch milliseconds; a queued task past it is never leased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 9223372036854775807_u64)]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<Idempotency>,
}

impl A2ATask {
    pub fn validate(&self) -> Result<(), MailboxError> {
        if let Some(kind) = &self.task_kind {
            if kind.trim().is_empty() {
                return Err(MailboxError::invalid(
                    "task_kind must not be blank when present",
                ));
            }
        }
        if let Some(idem) = &self.idempotency {
            if idem.key.trim().is_empty() {
                return Err(MailboxError::invalid("idempotency.key must not be blank"));
            }
        }
        if self.deadline_ms.is_some_and(|d| d > MAX_MS) {
            return Err(MailboxError::invalid("deadline_ms is out of range"));
        }
        no_nul(
            "idempotency.key",
            self.idempotency.as_ref().map(|i| i.key.as_str()),
        )?;
        Ok(())
    }

    /// The receiver-side result cache key (§6.2), for idempotent tasks with a key.
    pub fn cache_key(&self) -> Option<String> {
        let idem = self.idempotency.as_ref()?;
        if idem.duplicate_safety != DuplicateSafety::Idempotent {
            return None;
        }
        let kind = self.task_kind.as_deref().unwrap_or(&self.intent_text);
        // JSON array encoding keeps the four parts unambiguous whatever characters they hold.
        Some(
            serde_json::to_string(&(
                self.sender.as_str(),
                self.recipient.as_str(),
                kind,
                idem.key.as_str(),
            ))
            .expect("strings serialise"),
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Ok,
    Error,
    Partial,
}

impl ResultStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Ok => "ok",
            ResultStatus::Error => "error",
            ResultStatus::Partial => "partial",
        }
    }
    pub fn parse(s: &str) -> Option<ResultStatus> {
        match s {
            "ok" => Some(ResultStatus::Ok),
            "error" => Some(ResultStatus::Error),
            "partial" => Some(ResultStatus::Partial),
            _ => None,
        }
    }
}

/// A result as it is delivered to the sender. It never carries a `lease_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct A2ATaskResult {
    pub task_id: Uuid,
    pub status: ResultStatus,
    /// Always emitted; `[]` when empty.
    #[serde(default)]
    #[schema(required = true)]
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[^\u0000]*$")]
    pub error_message: Option<String>,
}

/// The body of `POST /a2a/results`: a result plus an optional fencing `lease_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PostResult {
    pub task_id: Uuid,
    pub status: ResultStatus,
    #[serde(default)]
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[^\u0000]*$")]
    pub error_message: Option<String>,
    /// Optional fencing guard: when given it must be the task's current lease id (409 `lease_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<Uuid>,
}

/// Keys and messages are stored as text columns, which cannot hold U+0000 on PostgreSQL: such
/// strings are refused on both engines alike (400).
pub fn no_nul(field: &str, value: Option<&str>) -> Result<(), MailboxError> {
    if value.is_some_and(|v| v.contains('\0')) {
        return Err(MailboxError::invalid(format!(
            "{field} must not contain the NUL character (U+0000)"
        )));
    }
    Ok(())
}

impl PostResult {
    pub fn validate(&self) -> Result<(), MailboxError> {
        no_nul("error_message", self.error_message.as_deref())
    }

    pub fn result(&self) -> A2ATaskResult {
        A2ATaskResult {
            task_id: self.task_id,
            status: self.status,
            content: self.content.clone(),
            error_message: self.error_message.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Lease {
    pub lease_id: Uuid,
    pub leased_to: AgentId,
    pub leased_at_ms: u64,
    /// Lease age is measured from this instant; heartbeats refresh it.
    pub heartbeat_at_ms: u64,
    pub attempt: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    InFlight,
    ResultPending,
    Resolved,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::InFlight => "in_flight",
            TaskState::ResultPending => "result_pending",
            TaskState::Resolved => "resolved",
        }
    }
    pub fn parse(s: &str) -> Option<TaskState> {
        match s {
            "queued" => Some(TaskState::Queued),
            "in_flight" => Some(TaskState::InFlight),
            "result_pending" => Some(TaskState::ResultPending),
            "resolved" => Some(TaskState::Resolved),
            _ => None,
        }
    }
}

/// The state filter of `GET /a2a/queue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    Queued,
    InFlight,
}

/// One task of the queue snapshot. Lease fields are present only when `state` is `in_flight`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueEntry {
    pub state: QueueState,
    pub task: A2ATask,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leased_to: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leased_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at_ms: Option<u64>,
}

/// Everything a client resuming from a checkpoint needs to know about one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskStatus {
    pub task: A2ATask,
    pub state: TaskState,
    pub attempt: u32,
    /// The current lease; `null` unless the task is in flight.
    #[schema(required = true)]
    pub lease: Option<Lease>,
    /// The result; `null` until the task is answered.
    #[schema(required = true)]
    pub result: Option<A2ATaskResult>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids() {
        for ok in ["a", "research@acme", "a.b-c_d@x.y", &"x".repeat(128)] {
            assert!(AgentId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a@", "@a", "a@b@c", "ü", &"x".repeat(129)] {
            assert!(AgentId::parse(bad).is_err(), "{bad}");
        }
    }

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
        let schema = serde_json::to_string(&<A2ATask as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NON_BLANK_PATTERN).unwrap()));
        let schema =
            serde_json::to_string(&<Idempotency as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NON_BLANK_TEXT_PATTERN).unwrap()));
        let schema =
            serde_json::to_string(&<PostResult as utoipa::PartialSchema>::schema()).unwrap();
        assert!(schema.contains(&serde_json::to_string(NO_NUL_PATTERN).unwrap()));
    }

    #[test]
    fn cache_key_uses_kind_or_intent() {
        let mut t: A2ATask = serde_json::from_value(serde_json::json!({
            "id": Uuid::nil(), "sender": "a", "recipient": "b", "intent_text": "do",
            "idempotency": {"duplicate_safety": "idempotent", "key": "k"}
        }))
        .unwrap();
        assert_eq!(t.cache_key().unwrap(), r#"["a","b","do","k"]"#);
        t.task_kind = Some("refund".into());
        assert_eq!(t.cache_key().unwrap(), r#"["a","b","refund","k"]"#);
        t.idempotency.as_mut().unwrap().duplicate_safety = DuplicateSafety::Unsafe;
        assert!(t.cache_key().is_none());
    }
}
