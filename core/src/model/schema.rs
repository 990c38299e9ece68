//! An installation's configuration as one YAML document ([`Schema`]): metadata types, document
//! types with their associations, and roles with their global permissions, and the changes
//! applying one makes ([`Change`]). `installation` exports and applies them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{MetadataTypeInput, ValueType};
use crate::error::{Error, Result};

fn is_empty(s: &str) -> bool {
    s.is_empty()
}

/// A metadata type in a schema file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataTypeSpec {
    /// Unique name.
    pub name: String,
    /// Label.
    pub label: String,
    /// Default template.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub default: String,
    /// Lookup template.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub lookup: String,
    /// Validator class path.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub validation: String,
    /// Validator YAML arguments.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub validation_arguments: String,
    /// Parser class path.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub parser: String,
    /// Parser YAML arguments.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub parser_arguments: String,
    /// What its values are (`text` when absent; see [`ValueType`]).
    #[serde(default, skip_serializing_if = "is_text", with = "value_type_name")]
    pub value_type: ValueType,
}

fn is_text(t: &ValueType) -> bool {
    *t == ValueType::Text
}

/// A [`ValueType`] in a schema file: its name.
mod value_type_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::model::ValueType;

    pub(super) fn serialize<S: Serializer>(t: &ValueType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ValueType, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl MetadataTypeSpec {
    pub(crate) fn input(&self) -> MetadataTypeInput {
        let MetadataTypeSpec {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        } = self.clone();
        MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        }
    }
}

impl From<MetadataTypeInput> for MetadataTypeSpec {
    fn from(i: MetadataTypeInput) -> Self {
        let MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        } = i;
        MetadataTypeSpec {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        }
    }
}

/// An association in a schema file, by metadata type name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssociationSpec {
    /// The metadata type's name.
    pub name: String,
    /// Whether documents of the type must carry a value.
    #[serde(default)]
    pub required: bool,
}

/// A document type in a schema file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentTypeSpec {
    /// Unique label.
    pub label: String,
    /// Its metadata types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata_types: Vec<AssociationSpec>,
}

/// A role in a schema file with its global permissions (set exactly).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// Unique label.
    pub label: String,
    /// Global permission keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<String>,
}

/// A whole schema file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Metadata types.
    #[serde(default)]
    pub metadata_types: Vec<MetadataTypeSpec>,
    /// Document types.
    #[serde(default)]
    pub document_types: Vec<DocumentTypeSpec>,
    /// Roles.
    #[serde(default)]
    pub roles: Vec<RoleSpec>,
}

impl Schema {
    /// Reads a schema from YAML.
    pub fn from_yaml(text: &str) -> Result<Schema> {
        serde_saphyr::from_str(text).map_err(|e| Error::InvalidInput(format!("schema: {e}")))
    }

    /// Writes the schema as YAML.
    pub fn to_yaml(&self) -> Result<String> {
        serde_saphyr::to_string(self)
            .map_err(|e| Error::storage("writing the schema", e.to_string()))
    }
}

/// One change made (or, in a dry run, that would be made) by [`apply_schema`](crate::apply_schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A record is created.
    Create(String),
    /// A record is updated: what, and how.
    Update(String, String),
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Create(what) => write!(f, "+ {what}"),
            Change::Update(what, how) => write!(f, "~ {what}: {how}"),
        }
    }
}
