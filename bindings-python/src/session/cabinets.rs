//! `Session` methods: cabinets: the tree of document folders.

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{Cabinet, Document, all};

#[pymethods]
impl Session {
    /// Creates a cabinet (under `parent`).
    #[pyo3(signature = (label, *, parent = None))]
    fn create_cabinet(
        &self,
        py: Python<'_>,
        label: String,
        parent: Option<i64>,
    ) -> PyResult<Cabinet> {
        run(py, || {
            self.inner
                .create_cabinet(&label, parent.map(core::CabinetId))
        })
        .map(Into::into)
    }

    /// One cabinet.
    fn cabinet(&self, py: Python<'_>, id: i64) -> PyResult<Cabinet> {
        run(py, || self.inner.cabinet(core::CabinetId(id))).map(Into::into)
    }

    /// The cabinets this session may view.
    fn cabinets(&self, py: Python<'_>) -> PyResult<Vec<Cabinet>> {
        run(py, || self.inner.cabinets()).map(all)
    }

    /// Puts a document into (or takes it out of) a cabinet.
    #[pyo3(signature = (cabinet, document, *, member = true))]
    fn set_cabinet_document(
        &self,
        py: Python<'_>,
        cabinet: i64,
        document: i64,
        member: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.set_cabinet_document(
                core::CabinetId(cabinet),
                core::DocumentId(document),
                member,
            )
        })
    }

    /// Renames a cabinet.
    fn rename_cabinet(&self, py: Python<'_>, id: i64, label: String) -> PyResult<Cabinet> {
        run(py, || {
            self.inner.rename_cabinet(core::CabinetId(id), &label)
        })
        .map(Into::into)
    }

    /// Deletes a cabinet (and its sub-cabinets).
    fn delete_cabinet(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_cabinet(core::CabinetId(id)))
    }

    /// The documents in a cabinet that this session may view, each with its type.
    fn cabinet_documents(&self, py: Python<'_>, id: i64) -> PyResult<Vec<Document>> {
        run(py, || {
            self.inner
                .cabinet_documents(core::CabinetId(id), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }
}
