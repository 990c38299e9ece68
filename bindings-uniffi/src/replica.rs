//! The `Replica` object: a data directory holding what one user may see on a docmeta server,
//! read and searched offline through an ordinary `Session`.

use std::path::PathBuf;
use std::sync::Arc;

use docmeta_core as core;

use crate::docmeta::Docmeta;
use crate::errors::Result;
use crate::session::Session;

/// How far a replica's sync has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct SyncProgress {
    /// Batches stored.
    pub batches: u64,
    /// Documents stored (a document sent twice counts twice).
    pub received: u64,
    /// Documents removed.
    pub removed: u64,
    /// Whether the server has more ready now (`false` at the end).
    pub more: bool,
}

impl From<core::SyncProgress> for SyncProgress {
    fn from(p: core::SyncProgress) -> Self {
        let n = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        SyncProgress {
            batches: n(p.batches),
            received: n(p.received),
            removed: n(p.removed),
            more: p.more,
        }
    }
}

/// Follows a replica's sync; implemented in Kotlin or Swift. Called in the syncing thread
/// after each batch is stored: return quickly. An exception it throws is dropped: the sync
/// goes on.
#[uniffi::export(with_foreign)]
pub trait SyncListener: Send + Sync {
    /// One more batch is stored.
    fn on_batch(&self, progress: SyncProgress) -> Result<()>;
}

/// A replica of what one user may see on a docmeta server (see `Replica.open`).
#[derive(uniffi::Object)]
pub struct Replica {
    inner: core::Replica,
}

#[uniffi::export]
impl Replica {
    /// Opens (or creates) the replica in `path` of the server at `url` for `username`. The
    /// first time (and after the server refused the device) it signs the device in with
    /// `password`; otherwise it uses the device token it keeps, and `password` may be empty.
    /// The password is never stored. A directory that is the replica of another server or
    /// user is a `Validation` error (`url`, `username`); wrong credentials `PermissionDenied`.
    #[uniffi::constructor]
    pub fn open(
        path: String,
        url: String,
        username: String,
        password: String,
    ) -> Result<Arc<Self>> {
        let remote = core::Remote {
            url,
            username,
            password,
        };
        Ok(Arc::new(Replica {
            inner: core::Replica::open(PathBuf::from(path), &remote)?,
        }))
    }

    /// Pulls every change since the last sync, in batches, telling `listener` after each batch
    /// is stored. A sync cut off goes on from the last batch stored. When the server refuses
    /// the device (its token revoked or expired, its user deactivated), everything synced is
    /// removed and the answer is `PermissionDenied`: open the replica again with the password.
    #[uniffi::method(default(listener = None))]
    pub fn sync(&self, listener: Option<Arc<dyn SyncListener>>) -> Result<SyncProgress> {
        let done = self.inner.sync_with_progress(|p| {
            if let Some(l) = &listener {
                // The listener's failure is its own: the sync goes on.
                let _ = l.on_batch((*p).into());
            }
        })?;
        Ok(done.into())
    }

    /// Waits until the server has a change this replica's user may see (at most
    /// `waitSeconds`, and at most a minute), then syncs. Keeps a replica current while online:
    /// call it in a loop on a background thread. A change that only alters what the user may
    /// see (a grant) arrives by the end of the wait.
    pub fn sync_when_changed(&self, wait_seconds: u32) -> Result<SyncProgress> {
        let wait = std::time::Duration::from_secs(u64::from(wait_seconds));
        Ok(self.inner.sync_when_changed(wait)?.into())
    }

    /// A session on the replica: the same calls and records as a session on the server,
    /// answered from what the replica holds. Writes are refused (`PermissionDenied`): the
    /// replica is read-only for now.
    pub fn session(&self) -> Arc<Session> {
        Session::of(self.inner.session(), self.inner.local())
    }

    /// The device the replica is signed in as (`null` after the server refused it).
    pub fn device(&self) -> Result<Option<i64>> {
        Ok(self.inner.device()?.map(|d| d.0))
    }

    /// The replica's own database (its event log says which documents each sync stored and
    /// removed: `replica.document_synced`, `replica.document_removed`).
    pub fn local(&self) -> Arc<Docmeta> {
        Docmeta::of(self.inner.local().clone())
    }
}
