//! Devices signed in as users (see `Docmeta.signInDevice`).

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{Device, SyncBatch};

#[uniffi::export]
impl Session {
    /// The devices signed in as `user_id` (`None`: this session's user). One's own need no
    /// permission; another user's need `user_management.user_view`.
    #[uniffi::method(default(user_id = None))]
    pub fn devices(&self, user_id: Option<i64>) -> Result<Vec<Device>> {
        Ok(self
            .inner
            .devices(user_id.map(core::UserId), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Revokes a device: its token is refused from then on. One's own needs no permission;
    /// another user's needs `user_management.user_edit` and holding everything they hold.
    pub fn revoke_device(&self, id: i64) -> Result<()> {
        Ok(self.inner.revoke_device(core::DeviceId(id))?)
    }

    /// The next batch of changes for the replica of `device_id` (one of this session's
    /// user's: see `Docmeta.signInDevice`), after `cursor` (the `cursor` of the last batch
    /// applied; `None`: a replica that holds nothing), at most `limit` documents (1 to 500).
    /// Apply it as `SyncBatch` says and ask again while `more`: first every document the user
    /// may see, in pages, then the documents changed since the cursor; a document sent before
    /// that the user may no longer see is in `removed`. Applying a batch twice, or asking again
    /// with the same cursor after a lost answer, leaves the same replica. Another user's device
    /// is `NotFound`; a cursor the server never gave, `Validation` on `cursor`.
    #[uniffi::method(default(cursor = None, limit = 100))]
    pub fn sync_changes(
        &self,
        device_id: i64,
        cursor: Option<String>,
        limit: u32,
    ) -> Result<SyncBatch> {
        let cursor = cursor.as_deref().map(core::SyncCursor::parse).transpose()?;
        Ok(self
            .inner
            .sync_changes(core::DeviceId(device_id), cursor.as_ref(), limit)?
            .into())
    }

    /// Applies the writes a replica of `deviceId` made offline, in order, each as the same
    /// write online would be; a write based on a value the server no longer holds is a conflict
    /// (the server's value stands). At most 500.
    pub fn sync_push(
        &self,
        device_id: i64,
        writes: Vec<crate::replica::PendingWrite>,
    ) -> Result<Vec<crate::replica::PushOutcome>> {
        let writes = writes
            .into_iter()
            .map(core::PushedWrite::try_from)
            .collect::<core::Result<Vec<_>>>()?;
        Ok(self
            .inner
            .sync_push(core::DeviceId(device_id), &writes)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Adds a file a replica of `deviceId` added offline to `document` (as `addFile`, through
    /// this session), recording the write's `key`: pushed again under the same key, it is
    /// added once. Returns the write's outcome (a refusal is `Refused`, as in `syncPush`).
    pub fn sync_push_file(
        &self,
        device_id: i64,
        key: String,
        document: i64,
        filename: String,
        data: Vec<u8>,
    ) -> Result<crate::replica::PushOutcome> {
        Ok(self
            .inner
            .sync_push_file(
                core::DeviceId(device_id),
                &key,
                core::DocumentId(document),
                &filename,
                &mut data.as_slice(),
            )?
            .into())
    }
}
