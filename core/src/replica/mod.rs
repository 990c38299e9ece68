//! A replica: a data directory on a device that holds what one user may see on a docmeta
//! server, and answers reads and searches offline with the same calls and records as a session
//! on the server.
//!
//! [`Replica::open`] signs the device in once with the user's password and keeps a device
//! token instead (no password is stored). [`Replica::sync`] pulls what changed since the
//! replica's cursor (see [`Session::sync_changes`](crate::Session::sync_changes)): each batch
//! is stored, with the cursor, in one transaction of the replica's own database, so a sync cut
//! off anywhere goes on from the last batch stored. [`Replica::session`] reads it: documents,
//! values with their types, file records, document and metadata types and associations, and
//! the search index over them.
//!
//! Not built yet: writes made offline and pushed back, file bytes, cabinets and workflows.
//!
//! Layer 9 (with `backup` and `installation`): it opens a whole data directory with the
//! builder.

mod remote;

use std::path::Path;

pub use remote::{HttpServer, InProcessServer, Pulled, SignedIn, SyncServer};

use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::{Error, Result};
use crate::events::{EventObject, names};
use crate::kernel::Docmeta;
use crate::model::*;
use crate::session::{MAX_SYNC_BATCH, Session};

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

const DOCUMENT: &str = "documents.document";

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
    /// Whether the server has more ready now (`false` at the end).
    pub more: bool,
}

/// A replica of what one user may see on a server (see the [module](self) documentation).
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
        let server = HttpServer::new(&remote.url)?;
        Replica::open_with(dir, server, &remote.username, &remote.password)
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
        let local = Docmeta::builder().data_dir(dir).worker(false).open()?;
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
        let (device, token, cursor) = self
            .local
            .read(|tx| Ok((tx.setting(DEVICE)?, tx.setting(TOKEN)?, tx.setting(CURSOR)?)))?;
        let (Some(device), Some(token)) = (device.and_then(|d| d.parse().ok()), token) else {
            return Err(signed_out());
        };
        if let Some(cursor) = cursor.map(|c| SyncCursor::parse(&c)).transpose()? {
            let signed = SignedIn {
                device: DeviceId(device),
                token,
            };
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
        let (device, token, cursor) = self
            .local
            .read(|tx| Ok((tx.setting(DEVICE)?, tx.setting(TOKEN)?, tx.setting(CURSOR)?)))?;
        let (Some(device), Some(token)) = (device.and_then(|d| d.parse().ok()), token) else {
            return Err(signed_out());
        };
        let signed = SignedIn {
            device: DeviceId(device),
            token,
        };
        let mut cursor = cursor.map(|c| SyncCursor::parse(&c)).transpose()?;
        let mut done = SyncProgress::default();
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

    /// Stores a batch and its cursor in one transaction.
    fn store(&self, batch: &SyncBatch) -> Result<()> {
        let shaper = self.user.0.to_string();
        let (received, removed) = (&batch.documents, &batch.removed);
        self.local.write(Actor::System, |u| {
            if let Some(schema) = &batch.schema {
                let before = (u.tx.document_types()?, u.tx.metadata_types()?);
                u.tx.mirror_document_types(&schema.document_types)?;
                u.tx.mirror_metadata_types(&schema.metadata_types, &shaper)?;
                let associations: Vec<_> =
                    schema.associations.iter().map(|a| a.association).collect();
                u.tx.mirror_associations(&associations)?;
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
                // The types a document and its values need, also those the user may not
                // view as types (a document's type, a value's type, as the server shows them).
                let view = &d.document;
                u.tx.mirror_document_types(std::slice::from_ref(&view.document_type))?;
                let types: Vec<MetadataType> = d
                    .values
                    .iter()
                    .filter_map(|v| v.metadata_type.clone())
                    .collect();
                u.tx.mirror_metadata_types(&types, &shaper)?;
                u.invalidated.extend(types.iter().map(|t| t.id));
                let values: Vec<DocumentMetadata> =
                    d.values.iter().map(|v| v.value.clone()).collect();
                u.tx.mirror_document(&view.document, &values, &d.files)?;
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
                )?;
            }
            for id in removed {
                u.tx.mirror_remove_document(*id)?;
                u.forget_object(DOCUMENT, ObjectRef::new(ObjectKind::DOCUMENT, id.0))?;
                u.event(
                    names::REPLICA_DOCUMENT_REMOVED,
                    object(DOCUMENT, id.0, ""),
                    None,
                    Default::default(),
                )?;
            }
            if let Some(schema) = &batch.schema {
                let keep_document_types: Vec<_> =
                    schema.document_types.iter().map(|t| t.id).collect();
                let keep_metadata_types: Vec<_> =
                    schema.metadata_types.iter().map(|t| t.id).collect();
                let dropped =
                    u.tx.mirror_drop_unused_types(&keep_document_types, &keep_metadata_types)?;
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
            u.tx.set_setting(CURSOR, &batch.cursor.token())
        })
    }

    /// Removes everything synced, and the device's token and cursor: the server no longer
    /// accepts the device.
    fn forget_everything(&self) -> Result<()> {
        self.local.write(Actor::System, |u| {
            for id in u.tx.document_ids(None)? {
                u.tx.mirror_remove_document(id)?;
                u.forget_object(DOCUMENT, ObjectRef::new(ObjectKind::DOCUMENT, id.0))?;
                u.event(
                    names::REPLICA_DOCUMENT_REMOVED,
                    object(DOCUMENT, id.0, ""),
                    None,
                    Default::default(),
                )?;
            }
            u.tx.mirror_associations(&[])?;
            let dropped = u.tx.mirror_drop_unused_types(&[], &[])?;
            self.forget_types(u, &dropped)?;
            for key in [DEVICE, TOKEN, CURSOR] {
                u.tx.delete_setting(key)?;
            }
            Ok(())
        })
    }
}

impl Replica {
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

/// Creates the replica's own user, in a group given a role that views every document and
/// value the replica holds (and, by ACLs set at each sync, the types its user may view as
/// types on the server). It never signs in: its password is random and not kept.
fn local_user(local: &Docmeta, username: &str, address: &str) -> Result<(UserId, RoleId)> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| Error::Storage {
        operation: "drawing a random password".into(),
        source: e.to_string().into(),
    })?;
    let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let admin = local.system();
    let user = admin.create_user(username, &secret, false)?.id;
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

const DOCUMENT_TYPE: &str = "documents.documenttype";
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
