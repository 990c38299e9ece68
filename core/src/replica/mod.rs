//! A replica: a data directory on a device that holds what one user may see on a docmeta
//! server (see [`Replica`]), the writes made there offline, and how it reaches the server
//! (`remote`).
//!
//! Layer 9 (with `backup` and `installation`): it opens a whole data directory with the
//! builder.

mod remote;

use std::path::Path;

pub use remote::{HttpServer, InProcessServer, Pulled, SignedIn, SyncServer};

use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::{Error, Result};
use crate::events::{EventObject, names};
use crate::kernel::{Docmeta, Unit};
use crate::model::*;
use crate::session::{MAX_PUSH_WRITES, MAX_SYNC_BATCH, Session};

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

const DOCUMENT: &str = "documents.document";
/// The tables whose ids things made offline take (see [`LOCAL_IDS`]).
const LOCAL_TABLES: [&str; 5] = [
    "documents",
    "document_metadata",
    "document_files",
    "workflow_instances",
    "workflow_instance_log",
];
/// The password hash of the replica's own user: not a PHC string, so no password verifies.
const NO_PASSWORD: &str = "!";

/// How a replica is opened: [`Replica::builder`], then [`open`](Self::open) or
/// [`open_with`](Self::open_with).
///
/// ```
/// use docmeta_core::{Docmeta, InProcessServer, Replica};
///
/// let server = Docmeta::in_memory()?;
/// server.system().create_user("ann", "a long password", true)?;
/// let dir = tempfile::tempdir().expect("a directory");
/// let replica = Replica::builder(dir.path())
///     .storage_password("the device's secret")
///     .open_with(InProcessServer::new(server.clone()), "ann", "a long password")?;
/// replica.sync()?;
/// # Ok::<(), docmeta_core::Error>(())
/// ```
pub struct ReplicaBuilder {
    dir: std::path::PathBuf,
    storage_password: Option<Vec<u8>>,
}

impl std::fmt::Debug for ReplicaBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaBuilder")
            .field("dir", &self.dir)
            .field(
                "storage_password",
                &self.storage_password.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl ReplicaBuilder {
    /// Keeps the file bytes the replica fetches encrypted (MENC, AES-256-GCM, as a server's
    /// encrypted storage) under a key derived from `password` (Argon2id). Once a replica's
    /// storage is encrypted, every later open needs the same password: without it the open is
    /// `Validation` on `storage_password`, with another one `Decryption`. A replica fetched
    /// into before keeps those bytes as they were and encrypts what it fetches from then on.
    /// The replica's database (labels, values) is not encrypted.
    pub fn storage_password(mut self, password: impl Into<Vec<u8>>) -> Self {
        self.storage_password = Some(password.into());
        self
    }

    /// Opens the replica of the server `remote.url` for `remote.username` (see
    /// [`Replica::open`]).
    pub fn open(self, remote: &Remote) -> Result<Replica> {
        let server = HttpServer::new(&remote.url)?;
        self.open_with(server, &remote.username, &remote.password)
    }

    /// Opens the replica of any [`SyncServer`] (see [`Replica::open_with`]).
    pub fn open_with(
        self,
        server: impl SyncServer + 'static,
        username: &str,
        password: &str,
    ) -> Result<Replica> {
        Replica::open_local(self.local()?, server, username, password)
    }

    /// The replica's own database, its file storage encrypted when it is to be.
    fn local(&self) -> Result<Docmeta> {
        let dir = &self.dir;
        let mut builder = Docmeta::builder().data_dir(dir).worker(false);
        let keyed = dir.join("system").join("storage_key").exists();
        let config = |dir: &Path| -> Result<crate::config::Config> {
            crate::owner_only::create_dir_all(dir).map_err(|e| {
                Error::storage(
                    format!("creating the replica's directory {}", dir.display()),
                    e,
                )
            })?;
            crate::config::Config::load_or_create(dir)
        };
        match &self.storage_password {
            Some(password) => {
                let mut config = config(dir)?;
                config.documents_file_storage_backend = crate::config::StorageBackend::Encrypted;
                builder = builder.config(config).storage_password(password.clone());
            }
            None if keyed
                && config(dir)?.documents_file_storage_backend
                    != crate::config::StorageBackend::Encrypted =>
            {
                return Err(Error::validation(
                    "storage_password",
                    "This replica keeps its files encrypted: open it with its storage password.",
                ));
            }
            None => {}
        }
        builder.open()
    }
}

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
    /// [`Replica::rejected`]).
    pub rejected: usize,
    /// Whether the server has more ready now (`false` at the end).
    pub more: bool,
}

/// A write made offline that the server did not apply: in conflict with a change made on the
/// server since the replica read the value, or refused as it would have been online. It stays
/// until the application [discards](Replica::discard) or [retries](Replica::retry) it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedWrite {
    /// The write, as made offline (with the value it was based on).
    pub write: PushedWrite,
    /// What the server answered: [`PushResult::Conflict`] (with the server's value) or
    /// [`PushResult::Refused`].
    pub result: PushResult,
}

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
    /// Opens (or creates) the replica in `dir` of the server `remote.url` for
    /// `remote.username`. The first time (and after the server refused the device) it signs
    /// the device in with the password; otherwise it uses the token it keeps. A directory that
    /// is the replica of another server or user is refused (`Validation` on `url` or
    /// `username`); wrong credentials are `PermissionDenied`.
    pub fn open(dir: impl AsRef<Path>, remote: &Remote) -> Result<Replica> {
        Replica::builder(dir).open(remote)
    }

    /// A replica in `dir` opened with options ([`ReplicaBuilder::storage_password`]).
    pub fn builder(dir: impl AsRef<Path>) -> ReplicaBuilder {
        ReplicaBuilder {
            dir: dir.as_ref().to_path_buf(),
            storage_password: None,
        }
    }

    /// [`open`](Self::open) with any [`SyncServer`] (an [`InProcessServer`], say).
    ///
    /// ```
    /// use docmeta_core::{Docmeta, InProcessServer, Replica};
    ///
    /// let server = Docmeta::in_memory()?;
    /// let admin = server.system();
    /// admin.create_user("ann", "a long password", true)?;
    /// let memo = admin.create_document_type("Memo")?;
    /// admin.create_document(memo.id, "Meeting notes", &[])?;
    ///
    /// let dir = tempfile::tempdir().expect("a directory");
    /// let replica = Replica::open_with(
    ///     dir.path(), InProcessServer::new(server.clone()), "ann", "a long password")?;
    /// replica.sync()?;
    /// // Offline: the same calls as a session on the server.
    /// let found = replica.session().search_documents("meeting", docmeta_core::PageRequest::new(1, 10))?;
    /// assert_eq!(found.count, 1);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn open_with(
        dir: impl AsRef<Path>,
        server: impl SyncServer + 'static,
        username: &str,
        password: &str,
    ) -> Result<Replica> {
        Replica::builder(dir).open_with(server, username, password)
    }

    fn open_local(
        local: Docmeta,
        server: impl SyncServer + 'static,
        username: &str,
        password: &str,
    ) -> Result<Replica> {
        let address = server.address();
        let id = |v: Option<String>| v.and_then(|v| v.parse::<i64>().ok());
        let (stored_server, stored_username, user, role, token) = local.read(|tx| {
            Ok((
                tx.setting(SERVER)?,
                tx.setting(USERNAME)?,
                id(tx.setting(USER)?).map(UserId),
                id(tx.setting(ROLE)?).map(RoleId),
                tx.setting(TOKEN)?,
            ))
        })?;
        if stored_server.as_ref().is_some_and(|s| *s != address) {
            return Err(Error::validation(
                "url",
                format!(
                    "This directory is the replica of {}.",
                    stored_server.unwrap_or_default()
                ),
            ));
        }
        if stored_username.as_ref().is_some_and(|u| u != username) {
            return Err(Error::validation(
                "username",
                format!(
                    "This directory is the replica of {}'s documents.",
                    stored_username.unwrap_or_default()
                ),
            ));
        }
        let (user, role) = match (user, role) {
            (Some(user), Some(role)) => (user, role),
            _ => local_user(&local, username, &address)?,
        };
        let replica = Replica {
            local,
            server: Box::new(server),
            user,
            role,
            syncing: parking_lot::Mutex::new(()),
        };
        if token.is_none() {
            replica.sign_in(username, password)?;
        }
        Ok(replica)
    }

    fn sign_in(&self, username: &str, password: &str) -> Result<()> {
        let signed = self
            .server
            .sign_in(username, password, DEVICE_NAME)?
            .ok_or_else(|| Error::PermissionDenied("wrong username or password".into()))?;
        self.local.write_system(|tx| {
            tx.set_setting(DEVICE, &signed.device.0.to_string())?;
            tx.set_setting(TOKEN, &signed.token)
        })
    }

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

    /// Waits until the server has a change this replica's user may see (at most `wait`, and
    /// at most a minute), then syncs: the loop that keeps a replica current while online is
    /// `loop { replica.sync_when_changed(Duration::from_secs(25))?; }`. A change the user sees
    /// arrives as soon as it is committed (the server's live feed wakes the wait); a change
    /// that only alters what the user may see (a grant, say) arrives by the end of the wait.
    /// The first call, before any sync, syncs at once.
    pub fn sync_when_changed(&self, wait: std::time::Duration) -> Result<SyncProgress> {
        let (signed, cursor) = self.signed_in()?;
        if let Some(cursor) = cursor {
            self.server.wait_for_change(&signed, cursor.log, wait)?;
        }
        self.sync()
    }

    /// [`sync_with_progress`](Self::sync_with_progress) without a callback.
    pub fn sync(&self) -> Result<SyncProgress> {
        self.sync_with_progress(|_| {})
    }

    /// Pulls every change since the replica's cursor, in batches of up to 100 documents,
    /// calling `progress` after each batch is stored. A sync cut off (a dropped connection, a
    /// crash) goes on from the last batch stored. When the server refuses the device (its
    /// token revoked or expired, its user deactivated), everything synced is removed from the
    /// replica and the answer is `PermissionDenied`: open it again with the password.
    pub fn sync_with_progress(
        &self,
        mut progress: impl FnMut(&SyncProgress),
    ) -> Result<SyncProgress> {
        let _one = self.syncing.lock();
        let (signed, mut cursor) = self.signed_in()?;
        let mut done = SyncProgress::default();
        // Writes made offline first: the pull then brings the server's truth after them.
        if !self.push(&signed, &mut done)? {
            self.forget_everything()?;
            return Err(signed_out());
        }
        if done.pushed + done.rejected > 0 {
            progress(&done);
        }
        loop {
            let batch = match self
                .server
                .pull(&signed, cursor.as_ref(), 100.min(MAX_SYNC_BATCH))?
            {
                Pulled::Batch(batch) => batch,
                Pulled::Refused => {
                    self.forget_everything()?;
                    return Err(signed_out());
                }
            };
            self.store(&batch)?;
            done.batches += 1;
            done.received += batch.documents.len();
            done.removed += batch.removed.len();
            done.more = batch.more;
            progress(&done);
            cursor = Some(batch.cursor);
            if !batch.more {
                return Ok(done);
            }
        }
    }

    /// Pushes the pending writes, in order, in pushes of up to [`MAX_PUSH_WRITES`]; a write
    /// the server did not apply moves to the rejected ones, and each document a write touched
    /// is stored as the server answered it. `false` when the server refused the device.
    fn push(&self, device: &SignedIn, done: &mut SyncProgress) -> Result<bool> {
        loop {
            let pending = writes(self.local.read(|tx| tx.setting(PENDING))?)?;
            let Some(first) = pending.first() else {
                return Ok(true);
            };
            if matches!(first.change, PushedChange::AddFile { .. }) {
                if !self.push_file(device, first, done)? {
                    return Ok(false);
                }
                continue;
            }
            // The writes up to the next file (whose bytes go on their own).
            let end = (pending.iter())
                .position(|w| matches!(w.change, PushedChange::AddFile { .. }))
                .unwrap_or(pending.len())
                .min(MAX_PUSH_WRITES);
            let chunk = &pending[..end];
            let Some(outcomes) = self.server.push(device, chunk)? else {
                return Ok(false);
            };
            let shaper = self.user.0.to_string();
            let (applied, rejected) = self.local.write(Actor::System, |u| {
                let mut pending = writes(u.tx.setting(PENDING)?)?;
                let mut refused = rejected_writes(u.tx.setting(REJECTED)?)?;
                let (mut applied, mut rejected) = (0, 0);
                for o in &outcomes {
                    let Some(at) = pending.iter().position(|p| p.key == o.key) else {
                        continue;
                    };
                    let write = pending.remove(at);
                    if write.is_create() {
                        // A create: the server's document (if any) takes the local one's place,
                        // also in the writes still queued for it (its files).
                        remove_document(u, write.document)?;
                        if let Some(d) = &o.document {
                            let id = d.document.document.id;
                            for p in pending.iter_mut().filter(|p| p.document == write.document) {
                                p.document = id;
                            }
                        }
                    }
                    if o.result == PushResult::Applied {
                        applied += 1;
                    } else {
                        rejected += 1;
                        refused.push(RejectedWrite {
                            write,
                            result: o.result.clone(),
                        });
                    }
                    if let Some(d) = &o.document {
                        store_document(u, d, &shaper)?;
                    }
                }
                u.tx.set_setting(PENDING, &writes_text(&pending))?;
                u.tx.set_setting(REJECTED, &rejected_text(&refused))?;
                keep_held_files(u)?;
                Ok((applied, rejected))
            })?;
            self.local.file_storage().purge_deleted()?;
            done.pushed += applied;
            done.rejected += rejected;
            if applied + rejected == 0 {
                // The server answered none of the writes sent: never loop on them.
                return Err(Error::InvalidInput(
                    "the server answered a push without the writes' keys".into(),
                ));
            }
        }
    }

    /// Adds a file to `document` offline, as [`Session::add_file`](crate::Session::add_file)
    /// does on the server: its bytes stored in the replica's file storage (encrypted when it
    /// is), its record (name, size, SHA-256, MIME type) under a local id at or above
    /// [`LOCAL_IDS`], readable at once; pushed at the next [`sync`](Self::sync), bytes
    /// included, where the server adds it through the user's session (who may add files is
    /// decided there) once per write, however often the push is retried. The replica then
    /// holds the server's record, with these bytes. A file added to a document made offline
    /// waits for the document's creation. A document the replica does not hold is `NotFound`.
    pub fn add_file(
        &self,
        document: DocumentId,
        filename: &str,
        content: &mut dyn std::io::Read,
    ) -> Result<DocumentFile> {
        let _one = self.syncing.lock();
        self.session().document(document)?;
        let key = random_key()?;
        let storage = self.local.file_storage();
        let mut hashing = crate::files::Hashing::new(content);
        let name = storage.put(&mut hashing)?;
        let (size, checksum) = hashing.finish();
        let held = HeldFile {
            name: name.clone(),
            checksum: checksum.clone(),
            size,
            encrypted: storage.encrypts(),
        };
        let filename = crate::files::clean_filename(filename);
        let result = self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: document,
                    filename: filename.clone(),
                    size,
                    checksum: checksum.clone(),
                    mimetype: crate::files::guess_mime(&filename),
                    created: crate::model::now(),
                },
                &held.name,
                held.encrypted,
            )?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change: PushedChange::AddFile {
                    file: file.id,
                    filename: filename.clone(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            files.insert(key.clone(), held.clone());
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            Ok(file)
        });
        if result.is_err() {
            let _ = storage.delete(&name);
        }
        result
    }

    /// Pushes the first pending write, a file, with its bytes; `false` when the server refused
    /// the device.
    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        done: &mut SyncProgress,
    ) -> Result<bool> {
        let held = held_files(self.local.read(|tx| tx.setting(FILES))?)?;
        let outcome = match held.get(&write.key) {
            Some(h) => {
                let storage = self.local.file_storage();
                let mut content = match (h.encrypted, storage.encrypts()) {
                    (true, true) | (false, false) => storage.open(&h.name)?,
                    (false, true) => storage.open_plain(&h.name)?,
                    (true, false) => {
                        return Err(Error::Decryption(
                            "a file added offline is encrypted: open the replica with its \
                             storage password"
                                .into(),
                        ));
                    }
                };
                match self.server.push_file(device, write, &mut content)? {
                    Some(outcome) => outcome,
                    None => return Ok(false),
                }
            }
            // Its bytes are gone (the replica's settings were altered outside docmeta).
            None => PushOutcome {
                key: write.key.clone(),
                result: PushResult::Refused {
                    kind: crate::error::ErrorKind::NotFound,
                    field: None,
                    message: "the bytes of this file are no longer on the replica".into(),
                },
                document: None,
            },
        };
        let shaper = self.user.0.to_string();
        self.local.write(Actor::System, |u| {
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            let mut refused = rejected_writes(u.tx.setting(REJECTED)?)?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            pending.retain(|p| p.key != write.key);
            if let Some(d) = &outcome.document {
                store_document(u, d, &shaper)?;
            }
            if outcome.result == PushResult::Applied {
                // The bytes sent are the server's file's now: kept as fetched.
                if let (Some(h), Some(d)) = (files.remove(&write.key), &outcome.document) {
                    let mut reused = false;
                    for f in d.files.iter().filter(|f| f.checksum == h.checksum) {
                        if u.tx
                            .mirror_file_fetched(f.id, &h.checksum, &h.name, h.encrypted)?
                        {
                            reused = true;
                            break;
                        }
                    }
                    if reused {
                        u.unlink.retain(|n| *n != h.name);
                    } else {
                        u.unlink.push(h.name);
                    }
                }
            } else {
                refused.push(RejectedWrite {
                    write: write.clone(),
                    result: outcome.result.clone(),
                });
            }
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            u.tx.set_setting(REJECTED, &rejected_text(&refused))?;
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            keep_held_files(u)
        })?;
        self.local.file_storage().purge_deleted()?;
        if outcome.result == PushResult::Applied {
            done.pushed += 1;
        } else {
            done.rejected += 1;
        }
        Ok(true)
    }

    /// Sets the value of `metadata_type` on `document` offline: through the replica's pipeline
    /// (the same validators, parsers, lookups and defaults as the server: a refusal is the
    /// error the server would give, `Validation` on `value`), stored at once, and pushed at the
    /// next [`sync`](Self::sync), based on the value the replica held. The server decides
    /// again when the write arrives: it may refuse it (a permission) or find it in conflict
    /// (the value changed there since); see [`rejected`](Self::rejected).
    pub fn set_value(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<MetadataValueView> {
        let _one = self.syncing.lock();
        let id = self.write_value(document, metadata_type, Some(value))?;
        let id = id.ok_or_else(|| Error::not_found(format!("document {document}")))?;
        self.session().metadata_value(document, id)
    }

    /// Creates a document offline, as [`Session::create_document`] does on the server: through
    /// the replica's pipeline (the same validators, parsers, lookups, required types and their
    /// defaults: a refusal is the error the server would give), stored at once under a local id
    /// (at or above [`LOCAL_IDS`]), and pushed at the next [`sync`](Self::sync), where the
    /// server creates it again through the user's session (who may create documents of the
    /// type is decided there). Values set or removed on it before then go with its creation.
    /// Once pushed, the replica holds the server's document, under the server's id, in its
    /// place; a refused one leaves the replica and is kept among the
    /// [`rejected`](Self::rejected) writes.
    pub fn create_document(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<DocumentView> {
        let _one = self.syncing.lock();
        let id = self.create_local(document_type, label, values)?;
        self.session().document(id)
    }

    /// A document made offline, stored with its pending create in one transaction.
    fn create_local(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<DocumentId> {
        let label = crate::model::check_text("label", label, crate::session::MAX_LABEL_LEN)?;
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let doc = admin.create_document_in(u, document_type, label, values)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document: doc.id,
                change: PushedChange::Create {
                    document_type,
                    label: label.to_owned(),
                    values: values
                        .iter()
                        .map(|(mt, v)| (*mt, (*v).to_owned()))
                        .collect(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(doc.id)
        })
    }

    /// Removes the value of `metadata_type` from `document` offline (a type the document's
    /// type requires cannot be removed, as online), pushed at the next sync.
    pub fn remove_value(&self, document: DocumentId, metadata_type: MetadataTypeId) -> Result<()> {
        let _one = self.syncing.lock();
        self.write_value(document, metadata_type, None).map(drop)
    }

    /// Takes a workflow transition offline, as
    /// [`Session::transition_workflow`](crate::Session::transition_workflow) does on the
    /// server: the instance must be in the transition's origin and the transition's condition
    /// must allow it, evaluated on the replica (a refusal is the error the server would give);
    /// the instance moves at once, with a log entry, and the transition is pushed at the next
    /// [`sync`](Self::sync), based on the state the instance was in. There the server takes
    /// it through the user's session (who may take it is decided there; its actions run
    /// there) or finds it in conflict (the instance moved since); see
    /// [`rejected`](Self::rejected). A document made offline takes transitions once a sync
    /// has created it on the server (`Validation` on `document` before).
    pub fn transition_workflow(
        &self,
        document: DocumentId,
        instance: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        let _one = self.syncing.lock();
        self.transition_local(document, instance, transition, comment)
    }

    fn transition_local(
        &self,
        document: DocumentId,
        instance: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        // What the replica's user may not see is not found, as online.
        self.session().workflow_instance(document, instance)?;
        if document.0 >= LOCAL_IDS {
            return Err(Error::validation(
                "document",
                "A document made offline takes workflow transitions once a sync has created it \
                 on the server.",
            ));
        }
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let base = u.tx.workflow_instance(instance)?.and_then(|i| i.state_id);
            let entry = admin.transition_in(u, document, instance, transition, comment)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change: PushedChange::Transition {
                    instance,
                    transition,
                    comment: comment.to_owned(),
                    base,
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(entry)
        })
    }

    /// The writes made offline and not pushed yet, in the order made (one per value: a later
    /// write of the same value replaces the earlier, keeping the value it was based on).
    pub fn pending(&self) -> Result<Vec<PushedWrite>> {
        writes(self.local.read(|tx| tx.setting(PENDING))?)
    }

    /// The writes the server did not apply (see [`RejectedWrite`]), oldest first.
    pub fn rejected(&self) -> Result<Vec<RejectedWrite>> {
        rejected_writes(self.local.read(|tx| tx.setting(REJECTED))?)
    }

    /// Forgets a rejected write (the replica already shows the server's value).
    pub fn discard(&self, key: &str) -> Result<()> {
        let _one = self.syncing.lock();
        self.local.write(Actor::System, |u| {
            let mut rejected = rejected_writes(u.tx.setting(REJECTED)?)?;
            let before = rejected.len();
            rejected.retain(|r| r.write.key != key);
            if rejected.len() == before {
                return Err(Error::not_found(format!("rejected write {key}")));
            }
            u.tx.set_setting(REJECTED, &rejected_text(&rejected))?;
            // A file's bytes go with it.
            let mut files = held_files(u.tx.setting(FILES)?)?;
            if let Some(h) = files.remove(key) {
                u.tx.set_setting(FILES, &held_files_text(&files))?;
                u.unlink.push(h.name);
            }
            Ok(())
        })?;
        self.local.file_storage().purge_deleted()
    }

    /// Makes a rejected write again, now based on the value the replica holds (the server's,
    /// after a conflict): "mine over theirs". It runs through the pipeline again and is pushed
    /// at the next sync.
    pub fn retry(&self, key: &str) -> Result<()> {
        let _one = self.syncing.lock();
        let rejected = rejected_writes(self.local.read(|tx| tx.setting(REJECTED))?)?;
        let found = rejected
            .into_iter()
            .find(|r| r.write.key == key)
            .ok_or_else(|| Error::not_found(format!("rejected write {key}")))?;
        let w = found.write;
        match &w.change {
            PushedChange::Set {
                metadata_type,
                value,
                ..
            } => {
                self.write_value(w.document, *metadata_type, Some(value))?;
            }
            PushedChange::Remove { metadata_type, .. } => {
                self.write_value(w.document, *metadata_type, None)?;
            }
            // The document was refused: made again, under a new local id.
            PushedChange::Create {
                document_type,
                label,
                values,
            } => {
                let values: Vec<(MetadataTypeId, &str)> =
                    values.iter().map(|(mt, v)| (*mt, v.as_str())).collect();
                self.create_local(*document_type, label, &values)?;
            }
            // Added again, with the bytes kept, under a new key and a new local id.
            PushedChange::AddFile { filename, .. } => {
                self.add_again(key, w.document, filename)?;
            }
            // Taken again from the state the instance is in now (the server's, after a
            // conflict): refused here when the transition no longer leaves it.
            PushedChange::Transition {
                instance,
                transition,
                comment,
                ..
            } => {
                self.transition_local(w.document, *instance, *transition, comment)?;
            }
        }
        self.local.write_system(|tx| {
            let mut rejected = rejected_writes(tx.setting(REJECTED)?)?;
            rejected.retain(|r| r.write.key != key);
            tx.set_setting(REJECTED, &rejected_text(&rejected))
        })
    }

    /// A refused file added again from the bytes its write `key` kept: a new local record on
    /// `document`, queued under a new key.
    fn add_again(&self, key: &str, document: DocumentId, filename: &str) -> Result<()> {
        self.session().document(document)?;
        let again = random_key()?;
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            let h = files
                .remove(key)
                .ok_or_else(|| corrupt("files added offline"))?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: document,
                    filename: filename.to_owned(),
                    size: h.size,
                    checksum: h.checksum.clone(),
                    mimetype: crate::files::guess_mime(filename),
                    created: crate::model::now(),
                },
                &h.name,
                h.encrypted,
            )?;
            files.insert(again.clone(), h);
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: again.clone(),
                document,
                change: PushedChange::AddFile {
                    file: file.id,
                    filename: filename.to_owned(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))
        })
    }

    /// A write of one value (`None`: its removal) stored in the replica and queued, in one
    /// transaction; answers the id of the value set.
    fn write_value(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: Option<&str>,
    ) -> Result<Option<DocumentMetadataId>> {
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            let current =
                u.tx.metadata_of_document(document)?
                    .into_iter()
                    .find(|m| m.metadata_type_id == metadata_type);
            if let Some(at) = pending
                .iter()
                .position(|p| p.document == document && p.is_create())
            {
                // A document made offline: its create carries its values, as submitted.
                let id = match (value, &current) {
                    (Some(value), Some(m)) => {
                        admin.edit_document_metadata_in(u, document, m.id, value)?;
                        Some(m.id)
                    }
                    (Some(value), None) => Some(
                        admin
                            .add_document_metadata_in(u, document, metadata_type, value)?
                            .id,
                    ),
                    (None, Some(m)) => {
                        admin.remove_document_metadata_in(u, document, m.id)?;
                        None
                    }
                    (None, None) => return Err(no_value(document, metadata_type)),
                };
                if let PushedChange::Create { values, .. } = &mut pending[at].change {
                    values.retain(|(mt, _)| *mt != metadata_type);
                    if let Some(value) = value {
                        values.push((metadata_type, value.to_owned()));
                    }
                }
                u.tx.set_setting(PENDING, &writes_text(&pending))?;
                return Ok(id);
            }
            let same = |p: &PushedWrite| {
                p.document == document && p.metadata_type() == Some(metadata_type)
            };
            // Based on what the server held: an earlier write of the same value keeps its base.
            let base = match pending.iter().find(|p| same(p)).map(|p| &p.change) {
                Some(PushedChange::Set { base, .. } | PushedChange::Remove { base, .. }) => {
                    base.clone()
                }
                Some(
                    PushedChange::Create { .. }
                    | PushedChange::Transition { .. }
                    | PushedChange::AddFile { .. },
                )
                | None => current.as_ref().map(|m| m.value.clone()),
            };
            let (id, change) = match (value, &current) {
                (Some(value), Some(m)) => {
                    admin.edit_document_metadata_in(u, document, m.id, value)?;
                    (
                        Some(m.id),
                        PushedChange::Set {
                            metadata_type,
                            value: value.to_owned(),
                            base,
                        },
                    )
                }
                (Some(value), None) => {
                    let added =
                        admin.add_document_metadata_in(u, document, metadata_type, value)?;
                    (
                        Some(added.id),
                        PushedChange::Set {
                            metadata_type,
                            value: value.to_owned(),
                            base,
                        },
                    )
                }
                (None, Some(m)) => {
                    admin.remove_document_metadata_in(u, document, m.id)?;
                    (
                        None,
                        PushedChange::Remove {
                            metadata_type,
                            base,
                        },
                    )
                }
                (None, None) => return Err(no_value(document, metadata_type)),
            };
            pending.retain(|p| !same(p));
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change,
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(id)
        })
    }

    /// Stores a batch and its cursor in one transaction.
    fn store(&self, batch: &SyncBatch) -> Result<()> {
        self.store_batch(batch)?;
        // The bytes of files gone from the replica go at once, not after the storage's day of
        // grace: nothing of what the user may no longer see stays.
        self.local.file_storage().purge_deleted()
    }

    fn store_batch(&self, batch: &SyncBatch) -> Result<()> {
        let shaper = self.user.0.to_string();
        let (received, removed) = (&batch.documents, &batch.removed);
        self.local.write(Actor::System, |u| {
            if let Some(schema) = &batch.schema {
                let before = (u.tx.document_types()?, u.tx.metadata_types()?);
                u.tx.mirror_document_types(&schema.document_types)?;
                u.tx.mirror_metadata_types(&schema.metadata_types, &shaper)?;
                // The types written to without being viewed as types: held, not listed.
                let (write_document_types, write_metadata_types) = write_types(schema);
                let ids: Vec<DocumentTypeId> = write_document_types.iter().map(|t| t.id).collect();
                u.tx.mirror_document_type_ids(&ids)?;
                u.tx.mirror_metadata_types(&write_metadata_types, &shaper)?;
                u.invalidated
                    .extend(write_metadata_types.iter().map(|t| t.id));
                let associations: Vec<_> = (schema.associations.iter())
                    .chain(&schema.write_associations)
                    .map(|a| a.association)
                    .collect();
                u.tx.mirror_associations(&associations)?;
                self.mirror_cabinets(u, &schema.cabinets)?;
                self.mirror_workflows(u, &schema.workflows, &shaper)?;
                let encrypted = if schema.files_encrypted { "1" } else { "0" };
                u.tx.set_setting(SERVER_ENCRYPTED, encrypted)?;
                // The search records of documents carry their types' labels: those whose
                // type changed are indexed again (the index follows these events).
                for t in &schema.document_types {
                    if !before.0.contains(t) {
                        u.event(
                            names::DOCUMENT_TYPE_EDITED,
                            object(DOCUMENT_TYPE, t.id.0, &t.label),
                            None,
                            Default::default(),
                        )?;
                    }
                }
                for t in &schema.metadata_types {
                    u.invalidated.push(t.id);
                    if !before.1.contains(t) {
                        u.event(
                            names::METADATA_TYPE_EDITED,
                            object(METADATA_TYPE, t.id.0, &t.label),
                            None,
                            Default::default(),
                        )?;
                    }
                }
            }
            for d in received {
                store_document(u, d, &shaper)?;
            }
            for id in removed {
                remove_document(u, *id)?;
            }
            if let Some(schema) = &batch.schema {
                let keep_document_types: Vec<_> =
                    schema.document_types.iter().map(|t| t.id).collect();
                let keep_metadata_types: Vec<_> =
                    schema.metadata_types.iter().map(|t| t.id).collect();
                let (write_document_types, write_metadata_types) = write_types(schema);
                let held_document_types: Vec<_> = (keep_document_types.iter().copied())
                    .chain(write_document_types.iter().map(|t| t.id))
                    .collect();
                let held_metadata_types: Vec<_> = (keep_metadata_types.iter().copied())
                    .chain(write_metadata_types.iter().map(|t| t.id))
                    .collect();
                let dropped =
                    u.tx.mirror_drop_unused_types(&held_document_types, &held_metadata_types)?;
                self.forget_types(u, &dropped)?;
                // The types the user may view as types on the server are those the replica's
                // user may view (a type held only for a document or a value it has is not).
                let admin = self.local.system();
                for t in u.tx.document_types()? {
                    let o = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.id.0);
                    if keep_document_types.contains(&t.id) {
                        admin.grant_in(u, Permission::DocumentTypeView, self.role, o)?;
                    } else {
                        admin.revoke_in(u, Permission::DocumentTypeView, self.role, o)?;
                    }
                }
                for t in u.tx.metadata_types()? {
                    let o = ObjectRef::new(ObjectKind::METADATA_TYPE, t.id.0);
                    if keep_metadata_types.contains(&t.id) {
                        admin.grant_in(u, Permission::MetadataTypeView, self.role, o)?;
                    } else {
                        admin.revoke_in(u, Permission::MetadataTypeView, self.role, o)?;
                    }
                }
            }
            keep_held_files(u)?;
            u.tx.set_setting(CURSOR, &batch.cursor.token())
        })
    }

    /// Removes everything synced, and the device's token and cursor: the server no longer
    /// accepts the device.
    fn forget_everything(&self) -> Result<()> {
        self.forget_all()?;
        self.local.file_storage().purge_deleted()
    }

    fn forget_all(&self) -> Result<()> {
        self.local.write(Actor::System, |u| {
            // The documents made offline and not pushed yet are the user's own work: kept
            // (with their pending creates) for the next sign-in.
            for id in u.tx.document_ids(None)? {
                if id.0 < LOCAL_IDS {
                    remove_document(u, id)?;
                }
            }
            u.tx.mirror_associations(&[])?;
            self.mirror_cabinets(u, &[])?;
            self.mirror_workflows(u, &[], "")?;
            let dropped = u.tx.mirror_drop_unused_types(&[], &[])?;
            self.forget_types(u, &dropped)?;
            for key in [DEVICE, TOKEN, CURSOR] {
                u.tx.delete_setting(key)?;
            }
            keep_held_files(u)
        })
    }
}

impl Replica {
    /// Holds `visible` as the replica's cabinets: its user views exactly those (an ACL on
    /// each; a parent the user may not view is held without a label and without one).
    fn mirror_cabinets(&self, u: &mut Unit<'_>, visible: &[Cabinet]) -> Result<()> {
        let (gone, hidden) = u.tx.mirror_cabinets(visible)?;
        for id in gone {
            u.forget_object(CABINET, ObjectRef::new(ObjectKind::CABINET, id.0))?;
        }
        let admin = self.local.system();
        for c in visible {
            let o = ObjectRef::new(ObjectKind::CABINET, c.id.0);
            admin.grant_in(u, Permission::CabinetView, self.role, o)?;
        }
        for id in hidden {
            let o = ObjectRef::new(ObjectKind::CABINET, id.0);
            admin.revoke_in(u, Permission::CabinetView, self.role, o)?;
        }
        Ok(())
    }

    /// Holds `workflows` as the replica's: its user views exactly those (an ACL on each).
    fn mirror_workflows(
        &self,
        u: &mut Unit<'_>,
        workflows: &[SyncedWorkflow],
        shaper: &str,
    ) -> Result<()> {
        for id in u.tx.mirror_workflows(workflows, shaper)? {
            u.forget_object(WORKFLOW, ObjectRef::new(ObjectKind::WORKFLOW, id.0))?;
        }
        let admin = self.local.system();
        for w in workflows {
            let o = ObjectRef::new(ObjectKind::WORKFLOW, w.workflow.id.0);
            admin.grant_in(u, Permission::WorkflowTemplateView, self.role, o)?;
        }
        Ok(())
    }

    /// Removes what protects types the replica no longer holds (their ACLs).
    fn forget_types(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        (document_types, metadata_types): &(Vec<DocumentTypeId>, Vec<MetadataTypeId>),
    ) -> Result<()> {
        for t in document_types {
            u.forget_object(
                DOCUMENT_TYPE,
                ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0),
            )?;
        }
        for t in metadata_types {
            u.forget_object(
                METADATA_TYPE,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            )?;
        }
        Ok(())
    }
}

/// The document types and metadata types of a schema's write associations (see
/// [`SyncSchema::write_associations`]), each once.
fn write_types(schema: &SyncSchema) -> (Vec<DocumentType>, Vec<MetadataType>) {
    let mut document_types: Vec<DocumentType> = Vec::new();
    let mut metadata_types: Vec<MetadataType> = Vec::new();
    for a in &schema.write_associations {
        if !document_types.iter().any(|t| t.id == a.document_type.id) {
            document_types.push(a.document_type.clone());
        }
        if !metadata_types.iter().any(|t| t.id == a.metadata_type.id) {
            metadata_types.push(a.metadata_type.clone());
        }
    }
    (document_types, metadata_types)
}

/// Removes a document, its values, files and index entries, in `u`.
fn remove_document(u: &mut Unit<'_>, id: DocumentId) -> Result<()> {
    let fetched = u.tx.mirror_remove_document(id)?;
    u.unlink.extend(fetched);
    u.forget_object(DOCUMENT, ObjectRef::new(ObjectKind::DOCUMENT, id.0))?;
    u.event(
        names::REPLICA_DOCUMENT_REMOVED,
        object(DOCUMENT, id.0, ""),
        None,
        Default::default(),
    )
}

fn no_value(document: DocumentId, metadata_type: MetadataTypeId) -> Error {
    Error::not_found(format!(
        "a value of metadata type {metadata_type} on document {document}"
    ))
}

/// Stores a document as the server sent it, in `u`.
fn store_document(u: &mut Unit<'_>, d: &SyncedDocument, shaper: &str) -> Result<()> {
    // The types a document and its values need, also those the user may not view as types (a
    // document's type, a value's type, as the server shows them).
    let view = &d.document;
    u.tx.mirror_document_types(std::slice::from_ref(&view.document_type))?;
    let types: Vec<MetadataType> = d
        .values
        .iter()
        .filter_map(|v| v.metadata_type.clone())
        .collect();
    u.tx.mirror_metadata_types(&types, shaper)?;
    u.invalidated.extend(types.iter().map(|t| t.id));
    let values: Vec<DocumentMetadata> = d.values.iter().map(|v| v.value.clone()).collect();
    let unneeded =
        u.tx.mirror_document(&view.document, &values, &d.files, &d.cabinets, &d.workflows)?;
    u.unlink.extend(unneeded);
    // The access snapshot counts documents by type and knows each one's type.
    u.access.push(crate::session::parents_change(
        ObjectRef::new(ObjectKind::DOCUMENT, view.document.id.0),
        vec![ObjectRef::new(
            ObjectKind::DOCUMENT_TYPE,
            view.document_type.id.0,
        )],
    ));
    u.event(
        names::REPLICA_DOCUMENT_SYNCED,
        object(DOCUMENT, view.document.id.0, &view.document.label),
        None,
        Default::default(),
    )
}

/// Creates the replica's own user, in a group given a role that views every document and
/// value the replica holds (and, by ACLs set at each sync, the types its user may view as
/// types on the server). It never signs in: it has no password.
fn local_user(local: &Docmeta, username: &str, address: &str) -> Result<(UserId, RoleId)> {
    let admin = local.system();
    // No password at all: the stored hash is one no password verifies against (and no
    // Argon2 work is spent on opening a replica).
    let user = local.write(Actor::System, |u| {
        let user = u.tx.insert_user(username, NO_PASSWORD, false)?;
        u.access.push(crate::kernel::AccessChange::User {
            id: user.id,
            superuser: false,
            active: true,
        });
        Ok(user.id)
    })?;
    let group = admin.create_group("replica")?.id;
    let role = admin.create_role("replica")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    for p in [Permission::DocumentView, Permission::DocumentMetadataView] {
        admin.grant_global(p, role)?;
    }
    local.write_system(|tx| {
        tx.set_setting(SERVER, address)?;
        tx.set_setting(USERNAME, username)?;
        tx.set_setting(ROLE, &role.0.to_string())?;
        tx.set_setting(USER, &user.0.to_string())
    })?;
    Ok((user, role))
}

/// Makes the records made offline in `u` (documents, values, and the workflow instances and
/// log entries workflows make with them) take ids at or above [`LOCAL_IDS`].
fn reserve_local_ids(u: &mut Unit<'_>) -> Result<()> {
    for table in LOCAL_TABLES {
        u.tx.reserve_local_ids(table, LOCAL_IDS)?;
    }
    Ok(())
}

/// Where the bytes of a file added offline wait for their push (see [`FILES`]).
#[derive(Debug, Clone)]
struct HeldFile {
    name: String,
    checksum: String,
    size: u64,
    encrypted: bool,
}

fn held_files(text: Option<String>) -> Result<std::collections::BTreeMap<String, HeldFile>> {
    let Some(text) = text else {
        return Ok(Default::default());
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|_| corrupt("files added offline"))?;
    let entries = v
        .as_object()
        .ok_or_else(|| corrupt("files added offline"))?;
    entries
        .iter()
        .map(|(key, e)| {
            Some((
                key.clone(),
                HeldFile {
                    name: e["name"].as_str()?.to_owned(),
                    checksum: e["checksum"].as_str()?.to_owned(),
                    size: e["size"].as_u64()?,
                    encrypted: e["encrypted"].as_bool()?,
                },
            ))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| corrupt("files added offline"))
}

fn held_files_text(files: &std::collections::BTreeMap<String, HeldFile>) -> String {
    serde_json::Value::Object(
        files
            .iter()
            .map(|(k, h)| {
                (
                    k.clone(),
                    serde_json::json!({
                        "name": h.name, "checksum": h.checksum, "size": h.size,
                        "encrypted": h.encrypted,
                    }),
                )
            })
            .collect(),
    )
    .to_string()
}

/// Keeps the bytes of the files added offline that writes still need out of what `u` unlinks
/// (a document stored or removed drops its local file records, not those bytes).
fn keep_held_files(u: &mut Unit<'_>) -> Result<()> {
    let files = held_files(u.tx.setting(FILES)?)?;
    u.unlink.retain(|n| !files.values().any(|h| h.name == *n));
    Ok(())
}

/// A random key for a write.
fn random_key() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Storage {
        operation: "drawing a random key".into(),
        source: e.to_string().into(),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

// ----- the queues, kept as JSON in the replica's settings ---------------------------------------

fn write_json(w: &PushedWrite) -> serde_json::Value {
    let (key, document) = (&w.key, w.document.0);
    match &w.change {
        PushedChange::Set {
            metadata_type,
            value,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "set",
            "metadata_type": metadata_type.0, "value": value, "base": base,
        }),
        PushedChange::Remove {
            metadata_type,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "remove",
            "metadata_type": metadata_type.0, "base": base,
        }),
        PushedChange::Create {
            document_type,
            label,
            values,
        } => serde_json::json!({
            "key": key, "document": document, "action": "create",
            "document_type": document_type.0, "label": label,
            "values": values.iter().map(|(mt, v)| serde_json::json!([mt.0, v])).collect::<Vec<_>>(),
        }),
        PushedChange::AddFile { file, filename } => serde_json::json!({
            "key": key, "document": document, "action": "file", "file": file.0,
            "filename": filename,
        }),
        PushedChange::Transition {
            instance,
            transition,
            comment,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "transition",
            "instance": instance.0, "transition": transition.0, "comment": comment,
            "base": base.map(|s| s.0),
        }),
    }
}

fn write_from(v: &serde_json::Value) -> Option<PushedWrite> {
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    let base = text("base");
    let metadata_type = || v["metadata_type"].as_i64().map(MetadataTypeId);
    Some(PushedWrite {
        key: text("key")?,
        document: DocumentId(v["document"].as_i64()?),
        change: match v["action"].as_str()? {
            "set" => PushedChange::Set {
                metadata_type: metadata_type()?,
                value: text("value")?,
                base,
            },
            "remove" => PushedChange::Remove {
                metadata_type: metadata_type()?,
                base,
            },
            "create" => PushedChange::Create {
                document_type: DocumentTypeId(v["document_type"].as_i64()?),
                label: text("label")?,
                values: v["values"]
                    .as_array()?
                    .iter()
                    .map(|e| Some((MetadataTypeId(e[0].as_i64()?), e[1].as_str()?.to_owned())))
                    .collect::<Option<Vec<_>>>()?,
            },
            "file" => PushedChange::AddFile {
                file: DocumentFileId(v["file"].as_i64()?),
                filename: text("filename")?,
            },
            "transition" => PushedChange::Transition {
                instance: WorkflowInstanceId(v["instance"].as_i64()?),
                transition: WorkflowTransitionId(v["transition"].as_i64()?),
                comment: text("comment")?,
                base: match &v["base"] {
                    serde_json::Value::Null => None,
                    b => Some(WorkflowStateId(b.as_i64()?)),
                },
            },
            _ => return None,
        },
    })
}

fn result_json(r: &PushResult) -> serde_json::Value {
    match r {
        PushResult::Applied => serde_json::json!({"status": "applied"}),
        PushResult::Conflict { server } => {
            serde_json::json!({"status": "conflict", "server": server})
        }
        PushResult::Refused {
            kind,
            field,
            message,
        } => serde_json::json!({
            "status": "refused", "kind": kind.name(), "field": field, "message": message,
        }),
    }
}

fn result_from(v: &serde_json::Value) -> Option<PushResult> {
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    Some(match v["status"].as_str()? {
        "applied" => PushResult::Applied,
        "conflict" => PushResult::Conflict {
            server: text("server"),
        },
        "refused" => PushResult::Refused {
            kind: crate::error::ErrorKind::from_name(v["kind"].as_str()?)?,
            field: text("field"),
            message: text("message")?,
        },
        _ => return None,
    })
}

fn corrupt(what: &str) -> Error {
    Error::InvalidInput(format!(
        "the replica's {what} cannot be read: its database was altered outside docmeta"
    ))
}

/// The entries of a queue kept as a JSON array, each read by `entry`.
fn queue<T>(
    text: Option<String>,
    what: &str,
    entry: impl Fn(&serde_json::Value) -> Option<T>,
) -> Result<Vec<T>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| corrupt(what))?;
    v.as_array()
        .ok_or_else(|| corrupt(what))?
        .iter()
        .map(|e| entry(e).ok_or_else(|| corrupt(what)))
        .collect()
}

fn writes(text: Option<String>) -> Result<Vec<PushedWrite>> {
    queue(text, "pending writes", write_from)
}

fn writes_text(writes: &[PushedWrite]) -> String {
    serde_json::Value::Array(writes.iter().map(write_json).collect()).to_string()
}

fn rejected_writes(text: Option<String>) -> Result<Vec<RejectedWrite>> {
    queue(text, "rejected writes", |r| {
        Some(RejectedWrite {
            write: write_from(&r["write"])?,
            result: result_from(&r["result"])?,
        })
    })
}

fn rejected_text(rejected: &[RejectedWrite]) -> String {
    serde_json::Value::Array(
        rejected
            .iter()
            .map(|r| serde_json::json!({"write": write_json(&r.write), "result": result_json(&r.result)}))
            .collect(),
    )
    .to_string()
}

const DOCUMENT_TYPE: &str = "documents.documenttype";
const CABINET: &str = "cabinets.cabinet";
const WORKFLOW: &str = "document_states.workflow";
const METADATA_TYPE: &str = "metadata.metadatatype";

fn object(kind: &str, id: i64, label: &str) -> EventObject {
    EventObject {
        kind: kind.to_owned(),
        id,
        label: label.to_owned(),
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
