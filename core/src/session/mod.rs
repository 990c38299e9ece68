//! [`Session`]: every operation of docmeta, run as an [`Actor`] and permission-checked
//! (spec 5.4), in one transaction each.
//!
//! Refusals follow one rule: an object the actor may not even view is [`Error::NotFound`]
//! (callers must not learn that it exists); a visible object without the needed permission is
//! [`Error::PermissionDenied`].
//!
//! Layer 6: imports the kernel and the layers below it; never `workflows`, `tasks`, `search`,
//! `backup`, `installation` or the facade, which build on sessions.

mod access;
mod acls;
mod associations;
mod cabinets;
mod devices;
mod document_types;
mod documents;
mod events;
mod files;
mod groups;
mod history;
mod metadata_types;
mod objects;
mod roles;
mod sync;
mod users;
mod values;
mod views;

use std::fmt::Display;

use minijinja::Value;

use crate::access::{AccessSnapshot, ObjectKind, ObjectRef, ParentSource, Permission};
use crate::error::{Error, Result};
use crate::events::EventObject;
use crate::kernel::{AccessChange, Docmeta, RenderInput, Renders, TemplateView};
use crate::metadata::template::is_literal;
use crate::metadata::{
    DocumentContext, MetadataEntry, TemplateEngine, TemplateError, TemplateInputs,
};
use crate::model::*;
use crate::store::Tx;

pub(crate) use access::permission_set;
pub use devices::{DEFAULT_DEVICE_LIFETIME, MAX_DEVICE_LIFETIME, MAX_DEVICES_PER_USER};
pub use documents::MAX_DOCUMENT_BATCH;
pub(crate) use documents::MAX_LABEL_LEN;
pub use events::{MAX_EVENT_WAIT, MAX_FEED_EVENTS};
pub use files::FileContent;
pub use history::MAX_HISTORY_PAGE;
pub use sync::{MAX_PUSH_WRITES, MAX_SYNC_BATCH};

/// Operations of docmeta as one actor. Cheap to create; see [`Docmeta::session`].
///
/// Every call answers with every change committed before it started, by this process or any
/// other on the same database (a second server on one PostgreSQL database, a command beside a
/// server): before it decides anything, it applies what it has not seen yet (see
/// [`Docmeta::catch_up`]), so no revoked permission is still honoured and no new grant or
/// document is missing.
#[derive(Debug, Clone)]
pub struct Session {
    pub(crate) db: Docmeta,
    pub(crate) actor: Actor,
    /// What templates rendered by this session see (see [`TemplateView`]).
    pub(crate) view: TemplateView,
    /// The request this session serves started then (see [`Session::consistent_from`]);
    /// `None`: each call is its own request.
    pub(crate) since: Option<std::time::Instant>,
}

/// What a session decides from when following the other processes' changes failed: nothing is
/// granted (there is no deny, so an empty snapshot can only refuse).
static REFUSE_ALL: std::sync::LazyLock<parking_lot::RwLock<AccessSnapshot>> =
    std::sync::LazyLock::new(Default::default);

pub(crate) fn obj(kind: ObjectKind, id: i64) -> ObjectRef {
    ObjectRef::new(kind, id)
}

/// The permission that lets a user see an object of `kind` at all.
pub(crate) fn view_permission(kind: ObjectKind) -> Permission {
    match kind {
        ObjectKind::DOCUMENT_TYPE => Permission::DocumentTypeView,
        ObjectKind::DOCUMENT | ObjectKind::DOCUMENT_FILE | ObjectKind::DOCUMENT_VERSION => {
            Permission::DocumentView
        }
        ObjectKind::METADATA_TYPE => Permission::MetadataTypeView,
        ObjectKind::DOCUMENT_METADATA => Permission::DocumentMetadataView,
        ObjectKind::CABINET => Permission::CabinetView,
        ObjectKind::ROLE => Permission::RoleView,
        ObjectKind::WORKFLOW
        | ObjectKind::WORKFLOW_INSTANCE
        | ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY => Permission::WorkflowTemplateView,
        ObjectKind::SOURCE => Permission::SourcesView,
        ObjectKind::TAG => Permission::TagView,
        ObjectKind::DOCUMENT_COMMENT => Permission::DocumentCommentView,
        ObjectKind::DOCUMENT_QA_ENTRY => Permission::DocumentQaView,
        _ => Permission::AclView,
    }
}

impl Session {
    pub(crate) fn new(db: Docmeta, actor: Actor) -> Self {
        Session {
            db,
            actor,
            view: TemplateView::of_actor(actor),
            since: None,
        }
    }

    /// docmeta itself acting for someone (a workflow action, a task): nothing is checked, and
    /// templates see what `view` sees.
    pub(crate) fn system_for(db: Docmeta, view: TemplateView) -> Self {
        Session {
            db,
            actor: Actor::System,
            view,
            since: None,
        }
    }

    /// This session for one request that started at `started`: its calls answer with every
    /// change committed before that instant (by any process), and a catch-up made for the
    /// request (the server's, before it trusts a cached login) is not made again by each call.
    /// Without it, each call catches up as of its own start. Never pass an instant later than
    /// the request's start: a change committed before it could then be missed.
    pub fn consistent_from(self, started: std::time::Instant) -> Session {
        Session {
            since: Some(started),
            ..self
        }
    }

    /// Whether what other processes committed before this call (or this session's request)
    /// started is known to be applied, found without a round trip to a database server (see
    /// [`Docmeta::caught_up_since`]).
    pub(crate) fn caught_up_without_reading(&self) -> bool {
        self.db
            .caught_up_since(self.since.unwrap_or_else(std::time::Instant::now))
    }

    /// Applies what other processes committed before this call (or this session's request)
    /// started (see [`Docmeta::catch_up`]).
    pub(crate) fn catch_up(&self) -> Result<()> {
        self.db
            .catch_up_since(self.since.unwrap_or_else(std::time::Instant::now))
    }

    /// This session with a deadline: a change that would commit after `deadline` rolls back
    /// and fails with [`Error::Timeout`] (see [`Docmeta::with_deadline`]).
    pub fn with_deadline(self, deadline: std::time::Instant) -> Session {
        Session {
            db: self.db.with_deadline(deadline),
            ..self
        }
    }

    /// Who this session acts as.
    pub fn actor(&self) -> Actor {
        self.actor
    }

    /// The access snapshot, with what other processes committed before this call applied;
    /// when that cannot be read, an empty one, which refuses everything.
    fn snapshot(&self) -> parking_lot::RwLockReadGuard<'_, AccessSnapshot> {
        match self.catch_up() {
            Ok(()) => self.db.inner.access.read(),
            Err(_) => REFUSE_ALL.read(),
        }
    }

    /// Whether this session may do `permission` on `object` (spec 5.2-5.3): the same
    /// evaluator as [`Docmeta::check`], which reads the stored links of files, metadata
    /// values and workflow instances in a transaction of its own. Inside a transaction, the
    /// session's operations ask `can_in`, which reads them through that transaction.
    pub fn can(&self, permission: Permission, object: ObjectRef) -> bool {
        match self.actor {
            Actor::System => true,
            Actor::User(u) => self.catch_up().is_ok() && self.db.check_now(u, permission, object),
        }
    }

    /// [`can`](Self::can) inside the transaction `tx`, which answers for the stored links.
    pub(crate) fn can_in(
        &self,
        tx: &mut Tx<'_>,
        permission: Permission,
        object: ObjectRef,
    ) -> bool {
        self.can_with(tx, permission, object)
    }

    /// [`can`](Self::can) with the stored links coming from `stored` (a transaction, or the
    /// links of a record already loaded).
    pub(crate) fn can_with(
        &self,
        stored: &mut dyn ParentSource,
        permission: Permission,
        object: ObjectRef,
    ) -> bool {
        match self.actor {
            Actor::System => true,
            Actor::User(u) => self.snapshot().check_with(stored, u, permission, object),
        }
    }

    /// Whether this session holds `permission` globally.
    pub fn can_globally(&self, permission: Permission) -> bool {
        match self.actor {
            Actor::System => true,
            Actor::User(u) => self.snapshot().check_global(u, permission),
        }
    }

    pub(crate) fn is_superuser(&self) -> bool {
        match self.actor {
            Actor::System => true,
            Actor::User(u) => self.snapshot().is_superuser(u),
        }
    }

    pub(crate) fn require_global(&self, permission: Permission) -> Result<()> {
        if self.can_globally(permission) {
            Ok(())
        } else {
            Err(Error::PermissionDenied(format!(
                "'{}' is needed",
                permission.key()
            )))
        }
    }

    /// Refuses unless the session may do `permission` on `object`: NotFound when it may not
    /// even see the object (`what` describes it), PermissionDenied otherwise.
    pub(crate) fn require(
        &self,
        permission: Permission,
        object: ObjectRef,
        what: impl Display,
    ) -> Result<()> {
        self.refuse_unless(|p| self.can(p, object), permission, object, what)
    }

    /// [`require`](Self::require) with the stored links coming from `stored`.
    pub(crate) fn require_with(
        &self,
        stored: &mut dyn ParentSource,
        permission: Permission,
        object: ObjectRef,
        what: impl Display,
    ) -> Result<()> {
        self.refuse_unless(
            |p| self.can_with(stored, p, object),
            permission,
            object,
            what,
        )
    }

    fn refuse_unless(
        &self,
        mut may: impl FnMut(Permission) -> bool,
        permission: Permission,
        object: ObjectRef,
        what: impl Display,
    ) -> Result<()> {
        if may(permission) {
            return Ok(());
        }
        let view = view_permission(object.kind);
        if view != permission && may(view) {
            Err(Error::PermissionDenied(format!(
                "'{}' is needed on {what}",
                permission.key()
            )))
        } else {
            Err(Error::not_found(what))
        }
    }

    /// A loaded record, or `NotFound` when it is absent; then refused unless the session may do
    /// `permission` on it (see [`require`](Self::require)).
    pub(crate) fn checked<T>(
        &self,
        record: Option<T>,
        permission: Permission,
        object: ObjectRef,
        what: String,
    ) -> Result<T> {
        let record = record.ok_or_else(|| Error::not_found(&what))?;
        self.require(permission, object, what)?;
        Ok(record)
    }

    /// Keeps the items whose object the session may `permission`.
    pub(crate) fn visible<T>(
        &self,
        permission: Permission,
        items: Vec<T>,
        object: impl Fn(&T) -> ObjectRef,
    ) -> Vec<T> {
        match self.actor {
            Actor::System => items,
            Actor::User(u) => {
                let snapshot = self.snapshot();
                items
                    .into_iter()
                    .filter(|i| snapshot.check(u, permission, object(i)))
                    .collect()
            }
        }
    }

    pub(crate) fn write<T: Send>(
        &self,
        f: impl FnMut(&mut crate::kernel::Unit<'_>) -> Result<T> + Send,
    ) -> Result<T> {
        self.catch_up()?;
        self.db.write(self.actor, f)
    }

    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.catch_up()?;
        self.db.read(f)
    }
}

/// Template contexts of a metadata type's default or lookup, built from the current
/// transaction only when a template asks, with what both `view` (whoever it runs for) and the
/// template's `shapers` may see (see [`TemplateView`]).
pub(crate) struct Inputs<'a, 'b> {
    pub(crate) db: &'a Docmeta,
    pub(crate) tx: &'a mut Tx<'b>,
    pub(crate) document: Option<&'a Document>,
    pub(crate) view: &'a TemplateView,
    pub(crate) shapers: &'a MetadataTypeShapers,
    pub(crate) renders: &'a Renders,
}

/// What templates see of `doc`: its metadata values that `view` may view.
pub(crate) fn document_context(
    db: &Docmeta,
    tx: &mut Tx<'_>,
    doc: &Document,
    view: &TemplateView,
) -> Result<DocumentContext> {
    let type_label = tx
        .document_type(doc.document_type_id)?
        .map(|t| t.label)
        .unwrap_or_default();
    let metadata = if *view == TemplateView::Nothing {
        Vec::new()
    } else {
        tx.document_metadata_entries(doc.id)?
    };
    Ok(document_context_of(db, doc, type_label, metadata, view))
}

/// What templates see of `doc` (see [`document_context`]), from its type's label and all its
/// metadata values (name, label, value, type) read already.
pub(crate) fn document_context_of(
    db: &Docmeta,
    doc: &Document,
    type_label: String,
    entries: Vec<(String, String, String, MetadataTypeId)>,
    view: &TemplateView,
) -> DocumentContext {
    let snapshot = db.inner.access.read();
    let metadata = if *view == TemplateView::Nothing {
        Vec::new()
    } else {
        entries
            .into_iter()
            .filter(|(_, _, _, t)| view.sees_metadata(&snapshot, doc, *t))
            .map(|(name, label, value, _)| MetadataEntry { name, label, value })
            .collect()
    };
    // The type's label is shown as a document's answer shows it: to whoever may view the
    // document or its type (a creator with `document_create` alone sees neither).
    let document_type_label = if view.sees_document_type(&snapshot, doc) {
        type_label
    } else {
        String::new()
    };
    DocumentContext {
        id: doc.id.0,
        label: doc.label.clone(),
        document_type_label,
        created: doc.created,
        metadata,
    }
}

impl Inputs<'_, '_> {
    /// What the default (or the `lookup`) sees: the runner's view narrowed by its shapers'.
    fn view(&self, lookup: bool) -> TemplateView {
        let shapers = if lookup {
            &self.shapers.lookup
        } else {
            &self.shapers.default
        };
        self.view.clone().and(TemplateView::of_shapers(shapers))
    }

    fn input(&mut self, lookup: bool) -> Result<RenderInput> {
        let view = self.view(lookup);
        let document = match self.document {
            Some(doc) => Some(document_context(self.db, self.tx, doc, &view)?),
            None => None,
        };
        let people = if lookup {
            let (users, groups) = (self.tx.users()?, self.tx.groups()?);
            let snapshot = self.db.inner.access.read();
            let users = users
                .into_iter()
                .filter(|u| u.is_active && view.sees_user(&snapshot, u.id))
                .map(|u| (u.id.0, u.username))
                .collect();
            let groups = if view.sees_groups(&snapshot) {
                groups.into_iter().map(|(id, name)| (id.0, name)).collect()
            } else {
                Vec::new()
            };
            Some((users, groups))
        } else {
            None
        };
        Ok(RenderInput::Metadata {
            now: self.renders.now,
            document,
            people,
        })
    }
}

impl TemplateInputs for Inputs<'_, '_> {
    fn default_context(&mut self) -> Result<Value> {
        Ok(self.input(false)?.to_value())
    }

    fn lookup_context(&mut self) -> Result<Value> {
        Ok(self.input(true)?.to_value())
    }

    fn render(
        &mut self,
        templates: &TemplateEngine,
        source: &str,
        lookup: bool,
        max_output: usize,
    ) -> Result<std::result::Result<String, TemplateError>> {
        if is_literal(source) {
            return Ok(Ok(source.to_owned()));
        }
        let input = self.input(lookup)?;
        Ok(self.renders.render(templates, source, max_output, input))
    }
}

pub(crate) fn event_object(kind: &str, id: i64, label: &str) -> EventObject {
    EventObject {
        kind: kind.to_owned(),
        id,
        label: label.to_owned(),
    }
}

/// A reference inside a request body (`document_type_id`, `metadata_type_id`, `parent_id`,
/// `document_id`, ...): an object that does not exist, or that the caller may not see, is
/// invalid input naming the field, as Django REST framework answers for a related key. Only an
/// object named by the operation's target (a URL path) stays "not found".
pub(crate) fn body_reference<T>(field: &str, id: impl Display, r: Result<T>) -> Result<T> {
    r.map_err(|e| match e {
        Error::NotFound(_) => invalid_reference(field, id),
        e => e,
    })
}

/// Django REST framework's answer for an id in `field` of a request body naming an object that
/// does not exist (or that the caller may not see).
pub(crate) fn invalid_reference(field: &str, id: impl Display) -> Error {
    Error::validation(
        field,
        format!("Invalid pk \"{id}\" - object does not exist."),
    )
}

pub(crate) fn parents_change(object: ObjectRef, parents: Vec<ObjectRef>) -> AccessChange {
    AccessChange::Parents { object, parents }
}

/// Gives a store conflict the field and message of the operation.
pub(crate) fn rename_conflict(e: Error, field: &str, message: &str) -> Error {
    match e {
        Error::Conflict { .. } => Error::conflict(field, message),
        e => e,
    }
}
