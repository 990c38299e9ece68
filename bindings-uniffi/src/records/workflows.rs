//! Workflows (spec 4.5): the workflow, its states, transitions and actions, and the instances
//! that run it on documents, with their logs.

use std::time::SystemTime;

use docmeta_core as core;

/// A workflow bound to document types.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Workflow {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
    /// The document types it runs on.
    pub document_type_ids: Vec<i64>,
}

impl From<core::Workflow> for Workflow {
    fn from(w: core::Workflow) -> Self {
        Workflow {
            id: w.id.0,
            label: w.label,
            document_type_ids: w.document_type_ids.into_iter().map(|t| t.0).collect(),
        }
    }
}

/// A state of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowState {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// Label.
    pub label: String,
    /// Whether instances start there.
    pub initial: bool,
}

impl From<core::WorkflowState> for WorkflowState {
    fn from(s: core::WorkflowState) -> Self {
        WorkflowState {
            id: s.id.0,
            workflow_id: s.workflow_id.0,
            label: s.label,
            initial: s.initial,
        }
    }
}

/// A transition of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowTransition {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// Label.
    pub label: String,
    /// The state it leaves.
    pub origin_state_id: i64,
    /// The state it enters.
    pub destination_state_id: i64,
    /// Its condition template (empty: always allowed).
    pub condition: String,
    /// The events that fire it.
    pub triggers: Vec<String>,
}

impl From<core::WorkflowTransition> for WorkflowTransition {
    fn from(t: core::WorkflowTransition) -> Self {
        WorkflowTransition {
            id: t.id.0,
            workflow_id: t.workflow_id.0,
            label: t.label,
            origin_state_id: t.origin_state_id.0,
            destination_state_id: t.destination_state_id.0,
            condition: t.condition,
            triggers: t.triggers,
        }
    }
}

/// What a state action does (spec 4.5).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum WorkflowActionKind {
    /// Adds metadata types to the document with no initial value (their default applies).
    AddMetadata {
        /// The types.
        metadata_type_ids: Vec<i64>,
    },
    /// Sets or updates a value; `value` is a template with `workflow_instance`,
    /// `workflow_instance_context` and `now`, and its output goes through the pipeline.
    EditMetadata {
        /// The type.
        metadata_type_id: i64,
        /// The value template.
        value: String,
    },
    /// Removes metadata types from the document.
    RemoveMetadata {
        /// The types.
        metadata_type_ids: Vec<i64>,
    },
    /// Grants `permission` to `role` on the workflow's document.
    GrantDocumentAccess {
        /// The role.
        role_id: i64,
        /// The permission key, e.g. `documents.document_view`.
        permission: String,
    },
    /// Revokes `permission` from `role` on the workflow's document.
    RevokeDocumentAccess {
        /// The role.
        role_id: i64,
        /// The permission key.
        permission: String,
    },
}

fn metadata_types(ids: Vec<i64>) -> Vec<core::MetadataTypeId> {
    ids.into_iter().map(core::MetadataTypeId).collect()
}

fn ids(ids: Vec<core::MetadataTypeId>) -> Vec<i64> {
    ids.into_iter().map(|t| t.0).collect()
}

impl From<WorkflowActionKind> for core::ActionKind {
    fn from(a: WorkflowActionKind) -> Self {
        use WorkflowActionKind as A;
        match a {
            A::AddMetadata { metadata_type_ids } => core::ActionKind::AddMetadata {
                metadata_type_ids: metadata_types(metadata_type_ids),
            },
            A::EditMetadata {
                metadata_type_id,
                value,
            } => core::ActionKind::EditMetadata {
                metadata_type_id: core::MetadataTypeId(metadata_type_id),
                value,
            },
            A::RemoveMetadata { metadata_type_ids } => core::ActionKind::RemoveMetadata {
                metadata_type_ids: metadata_types(metadata_type_ids),
            },
            A::GrantDocumentAccess {
                role_id,
                permission,
            } => core::ActionKind::GrantDocumentAccess {
                role_id: core::RoleId(role_id),
                permission,
            },
            A::RevokeDocumentAccess {
                role_id,
                permission,
            } => core::ActionKind::RevokeDocumentAccess {
                role_id: core::RoleId(role_id),
                permission,
            },
        }
    }
}

impl From<core::ActionKind> for WorkflowActionKind {
    fn from(a: core::ActionKind) -> Self {
        use core::ActionKind as A;
        match a {
            A::AddMetadata { metadata_type_ids } => WorkflowActionKind::AddMetadata {
                metadata_type_ids: ids(metadata_type_ids),
            },
            A::EditMetadata {
                metadata_type_id,
                value,
            } => WorkflowActionKind::EditMetadata {
                metadata_type_id: metadata_type_id.0,
                value,
            },
            A::RemoveMetadata { metadata_type_ids } => WorkflowActionKind::RemoveMetadata {
                metadata_type_ids: ids(metadata_type_ids),
            },
            A::GrantDocumentAccess {
                role_id,
                permission,
            } => WorkflowActionKind::GrantDocumentAccess {
                role_id: role_id.0,
                permission,
            },
            A::RevokeDocumentAccess {
                role_id,
                permission,
            } => WorkflowActionKind::RevokeDocumentAccess {
                role_id: role_id.0,
                permission,
            },
        }
    }
}

/// An action run when an instance enters or leaves a state.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowAction {
    /// Identifier.
    pub id: i64,
    /// Its state.
    pub state_id: i64,
    /// Label.
    pub label: String,
    /// Run on entering the state (otherwise on leaving it).
    pub on_entry: bool,
    /// Whether its failure stops the transition.
    pub critical: bool,
    /// What it does.
    pub action: WorkflowActionKind,
}

impl From<core::WorkflowAction> for WorkflowAction {
    fn from(a: core::WorkflowAction) -> Self {
        WorkflowAction {
            id: a.id.0,
            state_id: a.state_id.0,
            label: a.label,
            on_entry: a.on_entry,
            critical: a.critical,
            action: a.action.into(),
        }
    }
}

/// A workflow instance.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowInstance {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// The document.
    pub document_id: i64,
    /// The current state.
    pub state_id: Option<i64>,
    /// The instance's context (what its transitions' comments and actions stored), as JSON.
    pub context_json: String,
}

impl From<core::WorkflowInstance> for WorkflowInstance {
    fn from(i: core::WorkflowInstance) -> Self {
        WorkflowInstance {
            id: i.id.0,
            workflow_id: i.workflow_id.0,
            document_id: i.document_id.0,
            state_id: i.state_id.map(|s| s.0),
            context_json: i.context.to_string(),
        }
    }
}

/// An entry of an instance's log: a transition taken, or an action's failure.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowLogEntry {
    /// Identifier.
    pub id: i64,
    /// The instance.
    pub instance_id: i64,
    /// The transition taken, if any.
    pub transition_id: Option<i64>,
    /// Who took it (`None`: docmeta itself).
    pub user_id: Option<i64>,
    /// The comment, or the error.
    pub comment: String,
    /// Whether it records a failure.
    pub error: bool,
    /// When.
    pub created: SystemTime,
}

impl From<core::WorkflowLogEntry> for WorkflowLogEntry {
    fn from(e: core::WorkflowLogEntry) -> Self {
        WorkflowLogEntry {
            id: e.id.0,
            instance_id: e.instance_id.0,
            transition_id: e.transition_id.map(|t| t.0),
            user_id: e.user_id.map(|u| u.0),
            comment: e.comment,
            error: e.error,
            created: e.created.into(),
        }
    }
}
