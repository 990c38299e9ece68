//! Devices signed in as users (see `Docmeta.signInDevice`).

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::Device;

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
}
