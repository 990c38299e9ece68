//! The `Replica` class: a data directory holding what one user may see on a docmeta server,
//! read and searched offline through an ordinary `Session`.

use std::path::PathBuf;

use docmeta_core as core;
use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::docmeta::Docmeta;
use crate::errors::run;
use crate::records::{
    Document, DocumentFile, DocumentMetadata, PendingWrite, RejectedWrite, SyncProgress,
    WorkflowLogEntry, all,
};
use crate::session::Session;

/// A replica of what one user may see on a docmeta server (see `Replica.open`).
#[pyclass(frozen, module = "docmeta")]
pub struct Replica {
    inner: core::Replica,
}

#[pymethods]
impl Replica {
    /// Opens (or creates) the replica in `path` of the server at `url` for `username`. The
    /// first time (and after the server refused the device) it signs the device in with
    /// `password`; otherwise it uses the device token it keeps, and `password` may be empty.
    /// The password is never stored. A directory that is the replica of another server or user
    /// raises `ValidationError` (`url`, `username`); wrong credentials `PermissionDenied`.
    /// With `storage_password`, the file bytes the replica fetches are kept encrypted (MENC)
    /// under a key derived from it; once encrypted, every later open needs it
    /// (`ValidationError` on `storage_password` without it, `DecryptionError` with another).
    #[staticmethod]
    #[pyo3(signature = (path, url, username, password = String::new(), *, storage_password = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        url: String,
        username: String,
        password: String,
        storage_password: Option<String>,
    ) -> PyResult<Replica> {
        let remote = core::Remote {
            url,
            username,
            password,
        };
        run(py, || {
            let builder = core::Replica::builder(&path);
            match storage_password {
                Some(p) => builder.storage_password(p).open(&remote),
                None => builder.open(&remote),
            }
        })
        .map(|inner| Replica { inner })
    }

    /// Pulls every change since the last sync, in batches, calling `progress(SyncProgress)`
    /// after each batch is stored (with the GIL taken; an exception it raises is raised once
    /// the sync has ended). A sync cut off goes on from the last batch stored. When the server
    /// refuses the device (its token revoked or expired, its user deactivated), everything
    /// synced is removed and `PermissionDenied` is raised: open the replica again with the
    /// password.
    #[pyo3(signature = (progress = None))]
    fn sync(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<SyncProgress> {
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let done = run(py, || {
            self.inner.sync_with_progress(|p| {
                let Some(callback) = &progress else {
                    return;
                };
                let p = SyncProgress::from(*p);
                Python::attach(|py| {
                    if let Err(e) = callback.call1(py, (p,)) {
                        raised.lock().get_or_insert(e);
                    }
                });
            })
        })?;
        match raised.into_inner() {
            Some(e) => Err(e),
            None => Ok(done.into()),
        }
    }

    /// Waits until the server has a change this replica's user may see (at most `wait`
    /// seconds, and at most a minute), with the GIL released, then syncs. Keeps a replica
    /// current while online: `while running: replica.sync_when_changed(25.0)`. A change that
    /// only alters what the user may see (a grant) arrives by the end of the wait.
    fn sync_when_changed(&self, py: Python<'_>, wait: f64) -> PyResult<SyncProgress> {
        if !wait.is_finite() || wait < 0.0 {
            return Err(crate::errors::py_err(core::Error::validation(
                "wait",
                "Ensure this value is a number of seconds, 0 or more.",
            )));
        }
        let wait = std::time::Duration::from_secs_f64(wait.min(3600.0));
        run(py, || self.inner.sync_when_changed(wait)).map(Into::into)
    }

    /// Sets the value of `metadata_type` on `document` offline: through the replica's
    /// pipeline (a refusal raises the error the server would), stored at once and pushed at
    /// the next sync, based on the value the replica held.
    fn set_value(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: i64,
        value: String,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.set_value(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
                &value,
            )
        })
        .map(Into::into)
    }

    /// Creates a document offline: through the replica's pipeline (a refusal raises the error
    /// the server would), stored at once under a local id (at least 2**50) and pushed at the
    /// next sync, where the server creates it through the user's session; the replica then
    /// holds the server's document in its place. `values` maps metadata type ids to values.
    #[pyo3(signature = (document_type, label, values=None))]
    fn create_document(
        &self,
        py: Python<'_>,
        document_type: i64,
        label: String,
        values: Option<std::collections::BTreeMap<i64, String>>,
    ) -> PyResult<Document> {
        let values = values.unwrap_or_default();
        run(py, || {
            let pairs: Vec<(core::MetadataTypeId, &str)> = values
                .iter()
                .map(|(t, v)| (core::MetadataTypeId(*t), v.as_str()))
                .collect();
            self.inner
                .create_document(core::DocumentTypeId(document_type), &label, &pairs)
        })
        .map(Into::into)
    }

    /// Takes a workflow transition offline: the instance must be in the transition's origin and
    /// its condition must allow it, evaluated on the replica (a refusal raises the error the
    /// server would); the instance moves at once and the transition is pushed at the next
    /// sync, where the server takes it through the user's session (or finds it in conflict
    /// when the instance moved there since). A document made offline takes transitions once
    /// synced (`ValidationError` on `document` before).
    #[pyo3(signature = (document, instance, transition, *, comment = String::new()))]
    fn transition_workflow(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> PyResult<WorkflowLogEntry> {
        run(py, || {
            self.inner.transition_workflow(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
                core::WorkflowTransitionId(transition),
                &comment,
            )
        })
        .map(Into::into)
    }

    /// Adds a file to `document` offline: its bytes kept in the replica (encrypted when its
    /// storage is), readable at once under a local id (at least 2**50), and pushed with the
    /// next sync, where the server adds it through the user's session, once per write. A file
    /// on a document made offline waits for the document's creation.
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

    /// Removes the value of `metadata_type` from `document` offline, pushed at the next sync.
    fn remove_value(&self, py: Python<'_>, document: i64, metadata_type: i64) -> PyResult<()> {
        run(py, || {
            self.inner.remove_value(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
            )
        })
    }

    /// The writes made offline and not pushed yet, in the order made.
    fn pending(&self, py: Python<'_>) -> PyResult<Vec<PendingWrite>> {
        run(py, || self.inner.pending()).map(all)
    }

    /// The writes the server did not apply (conflicts and refusals), oldest first.
    fn rejected(&self, py: Python<'_>) -> PyResult<Vec<RejectedWrite>> {
        run(py, || self.inner.rejected()).map(all)
    }

    /// Forgets a rejected write (the replica shows the server's value).
    fn discard(&self, py: Python<'_>, key: String) -> PyResult<()> {
        run(py, || self.inner.discard(&key))
    }

    /// Makes a rejected write again, based on the value the replica holds now (mine over
    /// theirs); pushed at the next sync.
    fn retry(&self, py: Python<'_>, key: String) -> PyResult<()> {
        run(py, || self.inner.retry(&key))
    }

    /// The content of a file the replica holds: fetched from the server the first time (its
    /// SHA-256 checked), then read from the replica.
    fn read_file<'py>(
        &self,
        py: Python<'py>,
        id: i64,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let bytes = run(py, || self.inner.read_file(core::DocumentFileId(id)))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    /// Fetches the bytes of every file the replica holds and has not fetched yet, so that
    /// every file reads offline; `progress(done, total)` is called after each one. Returns
    /// how many were fetched. Call it after `sync` to keep every file on the device.
    #[pyo3(signature = (progress = None))]
    fn fetch_files(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<usize> {
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let fetched = run(py, || {
            self.inner.fetch_files(|done, total| {
                let Some(callback) = &progress else {
                    return;
                };
                Python::attach(|py| {
                    if let Err(e) = callback.call1(py, (done, total)) {
                        raised.lock().get_or_insert(e);
                    }
                });
            })
        })?;
        match raised.into_inner() {
            Some(e) => Err(e),
            None => Ok(fetched),
        }
    }

    /// A session on the replica: the same calls and records as a session on the server,
    /// answered from what the replica holds. Writes are refused (`PermissionDenied`): the
    /// replica is read-only for now.
    fn session(&self) -> Session {
        Session::new(self.inner.session(), self.inner.local().clone())
    }

    /// The device the replica is signed in as (None after the server refused it).
    fn device(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        run(py, || self.inner.device()).map(|d| d.map(|d| d.0))
    }

    /// The replica's own database (its event log says which documents each sync stored and
    /// removed: `replica.document_synced`, `replica.document_removed`).
    fn local(&self) -> Docmeta {
        Docmeta::of(self.inner.local().clone())
    }
}
