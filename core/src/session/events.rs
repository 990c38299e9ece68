//! The event log as a session may read it, and the durable tasks not yet done.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::HashMap;

use super::{Session, obj, view_permission};
use crate::access::{KindRegistry, ObjectKind, Permission};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery, names};
use crate::model::*;

impl Session {
    /// Events of the log whose target this session may view, newest first (unless
    /// `query.oldest_first`), each with its actor's username. An event's action object that this session may not view is
    /// redacted to `None`: the event is shown, the hidden object is not. So is its actor, unless
    /// this session may view that user (itself, or `user_management.user_view`, as
    /// [`user`](Self::user) decides): who did something is a user like any other, and a user
    /// one may not look up must not be named by the log either.
    ///
    /// What an event changed ([`Event::changes`]) is shown by the rule that shows those values
    /// when they are read, applied now: a metadata value's before and after to whoever may
    /// list that value ([`document_metadata`](Self::document_metadata):
    /// `metadata.document_metadata_view` on the document and on its type), an ACL's
    /// permissions to whoever may view the object's ACLs (`acls.acl_view`), anything else to
    /// whoever is shown the event's target and its second object. For any other reader a
    /// change keeps its `field` and has `before` and `after` set to `None`. Superusers and
    /// docmeta itself see every change.
    ///
    /// ```
    /// use docmeta_core::{Event, EventQuery};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let memo = admin.create_document_type("Memo")?;
    /// let doc = admin.create_document(memo.id, "Note", &[])?.document;
    ///
    /// let newest = admin.events(&EventQuery { limit: Some(1), ..EventQuery::default() })?;
    /// let event = &newest[0].event;
    /// assert_eq!(event.name, Event::DOCUMENT_CREATED);
    /// assert_eq!((event.target.id, event.target.label.as_str()), (doc.id.0, "Note"));
    /// assert!(newest[0].actor.is_none()); // docmeta itself: the system session
    ///
    /// // The document's own history, oldest first.
    /// let object = Some(("documents.document".to_owned(), doc.id.0));
    /// let query = EventQuery { object, oldest_first: true, ..EventQuery::default() };
    /// let history = admin.events(&query)?;
    /// let names: Vec<&str> = history.iter().map(|e| e.event.name.as_str()).collect();
    /// assert_eq!(names, [Event::DOCUMENT_CREATED]);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn events(&self, query: &EventQuery) -> Result<Vec<EventView>> {
        let events = self.visible_events(query)?;
        let mut names: HashMap<UserId, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let actor = match event.actor {
                None => None,
                Some(id) => {
                    if let std::collections::hash_map::Entry::Vacant(e) = names.entry(id) {
                        e.insert(self.read(|tx| tx.user(id))?.map(|u| u.username));
                    }
                    names
                        .get(&id)
                        .cloned()
                        .flatten()
                        .map(|username| EventActor { id, username })
                }
            };
            out.push(EventView { event, actor });
        }
        Ok(out)
    }

    /// The events of [`events`](Self::events), without their actors' names.
    fn visible_events(&self, query: &EventQuery) -> Result<Vec<Event>> {
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
                    let action_shown = e
                        .action_object
                        .as_ref()
                        .is_none_or(|o| self.may_view_event_object(&kinds, o));
                    if !self.may_view_changes(&kinds, &e, action_shown) {
                        e.changes = e.changes.into_iter().map(EventChange::hidden).collect();
                    }
                    if !action_shown {
                        e.action_object = None;
                    }
                    if e.actor.is_some_and(|a| !self.may_view_user(a)) {
                        e.actor = None;
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

    /// Whether this session may view the values of what event `e` changed, now, by the rule
    /// that shows them when they are read (its target is shown already; `action_shown`: its
    /// second object, if any, is shown too):
    /// - a metadata value (the `document_metadata_*` events): `document_metadata_view` on the
    ///   document and on the value's type, as [`document_metadata`](Self::document_metadata)
    ///   lists values;
    /// - an ACL's permissions (the `acl_*` events): `acls.acl_view` on the object, as
    ///   [`acls`](Self::acls) lists them;
    /// - anything else (a label, a user's fields, a link between the event's two objects: a
    ///   membership, a role's group, a cabinet's document, an association, a document's type,
    ///   an instance's state): the event's target, and its second object when it has one.
    fn may_view_changes(&self, kinds: &KindRegistry, e: &Event, action_shown: bool) -> bool {
        let Actor::User(u) = self.actor else {
            return true;
        };
        if e.changes.is_empty() {
            return true;
        }
        // Not inside a transaction here, so links kept in the store may be read.
        let may = |permission: Permission, kind: ObjectKind, id: i64| {
            self.db.check(u, permission, obj(kind, id))
        };
        match e.name.as_str() {
            names::DOCUMENT_METADATA_ADDED
            | names::DOCUMENT_METADATA_EDITED
            | names::DOCUMENT_METADATA_REMOVED => {
                let (Ok(ObjectKind::DOCUMENT), Some(mt)) =
                    (kinds.parse(&e.target.kind), e.action_object.as_ref())
                else {
                    return false;
                };
                may(
                    Permission::DocumentMetadataView,
                    ObjectKind::DOCUMENT,
                    e.target.id,
                ) && may(
                    Permission::DocumentMetadataView,
                    ObjectKind::METADATA_TYPE,
                    mt.id,
                )
            }
            names::ACL_CREATED | names::ACL_EDITED | names::ACL_DELETED => kinds
                .parse(&e.target.kind)
                .is_ok_and(|kind| may(Permission::AclView, kind, e.target.id)),
            _ => action_shown,
        }
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
                "user_management.user" => self.may_view_user(UserId(target.id)),
                "user_management.group" => self.can_globally(Permission::GroupView),
                _ => self.is_superuser(),
            },
        }
    }

    /// Durable tasks not yet done (pending, running, failed). Superusers only.
    pub fn tasks(&self) -> Result<Vec<Task>> {
        if !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only superusers see background tasks".into(),
            ));
        }
        self.read(|tx| tx.open_tasks(1000))?
            .into_iter()
            .map(Task::try_from)
            .collect()
    }
}
