//! The parsers of spec 2.9: they turn an accepted value into the value that is stored.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use std::borrow::Cow;

use regex::Regex;
use serde::Deserialize;

use super::arguments::{NoArguments, compile_pattern, yaml_arguments};
use super::calendar;

/// Transforms a value after validation (spec 2.10 step 5). Implement it to add a parser of your
/// own and register it with [`ClassRegistry::register_parser`](super::ClassRegistry::register_parser).
pub trait Parser: Send + Sync {
    /// Returns the value to store, or why the value cannot be parsed.
    fn parse(&self, value: &str) -> Result<String, String>;
}

/// Path prefix of the built-in parsers.
pub const PREFIX: &str = "svc.apps.metadata.metadata_parsers.";

/// `DateParser`: `DD/MM/YYYY`, `DD-MM-YYYY` or `YYYY-MM-DD` → `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DateParser;

impl Parser for DateParser {
    fn parse(&self, value: &str) -> Result<String, String> {
        calendar::iso_date(value)
            .or_else(|| calendar::day_first_date(value, b'/'))
            .or_else(|| calendar::day_first_date(value, b'-'))
            .map(|d| d.format("%Y-%m-%d").to_string())
            .ok_or_else(|| {
                format!("'{value}' is not a date (DD/MM/YYYY, DD-MM-YYYY or YYYY-MM-DD)")
            })
    }
}

/// `DateAndTimeParser`: `DD/MM/YYYY HH:MM` (and ISO 8601 forms) → `YYYY-MM-DDTHH:MM:SS`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DateAndTimeParser;

impl Parser for DateAndTimeParser {
    fn parse(&self, value: &str) -> Result<String, String> {
        calendar::day_first_date_time(value)
            .or_else(|| calendar::iso_date_time(value))
            .map(|d| d.format("%Y-%m-%dT%H:%M:%S").to_string())
            .ok_or_else(|| format!("'{value}' is not a date and time (DD/MM/YYYY HH:MM)"))
    }
}

/// `TimeParser`: `HH:MM` or `HHhMM` (and `HH:MM:SS`) → `HH:MM:SS`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeParser;

impl Parser for TimeParser {
    fn parse(&self, value: &str) -> Result<String, String> {
        calendar::time(value, true)
            .map(|t| t.format("%H:%M:%S").to_string())
            .ok_or_else(|| format!("'{value}' is not a time (HH:MM or HHhMM)"))
    }
}

/// Arguments of [`RegularExpressionParser`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubstitutionArguments {
    /// The regular expression to find.
    pub pattern: String,
    /// What every match becomes; `$1` / `${name}` refer to groups. Empty removes the matches.
    #[serde(default)]
    pub replacement: String,
}

/// `RegularExpressionParser`: every match of `pattern` is replaced by `replacement`.
#[derive(Debug, Clone)]
pub struct RegularExpressionParser {
    regex: Regex,
    replacement: String,
}

impl RegularExpressionParser {
    /// Compiles the parser. Python-style `\1` group references in the replacement are accepted
    /// and read as `${1}`.
    pub fn new(pattern: &str, replacement: &str) -> Result<Self, String> {
        Ok(RegularExpressionParser {
            regex: compile_pattern(pattern)?,
            replacement: python_replacement(replacement),
        })
    }
}

/// Rewrites Python's `\1` group references into the regex crate's `${1}`.
fn python_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len());
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(d)) if d.is_ascii_digit() => {
                out.push_str("${");
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    out.push(*d);
                    chars.next();
                }
                out.push('}');
            }
            _ => out.push(c),
        }
    }
    out
}

impl Parser for RegularExpressionParser {
    fn parse(&self, value: &str) -> Result<String, String> {
        Ok(
            match self.regex.replace_all(value, self.replacement.as_str()) {
                Cow::Borrowed(_) => value.to_owned(),
                Cow::Owned(s) => s,
            },
        )
    }
}

/// Builds a parser from its YAML arguments.
type BuildParser = fn(&str) -> Result<Box<dyn Parser>, String>;

/// The built-in parser classes: path, label and how each is built from its YAML arguments.
pub(super) fn builtins() -> Vec<(String, &'static str, BuildParser)> {
    vec![
        (format!("{PREFIX}DateParser"), "Date parser", |args| {
            yaml_arguments::<NoArguments>(args)?;
            Ok(Box::new(DateParser))
        }),
        (
            format!("{PREFIX}DateAndTimeParser"),
            "Date and time parser",
            |args| {
                yaml_arguments::<NoArguments>(args)?;
                Ok(Box::new(DateAndTimeParser))
            },
        ),
        (format!("{PREFIX}TimeParser"), "Time parser", |args| {
            yaml_arguments::<NoArguments>(args)?;
            Ok(Box::new(TimeParser))
        }),
        (
            format!("{PREFIX}RegularExpressionParser"),
            "Regular expression parser",
            |args| {
                let args: SubstitutionArguments = yaml_arguments(args)?;
                Ok(Box::new(RegularExpressionParser::new(
                    &args.pattern,
                    &args.replacement,
                )?))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_group_references() {
        assert_eq!(python_replacement(r"\1-\22"), "${1}-${22}");
        assert_eq!(python_replacement(r"a\b"), r"a\b");
        assert_eq!(python_replacement("x\\"), "x\\");
    }
}
