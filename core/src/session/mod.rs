//! [`Session`]: every operation of docmeta, run as an [`Actor`] and permission-checked
//! (spec 5.4), in one transaction each.
//!
//! Refusals follow one rule: an object the actor may not even view is [`Error::NotFound`]
//! (callers must not learn that it exists); a visible object without the needed permission is
//! [`Error::PermissionDenied`].

mod access;
mod cabinets;
mod files;
mod metadata;

use std::fmt::Display;

use minijinja::Value;

use crate::access::{
    AccessSnapshot, KindRegistry, ObjectKind, ObjectRef, ParentSource, Permission, PermissionSet,
};
use crate::docmeta::{AccessChange, Docmeta};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery};
use crate::metadata::template::is_literal;
use crate::metadata::template::{group_value, user_value};
use crate::metadata::{
    DocumentContext, MetadataEntry, Moment, TemplateEngine, TemplateError, TemplateInputs,
};
use crate::model::*;
use crate::store::Tx;

pub use access::UserUpdate;
pub(crate) use access::permission_set;

/// Operations of docmeta as one actor. Cheap to create; see [`Docmeta::session`].
#[derive(Debug, Clone)]
pub struct Session {
    pub(crate) db: Docmeta,
    pub(crate) actor: Actor,
    /// What templates rendered by this session see (see [`TemplateView`]).
    pub(crate) view: TemplateView,
}

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
        }
    }

    /// docmeta itself acting for someone (a workflow action, a task): nothing is checked, and
    /// templates see what `view` sees.
    pub(crate) fn system_for(db: Docmeta, view: TemplateView) -> Self {
        Session {
            db,
            actor: Actor::System,
            view,
        }
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

    /// The instance this session belongs to.
    pub fn docmeta(&self) -> &Docmeta {
        &self.db
    }

    fn snapshot(&self) -> parking_lot::RwLockReadGuard<'_, AccessSnapshot> {
        self.db.inner.access.read()
    }

    /// Whether this session may do `permission` on `object` (spec 5.2-5.3): the same
    /// evaluator as [`Docmeta::check`], which reads the stored links of files, metadata
    /// values and workflow instances in a transaction of its own. Inside a transaction, the
    /// session's operations ask `can_in`, which reads them through that transaction.
    pub fn can(&self, permission: Permission, object: ObjectRef) -> bool {
        match self.actor {
            Actor::System => true,
            Actor::User(u) => self.db.check(u, permission, object),
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

    pub(crate) fn write<T>(
        &self,
        f: impl FnMut(&mut crate::docmeta::Unit<'_>) -> Result<T>,
    ) -> Result<T> {
        self.db.write(self.actor, f)
    }

    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.db.read(f)
    }

    // ----- events ----------------------------------------------------------------------------

    /// Events of the log whose target this session may view, newest first (unless
    /// `query.oldest_first`). An event's action object that this session may not view is
    /// redacted to `None`: the event is shown, the hidden object is not.
    pub fn events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        let limit = query.limit.unwrap_or(100).clamp(1, 1000) as usize;
        if self.actor == Actor::System || self.is_superuser() {
            return self.db.events(&EventQuery {
                limit: Some(limit as u32),
                ..query.clone()
            });
        }
        let kinds = self.db.kinds();
        let mut out = Vec::new();
        let mut page = EventQuery {
            limit: Some(500),
            ..query.clone()
        };
        loop {
            let batch = self.db.events(&page)?;
            let exhausted = batch.len() < 500;
            let Some(last) = batch.last().map(|e| e.id) else {
                break;
            };
            for mut e in batch {
                if self.may_view_event_object(&kinds, &e.target) {
                    // The second object is shown only to those who may view it too (a hidden
                    // document added to a visible cabinet, a hidden role in an ACL event).
                    if e.action_object
                        .as_ref()
                        .is_some_and(|o| !self.may_view_event_object(&kinds, o))
                    {
                        e.action_object = None;
                    }
                    out.push(e);
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            if exhausted {
                break;
            }
            if query.oldest_first {
                page.after = Some(last);
            } else {
                page.before = Some(last);
            }
        }
        Ok(out)
    }

    fn may_view_event_object(&self, kinds: &KindRegistry, target: &EventObject) -> bool {
        match kinds.parse(&target.kind) {
            // Not inside a transaction here, so links kept in the store may be read.
            Ok(kind) => match self.actor {
                Actor::User(u) => self
                    .db
                    .check(u, view_permission(kind), obj(kind, target.id)),
                Actor::System => true,
            },
            Err(_) => match target.kind.as_str() {
                "user_management.user" => {
                    self.actor.user().is_some_and(|u| u.0 == target.id)
                        || self.can_globally(Permission::UserView)
                }
                "user_management.group" => self.can_globally(Permission::GroupView),
                _ => self.is_superuser(),
            },
        }
    }

    /// Durable tasks not yet done (pending, running, failed). Superusers only.
    pub fn tasks(&self) -> Result<Vec<crate::store::records::TaskRow>> {
        if !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only superusers see background tasks".into(),
            ));
        }
        self.db.open_tasks()
    }

    // ----- explain ---------------------------------------------------------------------------

    /// Why `user` may or may not do `permission` on `object`. Needs `acls.acl_view` on the
    /// object unless asking about oneself.
    pub fn explain(
        &self,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> Result<crate::access::Explanation> {
        if self.actor != Actor::User(user) {
            self.require(Permission::AclView, object, "the object")?;
        }
        Ok(self.db.explain(user, permission, object))
    }
}

/// Builds the access snapshot from the store.
pub(crate) fn load_access(tx: &mut Tx<'_>, kinds: &KindRegistry) -> Result<AccessSnapshot> {
    let mut s = AccessSnapshot::default();
    for u in tx.users()? {
        s.set_user(u.id, u.is_superuser, u.is_active);
    }
    let mut pairs = Vec::new();
    tx.each("SELECT group_id, user_id FROM group_users", &[], &mut |r| {
        pairs.push((GroupId(r.int(0)?), UserId(r.int(1)?)));
        Ok(())
    })?;
    for (g, u) in pairs {
        s.set_membership(g, u, true);
    }
    let mut role_perms: rustc_hash::FxHashMap<RoleId, PermissionSet> = Default::default();
    tx.each(
        "SELECT role_id, permission FROM role_permissions",
        &[],
        &mut |r| {
            if let Ok(p) = Permission::from_key(&r.text(1)?) {
                let e = role_perms.entry(RoleId(r.int(0)?)).or_default();
                *e = e.with(p);
            }
            Ok(())
        },
    )?;
    for (role, set) in role_perms {
        s.set_role_permissions(role, set);
    }
    let mut role_groups = Vec::new();
    tx.each("SELECT role_id, group_id FROM role_groups", &[], &mut |r| {
        role_groups.push((RoleId(r.int(0)?), GroupId(r.int(1)?)));
        Ok(())
    })?;
    for (role, group) in role_groups {
        s.set_role_group(role, group, true);
    }
    let mut acls: rustc_hash::FxHashMap<AclId, (ObjectRef, RoleId, PermissionSet)> =
        Default::default();
    tx.each("SELECT a.id, a.object_kind, a.object_id, a.role_id, p.permission FROM acls a JOIN acl_permissions p ON p.acl_id = a.id", &[], &mut |r| {
        let (Ok(kind), Ok(p)) = (kinds.parse(&r.text(1)?), Permission::from_key(&r.text(4)?)) else { return Ok(()) };
        let e = acls.entry(AclId(r.int(0)?)).or_insert((obj(kind, r.int(2)?), RoleId(r.int(3)?), PermissionSet::EMPTY));
        e.2 = e.2.with(p);
        Ok(())
    })?;
    for (acl, (object, role, set)) in acls {
        s.set_acl(object, acl, role, set);
    }
    tx.each(
        "SELECT id, document_type_id FROM documents",
        &[],
        &mut |r| {
            s.set_parents(
                obj(ObjectKind::DOCUMENT, r.int(0)?),
                vec![obj(ObjectKind::DOCUMENT_TYPE, r.int(1)?)],
            );
            Ok(())
        },
    )?;
    tx.each(
        "SELECT id, parent_id FROM cabinets WHERE parent_id IS NOT NULL",
        &[],
        &mut |r| {
            s.set_parents(
                obj(ObjectKind::CABINET, r.int(0)?),
                vec![obj(ObjectKind::CABINET, r.int(1)?)],
            );
            Ok(())
        },
    )?;
    let mut links: rustc_hash::FxHashMap<ObjectRef, Vec<ObjectRef>> = Default::default();
    tx.each(
        "SELECT object_kind, object_id, parent_kind, parent_id FROM object_parents",
        &[],
        &mut |r| {
            if let (Ok(k), Ok(pk)) = (kinds.parse(&r.text(0)?), kinds.parse(&r.text(2)?)) {
                links
                    .entry(obj(k, r.int(1)?))
                    .or_default()
                    .push(obj(pk, r.int(3)?));
            }
            Ok(())
        },
    )?;
    for (o, parents) in links {
        s.set_parents(o, parents);
    }
    Ok(s)
}

/// Whose permissions decide what a template sees: the metadata values of its document
/// (`metadata.document_metadata_view` on the document and on the metadata type, as
/// [`Session::document_metadata_details`] decides it) and the users and groups of a lookup
/// (`user_management.user_view` / `group_view`, as [`Session::users`] and [`Session::groups`]
/// decide it). What the view hides is absent, as if it were not set: `None` in
/// `metadata_value_of`, not iterated in `metadata.all`, not listed in `users` / `groups`.
///
/// Who renders with which view:
/// - a user's session: that user's view;
/// - [`Docmeta::system`] called by the application: [`TemplateView::Everything`] (the
///   application is the templates' author);
/// - a workflow action (an `edit_metadata` value, and the defaults and lookups of the metadata
///   its actions add or edit): the view of the action's author, the user who created it (stored
///   with it); docmeta itself as author (an action created through `Docmeta::system`) sees
///   everything; an action stored before authors were recorded sees nothing;
/// - a transition's condition: the acting user's view, never wider than the transition's
///   author's (both must see a value); for an automatic transition (a trigger), the author's;
/// - the lifecycle task that adds a required metadata type to existing documents (spec 2.4
///   rule 1): the view of the user who saved the association, recorded with the task (a task
///   recorded before that sees nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TemplateView {
    /// Every value, user and group (docmeta itself for the application).
    Everything,
    /// Only what every one of these users may view.
    Only(Vec<UserId>),
    /// No metadata value, user or group.
    Nothing,
}

/// `author_id` as stored with a workflow action or transition: 0 is docmeta itself.
pub(crate) const SYSTEM_AUTHOR: i64 = 0;

impl TemplateView {
    /// The view of an author as stored (`None`: recorded before authors were).
    pub(crate) fn of_author(author: Option<i64>) -> TemplateView {
        match author {
            Some(SYSTEM_AUTHOR) => TemplateView::Everything,
            Some(id) => TemplateView::Only(vec![UserId(id)]),
            None => TemplateView::Nothing,
        }
    }

    /// The view of an actor.
    pub(crate) fn of_actor(actor: Actor) -> TemplateView {
        match actor {
            Actor::System => TemplateView::Everything,
            Actor::User(u) => TemplateView::Only(vec![u]),
        }
    }

    /// What both views see.
    pub(crate) fn and(self, other: TemplateView) -> TemplateView {
        match (self, other) {
            (TemplateView::Nothing, _) | (_, TemplateView::Nothing) => TemplateView::Nothing,
            (TemplateView::Everything, v) | (v, TemplateView::Everything) => v,
            (TemplateView::Only(mut a), TemplateView::Only(b)) => {
                for u in b {
                    if !a.contains(&u) {
                        a.push(u);
                    }
                }
                TemplateView::Only(a)
            }
        }
    }

    /// The author id to store for an actor.
    pub(crate) fn author_id(actor: Actor) -> i64 {
        actor.user().map_or(SYSTEM_AUTHOR, |u| u.0)
    }

    /// Whether the view sees `doc`'s value of `metadata_type`. The document's type is checked
    /// besides the document: a document created or retyped in the running transaction is not
    /// yet linked to its type in the access snapshot.
    fn sees_metadata(
        &self,
        snapshot: &AccessSnapshot,
        doc: &Document,
        metadata_type: MetadataTypeId,
    ) -> bool {
        let users = match self {
            TemplateView::Everything => return true,
            TemplateView::Nothing => return false,
            TemplateView::Only(users) => users,
        };
        let p = Permission::DocumentMetadataView;
        users.iter().all(|u| {
            (snapshot.check(*u, p, obj(ObjectKind::DOCUMENT, doc.id.0))
                || snapshot.check(
                    *u,
                    p,
                    obj(ObjectKind::DOCUMENT_TYPE, doc.document_type_id.0),
                ))
                && snapshot.check(*u, p, obj(ObjectKind::METADATA_TYPE, metadata_type.0))
        })
    }

    fn sees_user(&self, snapshot: &AccessSnapshot, user: UserId) -> bool {
        match self {
            TemplateView::Everything => true,
            TemplateView::Nothing => false,
            TemplateView::Only(users) => users
                .iter()
                .all(|u| *u == user || snapshot.check_global(*u, Permission::UserView)),
        }
    }

    fn sees_groups(&self, snapshot: &AccessSnapshot) -> bool {
        match self {
            TemplateView::Everything => true,
            TemplateView::Nothing => false,
            TemplateView::Only(users) => users
                .iter()
                .all(|u| snapshot.check_global(*u, Permission::GroupView)),
        }
    }
}

/// A user or group as a lookup sees it: id and name.
type Principal = (i64, String);

/// Everything a template's output depends on, as data: two renders of one template with equal
/// inputs give the same output (what lets a unit of work render before it takes the write lock
/// and check, under the lock, that the inputs did not change).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RenderInput {
    /// A default or lookup (spec 2.6, 2.7); users and groups only for a lookup.
    Metadata {
        now: chrono::DateTime<chrono::Utc>,
        document: Option<DocumentContext>,
        people: Option<(Vec<Principal>, Vec<Principal>)>,
    },
    /// A workflow condition or action value (spec 4.5).
    Workflow {
        now: chrono::DateTime<chrono::Utc>,
        document: DocumentContext,
        instance: i64,
        workflow: String,
        state: String,
        context: String,
    },
}

impl RenderInput {
    fn to_value(&self) -> Value {
        match self {
            RenderInput::Metadata {
                now,
                document,
                people,
            } => {
                let document = document.clone().map_or(Value::from(()), Value::from_object);
                match people {
                    None => {
                        minijinja::context! { now => Value::from_object(Moment(*now)), document }
                    }
                    Some((users, groups)) => minijinja::context! {
                        now => Value::from_object(Moment(*now)),
                        document,
                        users => users.iter().map(|(id, name)| user_value(*id, name)).collect::<Vec<_>>(),
                        groups => groups.iter().map(|(id, name)| group_value(*id, name)).collect::<Vec<_>>(),
                    },
                }
            }
            RenderInput::Workflow {
                now,
                document,
                instance,
                workflow,
                state,
                context,
            } => {
                let context = crate::workflows::json_value(
                    &serde_json::from_str(context).unwrap_or_default(),
                );
                minijinja::context! {
                    workflow_instance => minijinja::context! {
                        id => *instance,
                        document => Value::from_object(document.clone()),
                        workflow => minijinja::context! { label => workflow },
                        current_state => minijinja::context! { label => state },
                        context => context.clone(),
                    },
                    workflow_instance_context => context,
                    now => Value::from_object(Moment(*now)),
                }
            }
        }
    }
}

/// A template render that a unit of work asked for before it was done.
type RenderKey = (String, usize, RenderInput);

/// The renders of one unit of work, kept across its attempts (see [`Docmeta::write`]): a
/// template whose output is not known yet is not rendered under the write lock; the attempt
/// notes it, is rolled back, the template is rendered with no lock held, and the unit runs
/// again, using the output when the inputs are still equal (checked under the lock). A unit
/// whose inputs keep changing renders under the lock after a few attempts (still bounded by
/// the render budget). `now` is fixed for all attempts.
#[derive(Debug)]
pub(crate) struct Renders {
    pub(crate) now: chrono::DateTime<chrono::Utc>,
    done: std::cell::RefCell<
        rustc_hash::FxHashMap<RenderKey, std::result::Result<String, TemplateError>>,
    >,
    pending: std::cell::RefCell<Vec<RenderKey>>,
    defer: std::cell::Cell<bool>,
}

impl Renders {
    /// Renders made inline (read transactions hold no write lock).
    pub(crate) fn inline(now: chrono::DateTime<chrono::Utc>) -> Renders {
        Renders {
            now,
            done: Default::default(),
            pending: Default::default(),
            defer: std::cell::Cell::new(false),
        }
    }

    pub(crate) fn set_defer(&self, defer: bool) {
        self.defer.set(defer);
    }

    /// Whether the last attempt asked for renders not done yet.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.borrow().is_empty()
    }

    /// Renders what the last attempt asked for (call it with no transaction open).
    pub(crate) fn render_pending(&self, templates: &TemplateEngine) {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for key in pending {
            if self.done.borrow().contains_key(&key) {
                continue;
            }
            let out = templates.render(&key.0, key.2.to_value(), key.1);
            self.done.borrow_mut().insert(key, out);
        }
    }

    /// The output of `source` with `input`: known, rendered now, or (deferring) noted for
    /// after the attempt, which then fails.
    pub(crate) fn render(
        &self,
        templates: &TemplateEngine,
        source: &str,
        max_output: usize,
        input: RenderInput,
    ) -> std::result::Result<String, TemplateError> {
        if is_literal(source) {
            return templates.render(source, Value::UNDEFINED, max_output);
        }
        let key = (source.to_owned(), max_output, input);
        if let Some(out) = self.done.borrow().get(&key) {
            return out.clone();
        }
        if self.defer.get() {
            self.pending.borrow_mut().push(key);
            return Err(TemplateError(
                "rendered before the change is written".to_owned(),
            ));
        }
        let out = templates.render(&key.0, key.2.to_value(), key.1);
        self.done.borrow_mut().insert(key, out.clone());
        out
    }
}

/// Template contexts built from the current transaction, only when a template asks, with what
/// `view` may see.
pub(crate) struct Inputs<'a, 'b> {
    pub(crate) db: &'a Docmeta,
    pub(crate) tx: &'a mut Tx<'b>,
    pub(crate) document: Option<&'a Document>,
    pub(crate) view: &'a TemplateView,
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
        let all = tx.rows(
            "SELECT t.name, t.label, m.value, t.id FROM document_metadata m JOIN metadata_types t ON t.id = m.metadata_type_id WHERE m.document_id = ?1 ORDER BY m.id",
            &[doc.id.0.into()],
            |r| Ok((MetadataEntry { name: r.text(0)?, label: r.text(1)?, value: r.text(2)? }, MetadataTypeId(r.int(3)?))),
        )?;
        let snapshot = db.inner.access.read();
        all.into_iter()
            .filter(|(_, t)| view.sees_metadata(&snapshot, doc, *t))
            .map(|(m, _)| m)
            .collect()
    };
    Ok(DocumentContext {
        id: doc.id.0,
        label: doc.label.clone(),
        document_type_label: type_label,
        created: doc.created,
        metadata,
    })
}

impl Inputs<'_, '_> {
    fn document(&mut self) -> Result<Option<DocumentContext>> {
        match self.document {
            Some(doc) => document_context(self.db, self.tx, doc, self.view).map(Some),
            None => Ok(None),
        }
    }

    fn input(&mut self, lookup: bool) -> Result<RenderInput> {
        let document = self.document()?;
        let people = if lookup {
            let (users, groups) = (self.tx.users()?, self.tx.groups()?);
            let snapshot = self.db.inner.access.read();
            let users = users
                .into_iter()
                .filter(|u| u.is_active && self.view.sees_user(&snapshot, u.id))
                .map(|u| (u.id.0, u.username))
                .collect();
            let groups = if self.view.sees_groups(&snapshot) {
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
