//! The workflow operations of a [`Session`]: definitions (workflows, states, transitions,
//! triggers, actions) and instances (reading them, their log, taking a transition), each
//! permission-checked. Imports the engine and this module's helpers; nothing imports it back.

use crate::access::{KnownParents, ObjectKind, ObjectRef, Permission as P, Permission};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::model::*;
use crate::session::Session;
use crate::store::Tx;

use super::engine::{condition_allows, fire};
use super::*;

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
            let id =
                u.tx.insert_workflow(&label)
                    .map_err(|e| unique(e, "label", "A workflow"))?;
            u.tx.set_workflow_document_types(id, document_types)?;
            u.tx.workflow(id)?
                .ok_or_else(|| Error::not_found("workflow"))
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
                u.tx.rename_workflow(id, label)
                    .map_err(|e| unique(e, "label", "A workflow"))?;
            }
            if let Some(types) = document_types {
                self.check_document_types(&mut u.tx, types)?;
                // Binding a new type extends the workflow's access actions to its documents.
                let old =
                    u.tx.workflow(id)?
                        .map(|w| w.document_type_ids)
                        .unwrap_or_default();
                let added: Vec<DocumentTypeId> =
                    types.iter().copied().filter(|t| !old.contains(t)).collect();
                if !added.is_empty() {
                    for permission in self.access_actions_of(&mut u.tx, id)? {
                        self.check_access_action(permission, &added)?;
                    }
                }
                u.tx.set_workflow_document_types(id, types)?;
            }
            u.tx.workflow(id)?
                .ok_or_else(|| Error::not_found("workflow"))
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
            u.forget_object("document_states.workflow", wf_ref(id))?;
            u.tx.delete_workflow_rows(id)?;
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
            let id =
                u.tx.insert_workflow_state(workflow, &label, initial)
                    .map_err(|e| unique(e, "label", "A state"))?;
            Ok(WorkflowState {
                id,
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

    fn state_for(
        &self,
        tx: &mut Tx<'_>,
        workflow: WorkflowId,
        id: WorkflowStateId,
        permission: P,
    ) -> Result<WorkflowState> {
        self.workflow_for(tx, workflow, permission)?;
        tx.workflow_state(id)?
            .filter(|s| s.workflow_id == workflow)
            .ok_or_else(|| Error::not_found(format!("state {id}")))
    }

    /// One state of a workflow. Needs `document_states.workflow_template_view`.
    pub fn workflow_state(
        &self,
        workflow: WorkflowId,
        id: WorkflowStateId,
    ) -> Result<WorkflowState> {
        self.read(|tx| self.state_for(tx, workflow, id, P::WorkflowTemplateView))
    }

    /// Renames a state and/or makes it the initial one (`Some(true)` replaces the previous
    /// initial state). Needs `document_states.workflow_template_edit`.
    pub fn update_workflow_state(
        &self,
        workflow: WorkflowId,
        id: WorkflowStateId,
        label: Option<&str>,
        initial: Option<bool>,
    ) -> Result<WorkflowState> {
        let label = label.map(|l| check_label("label", l)).transpose()?;
        self.write(|u| {
            let mut state = self.state_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            if let Some(label) = &label {
                state.label.clone_from(label);
            }
            if let Some(initial) = initial {
                state.initial = initial;
            }
            u.tx.update_workflow_state(&state)
                .map_err(|e| unique(e, "label", "A state"))?;
            Ok(state)
        })
    }

    /// Deletes a state with its actions. A state that instances are in, or that transitions
    /// start or end at, is refused (`Error::Validation` on `non_field_errors`, saying why):
    /// deleting it would silently change their history or their definition. Needs
    /// `document_states.workflow_template_edit`.
    pub fn delete_workflow_state(&self, workflow: WorkflowId, id: WorkflowStateId) -> Result<()> {
        self.write(|u| {
            self.state_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            let (instances, transitions) = u.tx.workflow_state_usage(id)?;
            if instances > 0 {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!("{instances} workflow instances are in this state; move them to another state first."),
                ));
            }
            if transitions > 0 {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!("{transitions} transitions start or end at this state; delete them first."),
                ));
            }
            u.tx.delete_workflow_state(id)
        })
    }

    /// One transition of a workflow with its triggers. Needs
    /// `document_states.workflow_template_view`.
    pub fn workflow_transition(
        &self,
        workflow: WorkflowId,
        id: WorkflowTransitionId,
    ) -> Result<WorkflowTransition> {
        self.read(|tx| self.transition_for(tx, workflow, id, P::WorkflowTemplateView))
    }

    /// Changes a transition's label, states and/or condition (checked as at creation). Needs
    /// `document_states.workflow_template_edit`.
    pub fn update_workflow_transition(
        &self,
        workflow: WorkflowId,
        id: WorkflowTransitionId,
        update: TransitionUpdate,
    ) -> Result<WorkflowTransition> {
        let label = update
            .label
            .as_deref()
            .map(|l| check_label("label", l))
            .transpose()?;
        if let Some(condition) = update.condition.as_deref().filter(|c| !c.trim().is_empty()) {
            self.db
                .templates()
                .check(condition)
                .map_err(|e| Error::validation("condition", e.0))?;
        }
        self.write(|u| {
            let mut t = self.transition_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            for (field, state) in [
                ("origin_state_id", update.origin),
                ("destination_state_id", update.destination),
            ] {
                let Some(state) = state else { continue };
                if u.tx
                    .workflow_state(state)?
                    .is_none_or(|s| s.workflow_id != workflow)
                {
                    return Err(Error::validation(
                        field,
                        format!("State {state} is not a state of this workflow."),
                    ));
                }
            }
            if let Some(label) = &label {
                t.label.clone_from(label);
            }
            if let Some(origin) = update.origin {
                t.origin_state_id = origin;
            }
            if let Some(destination) = update.destination {
                t.destination_state_id = destination;
            }
            if let Some(condition) = &update.condition {
                t.condition = condition.trim().to_owned();
            }
            u.tx.update_workflow_transition(&t)
                .map_err(|e| unique(e, "label", "A transition"))?;
            Ok(t)
        })
    }

    /// Deletes a transition with its triggers. A transition that instance logs record is
    /// refused (`Error::Validation` on `non_field_errors`, saying why): the log is the
    /// instances' history. Needs `document_states.workflow_template_edit`.
    pub fn delete_workflow_transition(
        &self,
        workflow: WorkflowId,
        id: WorkflowTransitionId,
    ) -> Result<()> {
        self.write(|u| {
            self.transition_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            let logged = u.tx.workflow_transition_log_count(id)?;
            if logged > 0 {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!("{logged} workflow log entries record this transition; it cannot be deleted."),
                ));
            }
            u.tx.delete_workflow_transition(id)
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
            for (field, state) in [
                ("origin_state_id", origin),
                ("destination_state_id", destination),
            ] {
                if u.tx
                    .workflow_state(state)?
                    .is_none_or(|s| s.workflow_id != workflow)
                {
                    return Err(Error::validation(
                        field,
                        format!("State {state} is not a state of this workflow."),
                    ));
                }
            }
            let id =
                u.tx.insert_workflow_transition(
                    workflow,
                    &label,
                    (origin, destination),
                    condition.trim(),
                    author_id(self.actor),
                )
                .map_err(|e| unique(e, "label", "A transition"))?;
            u.tx.workflow_transition(id)?
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
        self.write(|u| {
            self.transition_for(&mut u.tx, workflow, transition, P::WorkflowTemplateEdit)?;
            u.tx.set_workflow_trigger(transition, event, on)?;
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
            if u.tx
                .workflow_state(state)?
                .is_none_or(|s| s.workflow_id != workflow)
            {
                return Err(Error::not_found(format!("state {state}")));
            }
            let bound =
                u.tx.workflow(workflow)?
                    .map(|w| w.document_type_ids)
                    .unwrap_or_default();
            self.check_action(&mut u.tx, &action, &bound)?;
            let json = serde_json::to_string(&action)
                .map_err(|e| Error::storage("writing a workflow action", e))?;
            let id = u.tx.insert_workflow_action(
                state,
                &label,
                (on_entry, critical),
                &json,
                author_id(self.actor),
            )?;
            Ok(WorkflowAction {
                id,
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
            let n = u.tx.delete_workflow_action(state, action)?;
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
        self.db.read_rendering(self.actor, |tx, renders| {
            let instance = self.instance_for(tx, document, id)?;
            let Some(state) = instance.state_id else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            for t in tx.workflow_transitions(instance.workflow_id, Some(state))? {
                if condition_allows(&self.db, renders, tx, &instance, &t, self.actor.user())? {
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
