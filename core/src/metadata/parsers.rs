//! The parsers of spec 2.9: they turn an accepted value into the value that is stored.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use regex::Regex;
use serde::Deserialize;

use super::arguments::{NoArguments, compile_pattern, yaml_arguments};
use super::calendar;
use crate::model::MAX_VALUE_CHARS;

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
    /// Replaces every match, refusing (before building more) an output longer than the value
    /// limit (`MAX_VALUE_LEN`, 10,000 characters): a replacement
    /// repeating `$0` thousands of times over thousands of matches would otherwise build
    /// hundreds of MiB for a value that is then refused anyway.
    fn parse(&self, value: &str) -> Result<String, String> {
        let mut text = String::new();
        let mut length = Length::new(MAX_VALUE_CHARS);
        let (mut last, mut matched) = (0, false);
        for caps in self.regex.captures_iter(value) {
            let Some(whole) = caps.get(0) else {
                continue;
            };
            matched = true;
            length.push(&mut text, &value[last..whole.start()])?;
            last = whole.end();
            // The regex crate's own interpolation (`$1`, `${name}`, `$$`; an unknown group is
            // empty), every group checked against the limit before it is appended; the literal
            // text between references is at most the replacement's own length.
            let mut refused = None;
            regex_automata::util::interpolate::string(
                &self.replacement,
                |index, dst| {
                    let group = caps.get(index).map_or("", |m| m.as_str());
                    if refused.is_none() {
                        match length.fits(dst, group) {
                            Ok(()) => dst.push_str(group),
                            Err(e) => refused = Some(e),
                        }
                    }
                },
                |name| self.regex.capture_names().position(|n| n == Some(name)),
                &mut text,
            );
            if let Some(e) = refused {
                return Err(e);
            }
            length.fits(&text, "")?;
        }
        if !matched {
            return Ok(value.to_owned());
        }
        length.push(&mut text, &value[last..])?;
        Ok(text)
    }
}

/// The length of a parser's output being built, refused once it passes `max` characters.
struct Length {
    max: usize,
    /// Characters of the output's first `counted` bytes.
    chars: usize,
    counted: usize,
}

impl Length {
    fn new(max: usize) -> Self {
        Length {
            max,
            chars: 0,
            counted: 0,
        }
    }

    /// Whether `more` fits after `text` (the output so far, grown since the last call).
    fn fits(&mut self, text: &str, more: &str) -> Result<(), String> {
        self.chars += text.get(self.counted..).map_or(0, |t| t.chars().count());
        self.counted = text.len();
        // Bytes bound characters from above: most pieces are decided without counting them.
        if self.chars + more.len() <= self.max || self.chars + more.chars().count() <= self.max {
            return Ok(());
        }
        Err(format!(
            "Ensure this field has no more than {} characters (the parser's output would be \
             longer).",
            self.max
        ))
    }

    /// Appends `more` to `text` if it fits.
    fn push(&mut self, text: &mut String, more: &str) -> Result<(), String> {
        self.fits(text, more)?;
        text.push_str(more);
        Ok(())
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
    fn replacements_as_the_regex_crate_makes_them() {
        let cases = [
            ("x*", "-", "abc"),
            ("x*", "<$0>", ""),
            (
                r"(\w+)@(\w+)",
                "${2}$$1 at $1 $missing ${9}",
                "ann@home, bob@work",
            ),
            (r"(?<u>\w)(?<v>\d)?", "[$v|$u]", "a1bc2"),
            ("é", "$0$0", "café é"),
            ("$", "!", "end"),
        ];
        for (pattern, replacement, value) in cases {
            let expected = Regex::new(pattern)
                .map(|r| r.replace_all(value, replacement).into_owned())
                .ok();
            let parser = RegularExpressionParser::new(pattern, replacement).ok();
            assert_eq!(
                parser.and_then(|p| p.parse(value).ok()),
                expected,
                "{pattern} -> {replacement} on {value}"
            );
        }
    }

    #[test]
    fn python_group_references() {
        assert_eq!(python_replacement(r"\1-\22"), "${1}-${22}");
        assert_eq!(python_replacement(r"a\b"), r"a\b");
        assert_eq!(python_replacement("x\\"), "x\\");
    }
}
