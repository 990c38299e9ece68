//! A replica's records: the server it syncs with and who signs in to it ([`Remote`]), the
//! device signed in ([`SignedIn`]), what a pull answers ([`Pulled`]), how far a sync has come
//! ([`SyncProgress`]) and the writes made offline that the server did not apply
//! ([`RejectedWrite`]). The replica itself is [`crate::Replica`].
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

use super::{DeviceId, PushResult, PushedWrite, SyncBatch};

/// A server over HTTP and who signs in to it.
#[derive(Clone)]
pub struct Remote {
    /// The server (`http://host:port`, `https://host`).
    pub url: String,
    /// The user whose documents the replica holds.
    pub username: String,
    /// Their password: used once, to sign the device in (and again only after the server
    /// refused the device); never stored. Empty is fine when the replica is signed in.
    pub password: String,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// How far a sync has come (handed to the progress callback after each batch, and answered at
/// the end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncProgress {
    /// Batches stored.
    pub batches: usize,
    /// Documents stored (a document sent twice counts twice).
    pub received: usize,
    /// Documents removed.
    pub removed: usize,
    /// Writes made offline that the server applied.
    pub pushed: usize,
    /// Writes made offline that the server refused or found in conflict (see
    /// [`Replica::rejected`](crate::Replica::rejected)).
    pub rejected: usize,
    /// Whether the server has more ready now (`false` at the end).
    pub more: bool,
}

/// A write made offline that the server did not apply: in conflict with a change made on the
/// server since the replica read the value, or refused as it would have been online. It stays
/// until the application [discards](crate::Replica::discard) or
/// [retries](crate::Replica::retry) it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedWrite {
    /// The write, as made offline (with the value it was based on).
    pub write: PushedWrite,
    /// What the server answered: [`PushResult::Conflict`] (with the server's value) or
    /// [`PushResult::Refused`].
    pub result: PushResult,
}

/// A device signed in on a server: what a replica keeps instead of a password.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The device.
    pub device: DeviceId,
    /// Its token.
    pub token: String,
}

impl std::fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedIn")
            .field("device", &self.device)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// What a server answered a pull.
#[derive(Debug, Clone, PartialEq)]
pub enum Pulled {
    /// The next batch (boxed: a batch is large beside a refusal).
    Batch(Box<SyncBatch>),
    /// The server no longer accepts the device: its token was revoked or expired, or its user
    /// was deactivated or deleted.
    Refused,
}
