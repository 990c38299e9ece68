//! The field types of request bodies, each with what it accepts and how the OpenAPI document
//! describes it: ids (a positive integer, also written as a string of digits), booleans (also
//! `"true"`/`"false"`), lists of ids, permission keys, and the text rules of labels and names.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Unexpected, Visitor};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::{PartialSchema, ToSchema};

/// A positive integer id (a primary key), as Django REST Framework reads one: a JSON number,
/// or a string of digits (surrounding whitespace is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id(pub i64);

/// A string of digits that is a positive `i64`: at most 18 significant digits, so that every
/// string it matches fits.
const ID_PATTERN: &str = "^0*[1-9][0-9]{0,17}$";

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl Visitor<'_> for Read {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("A valid integer is required.")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                positive(v).ok_or_else(|| E::invalid_value(Unexpected::Signed(v), &self))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                i64::try_from(v)
                    .ok()
                    .and_then(positive)
                    .ok_or_else(|| E::invalid_value(Unexpected::Unsigned(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                integral(v)
                    .and_then(positive)
                    .ok_or_else(|| E::invalid_value(Unexpected::Float(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                v.trim()
                    .parse()
                    .ok()
                    .and_then(positive)
                    .ok_or_else(|| E::invalid_value(Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(Read)
    }
}

fn positive(v: i64) -> Option<Id> {
    (v > 0).then_some(Id(v))
}

/// `v` as an `i64` when it is one written as a float (`8.0`): JSON Schema's `integer` is any
/// number without a fractional part, however it is written.
fn integral(v: f64) -> Option<i64> {
    // -2^63 and 2^63 are exact as floats; i64 holds the first and not the second.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (v.fract() == 0.0 && (-LIMIT..LIMIT).contains(&v)).then_some(v as i64)
}

/// A JSON integer, also written as a float without a fractional part (`8.0`); for
/// `#[serde(deserialize_with)]`.
pub fn integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    struct Read;
    impl Visitor<'_> for Read {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("A valid integer is required.")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
            i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
            integral(v).ok_or_else(|| E::invalid_value(Unexpected::Float(v), &self))
        }
    }
    deserializer.deserialize_any(Read)
}

/// An [`integer`] that may be absent or `null`; for `#[serde(deserialize_with)]`.
pub fn optional_integer<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    Option::<Entry>::deserialize(deserializer).map(|v| v.map(|e| e.0))
}

/// One [`integer`] of a list or an option.
struct Entry(i64);

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        integer(deserializer).map(Entry)
    }
}

/// A list of [`integer`]s; for `#[serde(deserialize_with)]`.
pub fn integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i64>, D::Error> {
    Vec::<Entry>::deserialize(deserializer).map(|v| v.into_iter().map(|e| e.0).collect())
}

/// The schema of a positive `i64`.
fn positive_integer() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(i64::MAX))
}

impl PartialSchema for Id {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(positive_integer())
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(ID_PATTERN)),
            )
            .description(Some(
                "A positive integer id; a string of its digits is read the same.",
            ))
            .into()
    }
}

impl ToSchema for Id {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Id")
    }
}

/// A boolean; the strings `"true"` and `"false"` are read the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl Visitor<'_> for Read {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Must be a valid boolean.")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Flag, E> {
                match v {
                    "true" => Ok(Flag(true)),
                    "false" => Ok(Flag(false)),
                    _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(Read)
    }
}

impl PartialSchema for Flag {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Boolean))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["true", "false"])),
            )
            .description(Some(
                "A boolean; the strings \"true\" and \"false\" are read the same.",
            ))
            .into()
    }
}

impl ToSchema for Flag {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Flag")
    }
}

/// A list of positive integer ids (JSON numbers, not strings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdList(pub Vec<i64>);

const ID_LIST: &str = "A list of valid integers is required.";

impl<'de> Deserialize<'de> for IdList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = IdList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(ID_LIST)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IdList, A::Error> {
                let mut ids = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                loop {
                    // Any refused entry refuses the list, with the list's message.
                    match seq.next_element::<Entry>() {
                        Ok(Some(Entry(id))) if id > 0 => ids.push(id),
                        Ok(None) => return Ok(IdList(ids)),
                        Ok(Some(_)) | Err(_) => return Err(de::Error::custom(ID_LIST)),
                    }
                }
            }
        }
        deserializer.deserialize_any(Read)
    }
}

impl PartialSchema for IdList {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(positive_integer())
            .description(Some("A list of positive integer ids."))
            .into()
    }
}

impl IdList {
    /// The schema of a list of at least one id.
    pub fn non_empty_schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(positive_integer())
            .min_items(Some(1))
            .description(Some("A list of at least one positive integer id."))
            .into()
    }
}

impl ToSchema for IdList {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("IdList")
    }
}

/// A permission key (`namespace.name`, e.g. `documents.document_view`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionKey(pub docmeta_core::Permission);

impl<'de> Deserialize<'de> for PermissionKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        docmeta_core::Permission::from_key(&key)
            .map(PermissionKey)
            .map_err(|_| de::Error::custom(format!("Unknown permission \"{key}\".")))
    }
}

impl PartialSchema for PermissionKey {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(docmeta_core::Permission::ALL.iter().map(|p| p.key())))
            .description(Some(
                "A permission key (GET /api/v4/permissions/ lists them).",
            ))
            .into()
    }
}

impl ToSchema for PermissionKey {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("PermissionKey")
    }
}

// ----- text -------------------------------------------------------------------------------

/// What `str::trim` removes (Unicode `White_Space`), spelled for a regular expression class,
/// since `\s` differs between regular expression dialects.
const WHITE_SPACE: &str = r"\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

/// Text without the NUL character that holds something besides white space.
fn not_blank_pattern() -> String {
    format!(r"^[^\u0000]*[^\u0000{WHITE_SPACE}][^\u0000]*$")
}

/// A string schema, `null` allowed too when `optional`.
fn string(optional: bool) -> ObjectBuilder {
    let string = if optional {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::from(Type::String)
    };
    ObjectBuilder::new().schema_type(string)
}

/// A label or name of at most `MAX` characters: not blank (it is trimmed), no NUL character.
pub fn label<const MAX: usize>() -> Schema {
    string(false)
        .max_length(Some(MAX))
        .pattern(Some(not_blank_pattern()))
        .into()
}

/// [`label`], or `null` (absent).
pub fn optional_label<const MAX: usize>() -> Schema {
    string(true)
        .max_length(Some(MAX))
        .pattern(Some(not_blank_pattern()))
        .into()
}

/// Text of at most `MAX` characters without the NUL character, or `null` (absent).
pub fn optional_text<const MAX: usize>() -> Schema {
    string(true)
        .max_length(Some(MAX))
        .pattern(Some(r"^[^\u0000]*$"))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The characters a regular expression class of single characters, `\t`, `\r`, `\uXXXX`
    /// and ranges `a-b` (as [`WHITE_SPACE`] writes it) holds.
    fn class(text: &str) -> Vec<char> {
        let mut singles = Vec::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            let (c, len) = match c {
                '\\' if rest[1..].starts_with('t') => ('\t', 2),
                '\\' if rest[1..].starts_with('r') => ('\r', 2),
                '\\' => {
                    let code = u32::from_str_radix(&rest[2..6], 16).expect("\\uXXXX");
                    (char::from_u32(code).expect("a character"), 6)
                }
                c => (c, c.len_utf8()),
            };
            singles.push(c);
            rest = &rest[len..];
        }
        let mut chars = Vec::new();
        let mut i = 0;
        while i < singles.len() {
            if singles.get(i + 1) == Some(&'-') && i + 2 < singles.len() {
                chars.extend(singles[i]..=singles[i + 2]);
                i += 3;
            } else {
                chars.push(singles[i]);
                i += 1;
            }
        }
        chars
    }

    #[test]
    fn the_white_space_class_is_what_trim_removes() {
        let mut listed = class(WHITE_SPACE);
        listed.sort_unstable();
        let trimmed: Vec<char> = ('\0'..=char::MAX).filter(|c| c.is_whitespace()).collect();
        assert_eq!(listed, trimmed);
        assert!(trimmed.iter().all(|c| c.to_string().trim().is_empty()));
    }
}
