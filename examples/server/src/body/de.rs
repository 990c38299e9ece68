//! Reads a JSON request body into its typed request struct, the way Django REST Framework
//! validates a serializer, so that the struct the OpenAPI document describes is the one that
//! validates:
//!
//! - a struct's fields are read in the order they are declared, and the first refused one is
//!   the answer (so a body with two faults names the same field every time);
//! - a field that is absent or `null` is `None` for an `Option`, and "This field is required."
//!   otherwise; fields the struct does not declare are ignored;
//! - a value of the wrong type is refused with the message of the type it should have had
//!   (a field type's `Visitor::expecting` is that message: "Not a valid string.", "A valid
//!   integer is required." ...);
//! - the refusal names where the value was: `{"label": [...]}`, or inside a list of objects
//!   `{"documents": [{}, {"label": [...]}]}`, one object per entry up to the refused one.

use std::fmt;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The message for a field that must be given.
pub const REQUIRED: &str = "This field is required.";
/// The message for a value that should have been an object.
pub const NOT_AN_OBJECT: &str = "Invalid data. Expected a dictionary.";

/// `T` read from a request body's object (see the module documentation).
pub fn from_object<T: DeserializeOwned>(object: &Map<String, Value>) -> Result<T, ApiError> {
    T::deserialize(Fields::new(object)).map_err(ApiError::from)
}

/// One step of the way from the body to a refused value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Entry(usize),
}

/// A refused value: where it is, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    path: Vec<Step>,
    message: String,
}

impl FieldError {
    fn new(message: impl Into<String>) -> Self {
        FieldError {
            path: Vec::new(),
            message: message.into(),
        }
    }

    /// The same error one step further from the body's root.
    fn within(mut self, step: Step) -> Self {
        self.path.insert(0, step);
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FieldError {}

impl de::Error for FieldError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        FieldError::new(message.to_string())
    }

    /// A value of another type than expected: the message is what the field type expects.
    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        FieldError::new(expected.to_string())
    }

    /// A field that must be given and is not (a type that reads several fields checks what
    /// they need together): "This field is required." under the field's name.
    fn missing_field(field: &'static str) -> Self {
        FieldError::new(REQUIRED).within(Step::Field(field.to_owned()))
    }

    /// A value of the right type that the field type refuses (a non-positive id ...).
    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        FieldError::new(expected.to_string())
    }
}

impl From<FieldError> for ApiError {
    /// `400`, nested as Django REST framework nests it; an error of the body as a whole is
    /// under `non_field_errors`.
    fn from(e: FieldError) -> Self {
        let mut path = e.path;
        if !matches!(path.last(), Some(Step::Field(_))) {
            path.push(Step::Field("non_field_errors".to_owned()));
        }
        let body = path
            .into_iter()
            .rev()
            .fold(Value::from(vec![e.message]), |inner, step| match step {
                Step::Field(name) => Value::Object([(name, inner)].into_iter().collect()),
                Step::Entry(index) => {
                    let mut entries = vec![Value::Object(Map::new()); index];
                    entries.push(inner);
                    Value::Array(entries)
                }
            });
        ApiError::new(axum::http::StatusCode::BAD_REQUEST, body)
    }
}

/// The fields of an object, for a struct: every declared field in order, present or not.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    names: &'static [&'static str],
    next: usize,
}

impl<'a> Fields<'a> {
    fn new(object: &'a Map<String, Value>) -> Self {
        Fields {
            object,
            names: &[],
            next: 0,
        }
    }
}

impl<'de> de::Deserializer<'de> for Fields<'de> {
    type Error = FieldError;

    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, FieldError> {
        self.names = fields;
        visitor.visit_map(self)
    }

    /// Anything but a struct reads the object as it is.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        visitor.visit_map(Entries(self.object.iter()))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

impl<'de> de::MapAccess<'de> for Fields<'de> {
    type Error = FieldError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, FieldError> {
        match self.names.get(self.next) {
            Some(name) => seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, FieldError> {
        let name = self.names.get(self.next).copied().unwrap_or_default();
        self.next += 1;
        let result = match self.object.get(name).filter(|v| !v.is_null()) {
            Some(value) => seed.deserialize(Read(value)),
            None => seed.deserialize(Absent),
        };
        result.map_err(|e| e.within(Step::Field(name.to_owned())))
    }
}

/// Every entry of an object, in its order (for a field read as a JSON value).
struct Entries<'a>(serde_json::map::Iter<'a>);

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = FieldError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, FieldError> {
        // The value is read by `next_value_seed` from a copy of the iterator's position.
        match self.0.clone().next() {
            Some((key, _)) => seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, FieldError> {
        match self.0.next() {
            Some((key, value)) => seed
                .deserialize(Read(value))
                .map_err(|e| e.within(Step::Field(key.clone()))),
            None => Err(FieldError::new("no value after the last key")),
        }
    }
}

/// The entries of a list, each refusal naming its entry.
struct Items<'a> {
    items: std::slice::Iter<'a, Value>,
    index: usize,
}

impl<'de> de::SeqAccess<'de> for Items<'de> {
    type Error = FieldError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, FieldError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(Read(item))
            .map(Some)
            .map_err(|e| e.within(Step::Entry(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A present value. A type hint that the value does not have is refused with Django REST
/// Framework's message for that type.
struct Read<'a>(&'a Value);

impl<'de> de::Deserializer<'de> for Read<'de> {
    type Error = FieldError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.iter(),
                index: 0,
            }),
            Value::Object(object) => visitor.visit_map(Entries(object.iter())),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::Object(object) => Fields::new(object).deserialize_struct(name, fields, visitor),
            _ => {
                Err(FieldError::new(NOT_AN_OBJECT)
                    .within(Step::Field("non_field_errors".to_owned())))
            }
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(FieldError::new("Not a valid string.")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(FieldError::new("Must be a valid boolean.")),
        }
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0.as_i64() {
            Some(i) => visitor.visit_i64(i),
            None => Err(FieldError::new("A valid integer is required.")),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::Array(_) => self.deserialize_any(visitor),
            _ => Err(FieldError::new("Expected a list of items.")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, FieldError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, FieldError> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            _ => Err(FieldError::new("Not a valid string.")),
        }
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit unit_struct
        tuple tuple_struct map identifier ignored_any
    }
}

/// An absent (or `null`) field: `None` for an `Option` (and for a type that reads itself as an
/// option to give its own message), "This field is required." for anything else.
struct Absent;

impl<'de> de::Deserializer<'de> for Absent {
    type Error = FieldError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, FieldError> {
        Err(FieldError::new(REQUIRED))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FieldError> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}
