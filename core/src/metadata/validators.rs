//! The validators of spec 2.8: they accept or refuse a submitted value, never change it.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use regex::Regex;
use serde::Deserialize;

use super::arguments::{NoArguments, compile_pattern, yaml_arguments};
use super::calendar;

/// Checks a submitted value (spec 2.10 step 4). Implement it to add a validator of your own and
/// register it with [`ClassRegistry::register_validator`](super::ClassRegistry::register_validator).
pub trait Validator: Send + Sync {
    /// Accepts the value, or returns why it is refused.
    fn validate(&self, value: &str) -> Result<(), String>;
}

/// Path prefix of the built-in validators.
pub const PREFIX: &str = "svc.apps.metadata.metadata_validators.";

/// `DateValidator`: `DD/MM/YYYY` or `YYYY-MM-DD`, a real calendar date.
#[derive(Debug, Clone, Copy, Default)]
pub struct DateValidator;

impl Validator for DateValidator {
    fn validate(&self, value: &str) -> Result<(), String> {
        calendar::iso_date(value)
            .or_else(|| calendar::day_first_date(value, b'/'))
            .map(drop)
            .ok_or_else(|| format!("'{value}' is not a valid date (DD/MM/YYYY or YYYY-MM-DD)"))
    }
}

/// `DateAndTimeValidator`: every form [`DateAndTimeParser`](super::parsers::DateAndTimeParser)
/// reads, so the two can be combined on one type (spec 2.9): `YYYY-MM-DD HH:MM` (ISO 8601 `T`
/// accepted too), `DD/MM/YYYY HH:MM` and `DD-MM-YYYY HH:MM`, each with optional `:SS`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DateAndTimeValidator;

impl Validator for DateAndTimeValidator {
    fn validate(&self, value: &str) -> Result<(), String> {
        calendar::iso_date_time(value)
            .or_else(|| calendar::day_first_date_time(value))
            .map(drop)
            .ok_or_else(|| {
                format!(
                    "'{value}' is not a valid date and time (YYYY-MM-DD HH:MM or DD/MM/YYYY HH:MM)"
                )
            })
    }
}

/// `TimeValidator`: `HH:MM` (ISO 8601 seconds accepted too).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeValidator;

impl Validator for TimeValidator {
    fn validate(&self, value: &str) -> Result<(), String> {
        calendar::time(value, false)
            .map(drop)
            .ok_or_else(|| format!("'{value}' is not a valid time (HH:MM)"))
    }
}

/// Arguments of [`RegularExpressionValidator`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternArguments {
    /// The regular expression the whole value must match.
    pub pattern: String,
}

/// `RegularExpressionValidator`: the **whole** value must match `pattern`.
#[derive(Debug, Clone)]
pub struct RegularExpressionValidator {
    anchored: Regex,
    pattern: String,
}

impl RegularExpressionValidator {
    /// Compiles the validator; the pattern is matched against the whole value.
    pub fn new(pattern: &str) -> Result<Self, String> {
        Ok(RegularExpressionValidator {
            anchored: compile_pattern(&format!("^(?:{pattern})$"))?,
            pattern: pattern.to_owned(),
        })
    }
}

impl Validator for RegularExpressionValidator {
    fn validate(&self, value: &str) -> Result<(), String> {
        if self.anchored.is_match(value) {
            Ok(())
        } else {
            Err(format!(
                "'{value}' does not match the pattern '{}'",
                self.pattern
            ))
        }
    }
}

/// Builds a validator from its YAML arguments.
type BuildValidator = fn(&str) -> Result<Box<dyn Validator>, String>;

/// The built-in validator classes: path, label and how each is built from its YAML arguments.
pub(super) fn builtins() -> Vec<(String, &'static str, BuildValidator)> {
    vec![
        (format!("{PREFIX}DateValidator"), "Date validator", |args| {
            yaml_arguments::<NoArguments>(args)?;
            Ok(Box::new(DateValidator))
        }),
        (
            format!("{PREFIX}DateAndTimeValidator"),
            "Date and time validator",
            |args| {
                yaml_arguments::<NoArguments>(args)?;
                Ok(Box::new(DateAndTimeValidator))
            },
        ),
        (format!("{PREFIX}TimeValidator"), "Time validator", |args| {
            yaml_arguments::<NoArguments>(args)?;
            Ok(Box::new(TimeValidator))
        }),
        (
            format!("{PREFIX}RegularExpressionValidator"),
            "Regular expression validator",
            |args| {
                let args: PatternArguments = yaml_arguments(args)?;
                Ok(Box::new(RegularExpressionValidator::new(&args.pattern)?))
            },
        ),
    ]
}
