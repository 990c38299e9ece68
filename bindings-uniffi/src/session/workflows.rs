//! Workflows (spec 4.5): definitions (states, transitions, triggers, actions) and the
//! instances running them on documents.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{
    Workflow, WorkflowAction, WorkflowActionKind, WorkflowInstance, WorkflowLogEntry,
    WorkflowState, WorkflowTransition,
};

fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(Into::into).collect()
}

fn document_types(ids: Vec<i64>) -> Vec<core::DocumentTypeId> {
    ids.into_iter().map(core::DocumentTypeId).collect()
}

#[uniffi::export]
impl Session {
    /// Creates a workflow bound to document types.
    pub fn create_workflow(&self, label: String, document_types: Vec<i64>) -> Result<Workflow> {
        Ok(self
            .inner
            .create_workflow(&label, &self::document_types(document_types))?
            .into())
    }

    /// The workflows this session may view.
    pub fn workflows(&self) -> Result<Vec<Workflow>> {
        Ok(all(self.inner.workflows()?))
    }

    /// One workflow.
    pub fn workflow(&self, id: i64) -> Result<Workflow> {
        Ok(self.inner.workflow(core::WorkflowId(id))?.into())
    }

    /// Renames a workflow or binds it to other document types (each given field replaces the
    /// stored one).
    #[uniffi::method(default(label = None, document_types = None))]
    pub fn update_workflow(
        &self,
        id: i64,
        label: Option<String>,
        document_types: Option<Vec<i64>>,
    ) -> Result<Workflow> {
        let types = document_types.map(self::document_types);
        Ok(self
            .inner
            .update_workflow(core::WorkflowId(id), label.as_deref(), types.as_deref())?
            .into())
    }

    /// Deletes a workflow and its instances.
    pub fn delete_workflow(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_workflow(core::WorkflowId(id))?)
    }

    /// Adds a state.
    pub fn create_workflow_state(
        &self,
        workflow: i64,
        label: String,
        initial: bool,
    ) -> Result<WorkflowState> {
        Ok(self
            .inner
            .create_workflow_state(core::WorkflowId(workflow), &label, initial)?
            .into())
    }

    /// The states of a workflow.
    pub fn workflow_states(&self, workflow: i64) -> Result<Vec<WorkflowState>> {
        Ok(all(self
            .inner
            .workflow_states(core::WorkflowId(workflow))?))
    }

    /// One state of a workflow.
    pub fn workflow_state(&self, workflow: i64, state: i64) -> Result<WorkflowState> {
        Ok(self
            .inner
            .workflow_state(core::WorkflowId(workflow), core::WorkflowStateId(state))?
            .into())
    }

    /// Renames a state or makes it the initial one (each given field replaces the stored one).
    #[uniffi::method(default(label = None, initial = None))]
    pub fn update_workflow_state(
        &self,
        workflow: i64,
        state: i64,
        label: Option<String>,
        initial: Option<bool>,
    ) -> Result<WorkflowState> {
        Ok(self
            .inner
            .update_workflow_state(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                label.as_deref(),
                initial,
            )?
            .into())
    }

    /// Deletes a state no instance is in and no transition starts or ends at.
    pub fn delete_workflow_state(&self, workflow: i64, state: i64) -> Result<()> {
        Ok(self
            .inner
            .delete_workflow_state(core::WorkflowId(workflow), core::WorkflowStateId(state))?)
    }

    /// Adds a transition with a condition template (empty: always allowed).
    pub fn create_workflow_transition(
        &self,
        workflow: i64,
        label: String,
        origin: i64,
        destination: i64,
        condition: String,
    ) -> Result<WorkflowTransition> {
        Ok(self
            .inner
            .create_workflow_transition(
                core::WorkflowId(workflow),
                &label,
                core::WorkflowStateId(origin),
                core::WorkflowStateId(destination),
                &condition,
            )?
            .into())
    }

    /// The transitions of a workflow, with their triggers.
    pub fn workflow_transitions(&self, workflow: i64) -> Result<Vec<WorkflowTransition>> {
        Ok(all(self
            .inner
            .workflow_transitions(core::WorkflowId(workflow))?))
    }

    /// One transition of a workflow, with its triggers.
    pub fn workflow_transition(
        &self,
        workflow: i64,
        transition: i64,
    ) -> Result<WorkflowTransition> {
        Ok(self
            .inner
            .workflow_transition(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
            )?
            .into())
    }

    /// Changes a transition (each given field replaces the stored one).
    #[uniffi::method(default(label = None, origin = None, destination = None, condition = None))]
    pub fn update_workflow_transition(
        &self,
        workflow: i64,
        transition: i64,
        label: Option<String>,
        origin: Option<i64>,
        destination: Option<i64>,
        condition: Option<String>,
    ) -> Result<WorkflowTransition> {
        let update = core::TransitionUpdate {
            label,
            origin: origin.map(core::WorkflowStateId),
            destination: destination.map(core::WorkflowStateId),
            condition,
        };
        Ok(self
            .inner
            .update_workflow_transition(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                update,
            )?
            .into())
    }

    /// Deletes a transition no instance log records.
    pub fn delete_workflow_transition(&self, workflow: i64, transition: i64) -> Result<()> {
        Ok(self.inner.delete_workflow_transition(
            core::WorkflowId(workflow),
            core::WorkflowTransitionId(transition),
        )?)
    }

    /// Makes `event` (`document_metadata_added|edited|removed`) fire a transition; returns the
    /// transition with its triggers.
    pub fn add_workflow_trigger(
        &self,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> Result<WorkflowTransition> {
        Ok(self
            .inner
            .add_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )?
            .into())
    }

    /// Stops `event` firing a transition; returns the transition with its triggers.
    pub fn remove_workflow_trigger(
        &self,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> Result<WorkflowTransition> {
        Ok(self
            .inner
            .remove_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )?
            .into())
    }

    /// Adds an action to a state, run on entry (`onEntry`) or on exit; a `critical` one's
    /// failure stops the transition.
    pub fn create_workflow_action(
        &self,
        workflow: i64,
        state: i64,
        label: String,
        on_entry: bool,
        critical: bool,
        action: WorkflowActionKind,
    ) -> Result<WorkflowAction> {
        Ok(self
            .inner
            .create_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                &label,
                on_entry,
                critical,
                action.into(),
            )?
            .into())
    }

    /// The actions of a state.
    pub fn workflow_actions(&self, workflow: i64, state: i64) -> Result<Vec<WorkflowAction>> {
        Ok(all(self.inner.workflow_actions(
            core::WorkflowId(workflow),
            core::WorkflowStateId(state),
        )?))
    }

    /// Deletes an action.
    pub fn delete_workflow_action(&self, workflow: i64, state: i64, action: i64) -> Result<()> {
        Ok(self.inner.delete_workflow_action(
            core::WorkflowId(workflow),
            core::WorkflowStateId(state),
            core::WorkflowActionId(action),
        )?)
    }

    /// The workflow instances of a document.
    pub fn workflow_instances(&self, document: i64) -> Result<Vec<WorkflowInstance>> {
        Ok(all(self
            .inner
            .workflow_instances(core::DocumentId(document))?))
    }

    /// One workflow instance of a document.
    pub fn workflow_instance(&self, document: i64, instance: i64) -> Result<WorkflowInstance> {
        Ok(self
            .inner
            .workflow_instance(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )?
            .into())
    }

    /// An instance's log, oldest first.
    pub fn workflow_log(&self, document: i64, instance: i64) -> Result<Vec<WorkflowLogEntry>> {
        Ok(all(self.inner.workflow_log(
            core::DocumentId(document),
            core::WorkflowInstanceId(instance),
        )?))
    }

    /// The transitions an instance may take now (from its state, conditions met).
    pub fn available_transitions(
        &self,
        document: i64,
        instance: i64,
    ) -> Result<Vec<WorkflowTransition>> {
        Ok(all(self.inner.available_transitions(
            core::DocumentId(document),
            core::WorkflowInstanceId(instance),
        )?))
    }

    /// Takes a transition by hand; returns the log entry.
    pub fn transition_workflow(
        &self,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> Result<WorkflowLogEntry> {
        Ok(self
            .inner
            .transition_workflow(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
                core::WorkflowTransitionId(transition),
                &comment,
            )?
            .into())
    }
}
