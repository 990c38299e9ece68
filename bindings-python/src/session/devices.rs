//! `Session` methods: devices signed in as users (see `Docmeta.sign_in_device`).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{Device, PushOutcome, SyncBatch, all};

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

    /// Applies the writes a replica of `device_id` made offline (see `Replica.set_value`), in
    /// order, each as the same write online would be; a write based on a value the server no
    /// longer holds is a conflict (the server's value stands). `writes` are dicts with `key`,
    /// `action` (`"set"` or `"remove"`), `document_id`, `metadata_type_id`, `value` (for a set)
    /// and `base` (the value the replica held, or None). At most 500.
    fn sync_push(
        &self,
        py: Python<'_>,
        device_id: i64,
        writes: Vec<Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Vec<PushOutcome>> {
        let mut pushed = Vec::with_capacity(writes.len());
        for (i, w) in writes.iter().enumerate() {
            pushed.push(pushed_write(i, w)?);
        }
        run(py, || {
            self.inner.sync_push(core::DeviceId(device_id), &pushed)
        })
        .map(all)
    }

    /// Adds a file a replica of `device_id` added offline to `document` (as `add_file`, through
    /// this session), recording the write's `key`: pushed again under the same key, it is
    /// added once. Returns the write's outcome (a refusal is `"refused"`, as in `sync_push`).
    fn sync_push_file(
        &self,
        py: Python<'_>,
        device_id: i64,
        key: String,
        document: i64,
        filename: String,
        data: Vec<u8>,
    ) -> PyResult<PushOutcome> {
        run(py, || {
            self.inner.sync_push_file(
                core::DeviceId(device_id),
                &key,
                core::DocumentId(document),
                &filename,
                &mut data.as_slice(),
            )
        })
        .map(Into::into)
    }
}

/// A pushed write from its dict.
fn pushed_write(i: usize, w: &Bound<'_, pyo3::types::PyDict>) -> PyResult<core::PushedWrite> {
    use pyo3::types::PyDictMethods;
    let bad = |what: &str| {
        crate::errors::py_err(core::Error::validation(
            "writes",
            format!("Write {i}: {what}."),
        ))
    };
    let get = |k: &str| w.get_item(k).ok().flatten().filter(|v| !v.is_none());
    let text = |k: &str| -> PyResult<Option<String>> {
        get(k)
            .map(|v| v.extract::<String>())
            .transpose()
            .map_err(|_| bad(&format!("`{k}` is text")))
    };
    let id = |k: &str| -> PyResult<i64> {
        get(k)
            .ok_or_else(|| bad(&format!("`{k}` is required")))?
            .extract::<i64>()
            .map_err(|_| bad(&format!("`{k}` is an integer")))
    };
    let base = text("base")?;
    let metadata_type = || id("metadata_type_id").map(core::MetadataTypeId);
    let change = match text("action")?.as_deref() {
        Some("set") => core::PushedChange::Set {
            metadata_type: metadata_type()?,
            value: text("value")?.ok_or_else(|| bad("a set needs a `value`"))?,
            base,
        },
        Some("remove") => core::PushedChange::Remove {
            metadata_type: metadata_type()?,
            base,
        },
        Some("create") => core::PushedChange::Create {
            document_type: core::DocumentTypeId(id("document_type_id")?),
            label: text("label")?.ok_or_else(|| bad("a create needs a `label`"))?,
            values: get("values")
                .map(|v| v.extract::<std::collections::BTreeMap<i64, String>>())
                .transpose()
                .map_err(|_| bad("`values` is a dict of metadata type ids to text"))?
                .unwrap_or_default()
                .into_iter()
                .map(|(t, v)| (core::MetadataTypeId(t), v))
                .collect(),
        },
        Some("file") => core::PushedChange::AddFile {
            file: core::DocumentFileId(id("file_id")?),
            filename: text("filename")?.ok_or_else(|| bad("a file needs a `filename`"))?,
        },
        Some("transition") => core::PushedChange::Transition {
            instance: core::WorkflowInstanceId(id("workflow_instance_id")?),
            transition: core::WorkflowTransitionId(id("transition_id")?),
            comment: text("comment")?.unwrap_or_default(),
            base: get("base_state_id")
                .map(|v| v.extract::<i64>())
                .transpose()
                .map_err(|_| bad("`base_state_id` is an integer"))?
                .map(core::WorkflowStateId),
        },
        _ => {
            return Err(bad(
                "`action` is \"set\", \"remove\", \"create\", \"transition\" or \"file\"",
            ));
        }
    };
    Ok(core::PushedWrite {
        key: text("key")?.ok_or_else(|| bad("`key` is required"))?,
        document: core::DocumentId(id("document_id")?),
        change,
    })
}
