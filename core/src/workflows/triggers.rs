//! How workflows follow documents: launching instances when a document of a bound type appears,
//! noting metadata events in a unit of work, and the durable trigger task that fires automatic
//! transitions (bounded chains). Registered with the kernel as hooks when an instance opens.
//!
//! Part of `workflows` (layer 7 of `scripts/check-structure`): it may import only what `workflows`
//! may (see `workflows`'s module documentation).

use std::cell::Cell;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::events::Event;
use crate::kernel::{Docmeta, Unit};
use crate::model::*;

use super::engine::{condition_allows, fire, run_actions};
use super::*;

thread_local! {
    /// The chain depth of the trigger task running in this thread (0: none).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

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
        if !u.tx.has_workflow_trigger(document, &name)? {
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
