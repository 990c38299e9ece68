//! The `Session` object: everything one actor does. Its methods are split by concern, one
//! `#[uniffi::export] impl Session` block per file: metadata types and document types,
//! documents and their values, files, access (checks, ACLs, kinds), users/groups/roles,
//! cabinets, workflows, search, and events and tasks.

mod access;
mod cabinets;
mod devices;
mod documents;
mod events;
mod files;
mod metadata;
mod search;
mod users;
mod webhooks;
mod workflows;

use std::sync::Arc;
use std::time::{Duration, Instant};

use docmeta_core as core;

use crate::errors::Result;
use crate::records::ObjectRef;

/// Everything one actor does: metadata, documents, files, access, cabinets, workflows, search.
#[derive(uniffi::Object)]
pub struct Session {
    inner: core::Session,
    /// The instance, for what a session does not carry itself: the kind registry (to name
    /// kinds in records and explanations).
    db: core::Docmeta,
}

impl Session {
    pub(crate) fn of(inner: core::Session, db: &core::Docmeta) -> Arc<Session> {
        Arc::new(Session {
            inner,
            db: db.clone(),
        })
    }

    fn object(&self, kind: &str, id: i64) -> Result<core::ObjectRef> {
        Ok(core::ObjectRef::new(self.inner.parse_kind(kind)?, id))
    }

    fn object_of(&self, object: &ObjectRef) -> Result<core::ObjectRef> {
        self.object(&object.kind, object.id)
    }
}

#[uniffi::export]
impl Session {
    /// This session with a deadline `timeoutMs` from now: a change that would commit after it
    /// rolls back and fails with `DeadlineExceeded`.
    pub fn with_deadline(&self, timeout_ms: u64) -> Arc<Session> {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        Session::of(self.inner.clone().with_deadline(deadline), &self.db)
    }

    /// The acting user's id; `None` when docmeta itself acts.
    pub fn actor(&self) -> Option<i64> {
        self.inner.actor().user().map(|u| u.0)
    }
}
