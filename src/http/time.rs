//! RFC 3339 timestamps in UTC (ProtoJSON's `google.protobuf.Timestamp`), to and from epoch
//! milliseconds: the A2A facade's `status.timestamp` and `statusTimestampAfter`, and the
//! dashboard's times.

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
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

/// Epoch milliseconds of an RFC 3339 timestamp (`Z` or a `±hh:mm` offset, any fraction).
/// `None` for anything else, a non-ASCII character anywhere included: the text is read as
/// bytes, never sliced at an index that could fall inside a character.
pub fn parse_ms(s: &str) -> Option<i64> {
    if !s.is_ascii() {
        return None;
    }
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from.checked_add(len)?)?;
        part.iter().try_fold(0_i64, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
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
    let mut i = 19;
    let mut frac_ms = 0;
    if at(i) == Some(b'.') {
        let start = i + 1;
        i = start;
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if i == start {
            return None;
        }
        // The first three digits, as milliseconds (`.5` is 500).
        let digits = b.get(start..i)?.iter().chain(b"00").take(3);
        frac_ms = digits.fold(0, |ms, c| ms * 10 + i64::from(c - b'0'));
    }
    let offset_min = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let mins = num(i + 1, 2)? * 60 + num(i + 4, 2)?;
            if *sign == b'-' {
                -mins
            } else {
                mins
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1000 + frac_ms)
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
