//! The workflow engine: rendering conditions and action values, taking a transition (exit
//! actions, state change, log entry, entry actions) and running actions as docmeta acting for
//! their author. Imports this module's helpers only.

use chrono::{DateTime, Utc};

use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::names;
use crate::kernel::{Docmeta, Unit};
use crate::kernel::{RenderInput, Renders, TemplateView};
use crate::model::*;
use crate::session::{Session, event_object};
use crate::store::Tx;

use super::*;

/// The labels of an instance's workflow and current state, when read already.
pub(super) type Labels = (String, String);

/// The template input of an instance (spec 4.5): `workflow_instance` (with `document`,
/// `workflow`, `current_state`), `workflow_instance_context`, `now`; the document's metadata as
/// `view` sees it. `labels`: the workflow's and state's labels, when known (read otherwise).
pub(super) fn render_input(
    db: &Docmeta,
    tx: &mut Tx<'_>,
    instance: &WorkflowInstance,
    labels: Option<&Labels>,
    view: &TemplateView,
    now: DateTime<Utc>,
) -> Result<RenderInput> {
    let (doc, type_label, entries) = tx
        .document_with_entries(instance.document_id)?
        .ok_or_else(|| Error::not_found("document"))?;
    let document = crate::session::document_context_of(db, &doc, type_label, entries, view);
    let (workflow, state) = match labels {
        Some(labels) => labels.clone(),
        None => tx.workflow_and_state_labels(instance.workflow_id, instance.state_id)?,
    };
    Ok(RenderInput::Workflow {
        now,
        document,
        instance: instance.id.0,
        workflow,
        state,
        context: instance.context.to_string(),
    })
}

/// Renders a workflow template (`field` names it in errors) with what `view` sees.
#[allow(clippy::too_many_arguments)]
fn render(
    db: &Docmeta,
    renders: &Renders,
    tx: &mut Tx<'_>,
    instance: &WorkflowInstance,
    labels: Option<&Labels>,
    view: &TemplateView,
    source: &str,
    field: &str,
) -> Result<String> {
    let input = render_input(db, tx, instance, labels, view, renders.now)?;
    renders
        .render(db.templates(), source, MAX_TEMPLATE_OUTPUT, input)
        .map_err(|e| Error::validation(field, e.0))
}

/// Whether `t`'s condition allows it now, rendered with what both the acting user (`None`:
/// docmeta itself, for a trigger) and every shaper of the condition see.
pub(super) fn condition_allows(
    db: &Docmeta,
    renders: &Renders,
    tx: &mut Tx<'_>,
    instance: &WorkflowInstance,
    t: &WorkflowTransition,
    acting: Option<UserId>,
) -> Result<bool> {
    if t.condition.trim().is_empty() {
        return Ok(true);
    }
    let shapers = tx.workflow_condition_shapers(t.id)?;
    condition_allows_by(db, renders, tx, (instance, None), t, &shapers, acting)
}

/// [`condition_allows`] when the shapers of the transition's condition are known (read with
/// it), and perhaps the instance's labels.
pub(super) fn condition_allows_by(
    db: &Docmeta,
    renders: &Renders,
    tx: &mut Tx<'_>,
    (instance, labels): (&WorkflowInstance, Option<&Labels>),
    t: &WorkflowTransition,
    shapers: &Shapers,
    acting: Option<UserId>,
) -> Result<bool> {
    if t.condition.trim().is_empty() {
        return Ok(true);
    }
    let mut view = TemplateView::of_shapers(shapers);
    if let Some(user) = acting {
        view = view.and(TemplateView::Only(vec![user]));
    }
    let rendered = render(
        db,
        renders,
        tx,
        instance,
        labels,
        &view,
        &t.condition,
        "condition",
    )?;
    Ok(rendered.trim() == "True")
}

/// Takes `t` on `instance` inside `u`.
pub(super) fn fire(
    db: &Docmeta,
    u: &mut Unit<'_>,
    instance: &WorkflowInstance,
    t: &WorkflowTransition,
    user: Option<UserId>,
    comment: &str,
) -> Result<WorkflowLogEntry> {
    if instance.state_id != Some(t.origin_state_id) {
        return Err(Error::Conflict {
            field: "transition_id".to_owned(),
            message: format!(
                "The transition '{}' does not leave the instance's current state.",
                t.label
            ),
        });
    }
    if !condition_allows(db, u.renders, &mut u.tx, instance, t, user)? {
        return Err(Error::validation(
            "transition_id",
            format!("The condition of '{}' does not allow it now.", t.label),
        ));
    }
    run_actions(db, u, instance, t.origin_state_id, false)?;
    u.tx.set_workflow_instance_state(instance.id, t.destination_state_id)?;
    let entry =
        u.tx.append_workflow_log(instance.id, Some(t.id), user, comment, false)?;
    let moved = WorkflowInstance {
        state_id: Some(t.destination_state_id),
        ..instance.clone()
    };
    run_actions(db, u, &moved, t.destination_state_id, true)?;
    let doc =
        u.tx.document(instance.document_id)?
            .ok_or_else(|| Error::not_found("document"))?;
    u.event(
        names::WORKFLOW_INSTANCE_TRANSITIONED,
        event_object("documents.document", doc.id.0, &doc.label),
        Some(event_object(
            "document_states.workflowinstance",
            instance.id.0,
            &t.label,
        )),
        Changes::new().edited("state", t.origin_state_id, t.destination_state_id),
    )?;
    Ok(entry)
}

/// Runs the entry (or exit) actions of `state`, each behind a savepoint: a failure is rolled
/// back and logged on the instance, or aborts everything when the action is critical.
pub(super) fn run_actions(
    db: &Docmeta,
    u: &mut Unit<'_>,
    instance: &WorkflowInstance,
    state: WorkflowStateId,
    on_entry: bool,
) -> Result<()> {
    let authors = u.tx.workflow_action_authors(state)?;
    for action in u.tx.workflow_actions(state)? {
        if action.on_entry != on_entry {
            continue;
        }
        // docmeta acts for the action's author: its templates see what the author sees, and
        // it does only what the author could do directly now.
        let author = Author(authors.get(&action.id.0).copied().flatten());
        let system = Session::system_for(db.clone(), TemplateView::of_author(author.0));
        if let Err(e) = u.undoable("workflow_action", |u| {
            run_action(db, &system, author, u, instance, &action.action)
        }) {
            let message = format!("Action '{}' failed: {e}", action.label);
            if action.critical {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!("Critical {message}"),
                ));
            }
            u.tx.append_workflow_log(instance.id, None, None, &message, true)?;
        }
    }
    Ok(())
}

/// The stored author of an action (`None`: stored before authors were recorded).
#[derive(Debug, Clone, Copy)]
struct Author(Option<i64>);

impl Author {
    /// Refuses unless the author could do `what` on `doc` directly now: every permission of
    /// `on_document` on the document (as a document of its current type: one created or
    /// retyped in this unit is not yet linked to it in the access snapshot) and of `on_other`
    /// on its object. docmeta itself may do anything; an unknown author nothing.
    fn require(
        self,
        db: &Docmeta,
        doc: &Document,
        on_document: &[Permission],
        on_other: &[(Permission, ObjectRef)],
        what: &str,
    ) -> Result<()> {
        let user = match self.0 {
            Some(SYSTEM_AUTHOR) => return Ok(()),
            Some(id) => UserId(id),
            None => {
                return Err(Error::PermissionDenied(format!(
                    "its author is unknown (it was stored before authors were recorded), so it may \
                     not {what}; delete it and create it again"
                )));
            }
        };
        let snapshot = db.inner.access.read();
        let missing = on_document
            .iter()
            .find(|p| !snapshot.check_document(user, **p, doc.id.0, doc.document_type_id.0))
            .or_else(|| {
                on_other
                    .iter()
                    .find(|(p, o)| !snapshot.check(user, *p, *o))
                    .map(|(p, _)| p)
            });
        match missing {
            None => Ok(()),
            Some(p) => Err(Error::PermissionDenied(format!(
                "its author may not {what} on this document now ('{}' is needed)",
                p.key()
            ))),
        }
    }

    /// Adding a value of `t` directly (as `Session::add_document_metadata`).
    fn require_add(self, db: &Docmeta, doc: &Document, t: MetadataTypeId) -> Result<()> {
        self.require(
            db,
            doc,
            &[Permission::DocumentView, Permission::DocumentMetadataAdd],
            &[(Permission::DocumentMetadataAdd, mt_ref(t))],
            "add this metadata",
        )
    }

    /// Editing or removing (`permission`) a value of `t` directly (as
    /// `Session::edit_document_metadata` and `remove_document_metadata`: seeing it first).
    fn require_change(
        self,
        db: &Docmeta,
        doc: &Document,
        t: MetadataTypeId,
        permission: Permission,
        what: &str,
    ) -> Result<()> {
        self.require(
            db,
            doc,
            &[
                Permission::DocumentView,
                Permission::DocumentMetadataView,
                permission,
            ],
            &[
                (Permission::DocumentMetadataView, mt_ref(t)),
                (permission, mt_ref(t)),
            ],
            what,
        )
    }
}

fn mt_ref(t: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, t.0)
}

/// Runs one action as docmeta acting for `author`: each change is made only when the author
/// could make it directly now (checked here, as the session would check the author), then made
/// through the session code as docmeta.
fn run_action(
    db: &Docmeta,
    system: &Session,
    author: Author,
    u: &mut Unit<'_>,
    instance: &WorkflowInstance,
    action: &ActionKind,
) -> Result<()> {
    let document = instance.document_id;
    let doc =
        u.tx.document(document)?
            .ok_or_else(|| Error::not_found("document"))?;
    let current = |u: &mut Unit<'_>, t: MetadataTypeId| -> Result<Option<DocumentMetadata>> {
        Ok(u.tx
            .metadata_of_document(document)?
            .into_iter()
            .find(|m| m.metadata_type_id == t))
    };
    match action {
        ActionKind::AddMetadata { metadata_type_ids } => {
            for t in metadata_type_ids {
                if current(u, *t)?.is_none() {
                    author.require_add(db, &doc, *t)?;
                    system.add_document_metadata_in(u, document, *t, "")?;
                }
            }
        }
        ActionKind::EditMetadata {
            metadata_type_id,
            value,
        } => {
            let existing = current(u, *metadata_type_id)?;
            match &existing {
                Some(_) => author.require_change(
                    db,
                    &doc,
                    *metadata_type_id,
                    Permission::DocumentMetadataEdit,
                    "edit this metadata",
                )?,
                None => author.require_add(db, &doc, *metadata_type_id)?,
            }
            let value = render(
                db,
                u.renders,
                &mut u.tx,
                instance,
                None,
                &system.view,
                value,
                "value",
            )?;
            match existing {
                Some(m) => {
                    system.edit_document_metadata_in(u, document, m.id, &value)?;
                }
                None => {
                    system.add_document_metadata_in(u, document, *metadata_type_id, &value)?;
                }
            }
        }
        ActionKind::RemoveMetadata { metadata_type_ids } => {
            for t in metadata_type_ids {
                if let Some(m) = current(u, *t)? {
                    author.require_change(
                        db,
                        &doc,
                        *t,
                        Permission::DocumentMetadataRemove,
                        "remove this metadata",
                    )?;
                    system.remove_document_metadata_in(u, document, m.id)?;
                }
            }
        }
        ActionKind::GrantDocumentAccess {
            role_id,
            permission,
        } => {
            let p = Permission::from_key(permission).map_err(|_| {
                Error::validation("permission", format!("Unknown permission '{permission}'."))
            })?;
            // As `Session::grant`: the ACL right, the role in view, and the permission held.
            author.require(
                db,
                &doc,
                &[Permission::AclEdit, p],
                &[(Permission::RoleView, role_ref(*role_id))],
                "grant this permission",
            )?;
            system.grant_in(u, p, *role_id, doc_ref(document))?;
        }
        ActionKind::RevokeDocumentAccess {
            role_id,
            permission,
        } => {
            let p = Permission::from_key(permission).map_err(|_| {
                Error::validation("permission", format!("Unknown permission '{permission}'."))
            })?;
            // As `Session::revoke`: the ACL right and the role in view.
            author.require(
                db,
                &doc,
                &[Permission::AclEdit],
                &[(Permission::RoleView, role_ref(*role_id))],
                "revoke this permission",
            )?;
            system.revoke_in(u, p, *role_id, doc_ref(document))?;
        }
    }
    Ok(())
}

fn role_ref(r: RoleId) -> ObjectRef {
    ObjectRef::new(ObjectKind::ROLE, r.0)
}
