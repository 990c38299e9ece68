//! Reading the date, time and date-and-time text forms of spec 2.8/2.9.
//!
//! Hand-written over bytes: the value pipeline must sustain millions of values per second, and
//! format-string parsers cost several times more for the same fixed forms.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

/// Reads exactly `b.len()` ASCII digits as a number.
fn number(b: &[u8]) -> Option<u32> {
    if b.is_empty() {
        return None;
    }
    b.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

fn ymd(year: u32, month: u32, day: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)
}

/// `YYYY-MM-DD`.
pub(crate) fn iso_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    ymd(number(&b[0..4])?, number(&b[5..7])?, number(&b[8..10])?)
}

/// `DD<sep>MM<sep>YYYY`, day first.
pub(crate) fn day_first_date(s: &str, sep: u8) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[2] != sep || b[5] != sep {
        return None;
    }
    ymd(number(&b[6..10])?, number(&b[3..5])?, number(&b[0..2])?)
}

/// `HH:MM`, `HH:MM:SS` (ISO 8601), and with `allow_h` the French `HHhMM`; the hour may have one
/// digit (`9:30`).
pub(crate) fn time(s: &str, allow_h: bool) -> Option<NaiveTime> {
    let b = s.as_bytes();
    let sep = b
        .iter()
        .position(|&c| c == b':' || (allow_h && c == b'h'))?;
    if !(1..=2).contains(&sep) {
        return None;
    }
    let hour = number(&b[..sep])?;
    let rest = &b[sep + 1..];
    let (minute, second) = match rest.len() {
        2 => (number(rest)?, 0),
        5 if b[sep] == b':' && rest[2] == b':' => (number(&rest[..2])?, number(&rest[3..])?),
        _ => return None,
    };
    NaiveTime::from_hms_opt(hour, minute, second)
}

/// `YYYY-MM-DD HH:MM`, `YYYY-MM-DDTHH:MM` and either with `:SS`.
pub(crate) fn iso_date_time(s: &str) -> Option<NaiveDateTime> {
    if s.len() < 16 || !s.is_char_boundary(10) {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let rest = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('T'))?;
    if rest.len() != 5 && rest.len() != 8 {
        return None;
    }
    Some(iso_date(date)?.and_time(time(rest, false)?))
}

/// `DD/MM/YYYY HH:MM` and `DD-MM-YYYY HH:MM` (with optional `:SS`).
pub(crate) fn day_first_date_time(s: &str) -> Option<NaiveDateTime> {
    if s.len() < 16 || !s.is_char_boundary(10) {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let rest = rest.strip_prefix(' ')?;
    if rest.len() != 5 && rest.len() != 8 {
        return None;
    }
    let date = day_first_date(date, b'/').or_else(|| day_first_date(date, b'-'))?;
    Some(date.and_time(time(rest, false)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(iso_date("2024-02-29"), NaiveDate::from_ymd_opt(2024, 2, 29));
        assert_eq!(iso_date("2023-02-29"), None);
        assert_eq!(
            day_first_date("31/12/2024", b'/'),
            NaiveDate::from_ymd_opt(2024, 12, 31)
        );
        assert_eq!(day_first_date("12/31/2024", b'/'), None, "day first");
        assert_eq!(time("9h05", true), NaiveTime::from_hms_opt(9, 5, 0));
        assert_eq!(time("9h05", false), None);
        assert_eq!(time("23:59:59", false), NaiveTime::from_hms_opt(23, 59, 59));
        assert_eq!(time("24:00", false), None);
        assert_eq!(time("12:3", false), None);
        assert!(iso_date_time("2024-01-02T03:04").is_some());
        assert!(iso_date_time("2024-01-02 03:04:05").is_some());
        assert!(iso_date_time("2024-01-02x03:04").is_none());
        assert!(day_first_date_time("02/01/2024 03:04").is_some());
        assert!(iso_date("２０２４-01-01").is_none());
        assert!(iso_date_time("2024-01-0é 03:04").is_none());
    }
}
