//! Names and payloads of the durable tasks the kernel's layers enqueue (the handlers live in
//! `tasks.rs`, `workflows.rs` and `search/`, registered by name when an instance opens).
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

use serde::{Deserialize, Serialize};

use super::{Actor, DocumentTypeId, MetadataTypeId};

/// Rule 2.4.1: add a required metadata type to every document of a type.
pub const ADD_REQUIRED_METADATA_TYPE: &str = "task_add_required_metadata_type";
/// Rule 2.4.2: remove a metadata type's values from the documents of a type.
pub const REMOVE_METADATA_TYPE: &str = "task_remove_metadata_type";
/// Rebuilds the search index (queued by a restore, which does not wait for it: spec 8.1).
pub const SEARCH_REINDEX: &str = "task_search_reindex";
/// Runs a search operation (`SearchWork`) handed to the process holding the index writer.
pub const SEARCH_WORK: &str = "task_search_work";
/// The tasks only the process holding the search index writer can run.
pub const SEARCH_TASKS: [&str; 2] = [SEARCH_REINDEX, SEARCH_WORK];

/// `author_id` as stored with a workflow action, a transition or a task: 0 is docmeta itself.
pub(crate) const SYSTEM_AUTHOR: i64 = 0;

/// The author id to store for an actor.
pub(crate) fn author_id(actor: Actor) -> i64 {
    actor.user().map_or(SYSTEM_AUTHOR, |u| u.0)
}

/// Arguments of both lifecycle tasks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct TypePair {
    pub document_type_id: i64,
    pub metadata_type_id: i64,
    /// Who caused the task (a user id, or 0 for docmeta itself): the defaults it renders see
    /// what that user may view (`TemplateView`). Absent in tasks recorded before it was: those
    /// see no metadata value.
    #[serde(default)]
    pub author_id: Option<i64>,
}

impl TypePair {
    pub(crate) fn new(dt: DocumentTypeId, mt: MetadataTypeId, actor: Actor) -> Self {
        TypePair {
            document_type_id: dt.0,
            metadata_type_id: mt.0,
            author_id: Some(author_id(actor)),
        }
    }

    pub(crate) fn json(self) -> serde_json::Value {
        serde_json::json!({
            "document_type_id": self.document_type_id,
            "metadata_type_id": self.metadata_type_id,
            "author_id": self.author_id,
        })
    }
}
