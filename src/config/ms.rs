//! The `_MS` settings: milliseconds, bounded.

use std::time::Duration;

use anyhow::bail;

/// The largest value of every `_MS` setting (docs/configuration.md): 100 years of 365 days.
/// Far beyond any sensible window or wait, and small enough that no deadline, and no instant
/// in milliseconds since the epoch, computed from one can overflow.
pub const MAX_SETTING_MS: u64 = 100 * 365 * 86_400_000;

/// `value` of the `_MS` setting `name`; beyond [`MAX_SETTING_MS`] the service refuses to start,
/// with a message naming the setting and its maximum.
pub fn ms_setting(name: &str, value: u64) -> anyhow::Result<u64> {
    if value > MAX_SETTING_MS {
        bail!("{name} is {value}: at most {MAX_SETTING_MS} ms (100 years)");
    }
    Ok(value)
}

/// [`ms_setting`] as a duration.
pub fn duration_setting(name: &str, value: u64) -> anyhow::Result<Duration> {
    ms_setting(name, value).map(Duration::from_millis)
}
