//! `Session` methods: devices signed in as users (see `Docmeta.sign_in_device`).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{Device, SyncBatch, all};

#[pymethods]
impl Session {
    /// The devices signed in as `user_id` (None: this session's user). One's own need no
    /// permission; another user's need `user_management.user_view`.
    #[pyo3(signature = (user_id = None))]
    fn devices(&self, py: Python<'_>, user_id: Option<i64>) -> PyResult<Vec<Device>> {
        run(py, || {
            self.inner
                .devices(user_id.map(core::UserId), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// Revokes a device: its token is refused from then on. One's own needs no permission;
    /// another user's needs `user_management.user_edit` and holding everything they hold.
    fn revoke_device(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.revoke_device(core::DeviceId(id)))
    }

    /// The next batch of changes for the replica of `device_id` (one of this session's
    /// user's: see `Docmeta.sign_in_device`), after `cursor` (the `cursor` of the last batch
    /// applied; None: a replica that holds nothing), at most `limit` documents (1 to 500).
    /// Apply it as `SyncBatch` says and ask again while `more`: first every document the user
    /// may see, in pages, then the documents changed since the cursor; a document sent before
    /// that the user may no longer see is in `removed`. Applying a batch twice, or asking again
    /// with the same cursor after a lost answer, leaves the same replica. Another user's device
    /// raises `NotFoundError`; a cursor the server never gave, `ValidationError` on `cursor`.
    #[pyo3(signature = (device_id, cursor = None, limit = 100))]
    fn sync_changes(
        &self,
        py: Python<'_>,
        device_id: i64,
        cursor: Option<String>,
        limit: u32,
    ) -> PyResult<SyncBatch> {
        run(py, || {
            let cursor = cursor.as_deref().map(core::SyncCursor::parse).transpose()?;
            self.inner
                .sync_changes(core::DeviceId(device_id), cursor.as_ref(), limit)
        })
        .map(Into::into)
    }
}
