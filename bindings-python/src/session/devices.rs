//! `Session` methods: devices signed in as users (see `Docmeta.sign_in_device`).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{Device, all};

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
}
