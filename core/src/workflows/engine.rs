//! The workflow engine: rendering conditions and action values, taking a transition (exit
//! actions, state change, log entry, entry actions) and running actions as docmeta acting for
//! their author. Imports this module's helpers only.

use chrono::{DateTime, Utc};

use crate::access::Permission;
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
/// docmeta itself, for a trigger) and the transition's author see.
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
    let author = tx.workflow_transition_author(t.id)?;
    condition_allows_by(db, renders, tx, (instance, None), t, author, acting)
}

/// [`condition_allows`] when the transition's stored `author` is known (read with it), and
/// perhaps the instance's labels.
pub(super) fn condition_allows_by(
    db: &Docmeta,
    renders: &Renders,
    tx: &mut Tx<'_>,
    (instance, labels): (&WorkflowInstance, Option<&Labels>),
    t: &WorkflowTransition,
    author: Option<i64>,
    acting: Option<UserId>,
) -> Result<bool> {
    if t.condition.trim().is_empty() {
        return Ok(true);
    }
    let mut view = TemplateView::of_author(author);
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
        // docmeta acts for the action's author: its templates see what the author sees.
        let author = authors.get(&action.id.0).copied().flatten();
        let system = Session::system_for(db.clone(), TemplateView::of_author(author));
        if let Err(e) = u.undoable("workflow_action", |u| {
            run_action(db, &system, u, instance, &action.action)
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

fn run_action(
    db: &Docmeta,
    system: &Session,
    u: &mut Unit<'_>,
    instance: &WorkflowInstance,
    action: &ActionKind,
) -> Result<()> {
    let document = instance.document_id;
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
                    system.add_document_metadata_in(u, document, *t, "")?;
                }
            }
        }
        ActionKind::EditMetadata {
            metadata_type_id,
            value,
        } => {
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
            match current(u, *metadata_type_id)? {
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
            system.grant_in(u, p, *role_id, doc_ref(document))?;
        }
        ActionKind::RevokeDocumentAccess {
            role_id,
            permission,
        } => {
            let p = Permission::from_key(permission).map_err(|_| {
                Error::validation("permission", format!("Unknown permission '{permission}'."))
            })?;
            system.revoke_in(u, p, *role_id, doc_ref(document))?;
        }
    }
    Ok(())
}
