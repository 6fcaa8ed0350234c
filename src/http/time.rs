//! RFC 3339 timestamps in UTC (ProtoJSON's `google.protobuf.Timestamp`), to and from epoch
//! milliseconds: the A2A facade's `status.timestamp` and `statusTimestampAfter`, and the
//! dashboard's times.

/// Days since 1970-01-01 of a proleptic Gregorian date; `None` past i64's range.
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    let y = if m <= 2 { y.checked_sub(1)? } else { y };
    let (era, yoe) = (y.div_euclid(400), y.rem_euclid(400));
    let mp = m.checked_add(9)? % 12;
    let doy = (mp.checked_mul(153)?.checked_add(2)? / 5)
        .checked_add(d)?
        .checked_sub(1)?;
    let doe = yoe
        .checked_mul(365)?
        .checked_add(yoe / 4)?
        .checked_sub(yoe / 100)?
        .checked_add(doy)?;
    era.checked_mul(146_097)?
        .checked_add(doe)?
        .checked_sub(719_468)
}

/// The date of a day since 1970-01-01 (clamped at the ends of i64's range, which no day of an
/// i64 of milliseconds comes near).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z.saturating_add(719_468);
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    // Cannot overflow: doe is in 0..146_097, so no step below leaves 0..800_000.
    #[allow(clippy::arithmetic_side_effects)]
    let (year_of_era, m, d) = {
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (yoe + i64::from(m <= 2), m, d)
    };
    (era.saturating_mul(400).saturating_add(year_of_era), m, d)
}

/// `2026-11-25T12:00:00.123Z`.
pub fn format_ms(ms: u64) -> String {
    let ms = ms as i64;
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, frac) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{frac:03}Z")
}

/// The number a run of ASCII digits spells; `None` if any byte is not a digit (or it overflows).
fn digits<'a>(bytes: impl IntoIterator<Item = &'a u8>) -> Option<i64> {
    bytes.into_iter().try_fold(0_i64, |n, &c| {
        let digit = char::from(c).to_digit(10)?;
        n.checked_mul(10)?.checked_add(i64::from(digit))
    })
}

/// Epoch milliseconds of an RFC 3339 timestamp (`Z` or a `±hh:mm` offset, any fraction).
/// `None` for anything else, a non-ASCII character anywhere included: the text is read as
/// bytes, never sliced at an index that could fall inside a character.
pub fn parse_ms(s: &str) -> Option<i64> {
    if !s.is_ascii() {
        return None;
    }
    let b = s.as_bytes();
    let num = |from: usize, len: usize| digits(b.get(from..from.checked_add(len)?)?);
    let at = |i: usize| b.get(i).copied();
    if b.len() < 20 || at(4) != Some(b'-') || at(7) != Some(b'-') {
        return None;
    }
    if !matches!(at(10), Some(b'T' | b't')) || at(13) != Some(b':') || at(16) != Some(b':') {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let (frac_ms, rest) = match b.get(19..)? {
        [b'.', after @ ..] => {
            let n = after.iter().take_while(|c| c.is_ascii_digit()).count();
            let (fraction, rest) = after.split_at_checked(n)?;
            if fraction.is_empty() {
                return None;
            }
            // The first three digits, as milliseconds (`.5` is 500).
            (digits(fraction.iter().chain(b"00").take(3))?, rest)
        }
        rest => (0, rest),
    };
    let offset_min = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let mins = digits([h1, h2])?
                .checked_mul(60)?
                .checked_add(digits([m1, m2])?)?;
            if *sign == b'-' {
                mins.checked_neg()?
            } else {
                mins
            }
        }
        _ => return None,
    };
    let day_secs = h
        .checked_mul(3600)?
        .checked_add(mi.checked_mul(60)?)?
        .checked_add(sec)?;
    let secs = days_from_civil(y, mo, d)?
        .checked_mul(86_400)?
        .checked_add(day_secs)?
        .checked_sub(offset_min.checked_mul(60)?)?;
    secs.checked_mul(1000)?.checked_add(frac_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_known_instants() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_764_072_000_123), "2025-11-25T12:00:00.123Z");
        assert_eq!(format_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        for ms in [0, 1, 951_782_400_000, 1_764_072_000_123, 4_102_444_800_000] {
            assert_eq!(parse_ms(&format_ms(ms)), Some(ms as i64));
        }
        assert_eq!(
            parse_ms("2025-11-25T13:00:00+01:00"),
            Some(1_764_072_000_000)
        );
        assert_eq!(parse_ms("2025-11-25T12:00:00.5Z"), Some(1_764_072_000_500));
        for bad in [
            "",
            "2025-11-25",
            "2025-13-01T00:00:00Z",
            "2025-11-25T12:00:00",
            "x025-11-25T12:00:00Z",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_non_ascii_character_anywhere_is_refused_without_a_panic() {
        let good = "2025-11-25T12:00:00.250+01:00";
        assert_eq!(parse_ms(good), Some(1_764_068_400_250));
        // Every position, each character replaced and each inserted, by characters of every
        // UTF-8 length, so that every byte index of the parser falls inside one of them.
        for c in ['é', '€', '😀', '\u{80}'] {
            for i in 0..=good.len() {
                let inserted = format!("{}{c}{}", &good[..i], &good[i..]);
                assert_eq!(parse_ms(&inserted), None, "{inserted}");
                if i < good.len() {
                    let replaced = format!("{}{c}{}", &good[..i], &good[i + 1..]);
                    assert_eq!(parse_ms(&replaced), None, "{replaced}");
                }
            }
        }
        assert_eq!(parse_ms("2025-11-25T12:00:00é1:00"), None);
        assert_eq!(parse_ms("2025-11-25T12:00:00+é:00"), None);
        assert_eq!(parse_ms("é025-11-25T12:00:00Z"), None);
        // Short, truncated and malformed offsets and fractions.
        for bad in [
            "2025-11-25T12:00:00.Z",
            "2025-11-25T12:00:00+01",
            "2025-11-25T12:00:00+01:0",
            "2025-11-25T12:00:00+0a:00",
            "2025-11-25T12:00:00+01-00",
            "2025-11-25T12:00:00*01:00",
            "2025-11-25T12:00:00ZZ",
            "2025-11-25T12:0:00Z",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
        assert_eq!(
            parse_ms("2025-11-25T12:00:00.123456Z"),
            Some(1_764_072_000_123)
        );
        assert_eq!(
            parse_ms("2025-11-25T11:00:00-01:00"),
            Some(1_764_072_000_000)
        );
    }
}
