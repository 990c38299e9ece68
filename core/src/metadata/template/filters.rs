//! What templates can call, and the Django spelling of filters: minijinja's built-in filters,
//! tests and functions (the engine registers each behind the sandbox's checks), Django's `date`
//! and `time` filters with their format codes, and the rewriting of Django's `value|filter:arg`
//! into Jinja's `value|filter(arg)`.

use chrono::{DateTime, NaiveDateTime};
use minijinja::value::Value;
use minijinja::{ErrorKind, State};

use super::context::Moment;
use crate::metadata::{calendar, datefmt};

/// minijinja's filters (builtins feature, without json and urlencode), wrapped by the sandbox.
pub(super) fn builtin_filters() -> Vec<(&'static str, Value)> {
    use minijinja::filters as f;
    vec![
        ("safe", Value::from_function(f::safe)),
        ("escape", Value::from_function(f::escape)),
        ("e", Value::from_function(f::escape)),
        ("lower", Value::from_function(f::lower)),
        ("upper", Value::from_function(f::upper)),
        ("title", Value::from_function(f::title)),
        ("capitalize", Value::from_function(f::capitalize)),
        ("replace", Value::from_function(f::replace)),
        ("length", Value::from_function(f::length)),
        ("count", Value::from_function(f::length)),
        ("dictsort", Value::from_function(f::dictsort)),
        ("items", Value::from_function(f::items)),
        ("reverse", Value::from_function(f::reverse)),
        ("trim", Value::from_function(f::trim)),
        ("join", Value::from_function(f::join)),
        ("split", Value::from_function(f::split)),
        ("lines", Value::from_function(f::lines)),
        ("default", Value::from_function(f::default)),
        ("d", Value::from_function(f::default)),
        ("round", Value::from_function(f::round)),
        ("abs", Value::from_function(f::abs)),
        ("int", Value::from_function(f::int)),
        ("float", Value::from_function(f::float)),
        ("attr", Value::from_function(f::attr)),
        ("first", Value::from_function(f::first)),
        ("last", Value::from_function(f::last)),
        ("min", Value::from_function(f::min)),
        ("max", Value::from_function(f::max)),
        ("sort", Value::from_function(f::sort)),
        ("list", Value::from_function(f::list)),
        ("string", Value::from_function(f::string)),
        ("bool", Value::from_function(f::bool)),
        ("batch", Value::from_function(f::batch)),
        ("slice", Value::from_function(f::slice)),
        ("sum", Value::from_function(f::sum)),
        ("indent", Value::from_function(f::indent)),
        ("select", Value::from_function(f::select)),
        ("reject", Value::from_function(f::reject)),
        ("selectattr", Value::from_function(f::selectattr)),
        ("rejectattr", Value::from_function(f::rejectattr)),
        ("map", Value::from_function(f::map)),
        ("groupby", Value::from_function(f::groupby)),
        ("unique", Value::from_function(f::unique)),
        ("chain", Value::from_function(f::chain)),
        ("zip", Value::from_function(f::zip)),
        ("pprint", Value::from_function(f::pprint)),
        ("format", Value::from_function(f::format)),
        ("date", Value::from_function(date_filter)),
        ("time", Value::from_function(time_filter)),
    ]
}

/// The tests templates may use (`x is startingwith('a')`), wrapped by the sandbox.
pub(super) fn builtin_tests() -> Vec<(&'static str, Value)> {
    use minijinja::tests as t;
    vec![
        ("startingwith", Value::from_function(t::is_startingwith)),
        ("endingwith", Value::from_function(t::is_endingwith)),
        ("in", Value::from_function(t::is_in)),
    ]
}

/// The global functions templates may call, wrapped by the sandbox (minijinja's `namespace` and
/// `debug` are removed by the engine).
pub(super) fn builtin_functions() -> Vec<(&'static str, Value)> {
    use minijinja::functions as f;
    vec![
        ("range", Value::from_function(f::range)),
        ("dict", Value::from_function(f::dict)),
    ]
}

/// Rewrites Django's `value|filter:arg` spelling into Jinja's `value|filter(arg)` inside tags,
/// leaving text and string literals alone.
pub fn django_filter_arguments(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 8);
    let mut i = 0;
    let mut in_tag = false;
    let mut last = 0;
    while i < b.len() {
        if !in_tag {
            if b[i] == b'{' && matches!(b.get(i + 1), Some(b'{' | b'%')) {
                in_tag = true;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        match b[i] {
            b'}' if i > 0 && matches!(b[i - 1], b'}' | b'%') => {
                in_tag = false;
                i += 1;
            }
            q @ (b'"' | b'\'') => i = skip_string(b, i, q),
            b'|' => {
                let name_start = skip_spaces(b, i + 1);
                let name_end = name_start
                    + b[name_start..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                        .count();
                let colon = skip_spaces(b, name_end);
                if name_end > name_start && b.get(colon) == Some(&b':') {
                    let arg_start = skip_spaces(b, colon + 1);
                    let arg_end = match b.get(arg_start) {
                        Some(&q @ (b'"' | b'\'')) => skip_string(b, arg_start, q),
                        _ => {
                            arg_start
                                + b[arg_start..]
                                    .iter()
                                    .take_while(|c| {
                                        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                                    })
                                    .count()
                        }
                    };
                    if arg_end > arg_start {
                        out.push_str(&source[last..name_end]);
                        out.push('(');
                        out.push_str(&source[arg_start..arg_end]);
                        out.push(')');
                        last = arg_end;
                    }
                    i = arg_end.max(i + 1);
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&source[last..]);
    out
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

fn skip_string(b: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Reads a template value as a date and time: a [`Moment`], or ISO 8601 text.
fn as_datetime(value: &Value) -> Option<NaiveDateTime> {
    if let Some(m) = value.downcast_object_ref::<Moment>() {
        return Some(m.0.naive_utc());
    }
    let s = value.as_str()?.trim();
    calendar::iso_date_time(s)
        .or_else(|| calendar::iso_date(s).and_then(|d| d.and_hms_opt(0, 0, 0)))
        .or_else(|| {
            // `YYYY-MM-DDTHH:MM:SS` with fractions or an offset.
            DateTime::parse_from_rfc3339(s).ok().map(|d| d.naive_utc())
        })
}

fn date_filter(
    _: &State,
    value: Value,
    format: Option<String>,
) -> Result<String, minijinja::Error> {
    if value.is_undefined() || value.is_none() {
        return Ok(String::new());
    }
    let t = as_datetime(&value).ok_or_else(|| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("date filter: '{value}' is not a date"),
        )
    })?;
    Ok(datefmt::format(&t, format.as_deref().unwrap_or("Y-m-d")))
}

fn time_filter(
    state: &State,
    value: Value,
    format: Option<String>,
) -> Result<String, minijinja::Error> {
    date_filter(
        state,
        value,
        Some(format.unwrap_or_else(|| "H:i".to_owned())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn django_spelling_is_rewritten() {
        assert_eq!(
            django_filter_arguments(r#"{{ now|date:"Y-m-d" }}"#),
            r#"{{ now|date("Y-m-d") }}"#
        );
        assert_eq!(
            django_filter_arguments(r#"a|b:"c" {{ x | default : 'y|z:1' }}"#),
            r#"a|b:"c" {{ x | default('y|z:1') }}"#
        );
        assert_eq!(django_filter_arguments("{{ x|upper }}"), "{{ x|upper }}");
        assert_eq!(django_filter_arguments("{{ '|a:b' }}"), "{{ '|a:b' }}");
    }
}
