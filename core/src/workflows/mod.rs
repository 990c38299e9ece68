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
//!   is applied in the same transaction as the change, just before it commits: the first
//!   transition from the instance's current state that has a trigger for the event and whose
//!   condition allows it fires, once per event, as docmeta itself. A transition that fails is
//!   rolled back to a savepoint and logged on the instance; the change commits all the same.
//!   Transitions fired by a transition's actions are counted; a chain longer than [`MAX_CHAIN`]
//!   stops with an error logged on the instance.
//! - Actions run as docmeta itself, through the same code as users: the edit action's value goes
//!   through the metadata pipeline (spec 2.10), so a workflow cannot store a value a user could
//!   not. docmeta acts for the action's author (stored with it; actions cannot be edited): each
//!   change is made only when the author could make it directly on that document at that moment
//!   (else the action fails as any failing action does), and its templates, and the defaults and
//!   lookups of the metadata it adds or edits, see what the author may view (narrowed by those
//!   templates' own shapers; see `kernel::TemplateView`). Conditions see what both the acting
//!   user and every shaper of the condition (its author and everyone who changed it) may view
//!   (a trigger: the shapers).
//! - Stored workflows lend nobody authority: adding an action needs what it does on
//!   every document type the workflow is bound to (a grant or revoke: `acls.acl_edit` and the
//!   permission; a metadata action: the `metadata.document_metadata_*` permissions), and so does
//!   every change of the definition that decides when they run and what their templates read
//!   (states and their labels, transitions, conditions, triggers, the workflow's label, bindings,
//!   deletions): it needs what every action of the workflow does.
//!
//! Layer 7 (with `tasks`, `search`, `backup`, `installation`): imports sessions, the kernel and the
//! layers below, never another layer-7 module nor the facade; the kernel calls it only through
//! the hooks the facade registers.

use crate::access::{ObjectKind, ObjectRef};
use crate::error::{Error, Result};
use crate::events::names;
use crate::model::*;

/// The durable task that applied one metadata event to a document's workflow instances after
/// its commit (earlier versions; such tasks still run when found).
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

fn wf_ref(id: WorkflowId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW, id.0)
}
fn instance_ref(id: WorkflowInstanceId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, id.0)
}
fn doc_ref(id: DocumentId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT, id.0)
}

/// Longest workflow, state, transition or action label.
const MAX_LABEL_LEN: usize = 255;

fn check_label(field: &str, label: &str) -> Result<String> {
    crate::model::check_text(field, label, MAX_LABEL_LEN).map(str::to_owned)
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

mod api;
mod engine;
mod triggers;

pub(crate) use api::push_transition;
pub(crate) use triggers::{launch, note_event, run_trigger, run_triggers};
