//! The type of a metadata type's values: what a value must look like once the value pipeline
//! has run, and how search and sorting compare values of that type.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// What a metadata type's values are. Every value is stored as text; a typed value must be
/// written in its type's one form (see [`ValueType::check`]), which the pipeline's parsers
/// produce (`DateParser`, `DateAndTimeParser`, `TimeParser`). Search compares values of a
/// typed metadata type by type: numbers as numbers, dates and times in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueType {
    /// Any text (the default): compared as text.
    #[default]
    Text,
    /// A whole number from -9223372036854775808 to 9223372036854775807: `42`, `-7`.
    Integer,
    /// A decimal number written with a point: `1234.50`, `-0.5`, `12`.
    Decimal,
    /// A calendar date: `2024-03-31`.
    Date,
    /// A date and time of day, to the second: `2024-03-31T14:05:00`.
    DateTime,
    /// A time of day: `14:05` or `14:05:30`.
    Time,
    /// `true` or `false`.
    Boolean,
}

/// How many digits a decimal value may have (before and after the point together): beyond
/// that, numbers compare no more exactly than they are stored.
const MAX_DECIMAL_DIGITS: usize = 30;

impl ValueType {
    /// Every value type, in the order of their documentation.
    pub const ALL: [ValueType; 7] = [
        ValueType::Text,
        ValueType::Integer,
        ValueType::Decimal,
        ValueType::Date,
        ValueType::DateTime,
        ValueType::Time,
        ValueType::Boolean,
    ];

    /// The stored (and API) name: `text`, `integer`, `decimal`, `date`, `datetime`, `time`,
    /// `boolean`.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::Text => "text",
            ValueType::Integer => "integer",
            ValueType::Decimal => "decimal",
            ValueType::Date => "date",
            ValueType::DateTime => "datetime",
            ValueType::Time => "time",
            ValueType::Boolean => "boolean",
        }
    }

    /// The type named `name` (see [`as_str`](Self::as_str)); `None` for any other name.
    pub fn parse(name: &str) -> Option<ValueType> {
        ValueType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The form a value of this type is written in, for messages.
    pub fn form(self) -> &'static str {
        match self {
            ValueType::Text => "any text",
            ValueType::Integer => "a whole number such as 42 or -7",
            ValueType::Decimal => "a number such as 1234.50 (a point, no thousands separator)",
            ValueType::Date => "a date written YYYY-MM-DD",
            ValueType::DateTime => "a date and time written YYYY-MM-DDTHH:MM:SS",
            ValueType::Time => "a time written HH:MM or HH:MM:SS",
            ValueType::Boolean => "true or false",
        }
    }

    /// Whether `value` is a value of this type; the message says what is expected. An empty
    /// value is "no value" and fits every type.
    pub fn check(self, value: &str) -> Result<(), String> {
        if value.is_empty() || self == ValueType::Text || self.key(value).is_some() {
            Ok(())
        } else {
            Err(format!("'{}' is not {}.", shortened(value), self.form()))
        }
    }

    /// The value's comparison key for search and sorting, `None` when `value` is not of this
    /// type (or is empty). Text has no typed key.
    pub fn key(self, value: &str) -> Option<TypedKey> {
        match self {
            ValueType::Text => None,
            ValueType::Integer => integer(value).map(|n| TypedKey::Number(n as f64)),
            ValueType::Decimal => decimal(value).map(TypedKey::Number),
            ValueType::Boolean => match value {
                "true" => Some(TypedKey::Number(1.0)),
                "false" => Some(TypedKey::Number(0.0)),
                _ => None,
            },
            ValueType::Date => date(value).map(|d| TypedKey::Time(midnight(d))),
            ValueType::DateTime => date_time(value).map(|t| TypedKey::Time(seconds(t))),
            ValueType::Time => {
                time(value).map(|t| TypedKey::Time(i64::from(t.num_seconds_from_midnight())))
            }
        }
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ValueType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ValueType::parse(s).ok_or_else(|| {
            let names: Vec<&str> = ValueType::ALL.iter().map(|t| t.as_str()).collect();
            format!("'{s}' is not a value type: use one of {}", names.join(", "))
        })
    }
}

/// A typed value's comparison key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TypedKey {
    /// Integers, decimals, booleans (`false` 0, `true` 1).
    Number(f64),
    /// Dates (their midnight, in seconds since 1970), dates and times (seconds since 1970, read
    /// as UTC), times (seconds since midnight).
    Time(i64),
}

/// A stored value that is not of a value type (see [`ValueTypeCheck`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueMisfit {
    /// The document holding it.
    pub document: super::DocumentId,
    /// The value's id.
    pub metadata: super::DocumentMetadataId,
    /// The value.
    pub value: String,
}

/// What changing a metadata type's value type would meet: its stored values that are not of
/// the new type (see [`Session::check_value_type`](crate::Session::check_value_type)). Only the
/// values the caller may view (on documents it may view, with `document_metadata_view` on them
/// and on the type) are counted and listed; of the others the check says only whether any does
/// not fit (the change would be refused for it), nothing of how many there are or what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueTypeCheck {
    /// The value type checked.
    pub value_type: ValueType,
    /// How many non-empty values the caller may view were checked.
    pub checked: usize,
    /// How many of them are not of `value_type`.
    pub count: usize,
    /// Those, by value id, at most [`ValueTypeCheck::MAX_LISTED`].
    pub misfits: Vec<ValueMisfit>,
    /// Whether a value the caller may not view is not of `value_type` either.
    pub hidden_misfits: bool,
}

impl ValueTypeCheck {
    /// The most misfits a check lists.
    pub const MAX_LISTED: usize = 1_000;

    /// Whether every value fits (the change may be made).
    pub fn fits(&self) -> bool {
        self.count == 0 && !self.hidden_misfits
    }
}

/// A value cut to 60 characters for a message.
fn shortened(value: &str) -> String {
    match value.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &value[..at]),
        None => value.to_owned(),
    }
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn integer(value: &str) -> Option<i64> {
    let unsigned = value.strip_prefix('-').unwrap_or(value);
    if !digits(unsigned) {
        return None;
    }
    value.parse().ok()
}

/// A decimal's number; `-0` is `0` (one key for one number).
fn decimal(value: &str) -> Option<f64> {
    let unsigned = value.strip_prefix('-').unwrap_or(value);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (unsigned, None),
    };
    if !digits(whole) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    if whole.len() + fraction.map_or(0, str::len) > MAX_DECIMAL_DIGITS {
        return None;
    }
    value
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .map(|n| n + 0.0)
}

fn date(value: &str) -> Option<NaiveDate> {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    if !digits(&value[..4]) || !digits(&value[5..7]) || !digits(&value[8..]) {
        return None;
    }
    NaiveDate::from_ymd_opt(
        value[..4].parse().ok()?,
        value[5..7].parse().ok()?,
        value[8..].parse().ok()?,
    )
}

fn time(value: &str) -> Option<NaiveTime> {
    let b = value.as_bytes();
    let two = |s: &str| digits(s) && s.len() == 2;
    let (hour, minute, second) = match b.len() {
        5 if b[2] == b':' => (&value[..2], &value[3..5], "00"),
        8 if b[2] == b':' && b[5] == b':' => (&value[..2], &value[3..5], &value[6..]),
        _ => return None,
    };
    if !two(hour) || !two(minute) || !two(second) {
        return None;
    }
    NaiveTime::from_hms_opt(
        hour.parse().ok()?,
        minute.parse().ok()?,
        second.parse().ok()?,
    )
}

fn date_time(value: &str) -> Option<NaiveDateTime> {
    if value.len() != 19 || value.as_bytes()[10] != b'T' || !value.is_char_boundary(11) {
        return None;
    }
    let time = time(&value[11..])?;
    Some(date(&value[..10])?.and_time(time))
}

fn midnight(d: NaiveDate) -> i64 {
    seconds(d.and_time(NaiveTime::MIN))
}

fn seconds(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_takes_its_form_only() {
        let cases: [(ValueType, &[&str], &[&str]); 7] = [
            (ValueType::Text, &["anything", "42"], &[]),
            (
                ValueType::Integer,
                &["0", "42", "-7", "007", "9223372036854775807"],
                &["+1", "1.0", "1e3", " 1", "9223372036854775808", "-", "x"],
            ),
            (
                ValueType::Decimal,
                &["0", "1234.50", "-0.5", "12"],
                &[
                    "1,5",
                    ".5",
                    "5.",
                    "1e3",
                    "NaN",
                    "inf",
                    "+1",
                    "1.2.3",
                    &"9".repeat(31),
                ],
            ),
            (
                ValueType::Date,
                &["2024-03-31", "2024-02-29"],
                &[
                    "2023-02-29",
                    "2024-3-31",
                    "31/03/2024",
                    "2024-03-31T00:00:00",
                    "２０２４-03-31",
                ],
            ),
            (
                ValueType::DateTime,
                &["2024-03-31T14:05:00"],
                &[
                    "2024-03-31 14:05:00",
                    "2024-03-31T14:05",
                    "2024-03-31T24:00:00",
                    "2024-03-31",
                ],
            ),
            (
                ValueType::Time,
                &["14:05", "14:05:30", "00:00"],
                &["9:30", "24:00", "14:05:60", "14h05"],
            ),
            (
                ValueType::Boolean,
                &["true", "false"],
                &["True", "1", "yes"],
            ),
        ];
        for (value_type, good, bad) in cases {
            for v in good.iter().chain(&[""]) {
                assert!(value_type.check(v).is_ok(), "{value_type}: {v}");
            }
            for v in bad {
                let e = value_type.check(v).expect_err(v);
                assert!(e.contains(value_type.form()), "{e}");
            }
        }
    }

    #[test]
    fn keys_compare_by_type() {
        let key = |t: ValueType, v: &str| t.key(v).expect(v);
        assert_eq!(key(ValueType::Integer, "10"), TypedKey::Number(10.0));
        assert_eq!(key(ValueType::Decimal, "9.50"), TypedKey::Number(9.5));
        assert_eq!(key(ValueType::Boolean, "true"), TypedKey::Number(1.0));
        assert_eq!(key(ValueType::Time, "01:00"), TypedKey::Time(3600));
        assert_eq!(key(ValueType::Date, "1970-01-02"), TypedKey::Time(86_400));
        assert_eq!(
            key(ValueType::DateTime, "1970-01-02T00:00:01"),
            TypedKey::Time(86_401)
        );
        // `-0` is `0`, to the bit (search and sorting compare keys as bits).
        let TypedKey::Number(zero) = key(ValueType::Decimal, "-0.00") else {
            panic!("a number")
        };
        assert_eq!(zero.to_bits(), 0.0f64.to_bits());
        assert_eq!(ValueType::Text.key("x"), None);
    }

    #[test]
    fn names_round_trip() {
        for t in ValueType::ALL {
            assert_eq!(t.as_str().parse::<ValueType>(), Ok(t));
        }
        assert!("number".parse::<ValueType>().is_err());
    }

    #[test]
    fn a_long_value_is_shortened_in_the_message() {
        let e = ValueType::Integer.check(&"x".repeat(500)).expect_err("x");
        assert!(e.len() < 200, "{e}");
    }
}
