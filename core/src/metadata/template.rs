//! The shared, sandboxed template environment of defaults (spec 2.6), lookups (spec 2.7) and
//! workflow conditions and actions (spec 4.5).
//!
//! Templates are compiled once and kept in one minijinja environment keyed by their source.
//! Every render is bounded: by fuel (instructions), by recursion depth and by output size, so a
//! hostile template fails with an error instead of hanging or exhausting memory.

use std::io;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike, Utc};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Environment, ErrorKind, State};
use parking_lot::RwLock;

use super::datefmt;

/// Longest template source accepted (api.md limits).
pub const MAX_TEMPLATE_LEN: usize = 10_000;
/// Instructions one render may execute.
const FUEL: u64 = 100_000;
/// Distinct compiled templates kept before the cache starts over.
const MAX_CACHED_TEMPLATES: usize = 10_000;

/// Why a template could not be compiled or rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One environment shared by every template of a [`crate::Docmeta`].
pub struct TemplateEngine {
    env: RwLock<Environment<'static>>,
}

impl std::fmt::Debug for TemplateEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateEngine").finish_non_exhaustive()
    }
}

impl Default for TemplateEngine {
    fn default() -> Self {
        Self::new()
    }
}

/// True when `source` has no template syntax and is used literally (spec 2.6).
pub fn is_literal(source: &str) -> bool {
    !(source.contains("{{") || source.contains("{%") || source.contains("{#"))
}

impl TemplateEngine {
    /// A fresh environment with docmeta's filters and limits.
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_fuel(Some(FUEL));
        env.set_recursion_limit(64);
        env.add_filter("date", date_filter);
        env.add_filter("time", time_filter);
        TemplateEngine {
            env: RwLock::new(env),
        }
    }

    /// Checks that `source` compiles (without rendering it).
    pub fn check(&self, source: &str) -> Result<(), TemplateError> {
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError(format!(
                "template is longer than {MAX_TEMPLATE_LEN} characters"
            )));
        }
        if is_literal(source) {
            return Ok(());
        }
        self.compile(source)
    }

    fn compile(&self, source: &str) -> Result<(), TemplateError> {
        if self.env.read().get_template(source).is_ok() {
            return Ok(());
        }
        let mut env = self.env.write();
        if env.templates().count() >= MAX_CACHED_TEMPLATES {
            env.clear_templates();
        }
        env.add_template_owned(source.to_owned(), django_filter_arguments(source))
            .map_err(|e| TemplateError(format!("invalid template: {}", describe(&e))))
    }

    /// Renders `source` with `context`; output beyond `max_output` bytes is an error.
    pub fn render(
        &self,
        source: &str,
        context: Value,
        max_output: usize,
    ) -> Result<String, TemplateError> {
        if is_literal(source) {
            return Ok(source.to_owned());
        }
        self.check(source)?;
        let env = self.env.read();
        let template = env
            .get_template(source)
            .map_err(|e| TemplateError(format!("invalid template: {}", describe(&e))))?;
        let mut out = LimitedBuffer {
            buf: Vec::new(),
            max: max_output,
        };
        template
            .render_captured_to(context, &mut out)
            .map_err(|e| {
                if e.kind() == ErrorKind::WriteFailure {
                    TemplateError(format!("template output is longer than {max_output} bytes"))
                } else {
                    TemplateError(format!("template failed: {}", describe(&e)))
                }
            })?;
        String::from_utf8(out.buf).map_err(|_| TemplateError("template output is not UTF-8".into()))
    }
}

fn describe(e: &minijinja::Error) -> String {
    match e.kind() {
        ErrorKind::OutOfFuel => "template ran too long (out of fuel)".to_owned(),
        _ => match e.detail() {
            Some(detail) => format!("{} ({detail})", e.kind()),
            None => e.kind().to_string(),
        },
    }
}

struct LimitedBuffer {
    buf: Vec<u8>,
    max: usize,
}

impl io::Write for LimitedBuffer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.max {
            return Err(io::Error::other("template output limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
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
    super::calendar::iso_date_time(s)
        .or_else(|| super::calendar::iso_date(s).and_then(|d| d.and_hms_opt(0, 0, 0)))
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

/// A point in time inside templates (`now`, `document.datetime_created`). Renders as
/// `YYYY-MM-DD HH:MM:SS` and exposes `year`, `month`, `day`, `hour`, `minute`, `second`.
#[derive(Debug, Clone, Copy)]
pub struct Moment(pub DateTime<Utc>);

impl Object for Moment {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let t = self.0;
        Some(Value::from(match key.as_str()? {
            "year" => i64::from(t.year()),
            "month" => i64::from(t.month()),
            "day" => i64::from(t.day()),
            "hour" => i64::from(t.hour()),
            "minute" => i64::from(t.minute()),
            "second" => i64::from(t.second()),
            "weekday" => i64::from(t.weekday().num_days_from_monday()),
            "timestamp" => t.timestamp(),
            _ => return None,
        }))
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        write!(f, "{}", self.0.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// A value of a document's metadata as templates see it (`document.metadata.all` items).
#[derive(Debug, Clone)]
pub struct MetadataEntry {
    /// The metadata type's name.
    pub name: String,
    /// The metadata type's label.
    pub label: String,
    /// The stored value.
    pub value: String,
}

/// What templates know of a document (`document` in spec 2.6, `workflow_instance.document`).
#[derive(Debug, Clone)]
pub struct DocumentContext {
    /// Document id.
    pub id: i64,
    /// Document label.
    pub label: String,
    /// Label of the document's type.
    pub document_type_label: String,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// The document's metadata values.
    pub metadata: Vec<MetadataEntry>,
}

impl Object for DocumentContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "id" | "pk" => Value::from(self.id),
            "label" => Value::from(self.label.as_str()),
            "document_type" => Value::from_object(Named {
                text: self.document_type_label.clone(),
                attribute: "label",
            }),
            "datetime_created" => Value::from_object(Moment(self.created)),
            "metadata_value_of" => Value::from_object(MetadataValueOf(self.clone())),
            "metadata" => Value::from_object(MetadataSet(self.clone())),
            _ => return None,
        })
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.label)
    }
}

/// A record shown by one text attribute (`label`, `username`, `name`) that also renders as it.
#[derive(Debug, Clone)]
struct Named {
    text: String,
    attribute: &'static str,
}

impl Object for Named {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        (key.as_str()? == self.attribute).then(|| Value::from(self.text.as_str()))
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.text)
    }
}

/// `document.metadata_value_of.<name>`: the value, or none when the metadata is absent.
#[derive(Debug)]
struct MetadataValueOf(Arc<DocumentContext>);

impl Object for MetadataValueOf {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        Some(
            self.0
                .metadata
                .iter()
                .find(|m| m.name == name)
                .map_or(Value::from(()), |m| Value::from(m.value.as_str())),
        )
    }
}

/// `document.metadata`: `.all` (attribute or call) iterates the entries.
#[derive(Debug)]
struct MetadataSet(Arc<DocumentContext>);

impl MetadataSet {
    fn all(&self) -> Value {
        Value::from_iter(
            self.0
                .metadata
                .iter()
                .map(|m| Value::from_object(EntryObject(m.clone()))),
        )
    }
}

impl Object for MetadataSet {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str() {
            Some("all") => Some(self.all()),
            Some("count") => Some(Value::from(self.0.metadata.len())),
            _ => key
                .as_usize()
                .and_then(|i| self.0.metadata.get(i))
                .map(|m| Value::from_object(EntryObject(m.clone()))),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.metadata.len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        _args: &[Value],
    ) -> Result<Value, minijinja::Error> {
        match method {
            "all" => Ok(self.all()),
            "count" => Ok(Value::from(self.0.metadata.len())),
            _ => Err(minijinja::Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

#[derive(Debug)]
struct EntryObject(MetadataEntry);

impl Object for EntryObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "value" => Value::from(self.0.value.as_str()),
            "metadata_type" => minijinja::context! {
                name => self.0.name.as_str(),
                label => self.0.label.as_str(),
            },
            _ => return None,
        })
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.0.value)
    }
}

/// A user as lookup templates see it (`users`): renders as the username.
pub fn user_value(id: i64, username: &str) -> Value {
    principal(
        &[("id", Value::from(id)), ("username", Value::from(username))],
        username,
    )
}

/// A group as lookup templates see it (`groups`): renders as the name.
pub fn group_value(id: i64, name: &str) -> Value {
    principal(
        &[("id", Value::from(id)), ("name", Value::from(name))],
        name,
    )
}

fn principal(fields: &[(&str, Value)], text: &str) -> Value {
    let fields: std::collections::BTreeMap<&str, Value> = fields.iter().cloned().collect();
    Value::from_object(Principal {
        fields: Value::from(fields),
        text: text.to_owned(),
    })
}

#[derive(Debug)]
struct Principal {
    fields: Value,
    text: String,
}

impl Object for Principal {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.fields.get_item(key).ok().filter(|v| !v.is_undefined())
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-03-01T14:05:09Z")
            .map(|d| d.to_utc())
            .unwrap_or_default()
    }

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

    #[test]
    fn renders_both_spellings_and_limits() {
        let e = TemplateEngine::new();
        let ctx = || context! { now => Value::from_object(Moment(now())) };
        assert_eq!(
            e.render(r#"{{ now|date:"d/m/Y" }}"#, ctx(), 100),
            Ok("01/03/2024".into())
        );
        assert_eq!(
            e.render(r#"{{ now|date("Y") }}-X"#, ctx(), 100),
            Ok("2024-X".into())
        );
        assert_eq!(
            e.render("plain {text", ctx(), 100),
            Ok("plain {text".into())
        );
        let long = e.render(
            "{% for i in range(100000) %}xxxxxxxxxx{% endfor %}",
            ctx(),
            1000,
        );
        assert!(long.is_err());
        let fuel = e.render(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            ctx(),
            1000,
        );
        assert!(fuel.is_err_and(|e| e.0.contains("fuel")));
        assert!(e.check("{% for %}").is_err());
    }

    #[test]
    fn document_context() {
        let doc = DocumentContext {
            id: 1,
            label: "inv".into(),
            document_type_label: "Invoice".into(),
            created: now(),
            metadata: vec![MetadataEntry {
                name: "number".into(),
                label: "Number".into(),
                value: "42".into(),
            }],
        };
        let e = TemplateEngine::new();
        let ctx = context! { document => Value::from_object(doc) };
        let out = e.render(
            "{{ document.metadata_value_of.number }}|{{ document.metadata_value_of.nope is none }}|{% for m in document.metadata.all %}{{ m.metadata_type.label }}={{ m.value }}{% endfor %}|{{ document.document_type.label }}",
            ctx,
            1000,
        );
        assert_eq!(out, Ok("42|True|Number=42|Invoice".into()));
        let users = Value::from_iter([user_value(1, "ann"), user_value(2, "bob")]);
        assert_eq!(
            e.render(
                "{{ users|join(',') }}",
                context! { users => users.clone() },
                100
            ),
            Ok("ann,bob".into())
        );
        let out = e.render(
            "{% for u in users %}{{ u.username }}{{ u.id }};{% endfor %}",
            context! { users },
            100,
        );
        assert_eq!(out, Ok("ann1;bob2;".into()));
    }
}
