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

use crate::access::Permission;
use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::PageRequest;
use crate::model::{
    Actor, AssociationSpec, Change, DocumentTypeSpec, MetadataTypeInput, MetadataTypeSpec,
    RoleSpec, Schema,
};
use crate::session::Session;

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
///
/// ```
/// use docmeta_core::{Docmeta, Schema, apply_schema, export_schema};
///
/// let schema = Schema::from_yaml(
///     "
/// metadata_types:
///   - name: number
///     label: Invoice number
///     validation: svc.apps.metadata.metadata_validators.RegularExpressionValidator
///     validation_arguments: \"pattern: 'INV-[0-9]+'\"
/// document_types:
///   - label: Invoice
///     metadata_types:
///       - name: number
///         required: true
/// ",
/// )?;
/// let db = Docmeta::in_memory()?;
/// let planned = apply_schema(&db, &schema, true)?; // a dry run: what it would do
/// assert_eq!(apply_schema(&db, &schema, false)?, planned);
/// assert!(apply_schema(&db, &schema, false)?.is_empty()); // applied: nothing left to do
/// assert_eq!(export_schema(&db)?.document_types[0].label, "Invoice");
/// # Ok::<(), docmeta_core::Error>(())
/// ```
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
