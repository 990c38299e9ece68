//! A replica: a data directory on a device that holds what one user may see on a docmeta
//! server (see [`Replica`]), the writes made there offline, and how it reaches the server
//! (`remote`).
//!
//! This file holds the replica's handle, the settings that keep its state and its reads (a
//! session on what it holds, the files it fetches). Opening a replica and signing its device in
//! are `open.rs`; a sync (the writes made offline pushed, the server's changes pulled and
//! stored) is `sync.rs`; the writes made offline are `writes.rs`, and their queues, kept as
//! JSON in the settings, `queue.rs`. The records a replica answers are `model/replica.rs`.
//!
//! Layer 9 (with `backup` and `installation`): it opens a whole data directory with the
//! builder.

mod open;
mod queue;
mod remote;
mod sync;
mod writes;

pub use open::ReplicaBuilder;
pub use remote::{HttpServer, InProcessServer, SyncServer};

use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::*;
use crate::session::Session;

/// The name a replica's device is signed in with (listed for its user and administrators).
pub const DEVICE_NAME: &str = "docmeta replica";

/// The replica's own state, in its database's settings.
const SERVER: &str = "replica.server";
const USERNAME: &str = "replica.username";
const USER: &str = "replica.user";
const ROLE: &str = "replica.role";
const DEVICE: &str = "replica.device";
const TOKEN: &str = "replica.token";
const CURSOR: &str = "replica.cursor";
const PENDING: &str = "replica.pending";
const REJECTED: &str = "replica.rejected";
/// The bytes of the files added offline that a pending or rejected write still needs, by the
/// write's key (JSON: `{key: {"name", "checksum", "encrypted"}}`).
const FILES: &str = "replica.files";
/// `"1"` when the server keeps its files encrypted (see [`SyncSchema::files_encrypted`]).
const SERVER_ENCRYPTED: &str = "replica.server_encrypted";
/// Where the ids of documents and values made offline start: far above any id a server gives,
/// so that nothing made offline takes a server record's id (the sync that pushes it replaces it
/// with the server's record).
pub const LOCAL_IDS: i64 = 1 << 50;

/// A replica of what one user may see on a docmeta server: a data directory on a device,
/// read and searched offline with the same calls and records as a session on the server.
///
/// [`Replica::open`] signs the device in once with the user's password and keeps a device
/// token instead (no password is stored). [`Replica::sync`] pushes the writes made offline
/// ([`Replica::set_value`], [`Replica::remove_value`], [`Replica::create_document`],
/// [`Replica::transition_workflow`]) and pulls what changed since the replica's cursor (see
/// [`Session::sync_changes`](crate::Session::sync_changes)), each batch stored with the cursor
/// in one transaction, so a sync cut off anywhere goes on from the last batch stored.
/// [`Replica::session`] reads it: documents, values, files, types, cabinets and workflows.
pub struct Replica {
    local: Docmeta,
    server: Box<dyn SyncServer>,
    /// The replica's own user, and the role that lets it read what the replica holds.
    user: UserId,
    role: RoleId,
    /// One sync at a time.
    syncing: parking_lot::Mutex<()>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica").field("user", &self.user).finish()
    }
}

impl Replica {
    /// The content of a file the replica holds: fetched from the server the first time (its
    /// SHA-256 checked against the record), then kept in the replica's file storage (encrypted
    /// when the replica's storage is) until the file changes or goes. Needs the server the
    /// first time; `NotFound` for a file the replica does not hold.
    pub fn read_file(&self, id: DocumentFileId) -> Result<Vec<u8>> {
        let (name, checksum) = self
            .local
            .read(|tx| tx.mirror_file(id))?
            .ok_or_else(|| Error::not_found(format!("document file {id}")))?;
        if name.starts_with(crate::store::REMOTE_FILE) {
            // An encrypted store stays encrypted: a server's encrypted files are kept only in
            // an encrypted storage on the device.
            let server_encrypted = self.local.read(|tx| tx.setting(SERVER_ENCRYPTED))?;
            if server_encrypted.as_deref() == Some("1") && !self.local.file_storage().encrypts() {
                return Err(Error::validation(
                    "storage_password",
                    "The server keeps its files encrypted: open this replica with a storage \
                     password to keep them encrypted on the device.",
                ));
            }
            let (signed, _) = self.signed_in()?;
            let file = self.session().file(id)?;
            let Some(bytes) = self.server.download(&signed, &file)? else {
                return Err(signed_out());
            };
            let (_, got) = crate::files::sha256(&mut bytes.as_slice())
                .map_err(|e| Error::storage("checking a fetched file", e))?;
            if got != checksum {
                return Err(Error::Storage {
                    operation: format!("fetching document file {id}"),
                    source: format!("the server sent bytes whose SHA-256 is {got}, not {checksum}")
                        .into(),
                });
            }
            let storage = self.local.file_storage();
            let stored = storage.put(&mut bytes.as_slice())?;
            let encrypted = storage.encrypts();
            let recorded = self
                .local
                .write_system(|tx| tx.mirror_file_fetched(id, &checksum, &stored, encrypted))?;
            if !recorded {
                // The record changed meanwhile: these bytes are not its.
                let _ = self.local.file_storage().delete(&stored);
            }
            return Ok(bytes);
        }
        self.session().read_file(id)
    }

    /// Fetches the bytes of every file the replica holds and has not fetched yet (each as
    /// [`read_file`](Self::read_file) fetches it: checked, then kept), so that every file reads
    /// offline; `progress` is called after each one with how many are done and how many there
    /// are. Answers how many were fetched. Call it after a [`sync`](Self::sync) to keep every
    /// file on the device; without it, bytes are fetched when first read. A file gone from the
    /// replica meanwhile (a sync removed it) is skipped.
    pub fn fetch_files(&self, mut progress: impl FnMut(usize, usize)) -> Result<usize> {
        let missing = self.local.read(|tx| tx.mirror_unfetched_files())?;
        let mut fetched = 0;
        for (done, id) in missing.iter().enumerate() {
            match self.read_file(*id) {
                Ok(_) => fetched += 1,
                Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
            progress(done + 1, missing.len());
        }
        Ok(fetched)
    }

    /// A session on the replica: the same calls and records as a session on the server,
    /// answered from what the replica holds (its user's view of the server at the last sync).
    pub fn session(&self) -> Session {
        self.local.session(self.user)
    }

    /// The replica's own database (its events: `replica.document_synced` and
    /// `replica.document_removed` for each document a sync stored or removed).
    pub fn local(&self) -> &Docmeta {
        &self.local
    }

    /// The device the replica is signed in as, with its token, and its cursor; signed out
    /// (`PermissionDenied`) after the server refused the device.
    fn signed_in(&self) -> Result<(SignedIn, Option<SyncCursor>)> {
        let (device, token, cursor) = self
            .local
            .read(|tx| Ok((tx.setting(DEVICE)?, tx.setting(TOKEN)?, tx.setting(CURSOR)?)))?;
        let (Some(device), Some(token)) = (device.and_then(|d| d.parse().ok()), token) else {
            return Err(signed_out());
        };
        let cursor = cursor.map(|c| SyncCursor::parse(&c)).transpose()?;
        let device = DeviceId(device);
        Ok((SignedIn { device, token }, cursor))
    }

    /// The device the replica is signed in as (`None` after the server refused it).
    pub fn device(&self) -> Result<Option<DeviceId>> {
        let device = self.local.read(|tx| tx.setting(DEVICE))?;
        Ok(device.and_then(|d| d.parse().ok()).map(DeviceId))
    }
}

fn signed_out() -> Error {
    Error::PermissionDenied(
        "the server no longer accepts this replica's device (its token was revoked or \
         expired, or its user deactivated): what it held was removed; open the replica again \
         with the password"
            .into(),
    )
}
