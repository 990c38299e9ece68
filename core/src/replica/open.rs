//! Opening a replica: [`ReplicaBuilder`] (its own database, the file storage encrypted when
//! asked), the replica's own user the first time, and its device signed in on the server (once,
//! and again only after the server refused the device).
//!
//! Part of `replica` (layer 9 of `scripts/check-structure`): it may import only what `replica`
//! may (see `replica`'s module documentation).

use std::path::Path;

use super::{
    DEVICE, DEVICE_NAME, HttpServer, ROLE, Replica, SERVER, SyncServer, TOKEN, USER, USERNAME,
};
use crate::access::Permission;
use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::*;

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

    /// [`open`](Self::open) with any [`SyncServer`] (an
    /// [`InProcessServer`](super::InProcessServer), say).
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
