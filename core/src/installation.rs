//! The configuration of an installation (not the database schema, which the stores migrate) as
//! one reviewable YAML document: metadata types,
//! document types with their associations, and roles with their global permissions.
//!
//! [`export`] writes it; [`apply`] makes the database match it in **one transaction** (all or
//! nothing) and returns the changes it made. With `dry_run` the same transaction is rolled back,
//! so the reported changes are exactly what a real run would do, validation errors included.
//! Apply creates and updates; it never deletes what the file does not mention.
//!
//! Layer 7 (with `workflows`, `tasks`, `search`, `backup`): imports sessions, the kernel and the
//! layers below.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::access::Permission;
use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::PageRequest;
use crate::model::{Actor, MetadataTypeInput, ValueType};
use crate::session::Session;

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
    fn input(&self) -> MetadataTypeInput {
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

/// One change made (or, in a dry run, that would be made) by [`apply`].
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

/// The current schema of `db`.
pub fn export(db: &Docmeta) -> Result<Schema> {
    let s = db.system();
    let types = s.metadata_types()?;
    let name_of = |id| {
        types
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    };
    let mut schema = Schema {
        metadata_types: types
            .iter()
            .map(|t| MetadataTypeSpec::from(MetadataTypeInput::from(t)))
            .collect(),
        ..Schema::default()
    };
    for dt in s.document_types()? {
        let metadata_types = s
            .visible_associations(dt.id)?
            .into_iter()
            .map(|a| AssociationSpec {
                name: name_of(a.metadata_type_id),
                required: a.required,
            })
            .collect();
        schema.document_types.push(DocumentTypeSpec {
            label: dt.label,
            metadata_types,
        });
    }
    for crate::model::Role { id, label } in s.roles()? {
        let permissions = s
            .role_permissions(id, PageRequest::ALL)?
            .items
            .iter()
            .map(|p| p.key().to_owned())
            .collect();
        schema.roles.push(RoleSpec { label, permissions });
    }
    Ok(schema)
}

/// Makes `db` match `schema` in one transaction; with `dry_run`, rolls it back. Returns the
/// changes, in order.
pub fn apply(db: &Docmeta, schema: &Schema, dry_run: bool) -> Result<Vec<Change>> {
    let s = db.system();
    // Compared with the state every process committed before this call.
    db.catch_up()?;
    db.write_with(Actor::System, !dry_run, |u| apply_in(&s, u, schema))
}

fn apply_in(s: &Session, u: &mut crate::kernel::Unit<'_>, schema: &Schema) -> Result<Vec<Change>> {
    let mut changes = Vec::new();
    let mut ids = std::collections::HashMap::new();
    for spec in &schema.metadata_types {
        let input = spec.input();
        match u.tx.metadata_type_by_name(spec.name.trim())? {
            None => {
                let t = s.create_metadata_type_in(u, input)?;
                changes.push(Change::Create(format!("metadata type {}", t.name)));
                ids.insert(t.name.clone(), t.id);
            }
            Some(t) => {
                let current = MetadataTypeInput::from(&t);
                if current != input {
                    let how = describe_differences(&current, &input);
                    s.update_metadata_type_in(u, t.id, input)?;
                    changes.push(Change::Update(format!("metadata type {}", t.name), how));
                }
                ids.insert(t.name.clone(), t.id);
            }
        }
    }
    let document_types = u.tx.document_types()?;
    for spec in &schema.document_types {
        let dt = match document_types.iter().find(|t| t.label == spec.label.trim()) {
            Some(t) => t.clone(),
            None => {
                let t = s.create_document_type_in(u, &spec.label)?;
                changes.push(Change::Create(format!("document type {}", t.label)));
                t
            }
        };
        for a in &spec.metadata_types {
            let mt = match ids.get(&a.name) {
                Some(id) => *id,
                None => {
                    u.tx.metadata_type_by_name(&a.name)?
                        .map(|t| t.id)
                        .ok_or_else(|| {
                            Error::validation(
                                "metadata_types",
                                format!(
                                    "document type '{}' names unknown metadata type '{}'",
                                    spec.label, a.name
                                ),
                            )
                        })?
                }
            };
            match u.tx.association_of(dt.id, mt)? {
                None => {
                    s.associate_in(u, dt.id, mt, a.required)?;
                    let required = if a.required { " (required)" } else { "" };
                    changes.push(Change::Create(format!(
                        "association {} / {}{required}",
                        dt.label, a.name
                    )));
                }
                Some(existing) if existing.required != a.required => {
                    s.update_association_in(u, dt.id, existing.id, a.required)?;
                    changes.push(Change::Update(
                        format!("association {} / {}", dt.label, a.name),
                        format!("required {} -> {}", existing.required, a.required),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    let roles = u.tx.roles()?;
    for spec in &schema.roles {
        let wanted: Vec<Permission> = spec
            .permissions
            .iter()
            .map(|k| Permission::from_key(k))
            .collect::<Result<_>>()?;
        let role = match roles.iter().find(|(_, l)| *l == spec.label.trim()) {
            Some((id, _)) => *id,
            None => {
                let id = s.create_role_in(u, &spec.label)?;
                changes.push(Change::Create(format!("role {}", spec.label)));
                id
            }
        };
        let current = crate::session::permission_set(u.tx.role_permissions(role)?);
        for p in &wanted {
            if !current.contains(*p) {
                s.set_global_in(u, *p, role, true)?;
                changes.push(Change::Update(
                    format!("role {}", spec.label),
                    format!("grant {p}"),
                ));
            }
        }
        for p in current.iter().filter(|p| !wanted.contains(p)) {
            s.set_global_in(u, p, role, false)?;
            changes.push(Change::Update(
                format!("role {}", spec.label),
                format!("revoke {p}"),
            ));
        }
    }
    Ok(changes)
}

fn describe_differences(a: &MetadataTypeInput, b: &MetadataTypeInput) -> String {
    let fields = [
        ("label", &a.label, &b.label),
        ("default", &a.default, &b.default),
        ("lookup", &a.lookup, &b.lookup),
        ("validation", &a.validation, &b.validation),
        (
            "validation_arguments",
            &a.validation_arguments,
            &b.validation_arguments,
        ),
        ("parser", &a.parser, &b.parser),
        ("parser_arguments", &a.parser_arguments, &b.parser_arguments),
    ];
    let mut differences: Vec<String> = fields
        .iter()
        .filter(|(_, x, y)| x != y)
        .map(|(name, x, y)| format!("{name} {x:?} -> {y:?}"))
        .collect();
    if a.value_type != b.value_type {
        differences.push(format!("value_type {} -> {}", a.value_type, b.value_type));
    }
    differences.join(", ")
}
