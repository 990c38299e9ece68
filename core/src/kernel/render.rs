//! What templates see and when they render: [`TemplateView`] (whose permissions decide what a
//! template sees), [`RenderInput`] (everything a render depends on, as data) and [`Renders`]
//! (the renders of one unit of work, made before the write lock is taken). Imports only the
//! layers below the kernel.

use minijinja::Value;

use crate::access::{AccessSnapshot, ObjectKind, ObjectRef, Permission};
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
/// A template is code a user stores and someone else runs later (issue #32), so it sees only
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
    /// No metadata value, user or group.
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
