//! The event log as a session may read it (listed, or followed as it grows), and the durable
//! tasks not yet done.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Session, obj, view_permission};
use crate::access::{KindRegistry, ObjectKind, Permission};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery, names};
use crate::model::*;

/// The longest [`Session::events_after`] waits for a new event.
pub const MAX_EVENT_WAIT: Duration = Duration::from_secs(60);

/// The most events one call of [`Session::events_after`] answers.
pub const MAX_FEED_EVENTS: u32 = 1000;

/// Events of the log one read of a feed looks at, at most, when the reader may see none of
/// them: the read then answers (or waits on) with its cursor past them, so that a reader who
/// may see little never makes one call read the whole log.
const FEED_SCAN: usize = 5000;

/// Events of the log read from the store at once while filtering them for a reader.
const BATCH: u32 = 500;

/// One read of a feed (see [`Session::events_after`]).
struct FeedRead {
    events: Vec<Event>,
    cursor: Option<EventId>,
    /// The log was read to its end (as far as followers may read it now).
    at_end: bool,
    /// The session that decided what `events` shows (caught up after they were read).
    reader: Session,
}

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
        let started = self.since.unwrap_or_else(Instant::now);
        let reader = self.deciding_from(started)?;
        let events = reader.visible_events(query)?;
        reader.with_actors(events)
    }

    /// Follows the event log: the events committed after `after` (the cursor of the previous
    /// call; `None` for the start of the log), in commit order, that this session may see (as
    /// [`events`](Self::events) shows them), at most `limit`, with the cursor to go on from.
    /// It answers as soon as at least one such event is committed, by this process or any other
    /// on the same database, or, when none comes within `wait`, with no events at the
    /// deadline; `Duration::ZERO` answers at once. What it shows is decided when it reads,
    /// with every change committed before then applied.
    ///
    /// The cursor moves past every event read, those this session may not see included, so a
    /// follower never reads those again, and never past an event that could still appear
    /// before it in commit order (on PostgreSQL an event is read once every transaction older
    /// than its own has finished: see [`EventQuery::oldest_first`]). Waiting holds a thread but
    /// no database connection; an async caller would rather use
    /// [`Docmeta::watch_events`](crate::Docmeta::watch_events) and call this with no wait.
    ///
    /// `wait` is at most [`MAX_EVENT_WAIT`] and `limit` from 1 to [`MAX_FEED_EVENTS`]; a cursor
    /// is not negative. Otherwise [`Error::Validation`] naming `wait`, `limit` or `after`.
    pub fn events_after(
        &self,
        after: Option<EventId>,
        wait: Duration,
        limit: u32,
    ) -> Result<EventFeed> {
        if wait > MAX_EVENT_WAIT {
            return Err(Error::validation(
                "wait",
                format!(
                    "Ensure this value is less than or equal to {}.",
                    MAX_EVENT_WAIT.as_secs()
                ),
            ));
        }
        if !(1..=MAX_FEED_EVENTS).contains(&limit) {
            return Err(Error::validation(
                "limit",
                format!("Ensure this value is between 1 and {MAX_FEED_EVENTS}."),
            ));
        }
        if after.is_some_and(|a| a.0 < 0) {
            return Err(Error::validation(
                "after",
                "Ensure this value is greater than or equal to 0.",
            ));
        }
        let deadline = Instant::now() + wait;
        // Counted among the waiters before the first read: a commit after it is heard.
        let _waiting = (!wait.is_zero()).then(|| self.db.waiting_for_events());
        let mut cursor = after;
        loop {
            // Read before the log is: any commit after this moves it.
            let seen = self.db.event_generation();
            let read = self.feed_read(cursor, limit as usize)?;
            cursor = read.cursor;
            if !read.events.is_empty() {
                return Ok(EventFeed {
                    events: read.reader.with_actors(read.events)?,
                    cursor,
                });
            }
            if Instant::now() >= deadline {
                return Ok(EventFeed {
                    events: Vec::new(),
                    cursor,
                });
            }
            if read.at_end {
                self.db.wait_for_events(seen, deadline);
            }
        }
    }

    /// This session deciding as of `started`: what other processes committed before it is
    /// applied once, here, rather than before each of the many decisions a listing of the log
    /// takes (each would otherwise read the log again on PostgreSQL).
    fn deciding_from(&self, started: Instant) -> Result<Session> {
        let reader = Session {
            since: Some(started),
            ..self.clone()
        };
        reader.catch_up()?;
        Ok(reader)
    }

    /// `events`, each with its actor's username when this session may know it.
    pub(super) fn with_actors(&self, events: Vec<Event>) -> Result<Vec<EventView>> {
        let mut names: HashMap<UserId, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            out.push(self.with_actor(event, &mut names)?);
        }
        Ok(out)
    }

    /// `event` with its actor's name (`names` remembers the names already read).
    fn with_actor(
        &self,
        event: Event,
        names: &mut HashMap<UserId, Option<String>>,
    ) -> Result<EventView> {
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
        Ok(EventView { event, actor })
    }

    /// Whether this session sees every event whole (docmeta itself, a superuser).
    fn sees_every_event(&self) -> bool {
        self.actor == Actor::System || self.is_superuser()
    }

    /// `event` as [`events`](Self::events) would show it to this session, decided when it is
    /// shown (a webhook's delivery, as its owner may see it then); `None` when this session
    /// may not view its target.
    pub(crate) fn event_as_seen(&self, event: Event) -> Result<Option<EventView>> {
        let reader = self.deciding_from(Instant::now())?;
        let event = if reader.sees_every_event() {
            Some(event)
        } else {
            reader.shown(&self.db.kinds(), event)
        };
        match event {
            Some(event) => reader.with_actor(event, &mut HashMap::new()).map(Some),
            None => Ok(None),
        }
    }

    /// Whether this session may view the target of an event, so sees the event at all.
    pub(crate) fn may_view_event(&self, target: &EventObject) -> bool {
        self.sees_every_event() || self.may_view_event_object(&self.db.kinds(), target)
    }

    /// The events of [`events`](Self::events), without their actors' names.
    fn visible_events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        let limit = query.limit.unwrap_or(100).clamp(1, 1000) as usize;
        if self.sees_every_event() {
            return self.db.events(&EventQuery {
                limit: Some(limit as u32),
                ..query.clone()
            });
        }
        let kinds = self.db.kinds();
        let mut out = Vec::new();
        let mut page = EventQuery {
            limit: Some(BATCH),
            ..query.clone()
        };
        loop {
            let batch = self.db.events(&page)?;
            let exhausted = batch.len() < BATCH as usize;
            let Some(last) = batch.last().map(|e| e.id) else {
                break;
            };
            for e in batch {
                if let Some(e) = self.shown(&kinds, e) {
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
            self.db.check_now(u, permission, obj(kind, id))
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

    /// One read of a feed: at most `limit` events after `after` that this session may see, in
    /// commit order, looking at no more than [`FEED_SCAN`] events of the log; the cursor is the
    /// last event looked at (the last one returned when `limit` was reached).
    ///
    /// Each batch is read from the log first and decided on after: the catch-up made then
    /// covers every change committed before the batch's events (a document created with its
    /// event, a grant), so none is hidden for want of a change that came with or before it.
    /// Deciding first would let an event committed between the two be skipped for good.
    fn feed_read(&self, after: Option<EventId>, limit: usize) -> Result<FeedRead> {
        let kinds = self.db.kinds();
        let mut out = Vec::new();
        let mut cursor = after;
        let mut looked = 0;
        loop {
            let events = self.db.events(&EventQuery {
                after: cursor,
                limit: Some(BATCH),
                oldest_first: true,
                ..Default::default()
            })?;
            let reader = self.deciding_from(Instant::now())?;
            let at_end = events.len() < BATCH as usize;
            let every = reader.sees_every_event();
            for e in events {
                looked += 1;
                cursor = Some(e.id);
                let shown = if every {
                    Some(e)
                } else {
                    reader.shown(&kinds, e)
                };
                if let Some(e) = shown {
                    out.push(e);
                    if out.len() == limit {
                        return Ok(FeedRead {
                            events: out,
                            cursor,
                            at_end: false,
                            reader,
                        });
                    }
                }
            }
            if at_end || looked >= FEED_SCAN {
                return Ok(FeedRead {
                    events: out,
                    cursor,
                    at_end,
                    reader,
                });
            }
        }
    }

    /// `e` as this session may see it: `None` when it may not view its target; otherwise with
    /// its action object and actor redacted to `None` unless it may view them too (a hidden
    /// document added to a visible cabinet, a hidden role in an ACL event).
    fn shown(&self, kinds: &KindRegistry, mut e: Event) -> Option<Event> {
        if !self.may_view_event_object(kinds, &e.target) {
            return None;
        }
        // The second object is shown only to those who may view it too (a hidden document
        // added to a visible cabinet, a hidden role in an ACL event).
        let action_shown = e
            .action_object
            .as_ref()
            .is_none_or(|o| self.may_view_event_object(kinds, o));
        if !self.may_view_changes(kinds, &e, action_shown) {
            e.changes = e.changes.into_iter().map(EventChange::hidden).collect();
        }
        if !action_shown {
            e.action_object = None;
        }
        if e.actor.is_some_and(|a| !self.may_view_user(a)) {
            e.actor = None;
        }
        Some(e)
    }

    /// Whether this session may view an object an event names. Called by a session that has
    /// caught up ([`deciding_from`](Self::deciding_from)): the decision is taken from the
    /// state applied then.
    fn may_view_event_object(&self, kinds: &KindRegistry, target: &EventObject) -> bool {
        match kinds.parse(&target.kind) {
            // Not inside a transaction here, so links kept in the store may be read.
            Ok(kind) => match self.actor {
                Actor::User(u) => self
                    .db
                    .check_now(u, view_permission(kind), obj(kind, target.id)),
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
