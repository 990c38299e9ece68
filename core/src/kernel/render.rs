//! What templates see and when they render: [`TemplateView`] (whose permissions decide what a
//! template sees), [`RenderInput`] (everything a render depends on, as data), [`Renders`] (the
//! renders of one unit of work, made with no transaction open, within one budget) and
//! [`RenderGate`] (how many renders may run at once, per user and in all). Imports only the
//! layers below the kernel.

use minijinja::Value;

use crate::access::{AccessSnapshot, ObjectKind, ObjectRef, Permission};
use crate::error::{Error, Result};
use crate::metadata::template::{group_value, is_literal, json_value, user_value};
use crate::metadata::{DocumentContext, Moment, TemplateEngine, TemplateError};
use crate::model::*;

/// Whose permissions decide what a template sees: the metadata values of its document
/// (`metadata.document_metadata_view` on the document and on the metadata type, as
/// [`Session::document_metadata_details`] decides it) and the users and groups of a lookup
/// (`user_management.user_view` / `group_view`, as [`Session::users`] and [`Session::groups`]
/// decide it). What the view hides is absent, as if it were not set: `None` in
/// `metadata_value_of`, not iterated in `metadata.all`, not listed in `users` / `groups`.
///
/// A template is code a user stores and someone else runs later, so it sees only
/// what every one of its *shapers* may view (its author and everyone who changed its text since,
/// [`Shapers`]; docmeta itself, through `Docmeta::system`, sees everything; a template whose
/// shapers are unknown sees nothing), intersected with the view of whoever it runs for:
/// - a default or lookup: its shapers ∧ the acting user (a user's session; docmeta acting for
///   someone: that one, below);
/// - a transition's condition: its shapers ∧ the user who takes or lists the transition; for an
///   automatic transition (a trigger), its shapers alone;
/// - a workflow action (an `edit_metadata` value; the defaults and lookups of the metadata its
///   actions add or edit, narrowed again by their own shapers): the action's author (who
///   created it; actions cannot be edited); an action stored before authors were recorded sees
///   nothing;
/// - the lifecycle task that adds a required metadata type to existing documents (spec 2.4
///   rule 1): the user who saved the association (recorded with the task; a task recorded
///   before that sees nothing) ∧ the default's shapers;
/// - [`Docmeta::system`] called by the application: the template's shapers alone.
///
/// A user who is deleted or deactivated sees nothing (the access snapshot refuses them), so a
/// template one of whose shapers is gone sees nothing until someone saves it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TemplateView {
    /// Every value, user and group (docmeta itself for the application).
    Everything,
    /// Only what every one of these users may view.
    Only(Vec<UserId>),
    /// No metadata value, user, group or document type.
    Nothing,
}

impl TemplateView {
    /// The view of an author as stored (`None`: recorded before authors were).
    pub(crate) fn of_author(author: Option<i64>) -> TemplateView {
        match author {
            Some(SYSTEM_AUTHOR) => TemplateView::Everything,
            Some(id) => TemplateView::Only(vec![UserId(id)]),
            None => TemplateView::Nothing,
        }
    }

    /// What every one of `shapers` sees (none: nothing).
    pub(crate) fn of_shapers(shapers: &Shapers) -> TemplateView {
        if shapers.ids().is_empty() {
            return TemplateView::Nothing;
        }
        if shapers.is_system_only() {
            return TemplateView::Everything;
        }
        TemplateView::Only(
            shapers
                .ids()
                .iter()
                .filter(|id| **id != SYSTEM_AUTHOR)
                .map(|id| UserId(*id))
                .collect(),
        )
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

    /// Whether the view sees `doc`'s value of `metadata_type`. The document is checked as a
    /// document of the type it has in the running transaction (see
    /// [`AccessSnapshot::check_document`]): one created or retyped in it is not yet linked to
    /// that type in the access snapshot.
    pub(crate) fn sees_metadata(
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
            snapshot.check_document(*u, p, doc.id.0, doc.document_type_id.0)
                && snapshot.check(
                    *u,
                    p,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, metadata_type.0),
                )
        })
    }

    /// Whether the view sees the label of `doc`'s type: every one of its users may view the
    /// document (whose answer shows its type) or the type itself. The document is checked as a
    /// document of the type it has in the running transaction, as in
    /// [`sees_metadata`](Self::sees_metadata).
    pub(crate) fn sees_document_type(&self, snapshot: &AccessSnapshot, doc: &Document) -> bool {
        let users = match self {
            TemplateView::Everything => return true,
            TemplateView::Nothing => return false,
            TemplateView::Only(users) => users,
        };
        users.iter().all(|u| {
            snapshot.check_document(
                *u,
                Permission::DocumentView,
                doc.id.0,
                doc.document_type_id.0,
            ) || snapshot.check(
                *u,
                Permission::DocumentTypeView,
                ObjectRef::new(ObjectKind::DOCUMENT_TYPE, doc.document_type_id.0),
            )
        })
    }

    pub(crate) fn sees_user(&self, snapshot: &AccessSnapshot, user: UserId) -> bool {
        match self {
            TemplateView::Everything => true,
            TemplateView::Nothing => false,
            TemplateView::Only(users) => users
                .iter()
                .all(|u| *u == user || snapshot.check_global(*u, Permission::UserView)),
        }
    }

    pub(crate) fn sees_groups(&self, snapshot: &AccessSnapshot) -> bool {
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
    pub(crate) fn to_value(&self) -> Value {
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
                let context = json_value(&serde_json::from_str(context).unwrap_or_default());
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

/// Template renders in progress in this process, per user and in all (`renders_per_user`,
/// `renders_at_once`): a render beyond either is refused with [`Error::Throttled`], never
/// queued, so that a user looping a slow template holds at most `renders_per_user` threads and
/// all users together at most `renders_at_once` (the HTTP server keeps that many threads beyond
/// what its reads need). docmeta itself (`Actor::System`: the application, the lifecycle tasks)
/// is not counted.
#[derive(Debug)]
pub(crate) struct RenderGate {
    per_user: usize,
    at_once: usize,
    running: parking_lot::Mutex<(usize, rustc_hash::FxHashMap<UserId, usize>)>,
}

/// A render in progress; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct RenderSlot {
    gate: std::sync::Arc<RenderGate>,
    user: UserId,
}

impl RenderGate {
    pub(crate) fn new(per_user: usize, at_once: usize) -> std::sync::Arc<RenderGate> {
        std::sync::Arc::new(RenderGate {
            per_user: per_user.max(1),
            at_once: at_once.max(1),
            running: parking_lot::Mutex::new((0, Default::default())),
        })
    }

    /// A place for one render of `actor`, or why there is none.
    pub(crate) fn enter(self: &std::sync::Arc<Self>, actor: Actor) -> Result<Option<RenderSlot>> {
        let Actor::User(user) = actor else {
            return Ok(None);
        };
        let mut running = self.running.lock();
        let own = running.1.get(&user).copied().unwrap_or(0);
        if own >= self.per_user {
            return Err(Error::Throttled(format!(
                "this user already has {own} template renders in progress (renders_per_user)"
            )));
        }
        if running.0 >= self.at_once {
            return Err(Error::Throttled(format!(
                "{} template renders are in progress (renders_at_once)",
                running.0
            )));
        }
        running.0 += 1;
        running.1.insert(user, own + 1);
        Ok(Some(RenderSlot {
            gate: self.clone(),
            user,
        }))
    }
}

impl Drop for RenderSlot {
    fn drop(&mut self) {
        let mut running = self.gate.running.lock();
        running.0 = running.0.saturating_sub(1);
        if let Some(n) = running.1.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.1.remove(&self.user);
            }
        }
    }
}

/// The renders of one unit of work, kept across its attempts (see [`Docmeta::write`]): a
/// template whose output is not known yet is not rendered inside a transaction; the attempt
/// notes it, is rolled back (a read simply ends), the template is rendered with no transaction
/// open, and the unit runs again, using the output when the inputs are still equal (checked in
/// the new transaction). `now` is fixed for all attempts.
///
/// All the renders of the unit share one budget (the template engine's, 2 s): the time spent
/// rendering, and the attempts rolled back to render, count against it; past it a template
/// fails as one that ran too long does. Each render takes a place of the [`RenderGate`].
#[derive(Debug)]
pub(crate) struct Renders {
    pub(crate) now: chrono::DateTime<chrono::Utc>,
    actor: Actor,
    gate: std::sync::Arc<RenderGate>,
    budget: std::time::Duration,
    spent: std::cell::Cell<std::time::Duration>,
    done: std::cell::RefCell<
        rustc_hash::FxHashMap<RenderKey, std::result::Result<String, TemplateError>>,
    >,
    pending: std::cell::RefCell<Vec<RenderKey>>,
    defer: std::cell::Cell<bool>,
    /// Renders of the current attempt answered from `done`: how far it got.
    hits: std::cell::Cell<usize>,
    /// A render the gate refused (the unit fails with it, whatever its template error became).
    refused: std::cell::RefCell<Option<Error>>,
}

impl Renders {
    /// The renders of a unit of work of `actor` (`defer`: rendered between attempts, with no
    /// transaction open).
    pub(crate) fn new(
        now: chrono::DateTime<chrono::Utc>,
        actor: Actor,
        gate: std::sync::Arc<RenderGate>,
        budget: std::time::Duration,
    ) -> Renders {
        Renders {
            now,
            actor,
            gate,
            budget,
            spent: Default::default(),
            done: Default::default(),
            pending: Default::default(),
            defer: std::cell::Cell::new(false),
            hits: Default::default(),
            refused: Default::default(),
        }
    }

    /// Starts an attempt of the unit: its renders are deferred (`defer`) or made at once.
    pub(crate) fn begin_attempt(&self, defer: bool) {
        self.defer.set(defer);
        self.hits.set(0);
    }

    /// Renders of the last attempt answered from those already made.
    pub(crate) fn hits(&self) -> usize {
        self.hits.get()
    }

    /// Whether the last attempt asked for renders not done yet.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.borrow().is_empty()
    }

    /// Counts `time` (an attempt rolled back to render) against the unit's budget.
    pub(crate) fn charge(&self, time: std::time::Duration) {
        self.spent.set(self.spent.get() + time);
    }

    /// The refusal of a render by the gate, if there was one: the unit's outcome.
    pub(crate) fn take_refusal(&self) -> Option<Error> {
        self.refused.borrow_mut().take()
    }

    /// Renders what the last attempt asked for (call it with no transaction open); fails only
    /// when the gate refuses a render (a template's own failure is its output, met by the next
    /// attempt).
    pub(crate) fn render_pending(&self, templates: &TemplateEngine) -> Result<()> {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for key in pending {
            if self.done.borrow().contains_key(&key) {
                continue;
            }
            let out = self.render_now(templates, &key);
            if let Some(refused) = self.take_refusal() {
                return Err(refused);
            }
            self.done.borrow_mut().insert(key, out);
        }
        Ok(())
    }

    /// Renders `key` now, within what is left of the unit's budget and with a place of the
    /// gate.
    fn render_now(
        &self,
        templates: &TemplateEngine,
        key: &RenderKey,
    ) -> std::result::Result<String, TemplateError> {
        let left = self.budget.saturating_sub(self.spent.get());
        if left.is_zero() {
            return Err(TemplateError(format!(
                "the templates of this change ran past the render budget ({} ms for all of them)",
                self.budget.as_millis()
            )));
        }
        let _slot = match self.gate.enter(self.actor) {
            Ok(slot) => slot,
            Err(e) => {
                let message = e.to_string();
                *self.refused.borrow_mut() = Some(e);
                return Err(TemplateError(message));
            }
        };
        let started = std::time::Instant::now();
        let out = templates.render_until(&key.0, key.2.to_value(), key.1, started + left);
        self.charge(started.elapsed());
        out
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
            self.hits.set(self.hits.get() + 1);
            return out.clone();
        }
        if self.defer.get() {
            self.pending.borrow_mut().push(key);
            return Err(TemplateError(
                "rendered before the change is written".to_owned(),
            ));
        }
        let out = self.render_now(templates, &key);
        self.done.borrow_mut().insert(key, out.clone());
        out
    }
}
