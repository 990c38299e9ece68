//! The statements of workflows, states, transitions, actions, instances and their log.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::Utc;

use super::Tx;
use super::records::{from_micros, to_micros};
use crate::error::{Error, Result};
use crate::model::*;

fn state_row(r: &super::Row) -> Result<WorkflowState> {
    Ok(WorkflowState {
        id: WorkflowStateId(r.int(0)?),
        workflow_id: WorkflowId(r.int(1)?),
        label: r.text(2)?,
        initial: r.int(3)? != 0,
    })
}

fn transition_row(r: &super::Row) -> Result<WorkflowTransition> {
    transition_at(r, 0)
}

/// A transition read from [`TRANSITION_COLUMNS`] starting at column `at` (without triggers).
fn transition_at(r: &super::Row, at: usize) -> Result<WorkflowTransition> {
    Ok(WorkflowTransition {
        id: WorkflowTransitionId(r.int(at)?),
        workflow_id: WorkflowId(r.int(at + 1)?),
        label: r.text(at + 2)?,
        origin_state_id: WorkflowStateId(r.int(at + 3)?),
        destination_state_id: WorkflowStateId(r.int(at + 4)?),
        condition: r.text(at + 5)?,
        triggers: Vec::new(),
    })
}

fn instance_row(r: &super::Row) -> Result<WorkflowInstance> {
    Ok(WorkflowInstance {
        id: WorkflowInstanceId(r.int(0)?),
        workflow_id: WorkflowId(r.int(1)?),
        document_id: DocumentId(r.int(2)?),
        state_id: r.opt_int(3)?.map(WorkflowStateId),
        context: serde_json::from_str(&r.text(4)?).unwrap_or_default(),
    })
}

fn log_row(r: &super::Row) -> Result<WorkflowLogEntry> {
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
            "SELECT document_type_id \
             FROM workflow_document_types \
             WHERE workflow_id = ?1 \
             ORDER BY document_type_id",
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
            "SELECT id, workflow_id, label, initial \
             FROM workflow_states \
             WHERE workflow_id = ?1 \
             ORDER BY id",
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
            "SELECT event_name \
             FROM workflow_transition_triggers \
             WHERE transition_id = ?1 \
             ORDER BY id",
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
                &format!(
                    "SELECT {TRANSITION_COLUMNS} \
                     FROM workflow_transitions \
                     WHERE workflow_id = ?1 AND origin_state_id = ?2 \
                     ORDER BY id"
                ),
                &[workflow.0.into(), o.0.into()],
                transition_row,
            )?,
            None => self.rows(
                &format!(
                    "SELECT {TRANSITION_COLUMNS} \
                     FROM workflow_transitions \
                     WHERE workflow_id = ?1 \
                     ORDER BY id"
                ),
                &[workflow.0.into()],
                transition_row,
            )?,
        };
        rows.into_iter().map(|t| self.with_triggers(t)).collect()
    }

    /// The instances of `document` whose current state has transitions the event `name`
    /// triggers, each with the labels of its workflow and state and with those transitions (by
    /// id, with the shapers of their conditions), instances by
    /// id: what a trigger needs, in one statement. The transitions' `triggers` hold only `name`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn workflow_triggered(
        &mut self,
        document: DocumentId,
        name: &str,
    ) -> Result<
        Vec<(
            WorkflowInstance,
            (String, String),
            Vec<(WorkflowTransition, Shapers)>,
        )>,
    > {
        let rows = self.rows(
            "SELECT i.id, i.workflow_id, i.document_id, i.state_id, i.context, t.id, \
                 t.workflow_id, t.label, t.origin_state_id, t.destination_state_id, t.condition, \
                 t.condition_shapers, w.label, s.label \
             FROM workflow_instances i \
             JOIN workflow_transitions t ON t.workflow_id = i.workflow_id \
                 AND t.origin_state_id = i.state_id \
             JOIN workflow_transition_triggers g ON g.transition_id = t.id \
             JOIN workflows w ON w.id = i.workflow_id \
             JOIN workflow_states s ON s.id = i.state_id \
             WHERE i.document_id = ?1 AND g.event_name = ?2 \
             ORDER BY i.id, t.id",
            &[document.0.into(), name.into()],
            |r| {
                let instance = instance_row(r)?;
                let t = WorkflowTransition {
                    triggers: vec![name.to_owned()],
                    ..transition_at(r, 5)?
                };
                Ok((
                    instance,
                    t,
                    Shapers::parse(&r.text(11)?)?,
                    (r.text(12)?, r.text(13)?),
                ))
            },
        )?;
        let mut out: Vec<(
            WorkflowInstance,
            (String, String),
            Vec<(WorkflowTransition, Shapers)>,
        )> = Vec::new();
        for (instance, t, shapers, labels) in rows {
            match out.last_mut() {
                Some((last, _, ts)) if last.id == instance.id => ts.push((t, shapers)),
                _ => out.push((instance, labels, vec![(t, shapers)])),
            }
        }
        Ok(out)
    }

    /// The labels of a workflow and of one of its states (`None`: no state), in one statement;
    /// an empty label for either that does not exist.
    pub(crate) fn workflow_and_state_labels(
        &mut self,
        workflow: WorkflowId,
        state: Option<WorkflowStateId>,
    ) -> Result<(String, String)> {
        Ok(self
            .optional(
                "SELECT (SELECT label FROM workflows WHERE id = ?1), \
                 (SELECT label FROM workflow_states WHERE id = ?2)",
                &[workflow.0.into(), state.map(|s| s.0).into()],
                |r| {
                    Ok((
                        r.opt_text(0)?.unwrap_or_default(),
                        r.opt_text(1)?.unwrap_or_default(),
                    ))
                },
            )?
            .unwrap_or_default())
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
            "SELECT id, state_id, label, on_entry, critical, action \
             FROM workflow_state_actions \
             WHERE state_id = ?1 \
             ORDER BY id",
            &[state.0.into()],
            |r| {
                Ok((
                    r.int(0)?,
                    r.int(1)?,
                    r.text(2)?,
                    r.int(3)? != 0,
                    r.int(4)? != 0,
                    r.text(5)?,
                ))
            },
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
            &format!(
                "SELECT {INSTANCE_COLUMNS} \
                 FROM workflow_instances \
                 WHERE document_id = ?1 \
                 ORDER BY id"
            ),
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

    pub(crate) fn append_workflow_log(
        &mut self,
        instance: WorkflowInstanceId,
        transition: Option<WorkflowTransitionId>,
        user: Option<UserId>,
        comment: &str,
        error: bool,
    ) -> Result<WorkflowLogEntry> {
        let created = Utc::now();
        let id = self.insert(
            "INSERT INTO workflow_instance_log (instance_id, transition_id, user_id, comment, \
                 error, created) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             RETURNING id",
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

    pub(crate) fn delete_workflow_rows(&mut self, id: WorkflowId) -> Result<()> {
        for sql in [
            "DELETE FROM workflow_instance_log \
             WHERE instance_id IN (SELECT id FROM workflow_instances WHERE workflow_id = ?1)",
            "DELETE FROM workflow_instances WHERE workflow_id = ?1",
            "DELETE FROM workflow_state_actions \
             WHERE state_id IN (SELECT id FROM workflow_states WHERE workflow_id = ?1)",
            "DELETE FROM workflow_transition_triggers \
             WHERE transition_id IN (SELECT id FROM workflow_transitions WHERE workflow_id = ?1)",
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
            "DELETE FROM workflow_instance_log \
             WHERE instance_id IN (SELECT id FROM workflow_instances WHERE document_id = ?1)",
            &[document.0.into()],
        )?;
        self.execute(
            "DELETE FROM workflow_instances WHERE document_id = ?1",
            &[document.0.into()],
        )
        .map(drop)
    }

    /// Unbinds every workflow from a document type (which is being deleted).
    pub(crate) fn unbind_workflows_from(&mut self, document_type: DocumentTypeId) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_document_types WHERE document_type_id = ?1",
            &[document_type.0.into()],
        )
        .map(drop)
    }

    /// Creates a workflow (no document types yet).
    pub(crate) fn insert_workflow(&mut self, label: &str) -> Result<WorkflowId> {
        self.insert(
            "INSERT INTO workflows (label) VALUES (?1) RETURNING id",
            &[label.into()],
        )
        .map(WorkflowId)
    }

    /// Renames a workflow.
    pub(crate) fn rename_workflow(&mut self, id: WorkflowId, label: &str) -> Result<()> {
        self.execute(
            "UPDATE workflows SET label = ?2 WHERE id = ?1",
            &[id.0.into(), label.into()],
        )
        .map(drop)
    }

    /// Binds a workflow to exactly these document types.
    pub(crate) fn set_workflow_document_types(
        &mut self,
        id: WorkflowId,
        types: &[DocumentTypeId],
    ) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_document_types WHERE workflow_id = ?1",
            &[id.0.into()],
        )?;
        for t in types {
            self.execute(
                "INSERT INTO workflow_document_types (workflow_id, document_type_id) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[id.0.into(), t.0.into()],
            )?;
        }
        Ok(())
    }

    /// Creates a state; an initial one replaces the workflow's previous initial state.
    pub(crate) fn insert_workflow_state(
        &mut self,
        workflow: WorkflowId,
        label: &str,
        initial: bool,
    ) -> Result<WorkflowStateId> {
        if initial {
            self.execute(
                "UPDATE workflow_states SET initial = 0 WHERE workflow_id = ?1",
                &[workflow.0.into()],
            )?;
        }
        self.insert(
            "INSERT INTO workflow_states (workflow_id, label, initial) \
             VALUES (?1, ?2, ?3) \
             RETURNING id",
            &[workflow.0.into(), label.into(), initial.into()],
        )
        .map(WorkflowStateId)
    }

    /// Renames a state and sets whether it is the initial one (an initial state replaces the
    /// workflow's previous one).
    pub(crate) fn update_workflow_state(&mut self, state: &WorkflowState) -> Result<()> {
        if state.initial {
            self.execute(
                "UPDATE workflow_states SET initial = 0 WHERE workflow_id = ?1",
                &[state.workflow_id.0.into()],
            )?;
        }
        self.execute(
            "UPDATE workflow_states SET label = ?2, initial = ?3 WHERE id = ?1",
            &[
                state.id.0.into(),
                state.label.as_str().into(),
                state.initial.into(),
            ],
        )
        .map(drop)
    }

    /// What still refers to a state: (instances in it, transitions starting or ending at it).
    pub(crate) fn workflow_state_usage(&mut self, state: WorkflowStateId) -> Result<(i64, i64)> {
        let count = |tx: &mut Self, sql: &str| -> Result<i64> {
            Ok(tx
                .optional(sql, &[state.0.into()], |r| r.int(0))?
                .unwrap_or(0))
        };
        Ok((
            count(
                self,
                "SELECT COUNT(*) FROM workflow_instances WHERE state_id = ?1",
            )?,
            count(
                self,
                "SELECT COUNT(*) \
                 FROM workflow_transitions \
                 WHERE origin_state_id = ?1 OR destination_state_id = ?1",
            )?,
        ))
    }

    /// Deletes a state with its actions (nothing else may refer to it: see
    /// [`workflow_state_usage`](Self::workflow_state_usage)).
    pub(crate) fn delete_workflow_state(&mut self, state: WorkflowStateId) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_state_actions WHERE state_id = ?1",
            &[state.0.into()],
        )?;
        self.execute(
            "DELETE FROM workflow_states WHERE id = ?1",
            &[state.0.into()],
        )
        .map(drop)
    }

    /// Saves a transition's label, states and condition (not its triggers).
    pub(crate) fn update_workflow_transition(&mut self, t: &WorkflowTransition) -> Result<()> {
        self.execute(
            "UPDATE workflow_transitions SET label = ?2, origin_state_id = ?3, \
                 destination_state_id = ?4, condition = ?5 \
             WHERE id = ?1",
            &[
                t.id.0.into(),
                t.label.as_str().into(),
                t.origin_state_id.0.into(),
                t.destination_state_id.0.into(),
                t.condition.as_str().into(),
            ],
        )
        .map(drop)
    }

    /// How many instance log entries record a transition.
    pub(crate) fn workflow_transition_log_count(
        &mut self,
        transition: WorkflowTransitionId,
    ) -> Result<i64> {
        Ok(self
            .optional(
                "SELECT COUNT(*) FROM workflow_instance_log WHERE transition_id = ?1",
                &[transition.0.into()],
                |r| r.int(0),
            )?
            .unwrap_or(0))
    }

    /// Deletes a transition with its triggers (no log entry may refer to it: see
    /// [`workflow_transition_log_count`](Self::workflow_transition_log_count)).
    pub(crate) fn delete_workflow_transition(
        &mut self,
        transition: WorkflowTransitionId,
    ) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_transition_triggers WHERE transition_id = ?1",
            &[transition.0.into()],
        )?;
        self.execute(
            "DELETE FROM workflow_transitions WHERE id = ?1",
            &[transition.0.into()],
        )
        .map(drop)
    }

    /// Creates a transition from `states.0` to `states.1`, with its author and the shapers of
    /// its condition.
    pub(crate) fn insert_workflow_transition(
        &mut self,
        workflow: WorkflowId,
        label: &str,
        states: (WorkflowStateId, WorkflowStateId),
        condition: (&str, &Shapers),
        author: i64,
    ) -> Result<WorkflowTransitionId> {
        self.insert(
            "INSERT INTO workflow_transitions (workflow_id, label, origin_state_id, \
                 destination_state_id, condition, author_id, condition_shapers) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             RETURNING id",
            &[
                workflow.0.into(),
                label.into(),
                states.0.0.into(),
                states.1.0.into(),
                condition.0.into(),
                author.into(),
                condition.1.to_text().as_str().into(),
            ],
        )
        .map(WorkflowTransitionId)
    }

    /// Adds (`on`) or removes a transition's trigger event.
    pub(crate) fn set_workflow_trigger(
        &mut self,
        transition: WorkflowTransitionId,
        event: &str,
        on: bool,
    ) -> Result<()> {
        let sql = if on {
            "INSERT INTO workflow_transition_triggers (transition_id, event_name) \
             VALUES (?1, ?2) \
             ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM workflow_transition_triggers WHERE transition_id = ?1 AND event_name = ?2"
        };
        self.execute(sql, &[transition.0.into(), event.into()])
            .map(drop)
    }

    /// Creates a state action (`flags`: on entry, critical) from its JSON definition.
    pub(crate) fn insert_workflow_action(
        &mut self,
        state: WorkflowStateId,
        label: &str,
        flags: (bool, bool),
        action: &str,
        author: i64,
    ) -> Result<WorkflowActionId> {
        self.insert(
            "INSERT INTO workflow_state_actions \
                 (state_id, label, on_entry, critical, action, author_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             RETURNING id",
            &[
                state.0.into(),
                label.into(),
                flags.0.into(),
                flags.1.into(),
                action.into(),
                author.into(),
            ],
        )
        .map(WorkflowActionId)
    }

    /// Deletes a state's action; returns how many rows went (0: no such action there).
    pub(crate) fn delete_workflow_action(
        &mut self,
        state: WorkflowStateId,
        action: WorkflowActionId,
    ) -> Result<u64> {
        self.execute(
            "DELETE FROM workflow_state_actions WHERE id = ?1 AND state_id = ?2",
            &[action.0.into(), state.0.into()],
        )
    }

    /// Who shaped a transition's condition (none: no such transition, or not recorded).
    pub(crate) fn workflow_condition_shapers(
        &mut self,
        id: WorkflowTransitionId,
    ) -> Result<Shapers> {
        let text = self.optional(
            "SELECT condition_shapers FROM workflow_transitions WHERE id = ?1",
            &[id.0.into()],
            |r| r.text(0),
        )?;
        Shapers::parse(text.as_deref().unwrap_or_default())
    }

    /// Records who shaped a transition's condition.
    pub(crate) fn set_workflow_condition_shapers(
        &mut self,
        id: WorkflowTransitionId,
        shapers: &Shapers,
    ) -> Result<()> {
        self.execute(
            "UPDATE workflow_transitions SET condition_shapers = ?2 WHERE id = ?1",
            &[id.0.into(), shapers.to_text().as_str().into()],
        )
        .map(drop)
    }

    /// The stored authors of a state's actions, by action id.
    pub(crate) fn workflow_action_authors(
        &mut self,
        state: WorkflowStateId,
    ) -> Result<rustc_hash::FxHashMap<i64, Option<i64>>> {
        Ok(self
            .rows(
                "SELECT id, author_id FROM workflow_state_actions WHERE state_id = ?1",
                &[state.0.into()],
                |r| Ok((r.int(0)?, r.opt_int(1)?)),
            )?
            .into_iter()
            .collect())
    }

    /// Moves an instance to a state.
    pub(crate) fn set_workflow_instance_state(
        &mut self,
        instance: WorkflowInstanceId,
        state: WorkflowStateId,
    ) -> Result<()> {
        self.execute(
            "UPDATE workflow_instances SET state_id = ?2 WHERE id = ?1",
            &[instance.0.into(), state.0.into()],
        )
        .map(drop)
    }

    /// The workflows bound to `doc`'s type that it has no instance of yet.
    pub(crate) fn workflows_to_launch(&mut self, doc: &Document) -> Result<Vec<WorkflowId>> {
        self.rows(
            "SELECT w.workflow_id \
             FROM workflow_document_types w \
             WHERE w.document_type_id = ?1 AND NOT EXISTS (SELECT 1 FROM workflow_instances i \
                 WHERE i.workflow_id = w.workflow_id AND i.document_id = ?2) \
             ORDER BY w.workflow_id",
            &[doc.document_type_id.0.into(), doc.id.0.into()],
            |r| Ok(WorkflowId(r.int(0)?)),
        )
    }

    /// Creates an instance of a workflow for a document, in its initial state.
    pub(crate) fn insert_workflow_instance(
        &mut self,
        workflow: WorkflowId,
        document: DocumentId,
        initial: Option<WorkflowStateId>,
    ) -> Result<WorkflowInstanceId> {
        self.insert(
            "INSERT INTO workflow_instances (workflow_id, document_id, state_id, context) \
             VALUES (?1, ?2, ?3, '{}') \
             RETURNING id",
            &[
                workflow.0.into(),
                document.0.into(),
                initial.map(|s| s.0).into(),
            ],
        )
        .map(WorkflowInstanceId)
    }
}
