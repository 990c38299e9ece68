//! What the instance reports about its own work: events, durable tasks, search pages and the
//! index's status and work, settings, storage checks, backups and schema changes.

use std::sync::Arc;
use std::time::SystemTime;

use docmeta_core as core;

/// An entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Event {
    /// Identifier.
    pub id: i64,
    /// Name, e.g. `metadata.document_metadata_added`.
    pub name: String,
    /// The acting user, if any; in `Session.events`, `null` too when the reader may not view
    /// that user.
    pub actor_id: Option<i64>,
    /// The acting user's name, when the reader may know it (`Session.events`; never in a
    /// listener's events).
    pub actor_username: Option<String>,
    /// `app_label.model_name` of the target.
    pub target_kind: String,
    /// The target's id.
    pub target_id: i64,
    /// The target's label.
    pub target_label: String,
    /// When.
    pub timestamp: SystemTime,
    /// What the event changed, field by field (empty for events that change no field, and
    /// for events written before changes were recorded).
    pub changes: Vec<EventChange>,
}

/// One field an event changed, from `before` to `after`, in text form: a metadata value as
/// stored, a label as given, `true`/`false`, an id in decimal, permission keys sorted and
/// joined with commas.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct EventChange {
    /// The field, e.g. `value`, `label`, `is_active`, `permissions`.
    pub field: String,
    /// Its value before; `null` when it had none (the event created the object or link) or
    /// the reader may not view it.
    pub before: Option<String>,
    /// Its value after; `null` when it has none (the event deleted the object or link) or the
    /// reader may not view it.
    pub after: Option<String>,
}

impl From<&core::EventChange> for EventChange {
    fn from(c: &core::EventChange) -> Self {
        EventChange {
            field: c.field.clone(),
            before: c.before.clone(),
            after: c.after.clone(),
        }
    }
}

impl From<&core::Event> for Event {
    fn from(e: &core::Event) -> Self {
        Event {
            id: e.id.0,
            name: e.name.clone(),
            actor_id: e.actor.map(|u| u.0),
            actor_username: None,
            target_kind: e.target.kind.clone(),
            target_id: e.target.id,
            target_label: e.target.label.clone(),
            timestamp: e.timestamp.into(),
            changes: e.changes.iter().map(EventChange::from).collect(),
        }
    }
}

impl From<core::EventView> for Event {
    fn from(v: core::EventView) -> Self {
        Event {
            actor_username: v.actor.map(|a| a.username),
            ..Event::from(&v.event)
        }
    }
}

/// What `Session.eventsAfter` answers: the next events of the log the session may see, in
/// commit order, and where to go on from.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct EventFeed {
    /// The events after the cursor given, in commit order; empty when none came in time.
    pub events: Vec<Event>,
    /// The cursor to pass to the next call: past every event read, those the session may not
    /// see included; `null` only while the log is empty after a `null` cursor.
    pub cursor: Option<i64>,
}

impl From<core::EventFeed> for EventFeed {
    fn from(f: core::EventFeed) -> Self {
        EventFeed {
            events: f.events.into_iter().map(Into::into).collect(),
            cursor: f.cursor.map(|c| c.0),
        }
    }
}

/// Where a durable background task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum DurableTaskState {
    /// Waiting to run (or to run again after a failed attempt).
    Pending,
    /// Claimed by a worker.
    Running,
    /// Finished.
    Done,
    /// Given up after its last attempt.
    Failed,
}

/// A durable background task (lifecycle rules, workflow triggers, search work): the core's
/// `Task`, named so as not to shadow Swift's concurrency `Task`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DurableTask {
    /// Identifier.
    pub id: i64,
    /// Task name, e.g. `task_add_required_metadata_type`.
    pub name: String,
    /// Its arguments, as JSON.
    pub payload: String,
    /// Where it is.
    pub state: DurableTaskState,
    /// How many times it was tried.
    pub attempts: i64,
    /// The last error.
    pub error: String,
    /// The search index it must run on (search work handed to an index's writer, a restore's
    /// rebuild); `None` when any worker may run it.
    pub target: Option<String>,
}

impl From<core::Task> for DurableTask {
    fn from(t: core::Task) -> Self {
        DurableTask {
            id: t.id.0,
            name: t.name,
            payload: t.payload,
            state: match t.state {
                core::TaskState::Pending => DurableTaskState::Pending,
                core::TaskState::Running => DurableTaskState::Running,
                core::TaskState::Done => DurableTaskState::Done,
                core::TaskState::Failed => DurableTaskState::Failed,
            },
            attempts: t.attempts,
            error: t.error,
            target: t.target,
        }
    }
}

/// A page of document search results.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SearchPage {
    /// Visible results in all.
    pub count: u64,
    /// This page.
    pub results: Vec<crate::records::Document>,
}

/// A page of metadata value search results.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MetadataSearchPage {
    /// Visible results in all.
    pub count: u64,
    /// This page.
    pub results: Vec<crate::records::DocumentMetadata>,
}

/// The search index: what it holds, how far behind the log it is, its schema.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SearchStatus {
    /// Documents indexed.
    pub documents: u64,
    /// Metadata values indexed.
    pub metadata_values: u64,
    /// Events of the log not indexed yet.
    pub events_behind: u64,
    /// Size on disk.
    pub size_bytes: u64,
    /// The schema version the index was built with.
    pub schema_version: u32,
    /// Whether that is this docmeta's schema.
    pub schema_current: bool,
}

impl From<core::SearchStatus> for SearchStatus {
    fn from(s: core::SearchStatus) -> Self {
        SearchStatus {
            documents: s.documents as u64,
            metadata_values: s.metadata_values as u64,
            events_behind: s.events_behind as u64,
            size_bytes: s.size_bytes,
            schema_version: s.schema_version,
            schema_current: s.schema_current,
        }
    }
}

/// An operation that writes the search index, run by whichever process holds its writer.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum SearchWork {
    /// Rebuild the index (`searchReindex`).
    Reindex,
    /// Recreate it empty (`searchInitialize`).
    Initialize,
    /// Rebuild it if an older docmeta built it (`searchUpgrade`).
    Upgrade,
    /// Index the objects of one model (`searchIndexObjects`).
    IndexObjects {
        /// `documents.document` or `metadata.documentmetadata`.
        model: String,
        /// Only these ids.
        ids: Option<Vec<i64>>,
    },
}

impl From<SearchWork> for core::SearchWork {
    fn from(w: SearchWork) -> Self {
        match w {
            SearchWork::Reindex => core::SearchWork::Reindex,
            SearchWork::Initialize => core::SearchWork::Initialize,
            SearchWork::Upgrade => core::SearchWork::Upgrade,
            SearchWork::IndexObjects { model, ids } => {
                core::SearchWork::IndexObjects { model, ids }
            }
        }
    }
}

/// Search work handed to the process holding the index writer; follow it with
/// `Docmeta.searchWorkState`.
#[derive(Debug, uniffi::Object)]
pub struct SearchTicket {
    pub(crate) inner: core::SearchTicket,
}

#[uniffi::export]
impl SearchTicket {
    /// The durable task that carries the work.
    pub fn task_id(&self) -> i64 {
        self.inner.task.0
    }
}

/// Where a search work ran.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum SearchWorkRun {
    /// In this process: the documents it indexed.
    Done {
        /// Documents indexed.
        documents: u64,
    },
    /// Handed to the process holding the index writer.
    HandedOff {
        /// What to follow it with.
        ticket: Arc<SearchTicket>,
    },
}

impl From<core::SearchWorkRun> for SearchWorkRun {
    fn from(r: core::SearchWorkRun) -> Self {
        match r {
            core::SearchWorkRun::Done(n) => SearchWorkRun::Done {
                documents: n as u64,
            },
            core::SearchWorkRun::HandedOff(t) => SearchWorkRun::HandedOff {
                ticket: Arc::new(SearchTicket { inner: t }),
            },
        }
    }
}

/// Where handed-off search work stands.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum SearchWorkState {
    /// Waiting for the writer's worker.
    Pending {
        /// Attempts so far.
        attempts: i64,
        /// The last attempt's error, if any.
        error: String,
    },
    /// Running: `done` of `total` documents.
    Running {
        /// Documents done.
        done: u64,
        /// Documents in all.
        total: u64,
    },
    /// Finished; the documents it indexed, when its progress was still recorded.
    Done {
        /// Documents indexed.
        documents: Option<u64>,
    },
    /// Given up after its attempts.
    Failed {
        /// The last error.
        error: String,
    },
}

impl From<core::SearchWorkState> for SearchWorkState {
    fn from(s: core::SearchWorkState) -> Self {
        use core::SearchWorkState as S;
        match s {
            S::Pending { attempts, error } => SearchWorkState::Pending { attempts, error },
            S::Running { done, total } => SearchWorkState::Running {
                done: done as u64,
                total: total as u64,
            },
            S::Done(n) => SearchWorkState::Done {
                documents: n.map(|n| n as u64),
            },
            S::Failed(error) => SearchWorkState::Failed { error },
        }
    }
}

/// The instance's settings (`config.yml`; not `Settings`, which is a SwiftUI scene).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InstanceSettings {
    /// Attempts of a failing background task before it is marked failed.
    pub task_max_attempts: u32,
    /// Whether document files are stored encrypted (MENC).
    pub encrypted_storage: bool,
    /// The file holding the encrypted storage's password, if configured.
    pub storage_password_file: Option<String>,
    /// The largest document file the server accepts, in bytes.
    pub upload_max_bytes: u64,
    /// How often (ms) a process sharing a PostgreSQL database picks up others' access changes.
    pub access_refresh_ms: u64,
    /// The HTTP server's time limit for one request, in milliseconds.
    pub request_timeout_ms: u64,
    /// Documents whose metadata stay in memory after a read; `None`: the store's default
    /// (10,000 on SQLite, off on PostgreSQL).
    pub read_cache_documents: Option<u64>,
}

impl From<&core::Config> for InstanceSettings {
    fn from(c: &core::Config) -> Self {
        InstanceSettings {
            task_max_attempts: c.task_max_attempts,
            encrypted_storage: c.documents_file_storage_backend == core::StorageBackend::Encrypted,
            storage_password_file: c
                .storage_password_file
                .as_ref()
                .map(|p| p.display().to_string()),
            upload_max_bytes: c.upload_max_bytes,
            access_refresh_ms: c.access_refresh_ms,
            request_timeout_ms: c.request_timeout_ms,
            read_cache_documents: c.read_cache_documents.map(|n| n as u64),
        }
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

impl From<core::StorageReport> for StorageReport {
    fn from(r: core::StorageReport) -> Self {
        StorageReport {
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
        }
    }
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

impl From<core::DamagedEntry> for DamagedBackupFile {
    fn from(d: core::DamagedEntry) -> Self {
        DamagedBackupFile {
            path: d.path,
            document_file_id: d.document_file_id,
            damage: d.damage.kind().to_owned(),
            detail: d.damage.to_string(),
        }
    }
}

/// A backup archive: what it is.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct BackupInfo {
    /// Random identifier.
    pub id: String,
    /// Database schema version of the snapshot.
    pub schema_version: u32,
    /// When the backup was made.
    pub created: SystemTime,
    /// The backup an incremental backup builds on (its id), if any.
    pub base: Option<String>,
}

impl From<core::BackupInfo> for BackupInfo {
    fn from(i: core::BackupInfo) -> Self {
        BackupInfo {
            id: i.id,
            schema_version: i.schema_version,
            created: i.created.into(),
            base: i.base,
        }
    }
}

/// What pruning decided for one archive.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PruneDecision {
    /// The archive.
    pub path: String,
    /// What it is.
    pub info: BackupInfo,
    /// Why it is kept; `None`: it is deleted (or would be, in a dry run).
    pub kept_because: Option<String>,
}

impl From<core::PruneDecision> for PruneDecision {
    fn from(d: core::PruneDecision) -> Self {
        PruneDecision {
            path: d.path.display().to_string(),
            info: d.info.into(),
            kept_because: d.kept_because,
        }
    }
}

/// One change applying a schema makes.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum SchemaChange {
    /// A record is created.
    Create {
        /// Which.
        record: String,
    },
    /// A record is updated.
    Update {
        /// Which.
        record: String,
        /// How.
        change: String,
    },
}

impl From<core::Change> for SchemaChange {
    fn from(c: core::Change) -> Self {
        match c {
            core::Change::Create(record) => SchemaChange::Create { record },
            core::Change::Update(record, change) => SchemaChange::Update { record, change },
        }
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RestoreReport {
    /// The restored backup.
    pub info: BackupInfo,
    /// Document files restored.
    pub files_restored: u64,
    /// Migrations run on the restored database.
    pub migrations: Vec<u32>,
    /// Documents in the restored database.
    pub documents: u64,
    /// The files the backup could not read intact (not restored).
    pub damaged: Vec<DamagedBackupFile>,
    /// Events of the restored log verified against the backup's checkpoint (`null` for an
    /// archive made before the tamper-evident log; a log that fails fails the restore).
    pub events_verified: Option<u64>,
}

impl From<core::RestoreReport> for RestoreReport {
    fn from(r: core::RestoreReport) -> Self {
        RestoreReport {
            info: r.manifest.info.into(),
            files_restored: r.files_restored as u64,
            migrations: r.migrations,
            documents: r.documents,
            damaged: r.manifest.damaged.into_iter().map(Into::into).collect(),
            events_verified: r.audit.map(|a| a.verified),
        }
    }
}

/// A validator or parser class a registry knows.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ClassInfo {
    /// The class path a metadata type names.
    pub path: String,
    /// Its label.
    pub label: String,
}
