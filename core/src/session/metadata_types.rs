//! Metadata types (spec 4.1): creating, reading, editing and deleting them, and the choices
//! of their lookups.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::objects::{DOC, MT, dt_event, mt_event, mt_ref};
use super::{Inputs, Session, event_object, rename_conflict};
use crate::access::Permission as P;
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::Unit;
use crate::metadata::check_definition;
use crate::model::*;

impl Session {
    /// The metadata type `id`, read in `tx`, when this session has `permission` on it (see
    /// [`checked`](Self::checked) for the refusals).
    pub(super) fn load_metadata_type(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: MetadataTypeId,
        permission: P,
    ) -> Result<MetadataType> {
        self.checked(
            tx.metadata_type(id)?,
            permission,
            mt_ref(id),
            format!("metadata type {id}"),
        )
    }

    /// `permission` on a metadata type: `403` when the caller knows the type (may view it or
    /// its values), not found otherwise.
    pub(super) fn require_on_metadata_type(&self, permission: P, mt: MetadataTypeId) -> Result<()> {
        if self.can(permission, mt_ref(mt)) {
            return Ok(());
        }
        if self.can(P::MetadataTypeView, mt_ref(mt))
            || self.can(P::DocumentMetadataView, mt_ref(mt))
        {
            Err(Error::PermissionDenied(format!(
                "'{}' is needed on metadata type {mt}",
                permission.key()
            )))
        } else {
            Err(Error::not_found(format!("metadata type {mt}")))
        }
    }

    /// Creates a metadata type. Needs `metadata.metadata_type_create`. The session's user is
    /// recorded as the shaper of its default and lookup: whoever those templates
    /// render for later, they see no more than this user may view.
    ///
    /// A date type that stores what users type (`31/12/2024`) as ISO dates; its definition is
    /// checked when saved, and a full update starts from the stored fields:
    ///
    /// ```
    /// use docmeta_core::{Error, MetadataTypeInput};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let due = admin.create_metadata_type(
    ///     MetadataTypeInput::new("due", "Due date")
    ///         .validation("svc.apps.metadata.metadata_validators.DateValidator", "")
    ///         .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
    /// )?;
    /// let unknown = MetadataTypeInput::new("x", "X").validation("no.such.Validator", "");
    /// assert!(matches!(admin.create_metadata_type(unknown), Err(Error::Validation { .. })));
    ///
    /// let relabelled = MetadataTypeInput { label: "Payment due".into(), ..(&due).into() };
    /// admin.update_metadata_type(due.id, relabelled)?;
    /// let stored = admin.metadata_type_by_name("due")?;
    /// assert_eq!(stored.label, "Payment due");
    /// assert_eq!(stored.parser, due.parser); // the fields not changed are kept
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn create_metadata_type(&self, input: MetadataTypeInput) -> Result<MetadataType> {
        self.require_global(P::MetadataTypeCreate)?;
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        self.write(|u| self.create_metadata_type_in(u, input.clone()))
    }

    pub(crate) fn create_metadata_type_in(
        &self,
        u: &mut Unit<'_>,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        check_definition(&input, self.db.classes(), self.db.templates())?;
        let t = u.tx.insert_metadata_type(&input).map_err(|e| {
            rename_conflict(e, "name", "A metadata type with this name already exists.")
        })?;
        // Its templates will render for others: they see no more than their author.
        let shapers = MetadataTypeShapers {
            default: Shapers::of(self.actor, &t.default),
            lookup: Shapers::of(self.actor, &t.lookup),
        };
        u.tx.set_metadata_type_shapers(t.id, &shapers)?;
        u.event(
            names::METADATA_TYPE_CREATED,
            mt_event(&t),
            None,
            metadata_type_changes(None, Some(&t)),
        )?;
        Ok(t)
    }

    /// One metadata type. Needs `metadata.metadata_type_view`.
    pub fn metadata_type(&self, id: MetadataTypeId) -> Result<MetadataType> {
        self.read(|tx| self.load_metadata_type(tx, id, P::MetadataTypeView))
    }

    /// A metadata type by name. Needs `metadata.metadata_type_view`.
    pub fn metadata_type_by_name(&self, name: &str) -> Result<MetadataType> {
        let t = self
            .read(|tx| tx.metadata_type_by_name(name))?
            .ok_or_else(|| Error::not_found(format!("metadata type '{name}'")))?;
        self.require(
            P::MetadataTypeView,
            mt_ref(t.id),
            format!("metadata type '{name}'"),
        )?;
        Ok(t)
    }

    /// The metadata types this session may view.
    pub fn metadata_types(&self) -> Result<Vec<MetadataType>> {
        let all = self.read(|tx| tx.metadata_types())?;
        Ok(self.visible(P::MetadataTypeView, all, |t| mt_ref(t.id)))
    }

    /// Replaces every writable field of a metadata type. Needs `metadata.metadata_type_edit`.
    /// Changing the default or the lookup adds the session's user to that template's shapers:
    /// it then renders with no more than what every one of them may view, whoever
    /// runs it. Emptying a template clears its shapers; a template saved unchanged keeps them.
    pub fn update_metadata_type(
        &self,
        id: MetadataTypeId,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        self.write(|u| self.update_metadata_type_in(u, id, input.clone()))
    }

    pub(crate) fn update_metadata_type_in(
        &self,
        u: &mut Unit<'_>,
        id: MetadataTypeId,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        check_definition(&input, self.db.classes(), self.db.templates())?;
        {
            let old = self.load_metadata_type(&mut u.tx, id, P::MetadataTypeEdit)?;
            if input.value_type != old.value_type {
                // Every stored value must be of the new type: checked inside the write, so
                // that no value written meanwhile escapes.
                let check = self.value_type_check_in(&mut u.tx, id, input.value_type)?;
                if !check.fits() {
                    return Err(Error::validation("value_type", misfits_message(&check)));
                }
            }
            let t = input.into_record(old.id);
            u.tx.update_metadata_type(&t).map_err(|e| {
                rename_conflict(e, "name", "A metadata type with this name already exists.")
            })?;
            // Whoever changes a template becomes one of its shapers: it keeps seeing no more
            // than each of them may. Saving other fields shapes nothing.
            let before = u.tx.metadata_type_shapers(id)?.unwrap_or_default();
            let shapers = MetadataTypeShapers {
                default: before.default.after(self.actor, &old.default, &t.default),
                lookup: before.lookup.after(self.actor, &old.lookup, &t.lookup),
            };
            if shapers != before {
                u.tx.set_metadata_type_shapers(id, &shapers)?;
            }
            u.invalidated.push(id);
            u.event(
                names::METADATA_TYPE_EDITED,
                mt_event(&t),
                None,
                metadata_type_changes(Some(&old), Some(&t)),
            )?;
            Ok(t)
        }
    }

    /// Which stored values of metadata type `id` are not of `value_type`: what
    /// [`update_metadata_type`](Self::update_metadata_type) would refuse a change of its value
    /// type for, without trying it. Needs `metadata.metadata_type_edit` on the type. The values
    /// listed are those this session may view; the others are counted only.
    ///
    /// ```
    /// use docmeta_core::{Error, MetadataTypeInput, ValueType};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let amount = admin.create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?;
    /// admin.associate(invoice.id, amount.id, false)?;
    /// admin.create_document(invoice.id, "March", &[(amount.id, "1200.50")])?;
    /// admin.create_document(invoice.id, "April", &[(amount.id, "about 900")])?;
    ///
    /// let check = admin.check_value_type(amount.id, ValueType::Decimal)?;
    /// assert_eq!((check.checked, check.count), (2, 1));
    /// assert_eq!(check.misfits[0].value, "about 900");
    /// // The change itself is refused while a value does not fit, and changes nothing.
    /// let typed = MetadataTypeInput::from(&amount).value_type(ValueType::Decimal);
    /// assert!(matches!(admin.update_metadata_type(amount.id, typed), Err(Error::Validation { .. })));
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn check_value_type(
        &self,
        id: MetadataTypeId,
        value_type: ValueType,
    ) -> Result<ValueTypeCheck> {
        self.read(|tx| {
            self.load_metadata_type(tx, id, P::MetadataTypeEdit)?;
            self.value_type_check_in(tx, id, value_type)
        })
    }

    fn value_type_check_in(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: MetadataTypeId,
        value_type: ValueType,
    ) -> Result<ValueTypeCheck> {
        // Who may view which values: documents with `document_view`, their values with
        // `document_metadata_view` on the document and on this type.
        let (documents, values, type_visible) = match self.actor {
            Actor::System => (None, None, true),
            Actor::User(user) => {
                let snapshot = self.snapshot();
                (
                    Some(snapshot.document_visibility(user, P::DocumentView)),
                    Some(snapshot.document_visibility(user, P::DocumentMetadataView)),
                    self.can(P::DocumentMetadataView, mt_ref(id)),
                )
            }
        };
        let visible = |d: DocumentId, t: DocumentTypeId| {
            type_visible
                && documents.as_ref().is_none_or(|v| v.allows(d.0, t.0))
                && values.as_ref().is_none_or(|v| v.allows(d.0, t.0))
        };
        let mut check = ValueTypeCheck {
            value_type,
            checked: 0,
            count: 0,
            misfits: Vec::new(),
            hidden_misfits: false,
        };
        tx.each_value_of_metadata_type(id, &mut |metadata, document, document_type, value| {
            let fits = value_type.check(value).is_ok();
            // What the caller may not view is neither counted nor listed: one bit, that some
            // such value does not fit, is all the refusal of the change needs.
            if !visible(document, document_type) {
                check.hidden_misfits |= !fits;
                return;
            }
            check.checked += 1;
            if fits {
                return;
            }
            check.count += 1;
            if check.misfits.len() < ValueTypeCheck::MAX_LISTED {
                check.misfits.push(ValueMisfit {
                    document,
                    metadata,
                    value: value.to_owned(),
                });
            }
        })?;
        Ok(check)
    }

    /// Deletes a metadata type (spec 2.4 rule 3): its associations and every value of it are
    /// deleted in the same transaction, with their events. Needs `metadata.metadata_type_delete`.
    pub fn delete_metadata_type(&self, id: MetadataTypeId) -> Result<()> {
        self.write(|u| {
            let t = self.load_metadata_type(&mut u.tx, id, P::MetadataTypeDelete)?;
            for a in u.tx.associations_of_metadata_type(id)? {
                u.tx.delete_association(a.id)?;
                if let Some(dt) = u.tx.document_type(a.document_type_id)? {
                    u.event(
                        names::METADATA_TYPE_RELATIONSHIP_UPDATED,
                        dt_event(&dt),
                        Some(mt_event(&t)),
                        Changes::new().removed("required", a.required),
                    )?;
                }
            }
            let values = u.tx.values_of_metadata_type(id)?;
            for (dm, doc, label, value) in values {
                u.tx.delete_document_metadata(dm)?;
                u.event(
                    names::DOCUMENT_METADATA_REMOVED,
                    event_object(DOC, doc, &label),
                    Some(mt_event(&t)),
                    Changes::new().removed("value", value),
                )?;
            }
            u.forget_object(MT, mt_ref(id))?;
            u.tx.delete_metadata_type(id)?;
            u.invalidated.push(id);
            u.event(
                names::METADATA_TYPE_DELETED,
                mt_event(&t),
                None,
                metadata_type_changes(Some(&t), None),
            )
        })
    }

    /// The allowed values of a metadata type's lookup (for drop-downs), rendered for `document`
    /// when given, with what both this session and the lookup's shapers may view; `None` when
    /// the type has no lookup. Needs `metadata.metadata_type_view`.
    pub fn lookup_choices(
        &self,
        id: MetadataTypeId,
        document: Option<DocumentId>,
    ) -> Result<Option<Vec<String>>> {
        self.catch_up()?;
        let db = self.db.clone();
        db.read_rendering(self.actor, |tx, renders| {
            self.load_metadata_type(tx, id, P::MetadataTypeView)?;
            let doc = match document {
                Some(d) => Some(self.load_document(tx, d, P::DocumentView)?),
                None => None,
            };
            let compiled = db.compiled(tx, id)?;
            let mut inputs = Inputs {
                db: &db,
                tx,
                document: doc.as_ref(),
                view: &self.view,
                shapers: &compiled.shapers,
                renders,
            };
            compiled.lookup_choices(db.templates(), &mut inputs)
        })
    }

    /// What a default and a lookup template would render to, before they are saved: rendered as
    /// a metadata type's templates are, for `document` when given (its values the caller may
    /// view), with only what the caller may view (the caller is their only shaper), so a preview
    /// shows no more than the caller could read directly. Syntax and rendering errors are
    /// answered in the preview, not as errors. Needs `metadata.metadata_type_create`, or
    /// `metadata.metadata_type_edit` on `metadata_type` when given (the type being edited).
    ///
    /// ```
    /// use docmeta_core::{Docmeta, MetadataTypeInput};
    ///
    /// let db = Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let preview = admin.preview_templates("{{ 2 * 21 }}", "a, b, {{ 'c' }}", None, None)?;
    /// assert_eq!(preview.default.as_deref(), Some("42"));
    /// assert_eq!(preview.lookup_choices, Some(vec!["a".into(), "b".into(), "c".into()]));
    /// let broken = admin.preview_templates("{{ oops", "", None, None)?;
    /// assert!(broken.default_error.is_some());
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn preview_templates(
        &self,
        default: &str,
        lookup: &str,
        document: Option<DocumentId>,
        metadata_type: Option<MetadataTypeId>,
    ) -> Result<crate::model::TemplatePreview> {
        self.catch_up()?;
        let db = self.db.clone();
        // The caller alone shapes what is previewed.
        let shapers = MetadataTypeShapers {
            default: Shapers::of(self.actor, default),
            lookup: Shapers::of(self.actor, lookup),
        };
        db.read_rendering(self.actor, |tx, renders| {
            match metadata_type {
                Some(id) => {
                    self.load_metadata_type(tx, id, P::MetadataTypeEdit)?;
                }
                None => self.require_global(P::MetadataTypeCreate)?,
            }
            let doc = match document {
                Some(d) => Some(self.load_document(tx, d, P::DocumentView)?),
                None => None,
            };
            let mut inputs = Inputs {
                db: &db,
                tx,
                document: doc.as_ref(),
                view: &self.view,
                shapers: &shapers,
                renders,
            };
            crate::metadata::pipeline::preview_templates(
                db.templates(),
                default,
                lookup,
                &mut inputs,
            )
        })
    }

    /// The choices of a metadata type's lookup rendered for one document (spec 2.7), so that
    /// a client can offer a drop-down while adding or editing its value; `None` when the type
    /// has no lookup (any value is accepted). Needs `documents.document_view` on the document;
    /// the type must be associated with the document's type and known to the caller
    /// (`metadata.metadata_type_view` or `metadata.document_metadata_view` on it), else it is
    /// not found.
    pub fn document_lookup_choices(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
    ) -> Result<Option<Vec<String>>> {
        self.catch_up()?;
        let db = self.db.clone();
        db.read_rendering(self.actor, |tx, renders| {
            let doc = self.load_document(tx, document, P::DocumentView)?;
            let missing = || Error::not_found(format!("metadata type {metadata_type}"));
            tx.association_of(doc.document_type_id, metadata_type)?
                .ok_or_else(missing)?;
            if !self.can(P::MetadataTypeView, mt_ref(metadata_type))
                && !self.can(P::DocumentMetadataView, mt_ref(metadata_type))
            {
                return Err(missing());
            }
            let compiled = db.compiled(tx, metadata_type)?;
            let mut inputs = Inputs {
                db: &db,
                tx,
                document: Some(&doc),
                view: &self.view,
                shapers: &compiled.shapers,
                renders,
            };
            compiled.lookup_choices(db.templates(), &mut inputs)
        })
    }
}

/// Why a change of value type is refused: how many values do not fit, and the first few the
/// caller may view.
fn misfits_message(check: &ValueTypeCheck) -> String {
    let shown: Vec<String> = check
        .misfits
        .iter()
        .take(5)
        .map(|m| format!("document {} has '{}'", m.document, shorten(&m.value)))
        .collect();
    let form = check.value_type.form();
    let mut message = if check.count == 0 {
        format!("values you may not view are not {form}")
    } else {
        format!("{} of {} values are not {form}", check.count, check.checked)
    };
    if !shown.is_empty() {
        message.push_str(&format!(" ({}", shown.join("; ")));
        if check.count > shown.len() {
            message.push_str("; ...");
        }
        message.push(')');
    }
    if check.count > 0 && check.hidden_misfits {
        message.push_str(", nor are values you may not view");
    }
    message.push_str(": change them first (check_value_type lists them).");
    message
}

fn shorten(value: &str) -> String {
    match value.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &value[..at]),
        None => value.to_owned(),
    }
}

/// The fields of a metadata type that differ between `before` and `after` (`None`: the type
/// did not exist yet, or no longer does).
fn metadata_type_changes(before: Option<&MetadataType>, after: Option<&MetadataType>) -> Changes {
    const FIELDS: [&str; 8] = [
        "name",
        "label",
        "default",
        "lookup",
        "validation",
        "validation_arguments",
        "parser",
        "parser_arguments",
    ];
    let values = |t: Option<&MetadataType>| -> [Option<String>; 8] {
        let field = |f: fn(&MetadataType) -> &String| t.map(|t| f(t).clone());
        [
            field(|t| &t.name),
            field(|t| &t.label),
            field(|t| &t.default),
            field(|t| &t.lookup),
            field(|t| &t.validation),
            field(|t| &t.validation_arguments),
            field(|t| &t.parser),
            field(|t| &t.parser_arguments),
        ]
    };
    let changes = FIELDS
        .into_iter()
        .zip(values(before).into_iter().zip(values(after)))
        .fold(Changes::new(), |changes, (field, (before, after))| {
            changes.set(field, before, after)
        });
    let value_type = |t: Option<&MetadataType>| t.map(|t| t.value_type.as_str().to_owned());
    changes.set("value_type", value_type(before), value_type(after))
}
