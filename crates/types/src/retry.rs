//! The bounded, opt-in retry gate (docs/contract.md#retry-gate): its policy and its report.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Bounds of one retry scan. `{}` means these defaults, and a dry run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
#[cfg_attr(feature = "openapi", schema(as = A2AAutoRetryPolicy))]
pub struct RetryPolicy {
    /// Without `true` the scan changes nothing and skips every task as `disabled`.
    pub enabled: bool,
    /// Only leases whose last heartbeat is at least this old are stale.
    #[cfg_attr(feature = "openapi", schema(maximum = 9223372036854775807_u64))]
    #[serde(deserialize_with = "crate::integral::number")]
    pub min_lease_age_ms: u64,
    /// Tasks leased this many times already are left alone.
    #[cfg_attr(feature = "openapi", schema(format = Int64, maximum = 4294967295_u32))]
    #[serde(deserialize_with = "crate::integral::number")]
    pub max_attempts: u32,
    /// At most this many requeues per scan.
    #[cfg_attr(feature = "openapi", schema(format = Int64, maximum = 4294967295_u32))]
    #[serde(deserialize_with = "crate::integral::number")]
    pub max_requeues: u32,
    /// At most this many in-flight tasks are examined, oldest lease first (1..=1000).
    #[cfg_attr(feature = "openapi", schema(format = Int64, minimum = 1, maximum = 1000))]
    #[serde(deserialize_with = "crate::integral::number")]
    pub scan_limit: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            enabled: false,
            min_lease_age_ms: 300_000,
            max_attempts: 3,
            max_requeues: 1,
            scan_limit: 100,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    Disabled,
    NotInFlight,
    MissingLease,
    LeaseTooYoung,
    MissingIdempotency,
    UnsafeDuplicateSafety,
    MaxAttemptsReached,
    LimitReached,
    CapabilityScopeMismatch,
}

impl SkipReason {
    /// The reason as it travels (`"lease_too_young"`).
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Disabled => "disabled",
            SkipReason::NotInFlight => "not_in_flight",
            SkipReason::MissingLease => "missing_lease",
            SkipReason::LeaseTooYoung => "lease_too_young",
            SkipReason::MissingIdempotency => "missing_idempotency",
            SkipReason::UnsafeDuplicateSafety => "unsafe_duplicate_safety",
            SkipReason::MaxAttemptsReached => "max_attempts_reached",
            SkipReason::LimitReached => "limit_reached",
            SkipReason::CapabilityScopeMismatch => "capability_scope_mismatch",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Requeued {
    pub task_id: Uuid,
    /// The stale lease that was released.
    pub lease_id: Uuid,
    /// The attempt counter, kept; the next lease increments it.
    pub attempt: u32,
    pub idempotency_key: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Skipped {
    pub task_id: Uuid,
    pub reason: SkipReason,
    pub attempt: u32,
    /// Present for `lease_too_young`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_age_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2AAutoRetryReport))]
pub struct RetryReport {
    pub policy: RetryPolicy,
    pub considered: u32,
    pub requeued: Vec<Requeued>,
    pub skipped: Vec<Skipped>,
    /// `true` when this scan did nothing because it was coalesced with another one: a
    /// scheduler tick that started while another tick's scan ran, or less than
    /// `A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS` after the previous tick started (on
    /// any instance of the database); a manual scan that found another scan running.
    #[serde(default)]
    pub coalesced: bool,
}
