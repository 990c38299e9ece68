//! `Session` methods: workflow templates, states, transitions, actions and running instances.

use docmeta_core as core;
use docmeta_core::ActionKind;
use pyo3::prelude::*;

use super::Session;
use crate::errors::{ValidationError, run};
use crate::records::{
    Workflow, WorkflowAction, WorkflowInstance, WorkflowLogEntry, WorkflowState,
    WorkflowTransition, all,
};

#[pymethods]
impl Session {
    /// One workflow template.
    fn workflow(&self, py: Python<'_>, id: i64) -> PyResult<Workflow> {
        run(py, || self.inner.workflow(core::WorkflowId(id))).map(Into::into)
    }

    /// One workflow instance of a document.
    fn workflow_instance(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
    ) -> PyResult<WorkflowInstance> {
        run(py, || {
            self.inner.workflow_instance(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )
        })
        .map(Into::into)
    }

    /// The actions of a state, in the order they run.
    fn workflow_actions(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
    ) -> PyResult<Vec<WorkflowAction>> {
        run(py, || {
            self.inner
                .workflow_actions(core::WorkflowId(workflow), core::WorkflowStateId(state))
        })
        .map(all)
    }

    /// One state of a workflow.
    fn workflow_state(&self, py: Python<'_>, workflow: i64, state: i64) -> PyResult<WorkflowState> {
        run(py, || {
            self.inner
                .workflow_state(core::WorkflowId(workflow), core::WorkflowStateId(state))
        })
        .map(Into::into)
    }

    /// Renames a state or makes it the initial one (each given field replaces the stored one).
    #[pyo3(signature = (workflow, state, *, label = None, initial = None))]
    fn update_workflow_state(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
        label: Option<String>,
        initial: Option<bool>,
    ) -> PyResult<WorkflowState> {
        run(py, || {
            self.inner.update_workflow_state(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                label.as_deref(),
                initial,
            )
        })
        .map(Into::into)
    }

    /// Deletes a state no instance is in and no transition starts or ends at (its actions go
    /// with it); otherwise raises `ValidationError` saying why.
    fn delete_workflow_state(&self, py: Python<'_>, workflow: i64, state: i64) -> PyResult<()> {
        run(py, || {
            self.inner
                .delete_workflow_state(core::WorkflowId(workflow), core::WorkflowStateId(state))
        })
    }

    /// One transition of a workflow, with its triggers.
    fn workflow_transition(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.workflow_transition(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
            )
        })
        .map(Into::into)
    }

    /// Changes a transition (each given field replaces the stored one).
    #[pyo3(signature = (workflow, transition, *, label = None, origin = None, destination = None, condition = None))]
    #[allow(clippy::too_many_arguments)]
    fn update_workflow_transition(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
        label: Option<String>,
        origin: Option<i64>,
        destination: Option<i64>,
        condition: Option<String>,
    ) -> PyResult<WorkflowTransition> {
        let update = core::TransitionUpdate {
            label,
            origin: origin.map(core::WorkflowStateId),
            destination: destination.map(core::WorkflowStateId),
            condition,
        };
        run(py, || {
            self.inner.update_workflow_transition(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                update.clone(),
            )
        })
        .map(Into::into)
    }

    /// Deletes a transition no instance log records (its triggers go with it); otherwise raises
    /// `ValidationError` saying why.
    fn delete_workflow_transition(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.delete_workflow_transition(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
            )
        })
    }

    /// Creates a workflow template bound to document types.
    #[pyo3(signature = (label, *, document_types = Vec::new()))]
    fn create_workflow(
        &self,
        py: Python<'_>,
        label: String,
        document_types: Vec<i64>,
    ) -> PyResult<Workflow> {
        let types: Vec<core::DocumentTypeId> = document_types
            .into_iter()
            .map(core::DocumentTypeId)
            .collect();
        run(py, || self.inner.create_workflow(&label, &types)).map(Into::into)
    }

    /// The workflows this session may view.
    fn workflows(&self, py: Python<'_>) -> PyResult<Vec<Workflow>> {
        run(py, || self.inner.workflows()).map(all)
    }

    /// Adds a state (`initial`: where instances start).
    #[pyo3(signature = (workflow, label, *, initial = false))]
    fn create_workflow_state(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: String,
        initial: bool,
    ) -> PyResult<WorkflowState> {
        run(py, || {
            self.inner
                .create_workflow_state(core::WorkflowId(workflow), &label, initial)
        })
        .map(Into::into)
    }

    /// Adds a transition with an optional condition template.
    #[pyo3(signature = (workflow, label, origin, destination, *, condition = String::new()))]
    fn create_workflow_transition(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: String,
        origin: i64,
        destination: i64,
        condition: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.create_workflow_transition(
                core::WorkflowId(workflow),
                &label,
                core::WorkflowStateId(origin),
                core::WorkflowStateId(destination),
                &condition,
            )
        })
        .map(Into::into)
    }

    /// Makes an event (`document_metadata_added|edited|removed`) fire a transition.
    fn add_workflow_trigger(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.add_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )
        })
        .map(Into::into)
    }

    /// Adds an action to a state. `action` is a dict such as `{"type": "edit_metadata",
    /// "metadata_type_id": 3, "value": "{{ now.year }}"}`. Returns the action's id.
    #[pyo3(signature = (workflow, state, label, action, *, on_entry = true, critical = false))]
    #[allow(clippy::too_many_arguments)]
    fn create_workflow_action(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
        label: String,
        action: &Bound<'_, PyAny>,
        on_entry: bool,
        critical: bool,
    ) -> PyResult<i64> {
        let json: String = py
            .import("json")?
            .call_method1("dumps", (action,))?
            .extract()?;
        let action: ActionKind = serde_json::from_str(&json)
            .map_err(|e| ValidationError::new_err(format!("not a valid action: {e}")))?;
        run(py, || {
            self.inner.create_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                &label,
                on_entry,
                critical,
                action,
            )
        })
        .map(|a| a.id.0)
    }

    /// The workflow instances of a document.
    fn workflow_instances(&self, py: Python<'_>, document: i64) -> PyResult<Vec<WorkflowInstance>> {
        run(py, || {
            self.inner.workflow_instances(core::DocumentId(document))
        })
        .map(all)
    }

    /// Takes a transition by hand.
    #[pyo3(signature = (document, instance, transition, *, comment = String::new()))]
    fn transition_workflow(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> PyResult<WorkflowLogEntry> {
        run(py, || {
            self.inner.transition_workflow(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
                core::WorkflowTransitionId(transition),
                &comment,
            )
        })
        .map(Into::into)
    }

    /// The transitions an instance may take now.
    fn available_transitions(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
    ) -> PyResult<Vec<WorkflowTransition>> {
        run(py, || {
            self.inner.available_transitions(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )
        })
        .map(all)
    }

    /// The states of a workflow.
    fn workflow_states(&self, py: Python<'_>, workflow: i64) -> PyResult<Vec<WorkflowState>> {
        run(py, || {
            self.inner.workflow_states(core::WorkflowId(workflow))
        })
        .map(all)
    }

    /// The transitions of a workflow.
    fn workflow_transitions(
        &self,
        py: Python<'_>,
        workflow: i64,
    ) -> PyResult<Vec<WorkflowTransition>> {
        run(py, || {
            self.inner.workflow_transitions(core::WorkflowId(workflow))
        })
        .map(all)
    }

    /// Renames a workflow and/or rebinds its document types.
    #[pyo3(signature = (workflow, *, label = None, document_types = None))]
    fn update_workflow(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: Option<String>,
        document_types: Option<Vec<i64>>,
    ) -> PyResult<Workflow> {
        let types: Option<Vec<core::DocumentTypeId>> =
            document_types.map(|t| t.into_iter().map(core::DocumentTypeId).collect());
        run(py, || {
            self.inner.update_workflow(
                core::WorkflowId(workflow),
                label.as_deref(),
                types.as_deref(),
            )
        })
        .map(Into::into)
    }

    /// Removes a trigger from a transition.
    fn remove_workflow_trigger(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.remove_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )
        })
        .map(Into::into)
    }

    /// Deletes an action of a state.
    fn delete_workflow_action(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
        action: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.delete_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                core::WorkflowActionId(action),
            )
        })
    }

    /// Deletes a workflow with its states, transitions, actions, instances and logs.
    fn delete_workflow(&self, py: Python<'_>, workflow: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_workflow(core::WorkflowId(workflow))
        })
    }

    /// An instance's log, oldest first.
    fn workflow_log(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
    ) -> PyResult<Vec<WorkflowLogEntry>> {
        run(py, || {
            self.inner.workflow_log(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )
        })
        .map(all)
    }
}
