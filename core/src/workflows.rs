//! Workflows (spec 4.5, 6, 5.3): templates bound to document types, states (one initial),
//! transitions with condition templates, metadata triggers, actions on state entry and exit,
//! instances per document with their log.
//!
//! - An instance is launched, in the same transaction, when a document of a bound type is
//!   created or changes type; the initial state's entry actions run then.
//! - A transition runs in one transaction: exit actions of the origin, the state change and its
//!   log entry, entry actions of the destination. An action that fails is rolled back to a
//!   savepoint and logged on the instance as an error; the transition goes on, unless the action
//!   is critical, which aborts the whole transition.
//! - Triggers: a `document_metadata_added|edited|removed` event of a document with instances
//!   enqueues a durable task in the same transaction as the change; after the commit the task
//!   runs at once (or, after a crash, from the task table). It fires the first transition from
//!   the instance's current state that has a trigger for the event and whose condition allows
//!   it, once per event. Transitions fired by a transition's actions are counted; a chain longer
//!   than [`MAX_CHAIN`] stops with an error logged on the instance.
//! - Actions run as docmeta itself (no permission checks), through the same code as users: the
//!   edit action's value goes through the metadata pipeline (spec 2.10), so a workflow cannot
//!   store a value a user could not. docmeta acts for the action's author (stored with it): its
//!   templates, and the defaults and lookups of the metadata it adds or edits, see what the
//!   author may view (see `session::TemplateView`). Conditions see what both the acting user and
//!   the transition's author may view (a trigger: the author).
//! - An editor cannot hand out access they do not hold: a grant or revoke action needs
//!   `acls.acl_edit` and the permission itself on every document type the workflow is bound to,
//!   when it is added and when the workflow is bound to another type.

use std::cell::Cell;

use chrono::{DateTime, Utc};
use minijinja::Value;
use serde::{Deserialize, Serialize};

use crate::access::{KnownParents, ObjectKind, ObjectRef, Permission as P, Permission};
use crate::docmeta::{Docmeta, Unit};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::{Event, names};
use crate::model::*;
use crate::session::{RenderInput, Renders, Session, TemplateView, event_object};
use crate::store::Tx;
use crate::store::records::{from_micros, to_micros};

/// The durable task that applies one metadata event to a document's workflow instances.
pub const WORKFLOW_TRIGGER: &str = "task_workflow_trigger";
/// How many automatic transitions may follow one another (each fired by the previous one's
/// actions) before the chain is stopped and an error logged.
pub const MAX_CHAIN: u32 = 8;
/// The events a transition can be triggered by (spec 6).
pub const TRIGGER_EVENTS: [&str; 3] = [
    names::DOCUMENT_METADATA_ADDED,
    names::DOCUMENT_METADATA_EDITED,
    names::DOCUMENT_METADATA_REMOVED,
];
/// Largest rendered condition or value template output.
const MAX_TEMPLATE_OUTPUT: usize = 64 * 1024;

/// `Serialize`/`Deserialize` for id newtypes as plain integers (inside action definitions).
macro_rules! serde_id {
    ($($t:ident),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_i64(self.0)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                i64::deserialize(d).map($t)
            }
        }
    )*};
}

thread_local! {
    /// The chain depth of the trigger task running in this thread (0: none).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A workflow template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workflow {
    /// Identifier.
    pub id: WorkflowId,
    /// Unique label.
    pub label: String,
    /// Document types whose documents get an instance.
    pub document_type_ids: Vec<DocumentTypeId>,
}

/// A state of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowState {
    /// Identifier.
    pub id: WorkflowStateId,
    /// The workflow.
    pub workflow_id: WorkflowId,
    /// Label, unique in the workflow.
    pub label: String,
    /// Whether instances start here (one per workflow).
    pub initial: bool,
}

/// A transition between two states of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowTransition {
    /// Identifier.
    pub id: WorkflowTransitionId,
    /// The workflow.
    pub workflow_id: WorkflowId,
    /// Label, unique in the workflow.
    pub label: String,
    /// Where it starts.
    pub origin_state_id: WorkflowStateId,
    /// Where it leads.
    pub destination_state_id: WorkflowStateId,
    /// A template that allows the transition when it renders to `True` (empty: always).
    pub condition: String,
    /// The events that fire it automatically (full names, e.g.
    /// `metadata.document_metadata_edited`).
    pub triggers: Vec<String>,
}

/// What a state action does (spec 4.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ActionKind {
    /// Adds metadata types to the document with no initial value (their default applies).
    AddMetadata {
        /// The types.
        metadata_type_ids: Vec<MetadataTypeId>,
    },
    /// Sets or updates a value; `value` is a template with `workflow_instance`,
    /// `workflow_instance_context` and `now`, and its output goes through the pipeline.
    EditMetadata {
        /// The type.
        metadata_type_id: MetadataTypeId,
        /// The value template.
        value: String,
    },
    /// Removes metadata types from the document.
    RemoveMetadata {
        /// The types.
        metadata_type_ids: Vec<MetadataTypeId>,
    },
    /// Grants `permission` to `role` on the workflow's document.
    GrantDocumentAccess {
        /// The role.
        role_id: RoleId,
        /// The permission key, e.g. `documents.document_view`.
        permission: String,
    },
    /// Revokes `permission` from `role` on the workflow's document.
    RevokeDocumentAccess {
        /// The role.
        role_id: RoleId,
        /// The permission key.
        permission: String,
    },
}

/// An action run when an instance enters or leaves a state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowAction {
    /// Identifier.
    pub id: WorkflowActionId,
    /// The state.
    pub state_id: WorkflowStateId,
    /// Label (shown in the log when the action fails).
    pub label: String,
    /// Run on entry (`true`) or on exit.
    pub on_entry: bool,
    /// Whether a failure aborts the transition (otherwise it is logged and the transition goes
    /// on).
    pub critical: bool,
    /// What it does.
    pub action: ActionKind,
}

/// A workflow running on a document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowInstance {
    /// Identifier.
    pub id: WorkflowInstanceId,
    /// The workflow.
    pub workflow_id: WorkflowId,
    /// The document.
    pub document_id: DocumentId,
    /// The current state (none when the workflow has no initial state yet).
    pub state_id: Option<WorkflowStateId>,
    /// Free data of the instance (`workflow_instance_context` in templates).
    pub context: serde_json::Value,
}

/// An entry of an instance's log: a transition, or an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowLogEntry {
    /// Identifier.
    pub id: WorkflowLogEntryId,
    /// The instance.
    pub instance_id: WorkflowInstanceId,
    /// The transition taken (none for an error entry).
    pub transition_id: Option<WorkflowTransitionId>,
    /// Who took it (none: docmeta itself, e.g. a trigger).
    pub user_id: Option<UserId>,
    /// The comment, or the error.
    pub comment: String,
    /// Whether the entry records a failure.
    pub error: bool,
    /// When.
    pub created: DateTime<Utc>,
}

serde_id!(
    MetadataTypeId,
    RoleId,
    WorkflowId,
    WorkflowStateId,
    WorkflowTransitionId,
    WorkflowActionId,
    WorkflowInstanceId,
    WorkflowLogEntryId,
    DocumentId,
    DocumentTypeId,
    UserId
);

// ----- statements ------------------------------------------------------------------------------

fn state_row(r: &crate::store::Row) -> Result<WorkflowState> {
    Ok(WorkflowState {
        id: WorkflowStateId(r.int(0)?),
        workflow_id: WorkflowId(r.int(1)?),
        label: r.text(2)?,
        initial: r.int(3)? != 0,
    })
}

fn transition_row(r: &crate::store::Row) -> Result<WorkflowTransition> {
    Ok(WorkflowTransition {
        id: WorkflowTransitionId(r.int(0)?),
        workflow_id: WorkflowId(r.int(1)?),
        label: r.text(2)?,
        origin_state_id: WorkflowStateId(r.int(3)?),
        destination_state_id: WorkflowStateId(r.int(4)?),
        condition: r.text(5)?,
        triggers: Vec::new(),
    })
}

fn instance_row(r: &crate::store::Row) -> Result<WorkflowInstance> {
    Ok(WorkflowInstance {
        id: WorkflowInstanceId(r.int(0)?),
        workflow_id: WorkflowId(r.int(1)?),
        document_id: DocumentId(r.int(2)?),
        state_id: r.opt_int(3)?.map(WorkflowStateId),
        context: serde_json::from_str(&r.text(4)?).unwrap_or_default(),
    })
}

fn log_row(r: &crate::store::Row) -> Result<WorkflowLogEntry> {
    Ok(WorkflowLogEntry {
        id: WorkflowLogEntryId(r.int(0)?),
        instance_id: WorkflowInstanceId(r.int(1)?),
        transition_id: r.opt_int(2)?.map(WorkflowTransitionId),
        user_id: r.opt_int(3)?.map(UserId),
        comment: r.text(4)?,
        error: r.int(5)? != 0,
        created: from_micros(r.int(6)?),
    })
}

const TRANSITION_COLUMNS: &str =
    "id, workflow_id, label, origin_state_id, destination_state_id, condition";
const INSTANCE_COLUMNS: &str = "id, workflow_id, document_id, state_id, context";
const LOG_COLUMNS: &str = "id, instance_id, transition_id, user_id, comment, error, created";

impl Tx<'_> {
    /// One workflow with its document types.
    pub fn workflow(&mut self, id: WorkflowId) -> Result<Option<Workflow>> {
        let Some(label) = self.optional(
            "SELECT label FROM workflows WHERE id = ?1",
            &[id.0.into()],
            |r| r.text(0),
        )?
        else {
            return Ok(None);
        };
        let document_type_ids = self.rows(
            "SELECT document_type_id FROM workflow_document_types WHERE workflow_id = ?1 ORDER BY document_type_id",
            &[id.0.into()],
            |r| Ok(DocumentTypeId(r.int(0)?)),
        )?;
        Ok(Some(Workflow {
            id,
            label,
            document_type_ids,
        }))
    }

    /// Every workflow id, by id.
    pub fn workflow_ids(&mut self) -> Result<Vec<WorkflowId>> {
        self.rows("SELECT id FROM workflows ORDER BY id", &[], |r| {
            Ok(WorkflowId(r.int(0)?))
        })
    }

    /// The states of a workflow.
    pub fn workflow_states(&mut self, workflow: WorkflowId) -> Result<Vec<WorkflowState>> {
        self.rows(
            "SELECT id, workflow_id, label, initial FROM workflow_states WHERE workflow_id = ?1 ORDER BY id",
            &[workflow.0.into()],
            state_row,
        )
    }

    /// One state.
    pub fn workflow_state(&mut self, id: WorkflowStateId) -> Result<Option<WorkflowState>> {
        self.optional(
            "SELECT id, workflow_id, label, initial FROM workflow_states WHERE id = ?1",
            &[id.0.into()],
            state_row,
        )
    }

    fn with_triggers(&mut self, mut t: WorkflowTransition) -> Result<WorkflowTransition> {
        t.triggers = self.rows(
            "SELECT event_name FROM workflow_transition_triggers WHERE transition_id = ?1 ORDER BY id",
            &[t.id.0.into()],
            |r| r.text(0),
        )?;
        Ok(t)
    }

    /// The transitions of a workflow (with their triggers), optionally only those leaving
    /// `origin`, by id.
    pub fn workflow_transitions(
        &mut self,
        workflow: WorkflowId,
        origin: Option<WorkflowStateId>,
    ) -> Result<Vec<WorkflowTransition>> {
        let rows = match origin {
            Some(o) => self.rows(
                &format!("SELECT {TRANSITION_COLUMNS} FROM workflow_transitions WHERE workflow_id = ?1 AND origin_state_id = ?2 ORDER BY id"),
                &[workflow.0.into(), o.0.into()],
                transition_row,
            )?,
            None => self.rows(
                &format!("SELECT {TRANSITION_COLUMNS} FROM workflow_transitions WHERE workflow_id = ?1 ORDER BY id"),
                &[workflow.0.into()],
                transition_row,
            )?,
        };
        rows.into_iter().map(|t| self.with_triggers(t)).collect()
    }

    /// One transition with its triggers.
    pub fn workflow_transition(
        &mut self,
        id: WorkflowTransitionId,
    ) -> Result<Option<WorkflowTransition>> {
        match self.optional(
            &format!("SELECT {TRANSITION_COLUMNS} FROM workflow_transitions WHERE id = ?1"),
            &[id.0.into()],
            transition_row,
        )? {
            Some(t) => self.with_triggers(t).map(Some),
            None => Ok(None),
        }
    }

    /// The actions of a state, in order.
    pub fn workflow_actions(&mut self, state: WorkflowStateId) -> Result<Vec<WorkflowAction>> {
        let rows = self.rows(
            "SELECT id, state_id, label, on_entry, critical, action FROM workflow_state_actions WHERE state_id = ?1 ORDER BY id",
            &[state.0.into()],
            |r| Ok((r.int(0)?, r.int(1)?, r.text(2)?, r.int(3)? != 0, r.int(4)? != 0, r.text(5)?)),
        )?;
        rows.into_iter()
            .map(|(id, state, label, on_entry, critical, action)| {
                Ok(WorkflowAction {
                    id: WorkflowActionId(id),
                    state_id: WorkflowStateId(state),
                    label,
                    on_entry,
                    critical,
                    action: serde_json::from_str(&action)
                        .map_err(|e| Error::storage("reading a workflow action", e.to_string()))?,
                })
            })
            .collect()
    }

    /// The workflow instances of a document.
    pub fn workflow_instances_of(&mut self, document: DocumentId) -> Result<Vec<WorkflowInstance>> {
        self.rows(
            &format!("SELECT {INSTANCE_COLUMNS} FROM workflow_instances WHERE document_id = ?1 ORDER BY id"),
            &[document.0.into()],
            instance_row,
        )
    }

    /// One workflow instance.
    pub fn workflow_instance(
        &mut self,
        id: WorkflowInstanceId,
    ) -> Result<Option<WorkflowInstance>> {
        self.optional(
            &format!("SELECT {INSTANCE_COLUMNS} FROM workflow_instances WHERE id = ?1"),
            &[id.0.into()],
            instance_row,
        )
    }

    /// An instance's log, oldest first.
    pub fn workflow_log(&mut self, instance: WorkflowInstanceId) -> Result<Vec<WorkflowLogEntry>> {
        self.rows(
            &format!(
                "SELECT {LOG_COLUMNS} FROM workflow_instance_log WHERE instance_id = ?1 ORDER BY id"
            ),
            &[instance.0.into()],
            log_row,
        )
    }

    /// One log entry.
    pub fn workflow_log_entry(
        &mut self,
        id: WorkflowLogEntryId,
    ) -> Result<Option<WorkflowLogEntry>> {
        self.optional(
            &format!("SELECT {LOG_COLUMNS} FROM workflow_instance_log WHERE id = ?1"),
            &[id.0.into()],
            log_row,
        )
    }

    fn append_workflow_log(
        &mut self,
        instance: WorkflowInstanceId,
        transition: Option<WorkflowTransitionId>,
        user: Option<UserId>,
        comment: &str,
        error: bool,
    ) -> Result<WorkflowLogEntry> {
        let created = Utc::now();
        let id = self.insert(
            "INSERT INTO workflow_instance_log (instance_id, transition_id, user_id, comment, error, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
            &[
                instance.0.into(),
                transition.map(|t| t.0).into(),
                user.map(|u| u.0).into(),
                comment.into(),
                i64::from(error).into(),
                to_micros(created).into(),
            ],
        )?;
        Ok(WorkflowLogEntry {
            id: WorkflowLogEntryId(id),
            instance_id: instance,
            transition_id: transition,
            user_id: user,
            comment: comment.to_owned(),
            error,
            created,
        })
    }

    fn delete_workflow_rows(&mut self, id: WorkflowId) -> Result<()> {
        for sql in [
            "DELETE FROM workflow_instance_log WHERE instance_id IN (SELECT id FROM workflow_instances WHERE workflow_id = ?1)",
            "DELETE FROM workflow_instances WHERE workflow_id = ?1",
            "DELETE FROM workflow_state_actions WHERE state_id IN (SELECT id FROM workflow_states WHERE workflow_id = ?1)",
            "DELETE FROM workflow_transition_triggers WHERE transition_id IN (SELECT id FROM workflow_transitions WHERE workflow_id = ?1)",
            "DELETE FROM workflow_transitions WHERE workflow_id = ?1",
            "DELETE FROM workflow_states WHERE workflow_id = ?1",
            "DELETE FROM workflow_document_types WHERE workflow_id = ?1",
            "DELETE FROM workflows WHERE id = ?1",
        ] {
            self.execute(sql, &[id.0.into()])?;
        }
        Ok(())
    }

    /// Deletes the workflow instances of a document with their logs.
    pub fn delete_workflow_instances_of(&mut self, document: DocumentId) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_instance_log WHERE instance_id IN (SELECT id FROM workflow_instances WHERE document_id = ?1)",
            &[document.0.into()],
        )?;
        self.execute(
            "DELETE FROM workflow_instances WHERE document_id = ?1",
            &[document.0.into()],
        )
        .map(drop)
    }
}

fn wf_ref(id: WorkflowId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW, id.0)
}
fn instance_ref(id: WorkflowInstanceId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, id.0)
}
fn doc_ref(id: DocumentId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT, id.0)
}

fn check_label(field: &str, label: &str) -> Result<String> {
    let label = label.trim();
    if label.is_empty() || label.chars().count() > 255 {
        return Err(Error::validation(
            field,
            "Give a label of 1 to 255 characters.",
        ));
    }
    Ok(label.to_owned())
}

fn unique(e: Error, field: &str, what: &str) -> Error {
    crate::session::rename_conflict(e, field, &format!("{what} with this label already exists."))
}

/// The full name of a trigger event: `document_metadata_edited` or
/// `metadata.document_metadata_edited`.
fn trigger_name(name: &str) -> Result<&'static str> {
    TRIGGER_EVENTS
        .iter()
        .find(|full| **full == name || full.strip_prefix("metadata.") == Some(name))
        .copied()
        .ok_or_else(|| {
            Error::validation(
                "event_type",
                format!(
                    "'{name}' is not a trigger; use one of document_metadata_added, \
                     document_metadata_edited, document_metadata_removed."
                ),
            )
        })
}

impl Session {
    // ----- templates: workflows, states, transitions, triggers, actions ----------------------

    fn workflow_for(&self, tx: &mut Tx<'_>, id: WorkflowId, permission: P) -> Result<Workflow> {
        self.checked(
            tx.workflow(id)?,
            permission,
            wf_ref(id),
            format!("workflow {id}"),
        )
    }

    fn check_document_types(&self, tx: &mut Tx<'_>, types: &[DocumentTypeId]) -> Result<()> {
        for t in types {
            if tx.document_type(*t)?.is_none()
                || !self.can(
                    P::DocumentTypeView,
                    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0),
                )
            {
                return Err(Error::validation(
                    "document_type_ids",
                    format!("Document type {t} does not exist."),
                ));
            }
        }
        Ok(())
    }

    /// Creates a workflow template bound to `document_types` (their new documents, and those
    /// that change to them, get an instance). Needs `document_states.workflow_template_create`.
    pub fn create_workflow(
        &self,
        label: &str,
        document_types: &[DocumentTypeId],
    ) -> Result<Workflow> {
        self.require_global(P::WorkflowTemplateCreate)?;
        let label = check_label("label", label)?;
        self.write(|u| {
            self.check_document_types(&mut u.tx, document_types)?;
            let id = WorkflowId(
                u.tx.insert(
                    "INSERT INTO workflows (label) VALUES (?1) RETURNING id",
                    &[label.as_str().into()],
                )
                .map_err(|e| unique(e, "label", "A workflow"))?,
            );
            for t in document_types {
                u.tx.execute(
                    "INSERT INTO workflow_document_types (workflow_id, document_type_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                    &[id.0.into(), t.0.into()],
                )?;
            }
            u.tx.workflow(id)?.ok_or_else(|| Error::not_found("workflow"))
        })
    }

    /// The workflows this session may view.
    pub fn workflows(&self) -> Result<Vec<Workflow>> {
        let all = self.read(|tx| {
            let ids = tx.workflow_ids()?;
            ids.into_iter()
                .filter_map(|id| tx.workflow(id).transpose())
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(self.visible(P::WorkflowTemplateView, all, |w| wf_ref(w.id)))
    }

    /// One workflow. Needs `document_states.workflow_template_view`.
    pub fn workflow(&self, id: WorkflowId) -> Result<Workflow> {
        self.read(|tx| self.workflow_for(tx, id, P::WorkflowTemplateView))
    }

    /// Renames a workflow and/or rebinds its document types. Needs
    /// `document_states.workflow_template_edit`; binding a workflow that has grant or revoke
    /// actions to another document type needs what adding them there would (see
    /// [`create_workflow_action`](Self::create_workflow_action)).
    pub fn update_workflow(
        &self,
        id: WorkflowId,
        label: Option<&str>,
        document_types: Option<&[DocumentTypeId]>,
    ) -> Result<Workflow> {
        let label = label.map(|l| check_label("label", l)).transpose()?;
        self.write(|u| {
            self.workflow_for(&mut u.tx, id, P::WorkflowTemplateEdit)?;
            if let Some(label) = &label {
                u.tx.execute(
                    "UPDATE workflows SET label = ?2 WHERE id = ?1",
                    &[id.0.into(), label.as_str().into()],
                )
                .map_err(|e| unique(e, "label", "A workflow"))?;
            }
            if let Some(types) = document_types {
                self.check_document_types(&mut u.tx, types)?;
                // Binding a new type extends the workflow's access actions to its documents.
                let old = u.tx.workflow(id)?.map(|w| w.document_type_ids).unwrap_or_default();
                let added: Vec<DocumentTypeId> =
                    types.iter().copied().filter(|t| !old.contains(t)).collect();
                if !added.is_empty() {
                    for permission in self.access_actions_of(&mut u.tx, id)? {
                        self.check_access_action(permission, &added)?;
                    }
                }
                u.tx.execute(
                    "DELETE FROM workflow_document_types WHERE workflow_id = ?1",
                    &[id.0.into()],
                )?;
                for t in types {
                    u.tx.execute(
                        "INSERT INTO workflow_document_types (workflow_id, document_type_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        &[id.0.into(), t.0.into()],
                    )?;
                }
            }
            u.tx.workflow(id)?.ok_or_else(|| Error::not_found("workflow"))
        })
    }

    /// The permissions the grant and revoke actions of a workflow hand out.
    fn access_actions_of(&self, tx: &mut Tx<'_>, workflow: WorkflowId) -> Result<Vec<Permission>> {
        let mut out = Vec::new();
        for state in tx.workflow_states(workflow)? {
            for a in tx.workflow_actions(state.id)? {
                if let ActionKind::GrantDocumentAccess { permission, .. }
                | ActionKind::RevokeDocumentAccess { permission, .. } = &a.action
                    && let Ok(p) = Permission::from_key(permission)
                    && !out.contains(&p)
                {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    /// Deletes a workflow with its states, transitions, actions, instances and logs. Needs
    /// `document_states.workflow_template_delete`.
    pub fn delete_workflow(&self, id: WorkflowId) -> Result<()> {
        self.write(|u| {
            self.workflow_for(&mut u.tx, id, P::WorkflowTemplateDelete)?;
            u.tx.delete_acls_of("document_states.workflow", id.0)?;
            u.tx.delete_workflow_rows(id)?;
            u.access
                .push(crate::docmeta::AccessChange::ObjectRemoved(wf_ref(id)));
            Ok(())
        })
    }

    /// Adds a state. `initial` makes it the one instances start in (replacing the previous
    /// initial state). Needs `document_states.workflow_template_edit`.
    pub fn create_workflow_state(
        &self,
        workflow: WorkflowId,
        label: &str,
        initial: bool,
    ) -> Result<WorkflowState> {
        let label = check_label("label", label)?;
        self.write(|u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            if initial {
                u.tx.execute(
                    "UPDATE workflow_states SET initial = 0 WHERE workflow_id = ?1",
                    &[workflow.0.into()],
                )?;
            }
            let id = u
                .tx
                .insert(
                    "INSERT INTO workflow_states (workflow_id, label, initial) VALUES (?1, ?2, ?3) RETURNING id",
                    &[workflow.0.into(), label.as_str().into(), i64::from(initial).into()],
                )
                .map_err(|e| unique(e, "label", "A state"))?;
            Ok(WorkflowState {
                id: WorkflowStateId(id),
                workflow_id: workflow,
                label: label.clone(),
                initial,
            })
        })
    }

    /// The states of a workflow. Needs `document_states.workflow_template_view`.
    pub fn workflow_states(&self, workflow: WorkflowId) -> Result<Vec<WorkflowState>> {
        self.read(|tx| {
            self.workflow_for(tx, workflow, P::WorkflowTemplateView)?;
            tx.workflow_states(workflow)
        })
    }

    /// Adds a transition. `condition` is a template that allows it when it renders to `True`
    /// (empty: always allowed); it is checked now. Needs
    /// `document_states.workflow_template_edit`.
    pub fn create_workflow_transition(
        &self,
        workflow: WorkflowId,
        label: &str,
        origin: WorkflowStateId,
        destination: WorkflowStateId,
        condition: &str,
    ) -> Result<WorkflowTransition> {
        let label = check_label("label", label)?;
        if !condition.trim().is_empty() {
            self.db
                .templates()
                .check(condition)
                .map_err(|e| Error::validation("condition", e.0))?;
        }
        self.write(|u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            for (field, state) in [("origin_state_id", origin), ("destination_state_id", destination)] {
                if u.tx.workflow_state(state)?.is_none_or(|s| s.workflow_id != workflow) {
                    return Err(Error::validation(
                        field,
                        format!("State {state} is not a state of this workflow."),
                    ));
                }
            }
            let id = u
                .tx
                .insert(
                    "INSERT INTO workflow_transitions (workflow_id, label, origin_state_id, destination_state_id, condition, author_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                    &[
                        workflow.0.into(),
                        label.as_str().into(),
                        origin.0.into(),
                        destination.0.into(),
                        condition.trim().into(),
                        TemplateView::author_id(self.actor).into(),
                    ],
                )
                .map_err(|e| unique(e, "label", "A transition"))?;
            u.tx.workflow_transition(WorkflowTransitionId(id))?
                .ok_or_else(|| Error::not_found("transition"))
        })
    }

    /// The transitions of a workflow with their triggers. Needs
    /// `document_states.workflow_template_view`.
    pub fn workflow_transitions(&self, workflow: WorkflowId) -> Result<Vec<WorkflowTransition>> {
        self.read(|tx| {
            self.workflow_for(tx, workflow, P::WorkflowTemplateView)?;
            tx.workflow_transitions(workflow, None)
        })
    }

    fn transition_for(
        &self,
        tx: &mut Tx<'_>,
        workflow: WorkflowId,
        id: WorkflowTransitionId,
        permission: P,
    ) -> Result<WorkflowTransition> {
        self.workflow_for(tx, workflow, permission)?;
        tx.workflow_transition(id)?
            .filter(|t| t.workflow_id == workflow)
            .ok_or_else(|| Error::not_found(format!("transition {id}")))
    }

    /// Makes `event` (`document_metadata_added`, `_edited` or `_removed`) fire the transition
    /// automatically (spec 6). Needs `document_states.workflow_template_edit`.
    pub fn add_workflow_trigger(
        &self,
        workflow: WorkflowId,
        transition: WorkflowTransitionId,
        event: &str,
    ) -> Result<WorkflowTransition> {
        self.set_workflow_trigger(workflow, transition, event, true)
    }

    /// Removes a trigger. Needs `document_states.workflow_template_edit`.
    pub fn remove_workflow_trigger(
        &self,
        workflow: WorkflowId,
        transition: WorkflowTransitionId,
        event: &str,
    ) -> Result<WorkflowTransition> {
        self.set_workflow_trigger(workflow, transition, event, false)
    }

    fn set_workflow_trigger(
        &self,
        workflow: WorkflowId,
        transition: WorkflowTransitionId,
        event: &str,
        on: bool,
    ) -> Result<WorkflowTransition> {
        let event = trigger_name(event)?;
        let sql = if on {
            "INSERT INTO workflow_transition_triggers (transition_id, event_name) VALUES (?1, ?2) ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM workflow_transition_triggers WHERE transition_id = ?1 AND event_name = ?2"
        };
        self.write(|u| {
            self.transition_for(&mut u.tx, workflow, transition, P::WorkflowTemplateEdit)?;
            u.tx.execute(sql, &[transition.0.into(), event.into()])?;
            u.tx.workflow_transition(transition)?
                .ok_or_else(|| Error::not_found("transition"))
        })
    }

    /// Adds an action to a state, run on entry (`on_entry`) or exit. Its metadata types, role
    /// and permission are checked now; an edit action's value template is compiled now. Needs
    /// `document_states.workflow_template_edit`; a grant or revoke action also needs
    /// `acls.acl_edit` and the permission it hands out on every document type the workflow is
    /// bound to (`PermissionDenied` otherwise). The session's user is stored as the action's
    /// author: its templates see what they may view.
    pub fn create_workflow_action(
        &self,
        workflow: WorkflowId,
        state: WorkflowStateId,
        label: &str,
        on_entry: bool,
        critical: bool,
        action: ActionKind,
    ) -> Result<WorkflowAction> {
        let label = check_label("label", label)?;
        self.write(|u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            if u.tx.workflow_state(state)?.is_none_or(|s| s.workflow_id != workflow) {
                return Err(Error::not_found(format!("state {state}")));
            }
            let bound = u.tx.workflow(workflow)?.map(|w| w.document_type_ids).unwrap_or_default();
            self.check_action(&mut u.tx, &action, &bound)?;
            let json = serde_json::to_string(&action)
                .map_err(|e| Error::storage("writing a workflow action", e))?;
            let id = u.tx.insert(
                "INSERT INTO workflow_state_actions (state_id, label, on_entry, critical, action, author_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                &[
                    state.0.into(),
                    label.as_str().into(),
                    i64::from(on_entry).into(),
                    i64::from(critical).into(),
                    json.as_str().into(),
                    TemplateView::author_id(self.actor).into(),
                ],
            )?;
            Ok(WorkflowAction {
                id: WorkflowActionId(id),
                state_id: state,
                label: label.clone(),
                on_entry,
                critical,
                action: action.clone(),
            })
        })
    }

    /// Whether this session could make the grant (or revocation) an access action makes on
    /// every document of the `types` a workflow is bound to: `acls.acl_edit` and `permission`
    /// itself, on each type (through an ACL or globally). An action runs as docmeta on every
    /// new document of those types, so an editor never hands out more than they hold.
    fn check_access_action(&self, permission: Permission, types: &[DocumentTypeId]) -> Result<()> {
        for t in types {
            let dt = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0);
            if !self.can(P::AclEdit, dt) {
                return Err(Error::PermissionDenied(format!(
                    "'{}' is needed on document type {t}, which the workflow is bound to",
                    P::AclEdit.key()
                )));
            }
            if !self.can(permission, dt) {
                return Err(Error::PermissionDenied(format!(
                    "granting or revoking '{}' on the documents of type {t} needs holding it there",
                    permission.key()
                )));
            }
        }
        Ok(())
    }

    fn check_action(
        &self,
        tx: &mut Tx<'_>,
        action: &ActionKind,
        bound: &[DocumentTypeId],
    ) -> Result<()> {
        let types = match action {
            ActionKind::AddMetadata { metadata_type_ids }
            | ActionKind::RemoveMetadata { metadata_type_ids } => metadata_type_ids.clone(),
            ActionKind::EditMetadata {
                metadata_type_id,
                value,
            } => {
                self.db
                    .templates()
                    .check(value)
                    .map_err(|e| Error::validation("value", e.0))?;
                vec![*metadata_type_id]
            }
            ActionKind::GrantDocumentAccess {
                role_id,
                permission,
            }
            | ActionKind::RevokeDocumentAccess {
                role_id,
                permission,
            } => {
                let p = Permission::from_key(permission).map_err(|_| {
                    Error::validation("permission", format!("Unknown permission '{permission}'."))
                })?;
                if !self.db.kinds().grantable(ObjectKind::DOCUMENT).contains(p) {
                    return Err(Error::validation(
                        "permission",
                        format!("'{permission}' cannot be granted on a document."),
                    ));
                }
                // Unknown and invisible roles answer alike: no existence probe (issue #15).
                let visible = self.can(
                    Permission::RoleView,
                    ObjectRef::new(ObjectKind::ROLE, role_id.0),
                );
                if !visible || !tx.roles()?.iter().any(|(r, _)| r == role_id) {
                    return Err(Error::validation(
                        "role_id",
                        format!("Role {role_id} does not exist."),
                    ));
                }
                self.check_access_action(p, bound)?;
                Vec::new()
            }
        };
        if types.is_empty()
            && matches!(
                action,
                ActionKind::AddMetadata { .. } | ActionKind::RemoveMetadata { .. }
            )
        {
            return Err(Error::validation(
                "metadata_type_ids",
                "Give at least one metadata type.",
            ));
        }
        for t in types {
            let visible = self.can(
                Permission::MetadataTypeView,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            );
            if !visible || tx.metadata_type(t)?.is_none() {
                return Err(Error::validation(
                    "metadata_type_ids",
                    format!("Metadata type {t} does not exist."),
                ));
            }
        }
        Ok(())
    }

    /// Deletes an action of a state. Needs `document_states.workflow_template_edit`.
    pub fn delete_workflow_action(
        &self,
        workflow: WorkflowId,
        state: WorkflowStateId,
        action: WorkflowActionId,
    ) -> Result<()> {
        self.write(|u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            if u.tx
                .workflow_state(state)?
                .is_none_or(|s| s.workflow_id != workflow)
            {
                return Err(Error::not_found(format!("state {state}")));
            }
            let n = u.tx.execute(
                "DELETE FROM workflow_state_actions WHERE id = ?1 AND state_id = ?2",
                &[action.0.into(), state.0.into()],
            )?;
            if n == 0 {
                return Err(Error::not_found(format!("action {action}")));
            }
            Ok(())
        })
    }

    /// The actions of a state. Needs `document_states.workflow_template_view`.
    pub fn workflow_actions(
        &self,
        workflow: WorkflowId,
        state: WorkflowStateId,
    ) -> Result<Vec<WorkflowAction>> {
        self.read(|tx| {
            self.workflow_for(tx, workflow, P::WorkflowTemplateView)?;
            if tx
                .workflow_state(state)?
                .is_none_or(|s| s.workflow_id != workflow)
            {
                return Err(Error::not_found(format!("state {state}")));
            }
            tx.workflow_actions(state)
        })
    }

    // ----- instances -----------------------------------------------------------------------

    /// Whether the session may `permission` on an instance: an ACL on the instance, on its
    /// workflow (spec 5.3 inheritance), or a global grant.
    fn can_instance(&self, permission: P, instance: &WorkflowInstance) -> bool {
        let object = instance_ref(instance.id);
        let mut parents = KnownParents::of(object, vec![wf_ref(instance.workflow_id)]);
        self.can_with(&mut parents, permission, object)
    }

    fn instance_for(
        &self,
        tx: &mut Tx<'_>,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<WorkflowInstance> {
        let what = format!("workflow instance {id}");
        self.checked(
            tx.document(document)?,
            P::DocumentView,
            doc_ref(document),
            format!("document {document}"),
        )?;
        let instance = tx
            .workflow_instance(id)?
            .filter(|i| i.document_id == document)
            .ok_or_else(|| Error::not_found(&what))?;
        if !self.can_instance(P::WorkflowTemplateView, &instance) {
            return Err(Error::not_found(what));
        }
        Ok(instance)
    }

    /// The workflow instances of a document the session may view. Needs
    /// `documents.document_view` on the document and `document_states.workflow_template_view`
    /// on each instance (or its workflow).
    pub fn workflow_instances(&self, document: DocumentId) -> Result<Vec<WorkflowInstance>> {
        let all = self.read(|tx| {
            self.checked(
                tx.document(document)?,
                P::DocumentView,
                doc_ref(document),
                format!("document {document}"),
            )?;
            tx.workflow_instances_of(document)
        })?;
        Ok(all
            .into_iter()
            .filter(|i| self.can_instance(P::WorkflowTemplateView, i))
            .collect())
    }

    /// One workflow instance of a document.
    pub fn workflow_instance(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<WorkflowInstance> {
        self.read(|tx| self.instance_for(tx, document, id))
    }

    /// An instance's log, oldest first.
    pub fn workflow_log(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<Vec<WorkflowLogEntry>> {
        self.read(|tx| {
            self.instance_for(tx, document, id)?;
            tx.workflow_log(id)
        })
    }

    /// The transitions the instance may take now: leaving its current state, with a condition
    /// that allows them.
    pub fn available_transitions(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<Vec<WorkflowTransition>> {
        self.read(|tx| {
            let instance = self.instance_for(tx, document, id)?;
            let Some(state) = instance.state_id else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            let renders = Renders::inline(self.db.now());
            for t in tx.workflow_transitions(instance.workflow_id, Some(state))? {
                if condition_allows(&self.db, &renders, tx, &instance, &t, self.actor.user())? {
                    out.push(t);
                }
            }
            Ok(out)
        })
    }

    /// Takes a transition (spec 4.5): the origin's exit actions, the state change with a log
    /// entry carrying `comment`, the destination's entry actions, in one transaction. Needs
    /// `document_states.workflow_instance_transition` on the instance, its workflow or the
    /// document. A transition that does not leave the current state is a conflict; one whose
    /// condition does not allow it is refused.
    pub fn transition_workflow(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        self.write(|u| {
            let instance = self.instance_for(&mut u.tx, document, id)?;
            if !self.can_instance(P::WorkflowInstanceTransition, &instance)
                && !self.can(P::WorkflowInstanceTransition, doc_ref(document))
            {
                return Err(Error::PermissionDenied(format!(
                    "'{}' is needed on workflow instance {id}",
                    P::WorkflowInstanceTransition.key()
                )));
            }
            let t = u
                .tx
                .workflow_transition(transition)?
                .filter(|t| t.workflow_id == instance.workflow_id)
                .ok_or_else(|| {
                    Error::validation(
                        "transition_id",
                        format!("Transition {transition} is not a transition of this workflow."),
                    )
                })?;
            fire(&self.db, u, &instance, &t, self.actor().user(), comment)
        })
    }
}

/// The template input of an instance (spec 4.5): `workflow_instance` (with `document`,
/// `workflow`, `current_state`), `workflow_instance_context`, `now`; the document's metadata as
/// `view` sees it.
fn render_input(
    db: &Docmeta,
    tx: &mut Tx<'_>,
    instance: &WorkflowInstance,
    view: &TemplateView,
    now: DateTime<Utc>,
) -> Result<RenderInput> {
    let doc = tx
        .document(instance.document_id)?
        .ok_or_else(|| Error::not_found("document"))?;
    let document = crate::session::document_context(db, tx, &doc, view)?;
    let workflow = tx
        .workflow(instance.workflow_id)?
        .map(|w| w.label)
        .unwrap_or_default();
    let state = match instance.state_id {
        Some(s) => tx.workflow_state(s)?.map(|s| s.label).unwrap_or_default(),
        None => String::new(),
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

/// Renders a workflow template (`field` names it in errors) with what `view` sees.
fn render(
    db: &Docmeta,
    renders: &Renders,
    tx: &mut Tx<'_>,
    instance: &WorkflowInstance,
    view: &TemplateView,
    source: &str,
    field: &str,
) -> Result<String> {
    let input = render_input(db, tx, instance, view, renders.now)?;
    renders
        .render(db.templates(), source, MAX_TEMPLATE_OUTPUT, input)
        .map_err(|e| Error::validation(field, e.0))
}

/// Whether `t`'s condition allows it now, rendered with what both the acting user (`None`:
/// docmeta itself, for a trigger) and the transition's author see.
fn condition_allows(
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
    let author = tx
        .optional(
            "SELECT author_id FROM workflow_transitions WHERE id = ?1",
            &[t.id.0.into()],
            |r| r.opt_int(0),
        )?
        .flatten();
    let mut view = TemplateView::of_author(author);
    if let Some(user) = acting {
        view = view.and(TemplateView::Only(vec![user]));
    }
    Ok(render(db, renders, tx, instance, &view, &t.condition, "condition")?.trim() == "True")
}

/// Takes `t` on `instance` inside `u`.
fn fire(
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
    u.tx.execute(
        "UPDATE workflow_instances SET state_id = ?2 WHERE id = ?1",
        &[instance.id.0.into(), t.destination_state_id.0.into()],
    )?;
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
fn run_actions(
    db: &Docmeta,
    u: &mut Unit<'_>,
    instance: &WorkflowInstance,
    state: WorkflowStateId,
    on_entry: bool,
) -> Result<()> {
    let authors: rustc_hash::FxHashMap<i64, Option<i64>> =
        u.tx.rows(
            "SELECT id, author_id FROM workflow_state_actions WHERE state_id = ?1",
            &[state.0.into()],
            |r| Ok((r.int(0)?, r.opt_int(1)?)),
        )?
        .into_iter()
        .collect();
    for action in u.tx.workflow_actions(state)? {
        if action.on_entry != on_entry {
            continue;
        }
        // docmeta acts for the action's author: its templates see what the author sees.
        let author = authors.get(&action.id.0).copied().flatten();
        let system = Session::system_for(db.clone(), TemplateView::of_author(author));
        let marks = (
            u.events.len(),
            u.access.len(),
            u.unlink.len(),
            u.workflow_events.len(),
        );
        u.tx.execute("SAVEPOINT workflow_action", &[])?;
        match run_action(db, &system, u, instance, &action.action) {
            Ok(()) => {
                u.tx.execute("RELEASE SAVEPOINT workflow_action", &[])?;
            }
            Err(e) => {
                u.tx.execute("ROLLBACK TO SAVEPOINT workflow_action", &[])?;
                u.tx.execute("RELEASE SAVEPOINT workflow_action", &[])?;
                u.events.truncate(marks.0);
                u.access.truncate(marks.1);
                u.unlink.truncate(marks.2);
                u.workflow_events.truncate(marks.3);
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

/// Launches the workflows bound to `doc`'s type that it does not run yet (spec: a document of a
/// bound type is created or changes type), entering their initial state.
pub(crate) fn launch(db: &Docmeta, u: &mut Unit<'_>, doc: &Document) -> Result<()> {
    let workflows = u.tx.rows(
        "SELECT w.workflow_id FROM workflow_document_types w WHERE w.document_type_id = ?1 AND NOT EXISTS (SELECT 1 FROM workflow_instances i WHERE i.workflow_id = w.workflow_id AND i.document_id = ?2) ORDER BY w.workflow_id",
        &[doc.document_type_id.0.into(), doc.id.0.into()],
        |r| Ok(WorkflowId(r.int(0)?)),
    )?;
    for w in workflows {
        let initial =
            u.tx.workflow_states(w)?
                .into_iter()
                .find(|s| s.initial)
                .map(|s| s.id);
        let id = u.tx.insert(
            "INSERT INTO workflow_instances (workflow_id, document_id, state_id, context) VALUES (?1, ?2, ?3, '{}') RETURNING id",
            &[w.0.into(), doc.id.0.into(), initial.map(|s| s.0).into()],
        )?;
        let instance = WorkflowInstance {
            id: WorkflowInstanceId(id),
            workflow_id: w,
            document_id: doc.id,
            state_id: initial,
            context: serde_json::json!({}),
        };
        if let Some(state) = initial {
            run_actions(db, u, &instance, state, true)?;
        }
    }
    Ok(())
}

/// Records a committed-to-be metadata event of a document for its workflow triggers.
pub(crate) fn note_event(u: &mut Unit<'_>, e: &Event) {
    if TRIGGER_EVENTS.contains(&e.name.as_str()) && e.target.kind == "documents.document" {
        u.workflow_events
            .push((e.id, DocumentId(e.target.id), e.name.clone()));
    }
}

#[derive(Serialize, Deserialize)]
struct TriggerTask {
    event_id: i64,
    document_id: i64,
    event: String,
    depth: u32,
}

/// Enqueues a trigger task for each noted event whose document has instances with a matching
/// trigger (in the unit's transaction); returns the task ids to run after the commit.
pub(crate) fn enqueue_triggers(u: &mut Unit<'_>) -> Result<Vec<TaskId>> {
    let events = std::mem::take(&mut u.workflow_events);
    let depth = DEPTH.with(Cell::get) + 1;
    let mut tasks = Vec::new();
    for (event, document, name) in events {
        let triggered = u.tx.optional(
            "SELECT 1 FROM workflow_instances i JOIN workflow_transitions t ON t.workflow_id = i.workflow_id AND t.origin_state_id = i.state_id JOIN workflow_transition_triggers g ON g.transition_id = t.id WHERE i.document_id = ?1 AND g.event_name = ?2 LIMIT 1",
            &[document.0.into(), name.as_str().into()],
            |r| r.int(0),
        )?;
        if triggered.is_none() {
            continue;
        }
        let payload = serde_json::to_string(&TriggerTask {
            event_id: event.0,
            document_id: document.0,
            event: name,
            depth,
        })
        .map_err(|e| Error::storage("writing a workflow trigger", e))?;
        // Run by this process right after the commit; workers take it only if that did not
        // happen (a crash between the two), so two processes never race for it.
        tasks.push(u.tx.enqueue_task_after(
            WORKFLOW_TRIGGER,
            &payload,
            chrono::Duration::seconds(10),
        )?);
    }
    Ok(tasks)
}

/// The trigger task: fires, on each instance of the document, the first transition leaving its
/// current state that the event triggers and whose condition allows it.
pub(crate) fn run_trigger(db: &Docmeta, payload: &str) -> Result<()> {
    let task: TriggerTask = serde_json::from_str(payload)
        .map_err(|e| Error::InvalidInput(format!("workflow trigger task: {e}")))?;
    let document = DocumentId(task.document_id);
    let instances = db.read(|tx| tx.workflow_instances_of(document))?;
    for instance in instances {
        let previous = DEPTH.with(|d| d.replace(task.depth));
        let outcome = db.write(Actor::System, |u| {
            // Re-read: an earlier trigger may have moved it.
            let Some(instance) = u.tx.workflow_instance(instance.id)? else {
                return Ok(());
            };
            let Some(state) = instance.state_id else {
                return Ok(());
            };
            let mut chosen = None;
            for t in u.tx.workflow_transitions(instance.workflow_id, Some(state))? {
                if t.triggers.contains(&task.event) && condition_allows(db, u.renders, &mut u.tx, &instance, &t, None)? {
                    chosen = Some(t);
                    break;
                }
            }
            let Some(t) = chosen else {
                return Ok(());
            };
            if task.depth > MAX_CHAIN {
                u.tx.append_workflow_log(
                    instance.id,
                    None,
                    None,
                    &format!(
                        "Automatic transition '{}' not taken: more than {MAX_CHAIN} automatic transitions in a row (a trigger loop?)",
                        t.label
                    ),
                    true,
                )?;
                return Ok(());
            }
            let comment = format!("Triggered by {} (event {})", task.event, task.event_id);
            fire(db, u, &instance, &t, None, &comment).map(drop)
        });
        DEPTH.with(|d| d.set(previous));
        if let Err(e) = outcome {
            // A failed automatic transition (a critical action, a broken condition) is recorded
            // on the instance; the event is not retried.
            db.write(Actor::System, |u| {
                u.tx.append_workflow_log(
                    instance.id,
                    None,
                    None,
                    &format!("Automatic transition failed: {e}"),
                    true,
                )
                .map(drop)
            })?;
        }
    }
    Ok(())
}
