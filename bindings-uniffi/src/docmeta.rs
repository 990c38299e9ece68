//! The `Docmeta` object: opening an instance, sessions, access checks and their explanation,
//! object kinds, events, tasks, search maintenance, storage, backups and the schema.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use docmeta_core as core;

use crate::classes::{Classes, registry};
use crate::errors::{Result, permission, permissions};
use crate::records::{
    AuditReport, DurableTask, Event, Explanation, InstanceSettings, NewDevice, ObjectKindInfo,
    ObjectRef, SchemaChange, SearchStatus, SearchTicket, SearchWork, SearchWorkRun,
    SearchWorkState, StorageReport, User, keys,
};
use crate::session::Session;

/// Receives committed events; implemented in Kotlin or Swift. Called in the committing thread,
/// after the commit: an exception it throws is dropped (it cannot undo the change).
#[uniffi::export(with_foreign)]
pub trait EventListener: Send + Sync {
    /// One committed event.
    fn on_event(&self, event: Event) -> Result<()>;
}

/// Tells whether an object of an application's own kind exists; implemented in Kotlin or
/// Swift (`Docmeta.setKindExistence`). Called during access checks: answer quickly. An
/// exception counts as "does not exist" (the check then refuses, as for a missing object).
#[uniffi::export(with_foreign)]
pub trait ObjectExistence: Send + Sync {
    /// Whether the object `id` exists.
    fn exists(&self, id: i64) -> Result<bool>;
}

/// Follows a long operation (a backup, a reindex, a storage check or conversion); implemented
/// in Kotlin or Swift. Called in the calling thread, between units of work: return quickly. An
/// exception it throws is dropped: the operation goes on.
#[uniffi::export(with_foreign)]
pub trait ProgressListener: Send + Sync {
    /// `done` of `total` units (document files, or documents) are through.
    fn on_progress(&self, done: u64, total: u64) -> Result<()>;
}

/// The callback a long core operation takes: `listener`'s, or one that reports nothing.
fn progress<N: TryInto<u64>>(listener: Option<Arc<dyn ProgressListener>>) -> impl FnMut(N, N) {
    move |done: N, total: N| {
        if let Some(l) = &listener {
            // The listener's failure is its own: the work it follows goes on.
            let _ = l.on_progress(
                done.try_into().unwrap_or(u64::MAX),
                total.try_into().unwrap_or(u64::MAX),
            );
        }
    }
}

type Subscriptions = Arc<Mutex<HashMap<u64, core::SubscriptionId>>>;

/// A docmeta instance: thread-safe; open one per process and share it.
#[derive(uniffi::Object)]
pub struct Docmeta {
    inner: core::Docmeta,
    subscriptions: Subscriptions,
}

impl Docmeta {
    pub(crate) fn of(inner: core::Docmeta) -> Arc<Self> {
        Arc::new(Docmeta {
            inner,
            subscriptions: Subscriptions::default(),
        })
    }

    fn object(&self, kind: &str, id: i64) -> Result<core::ObjectRef> {
        Ok(core::ObjectRef::new(self.inner.parse_kind(kind)?, id))
    }
}

#[uniffi::export]
impl Docmeta {
    /// Opens (or creates) the data directory `path`; `password` unlocks the encrypted storage;
    /// `databaseUrl` puts the records in PostgreSQL instead of the directory's SQLite file;
    /// `classes` adds the application's validators and parsers; `worker` runs durable tasks
    /// and keeps the search index current in a background thread.
    #[uniffi::constructor(default(
        password = None,
        database_url = None,
        classes = None,
        worker = true
    ))]
    pub fn open(
        path: String,
        password: Option<String>,
        database_url: Option<String>,
        classes: Option<Arc<Classes>>,
        worker: bool,
    ) -> Result<Arc<Self>> {
        let b = core::Docmeta::builder()
            .data_dir(PathBuf::from(path))
            .worker(worker)
            .classes(registry(classes));
        let b = match &database_url {
            Some(url) => b.postgres(url),
            None => b,
        };
        let inner = match password {
            Some(p) => b.storage_password(p).open()?,
            None => b.open()?,
        };
        Ok(Docmeta::of(inner))
    }

    /// A private in-memory instance (tests, examples), with the application's `classes`.
    #[uniffi::constructor(default(classes = None))]
    pub fn in_memory(classes: Option<Arc<Classes>>) -> Result<Arc<Self>> {
        let inner = core::Docmeta::builder().classes(registry(classes)).open()?;
        Ok(Docmeta::of(inner))
    }

    /// This instance with a deadline `timeoutMs` from now: a change that would commit after it
    /// rolls back and fails with `DeadlineExceeded`, so it can be retried safely.
    pub fn with_deadline(&self, timeout_ms: u64) -> Arc<Self> {
        Arc::new(Docmeta {
            inner: self
                .inner
                .with_deadline(Instant::now() + Duration::from_millis(timeout_ms)),
            subscriptions: self.subscriptions.clone(),
        })
    }

    /// A session acting as user `user_id`.
    pub fn session(&self, user_id: i64) -> Arc<Session> {
        Session::of(self.inner.session(core::UserId(user_id)), &self.inner)
    }

    /// A session acting as docmeta itself (no permission checks).
    pub fn system(&self) -> Arc<Session> {
        Session::of(self.inner.system(), &self.inner)
    }

    /// The user with these credentials, or `None` (as slow whether or not the user exists).
    pub fn authenticate(&self, username: String, password: String) -> Result<Option<User>> {
        Ok(self
            .inner
            .authenticate(&username, &password)?
            .map(Into::into))
    }

    /// Signs a device in: the username and password exchanged for a token accepted in their
    /// place for `lifetime_seconds` (`None`: 90 days; at most a year), so the device never
    /// keeps the password. `None` when the credentials are not an active user's. The answer is
    /// the only one that holds the token.
    #[uniffi::method(default(lifetime_seconds = None))]
    pub fn sign_in_device(
        &self,
        username: String,
        password: String,
        name: String,
        lifetime_seconds: Option<u64>,
    ) -> Result<Option<NewDevice>> {
        let lifetime = lifetime_seconds.map(std::time::Duration::from_secs);
        Ok(self
            .inner
            .sign_in_device(&username, &password, &name, lifetime)?
            .map(Into::into))
    }

    /// The active user a device's token signs in as, or `None` (unknown, revoked, expired, or
    /// its user deactivated).
    pub fn authenticate_device(&self, token: String) -> Result<Option<User>> {
        Ok(self.inner.authenticate_device(&token)?.map(Into::into))
    }

    /// The name of user `id`, or `None` when there is no such user.
    pub fn username(&self, id: i64) -> Result<Option<String>> {
        Ok(self.inner.username(core::UserId(id))?)
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
        let object = self.object(&kind, object_id)?;
        Ok(self.inner.check(core::UserId(user_id), p, object))
    }

    /// The objects of `objects` on which `user_id` may do `permission`, in their order.
    pub fn filter(
        &self,
        user_id: i64,
        permission: String,
        objects: Vec<ObjectRef>,
    ) -> Result<Vec<ObjectRef>> {
        let kinds = self.inner.kinds();
        let p = self::permission(&permission)?;
        let objects = objects
            .iter()
            .map(|o| o.to_core(&kinds))
            .collect::<Result<Vec<_>>>()?;
        Ok(self
            .inner
            .filter(core::UserId(user_id), p, &objects)
            .into_iter()
            .map(|o| ObjectRef::of(o, &kinds))
            .collect())
    }

    /// Why `user_id` may or may not do `permission` on the object `kind` `object_id`: the
    /// deciding grant, every other one that applies, and a sentence.
    pub fn explain(
        &self,
        user_id: i64,
        permission: String,
        kind: String,
        object_id: i64,
    ) -> Result<Explanation> {
        let p = self::permission(&permission)?;
        let object = self.object(&kind, object_id)?;
        let e = self.inner.explain(core::UserId(user_id), p, object);
        Ok(Explanation::of(e, &self.inner.kinds()))
    }

    /// Every object kind: docmeta's own and the application's.
    pub fn kinds(&self) -> Vec<ObjectKindInfo> {
        let kinds = self.inner.kinds();
        kinds
            .kinds()
            .map(|(kind, info)| ObjectKindInfo {
                name: kinds.name(kind),
                parents: info.parents.iter().map(|p| kinds.name(*p)).collect(),
                permissions: keys(info.own.iter()),
                checks_existence: info.exists.is_some(),
            })
            .collect()
    }

    /// The canonical name (`app_label.model_name`) of a kind given by name; refused when
    /// unknown.
    pub fn parse_kind(&self, text: String) -> Result<String> {
        Ok(self.inner.kinds().name(self.inner.parse_kind(&text)?))
    }

    /// Registers an application's own object kind `app_label.model_name`, inheriting ACLs from
    /// `parents` (kind names), with its `own` permissions (keys); returns its name.
    pub fn register_kind(
        &self,
        app_label: String,
        model_name: String,
        parents: Vec<String>,
        own: Vec<String>,
    ) -> Result<String> {
        let parents = parents
            .iter()
            .map(|p| self.inner.parse_kind(p))
            .collect::<core::Result<Vec<_>>>()?;
        let own = permissions(&own)?;
        let kind = self
            .inner
            .register_kind(&app_label, &model_name, &parents, &own)?;
        Ok(self.inner.kinds().name(kind))
    }

    /// Tells docmeta how to check that an object of the application's kind exists.
    pub fn set_kind_existence(&self, kind: String, exists: Arc<dyn ObjectExistence>) -> Result<()> {
        let kind = self.inner.parse_kind(&kind)?;
        Ok(self
            .inner
            .set_kind_existence(kind, move |id| exists.exists(id).unwrap_or(false))?)
    }

    /// Declares the parents `object` inherits ACLs from (replacing earlier ones).
    pub fn set_object_parents(&self, object: ObjectRef, parents: Vec<ObjectRef>) -> Result<()> {
        let kinds = self.inner.kinds();
        let parents = parents
            .iter()
            .map(|p| p.to_core(&kinds))
            .collect::<Result<Vec<_>>>()?;
        Ok(self
            .inner
            .set_object_parents(object.to_core(&kinds)?, &parents)?)
    }

    /// Reloads users, groups, roles and ACLs from the database.
    pub fn reload_access(&self) -> Result<()> {
        Ok(self.inner.reload_access()?)
    }

    /// A number that changes whenever a credential (a password, a user's state) changes.
    pub fn credentials_epoch(&self) -> u64 {
        self.inner.credentials_epoch()
    }

    /// Applies every change any process committed to the database before this call (sessions
    /// do it before each call; for a cache of your own of docmeta's answers).
    pub fn catch_up(&self) -> Result<()> {
        Ok(self.inner.catch_up()?)
    }

    /// Picks up the access changes other processes committed; returns whether there were any.
    pub fn follow_access(&self) -> Result<bool> {
        Ok(self.inner.follow_access()?)
    }

    /// Runs the pending database migrations; returns the versions applied.
    pub fn migrate(&self) -> Result<Vec<u32>> {
        Ok(self.inner.migrate()?)
    }

    /// The data directory, or `None` in memory.
    pub fn data_dir(&self) -> Option<String> {
        self.inner.data_dir().map(|d| d.display().to_string())
    }

    /// The instance's settings.
    pub fn config(&self) -> InstanceSettings {
        self.inner.config().into()
    }

    /// The validator and parser classes this instance runs.
    pub fn classes(&self) -> Arc<Classes> {
        Classes::of(self.inner.classes().clone())
    }

    /// A token (HMAC) over `fields`, keyed by this instance's secret.
    pub fn sign_token(&self, fields: Vec<Vec<u8>>) -> Vec<u8> {
        let fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        self.inner.sign_token(&fields).to_vec()
    }

    /// Whether `token` is this instance's token over `fields`.
    pub fn verify_token(&self, fields: Vec<Vec<u8>>, token: Vec<u8>) -> bool {
        let fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        self.inner.verify_token(&fields, &token)
    }

    /// Sends every committed event to `listener`; returns an id for `unsubscribe`.
    pub fn subscribe(&self, listener: Arc<dyn EventListener>) -> u64 {
        let id = self.inner.subscribe(move |e| {
            // Committed already: a listener's failure cannot undo it, nor concern the
            // committing caller.
            let _ = listener.on_event(Event::from(e));
        });
        let mut subs = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        let n = subs.keys().max().copied().unwrap_or(0) + 1;
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

    /// The tasks not done yet (pending, running or failed).
    pub fn open_tasks(&self) -> Result<Vec<DurableTask>> {
        Ok(self
            .inner
            .open_tasks()?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Waits up to `timeoutMs` for the background worker to finish the pending tasks; returns
    /// whether none is left.
    pub fn wait_for_tasks(&self, timeout_ms: u64) -> Result<bool> {
        Ok(self
            .inner
            .wait_for_tasks(Duration::from_millis(timeout_ms))?)
    }

    /// Brings the search index up to date with the event log; returns the events applied.
    pub fn wait_for_index(&self) -> Result<u64> {
        Ok(self.inner.wait_for_index()? as u64)
    }

    /// Whether this process holds (or could take) the search index's writer.
    pub fn writes_search_index(&self) -> Result<bool> {
        Ok(self.inner.writes_search_index()?)
    }

    /// The process holding the search index's writer, if another one does.
    pub fn search_writer_pid(&self) -> Option<u32> {
        self.inner.search_writer_pid()
    }

    /// Whether a rebuild of the search index is under way.
    pub fn search_rebuilding(&self) -> bool {
        self.inner.search_rebuilding()
    }

    /// Rebuilds the search index; returns the documents indexed.
    #[uniffi::method(default(progress = None))]
    pub fn search_reindex(&self, progress: Option<Arc<dyn ProgressListener>>) -> Result<u64> {
        Ok(self.inner.search_reindex(self::progress(progress))? as u64)
    }

    /// Recreates the search index empty with the current schema.
    pub fn search_initialize(&self) -> Result<()> {
        Ok(self.inner.search_initialize()?)
    }

    /// Rebuilds the search index if an older docmeta built it; returns whether it did.
    #[uniffi::method(default(progress = None))]
    pub fn search_upgrade(&self, progress: Option<Arc<dyn ProgressListener>>) -> Result<bool> {
        Ok(self.inner.search_upgrade(self::progress(progress))?)
    }

    /// Indexes the objects of one model (`documents.document`, `metadata.documentmetadata`),
    /// optionally only these ids; returns how many.
    #[uniffi::method(default(ids = None, progress = None))]
    pub fn search_index_objects(
        &self,
        model: String,
        ids: Option<Vec<i64>>,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<u64> {
        Ok(self
            .inner
            .search_index_objects(&model, ids.as_deref(), self::progress(progress))?
            as u64)
    }

    /// Counts, size, lag and schema of the search index.
    pub fn search_status(&self) -> Result<SearchStatus> {
        Ok(self.inner.search_status()?.into())
    }

    /// Runs `work` here when this process holds (or can take) the index writer; otherwise
    /// hands it to the process that holds it and returns a ticket at once.
    #[uniffi::method(default(progress = None))]
    pub fn search_work(
        &self,
        work: SearchWork,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<SearchWorkRun> {
        Ok(self
            .inner
            .search_work(&work.into(), self::progress(progress))?
            .into())
    }

    /// Where handed-off search work stands.
    pub fn search_work_state(&self, ticket: Arc<SearchTicket>) -> Result<SearchWorkState> {
        Ok(self.inner.search_work_state(&ticket.inner)?.into())
    }

    /// Runs handed-off search work here when the process it was handed to has gone; returns
    /// the documents indexed, or `None` when it is not this process's to run.
    #[uniffi::method(default(progress = None))]
    pub fn adopt_search_work(
        &self,
        ticket: Arc<SearchTicket>,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<Option<u64>> {
        Ok(self
            .inner
            .adopt_search_work(&ticket.inner, self::progress(progress))?
            .map(|n| n as u64))
    }

    /// Converts every stored file to the encrypted format (`encrypt`) or back; resumable;
    /// returns the files converted.
    #[uniffi::method(default(progress = None))]
    pub fn convert_storage(
        &self,
        encrypt: bool,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<u64> {
        Ok(self
            .inner
            .convert_storage(encrypt, self::progress(progress))?)
    }

    /// Walks the whole event log and checks that nothing in it was altered: every event's hash,
    /// positions without a gap, every stored checkpoint, and `checkpoint` (the JSON of one
    /// kept outside, from `auditCheckpoint`) when given. The report names the first failure.
    #[uniffi::method(default(checkpoint = None, progress = None))]
    pub fn verify_events(
        &self,
        checkpoint: Option<String>,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<AuditReport> {
        let given: Option<core::Checkpoint> = checkpoint
            .map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| core::Error::InvalidInput(format!("not a checkpoint: {e}")))
            })
            .transpose()?;
        Ok(self
            .inner
            .verify_events(given.as_ref(), self::progress(progress))?
            .into())
    }

    /// A signed checkpoint of the event log's end, as JSON: keep it outside the installation
    /// and pass it to `verifyEvents` later.
    pub fn audit_checkpoint(&self) -> Result<String> {
        let c = self.inner.audit_checkpoint()?;
        Ok(serde_json::to_string(&c).map_err(|e| core::Error::InvalidInput(e.to_string()))?)
    }

    /// The installation's Ed25519 public key (hex), which checkpoints are signed with.
    pub fn audit_public_key(&self) -> Result<String> {
        Ok(self.inner.audit_public_key()?)
    }

    /// Removes the events written before `before`, keeping a signed checkpoint so that the
    /// rest still verifies; the log is verified first, and one that fails is not pruned
    /// (`Conflict`). Returns how many events were removed.
    pub fn prune_events(&self, before: std::time::SystemTime) -> Result<u64> {
        Ok(self.inner.prune_events(before.into())?.removed)
    }

    /// Reads every stored document file and checks it against its record (present, size,
    /// SHA-256, every MENC chunk's tag); lists the damaged ones.
    #[uniffi::method(default(progress = None))]
    pub fn verify_storage(
        &self,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<StorageReport> {
        Ok(self.inner.verify_storage(self::progress(progress))?.into())
    }

    /// Backs the data directory up into the archive `out` (a `.tar.zst` file; incremental on
    /// the archive `base`); returns the backup id.
    /// Document files it could not read intact are listed in the archive's manifest
    /// (`backupDamagedFiles`).
    #[uniffi::method(default(base = None, progress = None))]
    pub fn backup(
        &self,
        out: String,
        base: Option<String>,
        progress: Option<Arc<dyn ProgressListener>>,
    ) -> Result<String> {
        let base = base.map(PathBuf::from);
        Ok(self
            .inner
            .backup(
                &PathBuf::from(out),
                base.as_deref(),
                self::progress(progress),
            )?
            .manifest
            .info
            .id)
    }

    /// The schema (metadata types, document types, roles) as YAML.
    pub fn export_schema(&self) -> Result<String> {
        Ok(core::export_schema(&self.inner)?.to_yaml()?)
    }

    /// Makes the database match a YAML schema in one transaction; returns the changes made
    /// (with `dryRun`, those it would make, changing nothing).
    #[uniffi::method(default(dry_run = false))]
    pub fn apply_schema(&self, yaml: String, dry_run: bool) -> Result<Vec<SchemaChange>> {
        let schema = core::Schema::from_yaml(&yaml)?;
        Ok(core::apply_schema(&self.inner, &schema, dry_run)?
            .into_iter()
            .map(Into::into)
            .collect())
    }
}

/// Whether `checkpoint` (the JSON `Docmeta.auditCheckpoint` answers) is signed by `publicKey`
/// (hex, from `Docmeta.auditPublicKey`): how a third party holding the installation's public
/// key checks a checkpoint without the installation. `InvalidInput` when `checkpoint` is not a
/// checkpoint's JSON.
#[uniffi::export]
pub fn checkpoint_signed_by(checkpoint: String, public_key: String) -> Result<bool> {
    let checkpoint: core::Checkpoint = serde_json::from_str(&checkpoint)
        .map_err(|e| core::Error::InvalidInput(format!("not a checkpoint: {e}")))?;
    Ok(core::checkpoint_signed_by(&checkpoint, &public_key))
}
