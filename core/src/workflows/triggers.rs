//! How workflows follow documents: launching instances when a document of a bound type appears,
//! noting metadata events in a unit of work and firing the automatic transitions they trigger
//! before it commits (bounded chains), and running the durable trigger tasks earlier versions
//! left. Registered with the kernel as hooks when an instance opens.
//!
//! Part of `workflows` (layer 7 of `scripts/check-structure`): it may import only what `workflows`
//! may (see `workflows`'s module documentation).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::events::Event;
use crate::kernel::{Docmeta, Unit};

use super::engine::{Labels, condition_allows_by, fire, run_actions};
use super::*;

/// Launches the workflows bound to `doc`'s type that it does not run yet (spec: a document of a
/// bound type is created or changes type), entering their initial state.
pub(crate) fn launch(db: &Docmeta, u: &mut Unit<'_>, doc: &Document) -> Result<()> {
    let workflows = u.tx.workflows_to_launch(doc)?;
    for w in workflows {
        let initial =
            u.tx.workflow_states(w)?
                .into_iter()
                .find(|s| s.initial)
                .map(|s| s.id);
        let id = u.tx.insert_workflow_instance(w, doc.id, initial)?;
        let instance = WorkflowInstance {
            id,
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

/// The payload of a durable trigger task. Triggers now run in the unit of work of their event;
/// such tasks are still run when found (left by an earlier version).
#[derive(Serialize, Deserialize)]
struct TriggerTask {
    event_id: i64,
    document_id: i64,
    event: String,
    depth: u32,
}

/// Runs the workflow triggers of the metadata events noted in `u`, in `u`'s transaction, just
/// before it commits: on each instance of the event's document, the first transition leaving
/// its current state that the event triggers and whose condition allows it fires, as docmeta
/// itself. The events of the transitions fired (their actions may edit metadata) are the next
/// round, one step further down the chain; past [`MAX_CHAIN`] steps the transition is not taken
/// and the instance's log says why. A transition that fails is rolled back to a savepoint and
/// logged on its instance, and the change that triggered it commits all the same; a conflict
/// with a concurrent transaction fails the whole unit, which is run again.
pub(crate) fn run_triggers(db: &Docmeta, u: &mut Unit<'_>) -> Result<()> {
    // The chain depth before the durable trigger task this handle runs (0: none).
    let mut depth = db.trigger_depth + 1;
    loop {
        let events = std::mem::take(&mut u.workflow_events);
        if events.is_empty() {
            return Ok(());
        }
        for (event, document, name) in events {
            for (instance, labels, transitions) in u.tx.workflow_triggered(document, &name)? {
                let trigger = Trigger {
                    event: &name,
                    event_id: event,
                    depth,
                };
                let actor = std::mem::replace(&mut u.actor, Actor::System);
                let outcome = trigger.apply(db, u, (&instance, &labels), transitions);
                u.actor = actor;
                match outcome {
                    Err(e) if !e.is_busy() => {
                        u.tx.append_workflow_log(
                            instance.id,
                            None,
                            None,
                            &format!("Automatic transition failed: {e}"),
                            true,
                        )?;
                    }
                    other => other?,
                }
            }
        }
        depth += 1;
    }
}

/// One event applied to one instance (see [`run_triggers`]).
struct Trigger<'a> {
    event: &'a str,
    event_id: EventId,
    /// How many automatic transitions led to this event, plus one.
    depth: u32,
}

impl Trigger<'_> {
    /// Fires the first of `transitions` (those leaving `instance`'s current state that the event
    /// triggers) whose condition allows it, behind a savepoint: a failure leaves nothing of it.
    /// `labels`: the instance's workflow and state labels, for the conditions.
    fn apply(
        &self,
        db: &Docmeta,
        u: &mut Unit<'_>,
        (instance, labels): (&WorkflowInstance, &Labels),
        transitions: Vec<(WorkflowTransition, Shapers)>,
    ) -> Result<()> {
        let mut chosen = None;
        for (t, shapers) in transitions {
            let known = (instance, Some(labels));
            if condition_allows_by(db, u.renders, &mut u.tx, known, &t, &shapers, None)? {
                chosen = Some(t);
                break;
            }
        }
        let Some(t) = chosen else {
            return Ok(());
        };
        if self.depth > MAX_CHAIN {
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
        let comment = format!("Triggered by {} (event {})", self.event, self.event_id.0);
        u.undoable("workflow_trigger", |u| {
            fire(db, u, instance, &t, None, &comment).map(drop)
        })
    }
}

/// The durable trigger task (see [`TriggerTask`]): its event, applied in a unit of its own as
/// [`run_triggers`] applies the events of a unit.
pub(crate) fn run_trigger(db: &Docmeta, payload: &str) -> Result<()> {
    let task: TriggerTask = serde_json::from_str(payload)
        .map_err(|e| Error::InvalidInput(format!("workflow trigger task: {e}")))?;
    let db = Docmeta {
        trigger_depth: task.depth.saturating_sub(1),
        ..db.clone()
    };
    db.write(Actor::System, |u| {
        u.workflow_events.push((
            EventId(task.event_id),
            DocumentId(task.document_id),
            task.event.clone(),
        ));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_task_left_by_an_earlier_version_still_fires_its_transition() {
        let db = Docmeta::in_memory().expect("open");
        let admin = db.system();
        let t = admin.create_document_type("Invoice").expect("type");
        let status = admin
            .create_metadata_type(MetadataTypeInput::new("status", "Status"))
            .expect("metadata type");
        admin.associate(t.id, status.id, false).expect("associate");
        let flow = admin
            .create_workflow("Approval", &[t.id])
            .expect("workflow")
            .id;
        let draft = admin
            .create_workflow_state(flow, "draft", true)
            .expect("state")
            .id;
        let review = admin
            .create_workflow_state(flow, "review", false)
            .expect("state")
            .id;
        let submit = admin
            .create_workflow_transition(flow, "submit", draft, review, "")
            .expect("transition");
        let doc = admin
            .create_document(t.id, "INV-1", &[])
            .expect("document")
            .document;
        // Nothing is edited: only the task (as an earlier version queued it) can fire it.
        let event = crate::events::names::DOCUMENT_METADATA_EDITED;
        let payload = serde_json::to_string(&TriggerTask {
            event_id: 1,
            document_id: doc.id.0,
            event: event.to_owned(),
            depth: 1,
        })
        .expect("payload");
        admin
            .add_workflow_trigger(flow, submit.id, event)
            .expect("trigger");
        db.write_system(|tx| tx.enqueue_task(WORKFLOW_TRIGGER, &payload))
            .expect("enqueue");
        db.run_pending_tasks().expect("run");
        let instance = &admin.workflow_instances(doc.id).expect("instances")[0];
        assert_eq!(instance.state_id, Some(review));
        assert!(db.open_tasks().expect("tasks").is_empty());
    }
}
