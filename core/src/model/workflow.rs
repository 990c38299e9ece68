//! The records of workflows (spec 4.5): templates, states, transitions, actions, instances and
//! their log.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::*;

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
    /// Who took it (none: docmeta itself, e.g. a trigger; and, as read through a session, a user
    /// the reader may not view, as an event's actor).
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
