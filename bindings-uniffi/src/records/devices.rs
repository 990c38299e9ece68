//! Devices signed in as users with tokens of their own.

use std::time::SystemTime;

use docmeta_core as core;

/// A device signed in as a user with a token of its own (see `Docmeta.signInDevice`):
/// revocable, expiring.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Device {
    /// Identifier.
    pub id: i64,
    /// The user it acts as.
    pub user_id: i64,
    /// Its name ("Ann's phone").
    pub name: String,
    /// When it was signed in.
    pub created: SystemTime,
    /// When its token stops being accepted.
    pub expires: SystemTime,
    /// When its token was last accepted (to the minute); `None` until then.
    pub last_used: Option<SystemTime>,
}

impl From<core::Device> for Device {
    fn from(d: core::Device) -> Self {
        Device {
            id: d.id.0,
            user_id: d.user.0,
            name: d.name,
            created: d.created.into(),
            expires: d.expires.into(),
            last_used: d.last_used.map(Into::into),
        }
    }
}

/// A device just signed in, with its token (`dmd_...`): the only answer that holds it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct NewDevice {
    /// The device.
    pub device: Device,
    /// Its token: keep it instead of the password.
    pub token: String,
}

impl From<core::NewDevice> for NewDevice {
    fn from(n: core::NewDevice) -> Self {
        NewDevice {
            device: n.device.into(),
            token: n.token,
        }
    }
}
