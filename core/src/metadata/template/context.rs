//! What templates see: the values docmeta puts in a template's context (a document with its
//! metadata, points in time, users and groups, JSON) and how each renders and answers
//! attribute lookups.

use std::sync::Arc;

use chrono::{DateTime, Datelike, Timelike, Utc};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{ErrorKind, State};

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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataEntry {
    /// The metadata type's name.
    pub name: String,
    /// The metadata type's label.
    pub label: String,
    /// The stored value.
    pub value: String,
}

/// What templates know of a document (`document` in spec 2.6, `workflow_instance.document`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

/// A JSON value as templates see it.
pub(crate) fn json_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            Value::from(items.iter().map(json_value).collect::<Vec<_>>())
        }
        serde_json::Value::Object(map) => {
            Value::from_iter(map.iter().map(|(k, v)| (k.clone(), json_value(v))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::template::TemplateEngine;
    use minijinja::context;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-03-01T14:05:09Z")
            .map(|d| d.to_utc())
            .unwrap_or_default()
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
