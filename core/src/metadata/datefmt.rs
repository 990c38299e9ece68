//! Django's `date` format codes (`Y-m-d`, `d/m/Y H:i`, `N j, Y`, ...), so templates written for
//! the original system render the same here.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use std::fmt::Write;

use chrono::{Datelike, NaiveDateTime, Timelike};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_AP: [&str; 12] = [
    "Jan.", "Feb.", "March", "April", "May", "June", "July", "Aug.", "Sept.", "Oct.", "Nov.",
    "Dec.",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn ordinal_suffix(day: u32) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

fn days_in_month(t: &NaiveDateTime) -> u32 {
    let (y, m) = (t.year(), t.month());
    let next = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    chrono::NaiveDate::from_ymd_opt(next.0, next.1, 1)
        .and_then(|d| d.pred_opt())
        .map_or(31, |d| d.day())
}

/// Formats `t` (UTC) with a Django date format string. Unknown letters are copied; `\` escapes.
pub fn format(t: &NaiveDateTime, spec: &str) -> String {
    let mut out = String::with_capacity(spec.len() * 2);
    let mut chars = spec.chars();
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => h,
    };
    while let Some(c) = chars.next() {
        // Writing to a String cannot fail.
        let _ = match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
                Ok(())
            }
            'd' => write!(out, "{:02}", t.day()),
            'j' => write!(out, "{}", t.day()),
            'D' => write!(
                out,
                "{}",
                &DAYS[t.weekday().num_days_from_monday() as usize][..3]
            ),
            'l' => write!(out, "{}", DAYS[t.weekday().num_days_from_monday() as usize]),
            'S' => write!(out, "{}", ordinal_suffix(t.day())),
            'w' => write!(out, "{}", t.weekday().num_days_from_sunday()),
            'z' => write!(out, "{}", t.ordinal()),
            'W' => write!(out, "{}", t.iso_week().week()),
            'o' => write!(out, "{}", t.iso_week().year()),
            'm' => write!(out, "{:02}", t.month()),
            'n' => write!(out, "{}", t.month()),
            'F' => write!(out, "{}", MONTHS[t.month0() as usize]),
            'M' => write!(out, "{}", &MONTHS[t.month0() as usize][..3]),
            'b' => write!(out, "{}", MONTHS[t.month0() as usize][..3].to_lowercase()),
            'N' => write!(out, "{}", MONTHS_AP[t.month0() as usize]),
            't' => write!(out, "{}", days_in_month(t)),
            'L' => write!(
                out,
                "{}",
                if t.date().leap_year() {
                    "True"
                } else {
                    "False"
                }
            ),
            'y' => write!(out, "{:02}", t.year().rem_euclid(100)),
            'Y' => write!(out, "{:04}", t.year()),
            'a' => write!(out, "{}", if t.hour() < 12 { "a.m." } else { "p.m." }),
            'A' => write!(out, "{}", if t.hour() < 12 { "AM" } else { "PM" }),
            'g' => write!(out, "{hour12}"),
            'h' => write!(out, "{hour12:02}"),
            'G' => write!(out, "{}", t.hour()),
            'H' => write!(out, "{:02}", t.hour()),
            'i' => write!(out, "{:02}", t.minute()),
            's' => write!(out, "{:02}", t.second()),
            'u' => write!(out, "{:06}", t.nanosecond() / 1000 % 1_000_000),
            'e' | 'T' => write!(out, "UTC"),
            'O' => write!(out, "+0000"),
            'Z' => write!(out, "0"),
            'U' => write!(out, "{}", t.and_utc().timestamp()),
            'c' => write!(out, "{}+00:00", t.format("%Y-%m-%dT%H:%M:%S")),
            'r' => write!(out, "{}", t.format("%a, %d %b %Y %H:%M:%S +0000")),
            other => {
                out.push(other);
                Ok(())
            }
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn django_codes() {
        let t = chrono::NaiveDate::from_ymd_opt(2024, 3, 1)
            .and_then(|d| d.and_hms_opt(14, 5, 9))
            .expect("valid");
        assert_eq!(format(&t, "Y-m-d"), "2024-03-01");
        assert_eq!(format(&t, "d/m/Y H:i:s"), "01/03/2024 14:05:09");
        assert_eq!(format(&t, "N jS, Y g A"), "March 1st, 2024 2 PM");
        assert_eq!(format(&t, r"\Y\e\a\r: Y"), "Year: 2024");
        assert_eq!(
            format(&t, "D l F M b t L y U"),
            "Fri Friday March Mar mar 31 True 24 1709301909"
        );
    }
}
