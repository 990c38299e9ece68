//! Devices: a user's long-lived sign-in for an application on a device (a replica, a script), by
//! a token exchanged once for the password, so that no password is stored on the device.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use chrono::{DateTime, Utc};

use super::{DeviceId, UserId};

/// A device signed in as a user with a token of its own: revocable, expiring, listed for the
/// user and for administrators. The token itself is never stored, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Identifier.
    pub id: DeviceId,
    /// The user the device acts as.
    pub user: UserId,
    /// The name the device gave itself ("Ann's phone").
    pub name: String,
    /// When it was signed in.
    pub created: DateTime<Utc>,
    /// When its token stops being accepted.
    pub expires: DateTime<Utc>,
    /// When its token was last accepted (to the minute: a token used again within a minute is
    /// not written again); `None` until it is first used.
    pub last_used: Option<DateTime<Utc>>,
    /// When its replica was last brought up to date: the last batch of changes answered with
    /// nothing more to send (to the minute); `None` until then.
    pub last_sync: Option<DateTime<Utc>>,
}

/// A device just signed in, with its token: the only answer that holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct NewDevice {
    /// The device.
    pub device: Device,
    /// Its token (`dmd_` and 43 characters of base64url): sent as `Authorization: Bearer
    /// <token>` over HTTP, or given to [`Docmeta::authenticate_device`](crate::Docmeta::authenticate_device).
    pub token: String,
}

impl std::fmt::Debug for NewDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewDevice")
            .field("device", &self.device)
            .field("token", &"<redacted>")
            .finish()
    }
}
