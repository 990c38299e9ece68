//! `Session` methods: document files: adding, reading, saving and deleting their bytes.

use std::path::PathBuf;

use docmeta_core as core;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::Session;
use crate::errors::run;
use crate::records::{DocumentFile, all};

#[pymethods]
impl Session {
    /// Stores `data` as a new file of `document`.
    fn add_file(
        &self,
        py: Python<'_>,
        document: i64,
        filename: String,
        data: Vec<u8>,
    ) -> PyResult<DocumentFile> {
        run(py, || {
            self.inner
                .add_file(core::DocumentId(document), &filename, &mut data.as_slice())
        })
        .map(Into::into)
    }

    /// Stores the file at `path` (streamed from disk) as a new file of `document`.
    #[pyo3(signature = (document, path, *, filename = None))]
    fn add_file_from_path(
        &self,
        py: Python<'_>,
        document: i64,
        path: PathBuf,
        filename: Option<String>,
    ) -> PyResult<DocumentFile> {
        let name = filename.unwrap_or_else(|| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        run(py, || {
            let mut f = std::fs::File::open(&path)
                .map_err(|e| core::Error::storage(format!("opening {}", path.display()), e))?;
            self.inner
                .add_file(core::DocumentId(document), &name, &mut f)
        })
        .map(Into::into)
    }

    /// One file's record.
    fn file(&self, py: Python<'_>, id: i64) -> PyResult<DocumentFile> {
        run(py, || self.inner.file(core::DocumentFileId(id))).map(Into::into)
    }

    /// Raises unless this session may add a file to `document` (before sending its bytes).
    fn check_add_file(&self, py: Python<'_>, document: i64) -> PyResult<()> {
        run(py, || self.inner.check_add_file(core::DocumentId(document)))
    }

    /// Raises unless this session may create a document of `document_type` (with a file:
    /// `with_file`), before sending its content; nothing is created.
    #[pyo3(signature = (document_type, *, with_file = false))]
    fn check_create_document(
        &self,
        py: Python<'_>,
        document_type: i64,
        with_file: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner
                .check_create_document(core::DocumentTypeId(document_type), with_file)
        })
    }

    /// The files of a document.
    fn files(&self, py: Python<'_>, document: i64) -> PyResult<Vec<DocumentFile>> {
        run(py, || self.inner.files(core::DocumentId(document))).map(all)
    }

    /// A file's whole content, checked against its SHA-256.
    fn read_file<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = run(py, || self.inner.read_file(core::DocumentFileId(id)))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Streams a file's content into the file at `path` (checked against its SHA-256).
    fn save_file(&self, py: Python<'_>, id: i64, path: PathBuf) -> PyResult<u64> {
        run(py, || {
            let (_, mut content) = self.inner.open_file(core::DocumentFileId(id))?;
            let mut out = std::fs::File::create(&path)
                .map_err(|e| core::Error::storage(format!("creating {}", path.display()), e))?;
            std::io::copy(&mut content, &mut out)
                .map_err(|e| core::menc::io_error("saving a document file", e))
        })
    }

    /// Deletes a file.
    fn delete_file(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_file(core::DocumentFileId(id)))
    }
}
