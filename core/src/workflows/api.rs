//! The workflow operations of a [`Session`]: definitions (workflows, states, transitions,
//! triggers, actions) and instances (reading them, their log, taking a transition), each
//! permission-checked. Imports the engine and this module's helpers; nothing imports it back.

use crate::access::{KnownParents, ObjectKind, ObjectRef, Permission as P, Permission};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::kernel::{Docmeta, Unit};
use crate::model::*;
use crate::session::Session;
use crate::store::Tx;

/// The kind of a workflow in events.
const WORKFLOW: &str = "document_states.workflow";

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
    ///
    /// A review workflow: each new invoice starts in `draft`, and taking `submit` moves it on.
    ///
    /// ```
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let review = admin.create_workflow("Review", &[invoice.id])?;
    /// let draft = admin.create_workflow_state(review.id, "draft", true)?;
    /// let submitted = admin.create_workflow_state(review.id, "submitted", false)?;
    /// // An empty condition: the transition is always allowed.
    /// let submit =
    ///     admin.create_workflow_transition(review.id, "submit", draft.id, submitted.id, "")?;
    ///
    /// let doc = admin.create_document(invoice.id, "March invoice", &[])?.document;
    /// let instances = admin.workflow_instances(doc.id)?;
    /// assert_eq!(instances.len(), 1); // started with the document, in the initial state
    /// let instance = &instances[0];
    /// assert_eq!(instance.state_id, Some(draft.id));
    /// assert_eq!(admin.available_transitions(doc.id, instance.id)?, [submit.clone()]);
    ///
    /// let entry = admin.transition_workflow(doc.id, instance.id, submit.id, "ready")?;
    /// assert_eq!((entry.transition_id, entry.comment.as_str()), (Some(submit.id), "ready"));
    /// let state = admin.workflow_instance(doc.id, instance.id)?.state_id;
    /// assert_eq!(state, Some(submitted.id));
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
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
            u.event(
                names::WORKFLOW_EDITED,
                crate::session::event_object(WORKFLOW, id.0, &label),
                None,
                Changes::new().created("label", &label),
            )?;
            u.tx.workflow(id)?
                .ok_or_else(|| Error::not_found("workflow"))
        })
    }

    /// Runs `f` as a change of `workflow`'s definition, in one unit of work that also logs
    /// [`WORKFLOW_EDITED`](names::WORKFLOW_EDITED) on the workflow (with its label after the
    /// change, or before it for a deletion), so that followers of the log learn of it.
    fn edit_template<T: Send>(
        &self,
        workflow: WorkflowId,
        mut f: impl FnMut(&mut crate::kernel::Unit<'_>) -> Result<T> + Send,
    ) -> Result<T> {
        self.write(|u| {
            let before = u.tx.workflow(workflow)?.map(|w| w.label);
            let out = f(u)?;
            let label = u.tx.workflow(workflow)?.map(|w| w.label).or(before);
            u.event(
                names::WORKFLOW_EDITED,
                crate::session::event_object(WORKFLOW, workflow.0, label.as_deref().unwrap_or("")),
                None,
                Changes::new(),
            )?;
            Ok(out)
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
    /// `document_states.workflow_template_edit`. Renaming it also needs what its actions do on
    /// its document types (its label is an input of its templates: see
    /// [`update_workflow_transition`](Self::update_workflow_transition)); binding it to another
    /// document type, or unbinding it from one, needs what its actions do on that type (see
    /// [`create_workflow_action`](Self::create_workflow_action)): binding runs them on more
    /// documents, unbinding stops them (a revocation, say).
    pub fn update_workflow(
        &self,
        id: WorkflowId,
        label: Option<&str>,
        document_types: Option<&[DocumentTypeId]>,
    ) -> Result<Workflow> {
        let label = label.map(|l| check_label("label", l)).transpose()?;
        self.edit_template(id, |u| {
            let w = self.workflow_for(&mut u.tx, id, P::WorkflowTemplateEdit)?;
            if let Some(label) = label.as_ref().filter(|l| **l != w.label) {
                // Conditions and action values read `workflow_instance.workflow.label`.
                self.require_workflow_rights(&mut u.tx, id)?;
                u.tx.rename_workflow(id, label)
                    .map_err(|e| unique(e, "label", "A workflow"))?;
            }
            if let Some(types) = document_types {
                self.check_document_types(&mut u.tx, types)?;
                // Binding a type runs the workflow's actions on its documents; unbinding one
                // stops them there: either needs what the actions do on that type.
                let old =
                    u.tx.workflow(id)?
                        .map(|w| w.document_type_ids)
                        .unwrap_or_default();
                let changed: Vec<DocumentTypeId> = types
                    .iter()
                    .filter(|t| !old.contains(t))
                    .chain(old.iter().filter(|t| !types.contains(t)))
                    .copied()
                    .collect();
                if !changed.is_empty() {
                    self.require_actions_rights(&mut u.tx, id, &changed)?;
                }
                u.tx.set_workflow_document_types(id, types)?;
            }
            u.tx.workflow(id)?
                .ok_or_else(|| Error::not_found("workflow"))
        })
    }

    /// Refuses unless this session could do, on every document type of `types`, what every
    /// action of `workflow` does there (see [`require_action_rights`](Self::require_action_rights)).
    fn require_actions_rights(
        &self,
        tx: &mut Tx<'_>,
        workflow: WorkflowId,
        types: &[DocumentTypeId],
    ) -> Result<()> {
        if self.is_superuser() || types.is_empty() {
            return Ok(());
        }
        for state in tx.workflow_states(workflow)? {
            for a in tx.workflow_actions(state.id)? {
                self.require_action_rights(&a.action, types)
                    .map_err(|e| match e {
                        Error::PermissionDenied(m) => Error::PermissionDenied(format!(
                            "changing how this workflow runs needs what its action {} does: {m}",
                            a.id.0
                        )),
                        e => e,
                    })?;
            }
        }
        Ok(())
    }

    /// A workflow's definition (states and their labels, transitions, conditions, triggers, its
    /// label, bindings) decides when its actions run and what their templates read: changing it
    /// needs what every action does on every document type the workflow is bound to, so
    /// an editor cannot make an action run where its author's rights would be borrowed
    /// by someone who holds fewer.
    fn require_workflow_rights(&self, tx: &mut Tx<'_>, workflow: WorkflowId) -> Result<()> {
        let bound = tx
            .workflow(workflow)?
            .map(|w| w.document_type_ids)
            .unwrap_or_default();
        self.require_actions_rights(tx, workflow, &bound)
    }

    /// Deletes a workflow with its states, transitions, actions, instances and logs. Needs
    /// `document_states.workflow_template_delete`, and what its actions do on the document types
    /// it is bound to (deleting stops them: a revocation, say).
    pub fn delete_workflow(&self, id: WorkflowId) -> Result<()> {
        self.edit_template(id, |u| {
            self.workflow_for(&mut u.tx, id, P::WorkflowTemplateDelete)?;
            self.require_workflow_rights(&mut u.tx, id)?;
            u.forget_object("document_states.workflow", wf_ref(id))?;
            u.tx.delete_workflow_rows(id)?;
            Ok(())
        })
    }

    /// Adds a state. `initial` makes it the one instances start in (replacing the previous
    /// initial state). Needs `document_states.workflow_template_edit` and what the workflow's
    /// actions do on its document types (see [`update_workflow_transition`](Self::update_workflow_transition)).
    pub fn create_workflow_state(
        &self,
        workflow: WorkflowId,
        label: &str,
        initial: bool,
    ) -> Result<WorkflowState> {
        let label = check_label("label", label)?;
        self.edit_template(workflow, |u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            self.require_workflow_rights(&mut u.tx, workflow)?;
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
    /// initial state). Needs `document_states.workflow_template_edit` and, for any change, what
    /// the workflow's actions do on its document types (a state's label is an input of the
    /// workflow's templates, its being initial decides which actions run at launch).
    pub fn update_workflow_state(
        &self,
        workflow: WorkflowId,
        id: WorkflowStateId,
        label: Option<&str>,
        initial: Option<bool>,
    ) -> Result<WorkflowState> {
        let label = label.map(|l| check_label("label", l)).transpose()?;
        self.edit_template(workflow, |u| {
            let mut state = self.state_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            if label.as_ref().is_some_and(|l| *l != state.label)
                || initial.is_some_and(|i| i != state.initial)
            {
                self.require_workflow_rights(&mut u.tx, workflow)?;
            }
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
    /// `document_states.workflow_template_edit` and what the workflow's actions do on its
    /// document types.
    pub fn delete_workflow_state(&self, workflow: WorkflowId, id: WorkflowStateId) -> Result<()> {
        self.edit_template(workflow, |u| {
            self.state_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            self.require_workflow_rights(&mut u.tx, workflow)?;
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
    /// `document_states.workflow_template_edit`. A workflow's definition decides when and how
    /// its actions run, so every change of it (this one; adding, changing or deleting states,
    /// transitions and triggers; renaming, rebinding or deleting the workflow) also needs what
    /// every action of the workflow does on every document type the workflow is bound to
    /// (`acls.acl_edit` and the permission for a grant or revoke action; the
    /// `metadata.document_metadata_*` permissions for a metadata action: see
    /// [`create_workflow_action`](Self::create_workflow_action)); `PermissionDenied` otherwise.
    /// A workflow without actions lends nothing, so its editors need nothing more.
    /// Whoever changes the condition becomes one of its shapers: it then renders with no more
    /// than what every one of them may view; an emptied condition has none.
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
        self.edit_template(workflow, |u| {
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
            let condition = update.condition.as_deref().map(str::trim);
            let changed = label.as_ref().is_some_and(|l| *l != t.label)
                || update.origin.is_some_and(|o| o != t.origin_state_id)
                || update
                    .destination
                    .is_some_and(|d| d != t.destination_state_id)
                || condition.is_some_and(|c| c != t.condition);
            if changed {
                self.require_workflow_rights(&mut u.tx, workflow)?;
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
            if let Some(condition) = condition
                && condition != t.condition
            {
                let shapers = u.tx.workflow_condition_shapers(t.id)?.after(
                    self.actor,
                    &t.condition,
                    condition,
                );
                u.tx.set_workflow_condition_shapers(t.id, &shapers)?;
                t.condition = condition.to_owned();
            }
            u.tx.update_workflow_transition(&t)
                .map_err(|e| unique(e, "label", "A transition"))?;
            Ok(t)
        })
    }

    /// Deletes a transition with its triggers. A transition that instance logs record is
    /// refused (`Error::Validation` on `non_field_errors`, saying why): the log is the
    /// instances' history. Needs `document_states.workflow_template_edit` and what the
    /// workflow's actions do on its document types (see
    /// [`update_workflow_transition`](Self::update_workflow_transition)).
    pub fn delete_workflow_transition(
        &self,
        workflow: WorkflowId,
        id: WorkflowTransitionId,
    ) -> Result<()> {
        self.edit_template(workflow, |u| {
            self.transition_for(&mut u.tx, workflow, id, P::WorkflowTemplateEdit)?;
            self.require_workflow_rights(&mut u.tx, workflow)?;
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
    /// (empty: always allowed); it is checked now, and renders with no more than what this
    /// session's user may view (its first shaper; see
    /// [`update_workflow_transition`](Self::update_workflow_transition)). Needs
    /// `document_states.workflow_template_edit` and what the workflow's actions do on its
    /// document types.
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
        self.edit_template(workflow, |u| {
            self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            self.require_workflow_rights(&mut u.tx, workflow)?;
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
                    (condition.trim(), &Shapers::of(self.actor, condition.trim())),
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
    /// automatically (spec 6). Needs `document_states.workflow_template_edit` and what the
    /// workflow's actions do on its document types: a trigger makes them run on others' edits.
    pub fn add_workflow_trigger(
        &self,
        workflow: WorkflowId,
        transition: WorkflowTransitionId,
        event: &str,
    ) -> Result<WorkflowTransition> {
        self.set_workflow_trigger(workflow, transition, event, true)
    }

    /// Removes a trigger. Needs `document_states.workflow_template_edit` and what the
    /// workflow's actions do on its document types.
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
        self.edit_template(workflow, |u| {
            self.transition_for(&mut u.tx, workflow, transition, P::WorkflowTemplateEdit)?;
            self.require_workflow_rights(&mut u.tx, workflow)?;
            u.tx.set_workflow_trigger(transition, event, on)?;
            u.tx.workflow_transition(transition)?
                .ok_or_else(|| Error::not_found("transition"))
        })
    }

    /// Adds an action to a state, run on entry (`on_entry`) or exit. Its metadata types, role
    /// and permission are checked now; an edit action's value template is compiled now. Needs
    /// `document_states.workflow_template_edit`, and what the action does, on every document type
    /// the workflow is bound to (`PermissionDenied` otherwise):
    /// - grant or revoke: `acls.acl_edit` and the permission it hands out;
    /// - add metadata: `documents.document_view` and `metadata.document_metadata_add` on the
    ///   document type, `metadata.document_metadata_add` on each metadata type;
    /// - edit metadata (which adds the value when a document lacks it): `document_view`,
    ///   `document_metadata_view`, `document_metadata_add` and `document_metadata_edit` on the
    ///   document type, the last three on the metadata type;
    /// - remove metadata: `document_view`, `document_metadata_view` and
    ///   `document_metadata_remove` on the document type, the last two on each metadata type.
    ///
    /// The session's user is stored as the action's author: its templates see what they may
    /// view, and each time it runs it does only what they could do directly on that document
    /// then (otherwise it fails as a failing action does: an error on the instance's log, or the
    /// whole transition refused when it is critical).
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
        self.edit_template(workflow, |u| {
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

    /// Refuses unless this session could do what `action` does on the documents of every type
    /// of `types` (those its workflow is bound to): see
    /// [`create_workflow_action`](Self::create_workflow_action). An action runs as docmeta on
    /// the documents of those types, so nobody stores one doing more than they could.
    /// A workflow bound to no type runs its actions nowhere: binding it checks them then.
    fn require_action_rights(&self, action: &ActionKind, types: &[DocumentTypeId]) -> Result<()> {
        use P::{DocumentMetadataAdd as Add, DocumentMetadataView as View, DocumentView};
        if types.is_empty() {
            return Ok(());
        }
        let (on_type, on_metadata, metadata_types): (&[P], &[P], Vec<MetadataTypeId>) = match action
        {
            ActionKind::GrantDocumentAccess { permission, .. }
            | ActionKind::RevokeDocumentAccess { permission, .. } => {
                return match Permission::from_key(permission) {
                    Ok(p) => self.check_access_action(p, types),
                    // Refused when it was stored; it cannot run either.
                    Err(_) => Ok(()),
                };
            }
            ActionKind::AddMetadata { metadata_type_ids } => {
                (&[DocumentView, Add], &[Add], metadata_type_ids.clone())
            }
            ActionKind::EditMetadata {
                metadata_type_id, ..
            } => (
                &[DocumentView, View, Add, P::DocumentMetadataEdit],
                &[View, Add, P::DocumentMetadataEdit],
                vec![*metadata_type_id],
            ),
            ActionKind::RemoveMetadata { metadata_type_ids } => (
                &[DocumentView, View, P::DocumentMetadataRemove],
                &[View, P::DocumentMetadataRemove],
                metadata_type_ids.clone(),
            ),
        };
        for t in types {
            let dt = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0);
            if let Some(p) = on_type.iter().find(|p| !self.can(**p, dt)) {
                return Err(Error::PermissionDenied(format!(
                    "'{}' is needed on document type {t}, which the workflow is bound to",
                    p.key()
                )));
            }
        }
        for t in metadata_types {
            let mt = ObjectRef::new(ObjectKind::METADATA_TYPE, t.0);
            if let Some(p) = on_metadata.iter().find(|p| !self.can(**p, mt)) {
                return Err(Error::PermissionDenied(format!(
                    "'{}' is needed on metadata type {t}",
                    p.key()
                )));
            }
        }
        Ok(())
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
                // Unknown and invisible roles answer alike: no existence probe.
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
        // The field the request named them in.
        let field = match action {
            ActionKind::EditMetadata { .. } => "metadata_type_id",
            _ => "metadata_type_ids",
        };
        for t in types {
            let visible = self.can(
                Permission::MetadataTypeView,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            );
            if !visible || tx.metadata_type(t)?.is_none() {
                return Err(Error::validation(
                    field,
                    format!("Metadata type {t} does not exist."),
                ));
            }
        }
        self.require_action_rights(action, bound)
    }

    /// Deletes an action of a state. Needs `document_states.workflow_template_edit` and what the
    /// action does on the workflow's document types, as creating it did (deleting a revocation
    /// keeps access it would have removed).
    pub fn delete_workflow_action(
        &self,
        workflow: WorkflowId,
        state: WorkflowStateId,
        action: WorkflowActionId,
    ) -> Result<()> {
        self.edit_template(workflow, |u| {
            let w = self.workflow_for(&mut u.tx, workflow, P::WorkflowTemplateEdit)?;
            if u.tx
                .workflow_state(state)?
                .is_none_or(|s| s.workflow_id != workflow)
            {
                return Err(Error::not_found(format!("state {state}")));
            }
            if let Some(a) =
                u.tx.workflow_actions(state)?
                    .into_iter()
                    .find(|a| a.id == action)
            {
                self.require_action_rights(&a.action, &w.document_type_ids)?;
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

    /// An instance's log, oldest first. An entry's `user_id` is `None` when this session may not
    /// view that user (see [`Session::events`]).
    pub fn workflow_log(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<Vec<WorkflowLogEntry>> {
        let mut log = self.read(|tx| {
            self.instance_for(tx, document, id)?;
            tx.workflow_log(id)
        })?;
        // Who took a transition is a user like an event's actor: named only to readers who
        // may view that user.
        for entry in &mut log {
            if entry.user_id.is_some_and(|u| !self.may_view_user(u)) {
                entry.user_id = None;
            }
        }
        Ok(log)
    }

    /// The transitions the instance may take now: leaving its current state, with a condition
    /// that allows them.
    pub fn available_transitions(
        &self,
        document: DocumentId,
        id: WorkflowInstanceId,
    ) -> Result<Vec<WorkflowTransition>> {
        self.catch_up()?;
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
        self.write(|u| self.transition_in(u, document, id, transition, comment))
    }

    /// [`transition_workflow`](Self::transition_workflow) in `u`.
    pub(crate) fn transition_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        let (instance, t) = self.checked_transition(&mut u.tx, document, id, transition)?;
        fire(&self.db, u, &instance, &t, self.actor().user(), comment)
    }

    /// The instance and the transition of a transition this session asks for: the instance
    /// visible, the permission held, the transition one of its workflow's.
    fn checked_transition(
        &self,
        tx: &mut Tx<'_>,
        document: DocumentId,
        id: WorkflowInstanceId,
        transition: WorkflowTransitionId,
    ) -> Result<(WorkflowInstance, WorkflowTransition)> {
        let instance = self.instance_for(tx, document, id)?;
        if !self.can_instance(P::WorkflowInstanceTransition, &instance)
            && !self.can(P::WorkflowInstanceTransition, doc_ref(document))
        {
            return Err(Error::PermissionDenied(format!(
                "'{}' is needed on workflow instance {id}",
                P::WorkflowInstanceTransition.key()
            )));
        }
        let t = tx
            .workflow_transition(transition)?
            .filter(|t| t.workflow_id == instance.workflow_id)
            .ok_or_else(|| {
                Error::validation(
                    "transition_id",
                    format!("Transition {transition} is not a transition of this workflow."),
                )
            })?;
        Ok((instance, t))
    }
}

/// The hook that takes a transition a replica pushed (see
/// [`PushedChange::Transition`](crate::PushedChange::Transition)) for `actor`, in `u`, with
/// the checks of [`Session::transition_workflow`] first (a hidden instance is not found, a
/// missing permission refused, before anything is compared): `Ok(None)` when taken, or when
/// the instance already left the replica's state for the transition's destination (a push
/// retried after a lost answer); `Ok(Some(state))`, the instance's state now, when it is no
/// longer in the state the replica held.
pub(crate) fn push_transition(
    db: &Docmeta,
    u: &mut Unit<'_>,
    actor: Actor,
    document: DocumentId,
    change: &PushedChange,
) -> Result<Option<Option<WorkflowStateId>>> {
    let PushedChange::Transition {
        instance,
        transition,
        comment,
        base,
    } = change
    else {
        return Err(Error::InvalidInput("not a transition".into()));
    };
    // Only a user's device pushes (`sync_push` refuses any other actor first): never taken
    // with docmeta's own authority.
    let Actor::User(user) = actor else {
        return Err(Error::PermissionDenied(
            "a pushed transition is taken only for a user".into(),
        ));
    };
    let session = db.session(user);
    let (current, t) = session.checked_transition(&mut u.tx, document, *instance, *transition)?;
    if current.state_id != *base {
        return Ok(if current.state_id == Some(t.destination_state_id) {
            None
        } else {
            Some(current.state_id)
        });
    }
    fire(db, u, &current, &t, actor.user(), comment)?;
    Ok(None)
}
