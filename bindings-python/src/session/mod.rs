//! The `Session` class: everything one actor does. Its methods are split by concern, one
//! `#[pymethods]` block per file (pyo3's `multiple-pymethods`).

mod access;
mod cabinets;
mod devices;
mod documents;
mod events;
mod files;
mod metadata;
mod search;
mod webhooks;
mod workflows;

use docmeta_core as core;
use docmeta_core::ObjectRef;
use pyo3::prelude::*;

use crate::errors::py_err;

pub use documents::DocumentIterator;

/// Everything one actor does: metadata, documents, files, access, search, workflows.
#[pyclass(frozen, module = "docmeta")]
pub struct Session {
    pub(crate) inner: core::Session,
    /// The instance, for what a session does not carry: the kind names of an explanation.
    db: core::Docmeta,
}

impl Session {
    pub(crate) fn new(inner: core::Session, db: core::Docmeta) -> Session {
        Session { inner, db }
    }

    fn object(&self, kind: &str, id: i64) -> PyResult<ObjectRef> {
        let kind = self.inner.parse_kind(kind).map_err(py_err)?;
        Ok(ObjectRef::new(kind, id))
    }
}
