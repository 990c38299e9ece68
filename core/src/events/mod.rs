//! The event log of spec 6: every change is appended in the same transaction that makes it, and
//! handed to subscribers after commit.
//!
//! Layer 2: imports only `model`; the store writes these records.

pub(crate) use crate::model::event::names;
pub use crate::model::{Event, EventObject, EventQuery};

/// Whether an event (by name) changes what every process keeps in memory, so that each process
/// must apply it before it answers a request that started after its commit: principals, roles,
/// ACLs, the parent links of documents and cabinets (the access snapshot and the login cache),
/// and metadata types (their compiled form). These events are marked when they are written
/// (`follow`), and followed by every process before it decides anything (see
/// `Docmeta::catch_up`).
pub(crate) fn changes_shared_state(name: &str) -> bool {
    use names::*;
    [
        ACL_CREATED,
        ACL_EDITED,
        ACL_DELETED,
        ROLE_EDITED,
        USER_EDITED,
        GROUP_EDITED,
        CABINET_EDITED,
        DOCUMENT_CREATED,
        DOCUMENT_TYPE_CHANGED,
        DOCUMENT_DELETED,
        DOCUMENT_TYPE_DELETED,
        METADATA_TYPE_EDITED,
        METADATA_TYPE_DELETED,
        OBJECT_PARENTS_SET,
    ]
    .contains(&name)
}

pub(crate) mod chain;
