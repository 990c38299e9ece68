//! Kotlin and Swift bindings of docmeta, through uniffi proc-macros (no UDL).
//!
//! Objects: [`Docmeta`] (thread-safe, share one per process) and [`Session`]. Records carry
//! plain ids; times are `java.time.Instant` / `Date`. Every failure is a [`DocmetaError`]
//! (a Kotlin exception, a Swift `throws`) mirroring the core's error kinds. Nothing is async:
//! callers use their own threads or coroutines. Events reach an [`EventListener`] implemented
//! in the foreign language.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use docmeta_core as core;
use docmeta_core::{ErrorKind, ObjectRef, Permission};

uniffi::setup_scaffolding!("docmeta");

/// A docmeta failure, by kind. (`reason`, not `message`: Kotlin exceptions already have one.)
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum DocmetaError {
    /// Invalid input for a field.
    #[error("{field}: {reason}")]
    Validation {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// The user may see the object but not do this.
    #[error("{reason}")]
    PermissionDenied {
        /// Why.
        reason: String,
    },
    /// No such object, or one the user may not see.
    #[error("{reason}")]
    NotFound {
        /// What.
        reason: String,
    },
    /// A uniqueness rule or state conflict.
    #[error("{field}: {reason}")]
    Conflict {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// Malformed input (a search query, an argument).
    #[error("{reason}")]
    InvalidInput {
        /// Why.
        reason: String,
    },
    /// Encrypted data could not be decrypted (InvalidTag).
    #[error("{reason}")]
    Decryption {
        /// Why.
        reason: String,
    },
    /// The operation's deadline passed before it committed: nothing was changed.
    #[error("{reason}")]
    DeadlineExceeded {
        /// What ran out of time.
        reason: String,
    },
    /// The database, the file system or another backing service failed.
    #[error("{reason}")]
    Storage {
        /// What failed.
        reason: String,
    },
    /// The disk (or a quota) is full: nothing was stored, and the same call may succeed once
    /// space is freed.
    #[error("{reason}")]
    StorageFull {
        /// What could not be stored.
        reason: String,
    },
}

impl From<core::Error> for DocmetaError {
    fn from(e: core::Error) -> Self {
        let message = e.to_string();
        match e {
            core::Error::Validation { field, message } => DocmetaError::Validation {
                field,
                reason: message,
            },
            core::Error::Conflict { field, message } => DocmetaError::Conflict {
                field,
                reason: message,
            },
            other => match other.kind() {
                ErrorKind::PermissionDenied => DocmetaError::PermissionDenied { reason: message },
                ErrorKind::NotFound => DocmetaError::NotFound { reason: message },
                ErrorKind::InvalidInput => DocmetaError::InvalidInput { reason: message },
                ErrorKind::Decryption => DocmetaError::Decryption { reason: message },
                ErrorKind::Timeout => DocmetaError::DeadlineExceeded { reason: message },
                ErrorKind::StorageFull => DocmetaError::StorageFull { reason: message },
                _ => DocmetaError::Storage { reason: message },
            },
        }
    }
}

type Result<T> = std::result::Result<T, DocmetaError>;

fn permission(key: &str) -> Result<Permission> {
    Ok(Permission::from_key(key)?)
}

/// A metadata type's definition (spec 2.1); empty strings for what is not used.
#[derive(Debug, Clone, uniffi::Record)]
pub struct MetadataTypeSpec {
    /// Unique name (an identifier).
    pub name: String,
    /// Label shown to users.
    pub label: String,
    /// Default value template.
    #[uniffi(default = "")]
    pub default_value: String,
    /// Lookup template (comma-separated choices).
    #[uniffi(default = "")]
    pub lookup: String,
    /// Validator class path.
    #[uniffi(default = "")]
    pub validation: String,
    /// Validator arguments (YAML).
    #[uniffi(default = "")]
    pub validation_arguments: String,
    /// Parser class path.
    #[uniffi(default = "")]
    pub parser: String,
    /// Parser arguments (YAML).
    #[uniffi(default = "")]
    pub parser_arguments: String,
}

/// A metadata type.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MetadataType {
    /// Identifier.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Label.
    pub label: String,
}

/// A document type.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentType {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
}

/// A document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Document {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
    /// Its type.
    pub document_type_id: i64,
    /// When it was created.
    pub created: SystemTime,
}

/// A metadata value to set: a type and the submitted value.
#[derive(Debug, Clone, uniffi::Record)]
pub struct NewValue {
    /// The metadata type.
    pub metadata_type_id: i64,
    /// The value as submitted (it goes through the pipeline of spec 2.10).
    pub value: String,
}

/// A metadata value of a document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentMetadata {
    /// Identifier.
    pub id: i64,
    /// The document.
    pub document_id: i64,
    /// The metadata type.
    pub metadata_type_id: i64,
    /// The stored value.
    pub value: String,
}

/// A file of a document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentFile {
    /// Identifier.
    pub id: i64,
    /// The document.
    pub document_id: i64,
    /// File name.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub checksum: String,
    /// MIME type.
    pub mimetype: String,
}

/// A document created together with its first file.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentWithFile {
    /// The document.
    pub document: Document,
    /// Its file.
    pub file: DocumentFile,
}

/// A state of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowState {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// Label.
    pub label: String,
    /// Whether instances start there.
    pub initial: bool,
}

fn workflow_state(s: core::WorkflowState) -> WorkflowState {
    WorkflowState {
        id: s.id.0,
        workflow_id: s.workflow_id.0,
        label: s.label,
        initial: s.initial,
    }
}

/// A transition of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowTransition {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// Label.
    pub label: String,
    /// The state it leaves.
    pub origin_state_id: i64,
    /// The state it enters.
    pub destination_state_id: i64,
    /// Its condition template (empty: always allowed).
    pub condition: String,
    /// The events that fire it.
    pub triggers: Vec<String>,
}

fn workflow_transition(t: core::WorkflowTransition) -> WorkflowTransition {
    WorkflowTransition {
        id: t.id.0,
        workflow_id: t.workflow_id.0,
        label: t.label,
        origin_state_id: t.origin_state_id.0,
        destination_state_id: t.destination_state_id.0,
        condition: t.condition,
        triggers: t.triggers,
    }
}

/// A user.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct User {
    /// Identifier.
    pub id: i64,
    /// Username.
    pub username: String,
    /// Superuser.
    pub is_superuser: bool,
    /// Active.
    pub is_active: bool,
}

/// An entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Event {
    /// Identifier.
    pub id: i64,
    /// Name, e.g. `metadata.document_metadata_added`.
    pub name: String,
    /// The acting user, if any.
    pub actor_id: Option<i64>,
    /// `app_label.model_name` of the target.
    pub target_kind: String,
    /// The target's id.
    pub target_id: i64,
    /// The target's label.
    pub target_label: String,
    /// When.
    pub timestamp: SystemTime,
}

/// A page of search results.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SearchPage {
    /// Visible results in all.
    pub count: u64,
    /// This page.
    pub results: Vec<Document>,
}

/// A workflow instance.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkflowInstance {
    /// Identifier.
    pub id: i64,
    /// The workflow.
    pub workflow_id: i64,
    /// The document.
    pub document_id: i64,
    /// The current state.
    pub state_id: Option<i64>,
}

fn document(d: core::Document) -> Document {
    Document {
        id: d.id.0,
        label: d.label,
        document_type_id: d.document_type_id.0,
        created: d.created.into(),
    }
}

fn value(m: core::DocumentMetadata) -> DocumentMetadata {
    DocumentMetadata {
        id: m.id.0,
        document_id: m.document_id.0,
        metadata_type_id: m.metadata_type_id.0,
        value: m.value,
    }
}

fn file(f: core::DocumentFile) -> DocumentFile {
    DocumentFile {
        id: f.id.0,
        document_id: f.document_id.0,
        filename: f.filename,
        size: f.size,
        checksum: f.checksum,
        mimetype: f.mimetype,
    }
}

fn event(e: &core::Event) -> Event {
    Event {
        id: e.id.0,
        name: e.name.clone(),
        actor_id: e.actor.map(|u| u.0),
        target_kind: e.target.kind.clone(),
        target_id: e.target.id,
        target_label: e.target.label.clone(),
        timestamp: e.timestamp.into(),
    }
}

/// Receives committed events; implemented in Kotlin or Swift. Called in the committing thread.
#[uniffi::export(with_foreign)]
pub trait EventListener: Send + Sync {
    /// One committed event.
    fn on_event(&self, event: Event);
}

/// A docmeta instance: thread-safe; open one per process and share it.
#[derive(uniffi::Object)]
pub struct Docmeta {
    inner: core::Docmeta,
    subscriptions: Mutex<HashMap<u64, core::SubscriptionId>>,
}

#[uniffi::export]
impl Docmeta {
    /// Opens (or creates) the data directory `path`; `password` unlocks the encrypted storage;
    /// `database_url` puts the records in PostgreSQL instead of the directory's SQLite file.
    #[uniffi::constructor(default(password = None, database_url = None))]
    pub fn open(
        path: String,
        password: Option<String>,
        database_url: Option<String>,
    ) -> Result<Arc<Self>> {
        let b = core::Docmeta::builder()
            .data_dir(PathBuf::from(path))
            .worker(true);
        let b = match &database_url {
            Some(url) => b.postgres(url),
            None => b,
        };
        let inner = match password {
            Some(p) => b.storage_password(p).open()?,
            None => b.open()?,
        };
        Ok(Arc::new(Docmeta {
            inner,
            subscriptions: Mutex::new(HashMap::new()),
        }))
    }

    /// A private in-memory instance (tests, examples).
    #[uniffi::constructor]
    pub fn in_memory() -> Result<Arc<Self>> {
        Ok(Arc::new(Docmeta {
            inner: core::Docmeta::in_memory()?,
            subscriptions: Mutex::new(HashMap::new()),
        }))
    }

    /// A session acting as user `user_id`.
    pub fn session(&self, user_id: i64) -> Arc<Session> {
        Arc::new(Session {
            inner: self.inner.session(core::UserId(user_id)),
        })
    }

    /// A session acting as docmeta itself (no permission checks).
    pub fn system(&self) -> Arc<Session> {
        Arc::new(Session {
            inner: self.inner.system(),
        })
    }

    /// Whether `user_id` may do `permission` on the object `kind` `object_id`.
    pub fn check(
        &self,
        user_id: i64,
        permission: String,
        kind: String,
        object_id: i64,
    ) -> Result<bool> {
        let p = self::permission(&permission)?;
        let kind = self.inner.parse_kind(&kind)?;
        Ok(self
            .inner
            .check(core::UserId(user_id), p, ObjectRef::new(kind, object_id)))
    }

    /// Sends every committed event to `listener`; returns an id for `unsubscribe`.
    pub fn subscribe(&self, listener: Arc<dyn EventListener>) -> u64 {
        let id = self.inner.subscribe(move |e| listener.on_event(event(e)));
        let mut subs = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        let n = subs.len() as u64 + 1 + subs.keys().max().copied().unwrap_or(0);
        subs.insert(n, id);
        n
    }

    /// Stops a subscription.
    pub fn unsubscribe(&self, id: u64) {
        let removed = self
            .subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(s) = removed {
            self.inner.unsubscribe(s);
        }
    }

    /// Runs every runnable durable task now; returns how many ran.
    pub fn run_pending_tasks(&self) -> Result<u64> {
        Ok(self.inner.run_pending_tasks()? as u64)
    }

    /// Rebuilds the search index; returns the documents indexed.
    pub fn search_reindex(&self) -> Result<u64> {
        Ok(self.inner.search_reindex(|_, _| {})? as u64)
    }

    /// Reads every stored document file and checks it against its record (present, size,
    /// SHA-256, every MENC chunk's tag); lists the damaged ones.
    pub fn verify_storage(&self) -> Result<StorageReport> {
        let r = self.inner.verify_storage(|_, _| {})?;
        Ok(StorageReport {
            files_checked: r.files_checked,
            bytes_checked: r.bytes_checked,
            damaged: r
                .damaged
                .into_iter()
                .map(|d| DamagedFile {
                    file_id: d.file_id.0,
                    document_id: d.document_id.0,
                    filename: d.filename,
                    storage_name: d.storage_name,
                    encrypted: d.encrypted,
                    damage: d.damage.kind().to_owned(),
                    detail: d.damage.to_string(),
                })
                .collect(),
        })
    }

    /// Backs the data directory up into `out` (incremental on `base`); returns the backup id.
    /// Document files it could not read intact are listed in the archive's manifest
    /// (`backup_damaged_files`).
    #[uniffi::method(default(base = None))]
    pub fn backup(&self, out: String, base: Option<String>) -> Result<String> {
        let base = base.map(PathBuf::from);
        Ok(self
            .inner
            .backup(&PathBuf::from(out), base.as_deref(), |_, _| {})?
            .manifest
            .info
            .id)
    }
}

/// A stored document file that is not what its record says.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DamagedFile {
    /// The document file.
    pub file_id: i64,
    /// Its document.
    pub document_id: i64,
    /// The uploaded file's name.
    pub filename: String,
    /// The generated name under `document_file_storage/`.
    pub storage_name: String,
    /// Whether the stored bytes are MENC.
    pub encrypted: bool,
    /// `missing`, `wrong_size`, `wrong_checksum`, `failed_authentication` or `unreadable`.
    pub damage: String,
    /// What is wrong, in words.
    pub detail: String,
}

/// What a check of every stored document file found.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct StorageReport {
    /// Files checked.
    pub files_checked: u64,
    /// Content bytes read.
    pub bytes_checked: u64,
    /// The damaged files; empty when every file is intact.
    pub damaged: Vec<DamagedFile>,
}

/// A document file a backup could not read intact.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DamagedBackupFile {
    /// Its path in the archive (`document_file_storage/..`).
    pub path: String,
    /// The document file, when the backup knew its record.
    pub document_file_id: Option<i64>,
    /// `missing`, `wrong_size`, `wrong_checksum`, `failed_authentication` or `unreadable`.
    pub damage: String,
    /// What is wrong, in words.
    pub detail: String,
}

/// The document files an archive's backup could not read intact (the archive is verified
/// first).
#[uniffi::export]
pub fn backup_damaged_files(archive: String) -> Result<Vec<DamagedBackupFile>> {
    Ok(core::backup::verify_backup(&PathBuf::from(archive))?
        .damaged
        .into_iter()
        .map(|d| DamagedBackupFile {
            path: d.path,
            document_file_id: d.document_file_id,
            damage: d.damage.kind().to_owned(),
            detail: d.damage.to_string(),
        })
        .collect())
}

/// Checks a backup archive without restoring it; returns its id.
#[uniffi::export]
pub fn verify_backup(archive: String) -> Result<String> {
    Ok(core::backup::verify_backup(&PathBuf::from(archive))?
        .info
        .id)
}

/// Restores backups into a data directory no docmeta has open; returns the document count.
#[uniffi::export(default(password = None, database_url = None))]
pub fn restore(
    archives: Vec<String>,
    data: String,
    password: Option<String>,
    database_url: Option<String>,
) -> Result<u64> {
    let archives: Vec<PathBuf> = archives.into_iter().map(PathBuf::from).collect();
    Ok(core::backup::restore_to(
        &archives,
        &PathBuf::from(data),
        password.as_deref().map(str::as_bytes),
        database_url.as_deref(),
    )?
    .documents)
}

/// Everything one actor does.
#[derive(uniffi::Object)]
pub struct Session {
    inner: core::Session,
}

impl Session {
    fn object(&self, kind: &str, id: i64) -> Result<ObjectRef> {
        Ok(ObjectRef::new(self.inner.parse_kind(kind)?, id))
    }
}

#[uniffi::export]
impl Session {
    /// Creates a metadata type.
    pub fn create_metadata_type(&self, spec: MetadataTypeSpec) -> Result<MetadataType> {
        let t = self.inner.create_metadata_type(core::MetadataTypeInput {
            name: spec.name,
            label: spec.label,
            default: spec.default_value,
            lookup: spec.lookup,
            validation: spec.validation,
            validation_arguments: spec.validation_arguments,
            parser: spec.parser,
            parser_arguments: spec.parser_arguments,
        })?;
        Ok(MetadataType {
            id: t.id.0,
            name: t.name,
            label: t.label,
        })
    }

    /// The metadata types this session may view.
    pub fn metadata_types(&self) -> Result<Vec<MetadataType>> {
        Ok(self
            .inner
            .metadata_types()?
            .into_iter()
            .map(|t| MetadataType {
                id: t.id.0,
                name: t.name,
                label: t.label,
            })
            .collect())
    }

    /// Creates a document type.
    pub fn create_document_type(&self, label: String) -> Result<DocumentType> {
        let t = self.inner.create_document_type(&label)?;
        Ok(DocumentType {
            id: t.id.0,
            label: t.label,
        })
    }

    /// Associates a metadata type with a document type; returns the association's id.
    pub fn associate(&self, document_type: i64, metadata_type: i64, required: bool) -> Result<i64> {
        Ok(self
            .inner
            .associate(
                core::DocumentTypeId(document_type),
                core::MetadataTypeId(metadata_type),
                required,
            )?
            .id
            .0)
    }

    /// Creates a document with metadata values.
    pub fn create_document(
        &self,
        document_type: i64,
        label: String,
        values: Vec<NewValue>,
    ) -> Result<Document> {
        let pairs: Vec<(core::MetadataTypeId, &str)> = values
            .iter()
            .map(|v| (core::MetadataTypeId(v.metadata_type_id), v.value.as_str()))
            .collect();
        Ok(document(self.inner.create_document(
            core::DocumentTypeId(document_type),
            &label,
            &pairs,
        )?))
    }

    /// Creates a document with its values and its first file, all or nothing.
    pub fn create_document_with_file(
        &self,
        document_type: i64,
        label: String,
        values: Vec<NewValue>,
        filename: String,
        data: Vec<u8>,
    ) -> Result<DocumentWithFile> {
        let pairs: Vec<(core::MetadataTypeId, &str)> = values
            .iter()
            .map(|v| (core::MetadataTypeId(v.metadata_type_id), v.value.as_str()))
            .collect();
        let (d, f) = self.inner.create_document_with_file(
            core::DocumentTypeId(document_type),
            &label,
            &pairs,
            &filename,
            &mut data.as_slice(),
        )?;
        Ok(DocumentWithFile {
            document: document(d),
            file: file(f),
        })
    }

    /// The choices a metadata type's lookup offers for a document (spec 2.7); `None` when any
    /// value is accepted.
    pub fn document_lookup_choices(
        &self,
        document: i64,
        metadata_type: i64,
    ) -> Result<Option<Vec<String>>> {
        Ok(self.inner.document_lookup_choices(
            core::DocumentId(document),
            core::MetadataTypeId(metadata_type),
        )?)
    }

    /// One document.
    pub fn document(&self, id: i64) -> Result<Document> {
        Ok(document(self.inner.document(core::DocumentId(id))?))
    }

    /// Up to `limit` documents after id `after` (0: from the start), optionally of one type.
    pub fn documents(
        &self,
        document_type: Option<i64>,
        after: i64,
        limit: u32,
    ) -> Result<Vec<Document>> {
        Ok(self
            .inner
            .documents(
                document_type.map(core::DocumentTypeId),
                core::DocumentId(after),
                limit,
            )?
            .into_iter()
            .map(document)
            .collect())
    }

    /// Deletes a document.
    pub fn delete_document(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_document(core::DocumentId(id))?)
    }

    /// Adds a metadata value (spec 2.10).
    pub fn add_metadata(
        &self,
        document: i64,
        metadata_type: i64,
        value: String,
    ) -> Result<DocumentMetadata> {
        Ok(self::value(self.inner.add_document_metadata(
            core::DocumentId(document),
            core::MetadataTypeId(metadata_type),
            &value,
        )?))
    }

    /// Sets a value; empty re-applies the default.
    pub fn edit_metadata(
        &self,
        document: i64,
        metadata_id: i64,
        value: String,
    ) -> Result<DocumentMetadata> {
        Ok(self::value(self.inner.edit_document_metadata(
            core::DocumentId(document),
            core::DocumentMetadataId(metadata_id),
            &value,
        )?))
    }

    /// Removes a value.
    pub fn remove_metadata(&self, document: i64, metadata_id: i64) -> Result<()> {
        Ok(self.inner.remove_document_metadata(
            core::DocumentId(document),
            core::DocumentMetadataId(metadata_id),
        )?)
    }

    /// The values of a document this session may view.
    pub fn metadata(&self, document: i64) -> Result<Vec<DocumentMetadata>> {
        Ok(self
            .inner
            .document_metadata_list(core::DocumentId(document))?
            .into_iter()
            .map(self::value)
            .collect())
    }

    /// `metadata_value_of.<name>` of a document.
    pub fn metadata_value_of(&self, document: i64, name: String) -> Result<Option<String>> {
        Ok(self
            .inner
            .metadata_value_of(core::DocumentId(document), &name)?)
    }

    /// Stores bytes as a new file of a document.
    pub fn add_file(&self, document: i64, filename: String, data: Vec<u8>) -> Result<DocumentFile> {
        Ok(file(self.inner.add_file(
            core::DocumentId(document),
            &filename,
            &mut data.as_slice(),
        )?))
    }

    /// Stores the file at `path` (streamed) as a new file of a document.
    pub fn add_file_from_path(
        &self,
        document: i64,
        path: String,
        filename: String,
    ) -> Result<DocumentFile> {
        let mut f = std::fs::File::open(&path).map_err(|e| DocmetaError::Storage {
            reason: format!("opening {path}: {e}"),
        })?;
        Ok(file(self.inner.add_file(
            core::DocumentId(document),
            &filename,
            &mut f,
        )?))
    }

    /// The files of a document.
    pub fn files(&self, document: i64) -> Result<Vec<DocumentFile>> {
        Ok(self
            .inner
            .files(core::DocumentId(document))?
            .into_iter()
            .map(file)
            .collect())
    }

    /// A file's content (checked against its SHA-256).
    pub fn read_file(&self, id: i64) -> Result<Vec<u8>> {
        Ok(self.inner.read_file(core::DocumentFileId(id))?)
    }

    /// Deletes a file.
    pub fn delete_file(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_file(core::DocumentFileId(id))?)
    }

    /// Creates a user.
    pub fn create_user(&self, username: String, password: String, superuser: bool) -> Result<User> {
        let u = self.inner.create_user(&username, &password, superuser)?;
        Ok(User {
            id: u.id.0,
            username: u.username,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        })
    }

    /// Creates a group; returns its id.
    pub fn create_group(&self, name: String) -> Result<i64> {
        Ok(self.inner.create_group(&name)?.0)
    }

    /// Adds a user to a group, or removes it.
    pub fn set_group_member(&self, group: i64, user: i64, member: bool) -> Result<()> {
        Ok(self
            .inner
            .set_group_member(core::GroupId(group), core::UserId(user), member)?)
    }

    /// Creates a role; returns its id.
    pub fn create_role(&self, label: String) -> Result<i64> {
        Ok(self.inner.create_role(&label)?.0)
    }

    /// Assigns a role to a group, or unassigns it.
    pub fn set_role_group(&self, role: i64, group: i64, assigned: bool) -> Result<()> {
        Ok(self
            .inner
            .set_role_group(core::RoleId(role), core::GroupId(group), assigned)?)
    }

    /// Grants a permission to a role globally.
    pub fn grant_global(&self, permission: String, role: i64) -> Result<()> {
        Ok(self
            .inner
            .grant_global(self::permission(&permission)?, core::RoleId(role))?)
    }

    /// Grants `permission` to `role` on the object `kind` `object_id` (an ACL).
    pub fn grant(&self, permission: String, role: i64, kind: String, object_id: i64) -> Result<()> {
        let object = self.object(&kind, object_id)?;
        self.inner
            .grant(self::permission(&permission)?, core::RoleId(role), object)?;
        Ok(())
    }

    /// Revokes it.
    pub fn revoke(
        &self,
        permission: String,
        role: i64,
        kind: String,
        object_id: i64,
    ) -> Result<()> {
        let object = self.object(&kind, object_id)?;
        self.inner
            .revoke(self::permission(&permission)?, core::RoleId(role), object)?;
        Ok(())
    }

    /// Whether this session may do `permission` on the object.
    pub fn can(&self, permission: String, kind: String, object_id: i64) -> Result<bool> {
        Ok(self.inner.can(
            self::permission(&permission)?,
            self.object(&kind, object_id)?,
        ))
    }

    /// Documents matching `query` (spec 2.5) this session may view.
    pub fn search_documents(&self, query: String, page: u32, page_size: u32) -> Result<SearchPage> {
        let p = self
            .inner
            .search_documents(&query, page as usize, page_size as usize)?;
        Ok(SearchPage {
            count: p.count as u64,
            results: p.results.into_iter().map(document).collect(),
        })
    }

    /// Events whose target this session may view, newest first.
    pub fn events(&self, limit: u32) -> Result<Vec<Event>> {
        Ok(self
            .inner
            .events(&core::EventQuery {
                limit: Some(limit),
                ..Default::default()
            })?
            .iter()
            .map(event)
            .collect())
    }

    /// Creates a workflow bound to document types; returns its id.
    pub fn create_workflow(&self, label: String, document_types: Vec<i64>) -> Result<i64> {
        let types: Vec<core::DocumentTypeId> = document_types
            .into_iter()
            .map(core::DocumentTypeId)
            .collect();
        Ok(self.inner.create_workflow(&label, &types)?.id.0)
    }

    /// Adds a state; returns its id.
    pub fn create_workflow_state(
        &self,
        workflow: i64,
        label: String,
        initial: bool,
    ) -> Result<i64> {
        Ok(self
            .inner
            .create_workflow_state(core::WorkflowId(workflow), &label, initial)?
            .id
            .0)
    }

    /// One state of a workflow.
    pub fn workflow_state(&self, workflow: i64, state: i64) -> Result<WorkflowState> {
        Ok(workflow_state(self.inner.workflow_state(
            core::WorkflowId(workflow),
            core::WorkflowStateId(state),
        )?))
    }

    /// Renames a state or makes it the initial one (each given field replaces the stored one).
    pub fn update_workflow_state(
        &self,
        workflow: i64,
        state: i64,
        label: Option<String>,
        initial: Option<bool>,
    ) -> Result<WorkflowState> {
        Ok(workflow_state(self.inner.update_workflow_state(
            core::WorkflowId(workflow),
            core::WorkflowStateId(state),
            label.as_deref(),
            initial,
        )?))
    }

    /// Deletes a state no instance is in and no transition starts or ends at.
    pub fn delete_workflow_state(&self, workflow: i64, state: i64) -> Result<()> {
        Ok(self
            .inner
            .delete_workflow_state(core::WorkflowId(workflow), core::WorkflowStateId(state))?)
    }

    /// One transition of a workflow, with its triggers.
    pub fn workflow_transition(
        &self,
        workflow: i64,
        transition: i64,
    ) -> Result<WorkflowTransition> {
        Ok(workflow_transition(self.inner.workflow_transition(
            core::WorkflowId(workflow),
            core::WorkflowTransitionId(transition),
        )?))
    }

    /// Changes a transition (each given field replaces the stored one).
    pub fn update_workflow_transition(
        &self,
        workflow: i64,
        transition: i64,
        label: Option<String>,
        origin: Option<i64>,
        destination: Option<i64>,
        condition: Option<String>,
    ) -> Result<WorkflowTransition> {
        let update = core::workflows::TransitionUpdate {
            label,
            origin: origin.map(core::WorkflowStateId),
            destination: destination.map(core::WorkflowStateId),
            condition,
        };
        Ok(workflow_transition(self.inner.update_workflow_transition(
            core::WorkflowId(workflow),
            core::WorkflowTransitionId(transition),
            update,
        )?))
    }

    /// Deletes a transition no instance log records.
    pub fn delete_workflow_transition(&self, workflow: i64, transition: i64) -> Result<()> {
        Ok(self.inner.delete_workflow_transition(
            core::WorkflowId(workflow),
            core::WorkflowTransitionId(transition),
        )?)
    }

    /// Adds a transition with a condition template (empty: always); returns its id.
    pub fn create_workflow_transition(
        &self,
        workflow: i64,
        label: String,
        origin: i64,
        destination: i64,
        condition: String,
    ) -> Result<i64> {
        Ok(self
            .inner
            .create_workflow_transition(
                core::WorkflowId(workflow),
                &label,
                core::WorkflowStateId(origin),
                core::WorkflowStateId(destination),
                &condition,
            )?
            .id
            .0)
    }

    /// Makes `event` (`document_metadata_added|edited|removed`) fire a transition.
    pub fn add_workflow_trigger(
        &self,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> Result<()> {
        self.inner.add_workflow_trigger(
            core::WorkflowId(workflow),
            core::WorkflowTransitionId(transition),
            &event,
        )?;
        Ok(())
    }

    /// Adds an action to a state; `action_json` as in the HTTP API, e.g.
    /// `{"type": "edit_metadata", "metadata_type_id": 3, "value": "{{ now.year }}"}`.
    pub fn create_workflow_action(
        &self,
        workflow: i64,
        state: i64,
        label: String,
        on_entry: bool,
        critical: bool,
        action_json: String,
    ) -> Result<i64> {
        let action = serde_json::from_str(&action_json).map_err(|e| DocmetaError::Validation {
            field: "action".into(),
            reason: e.to_string(),
        })?;
        Ok(self
            .inner
            .create_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                &label,
                on_entry,
                critical,
                action,
            )?
            .id
            .0)
    }

    /// The workflow instances of a document.
    pub fn workflow_instances(&self, document: i64) -> Result<Vec<WorkflowInstance>> {
        Ok(self
            .inner
            .workflow_instances(core::DocumentId(document))?
            .into_iter()
            .map(|i| WorkflowInstance {
                id: i.id.0,
                workflow_id: i.workflow_id.0,
                document_id: i.document_id.0,
                state_id: i.state_id.map(|s| s.0),
            })
            .collect())
    }

    /// Takes a transition by hand.
    pub fn transition_workflow(
        &self,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> Result<()> {
        self.inner.transition_workflow(
            core::DocumentId(document),
            core::WorkflowInstanceId(instance),
            core::WorkflowTransitionId(transition),
            &comment,
        )?;
        Ok(())
    }
}
