//! The event log as a session may read it, and the durable tasks not yet done.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::HashMap;

use super::{Session, obj, view_permission};
use crate::access::{KindRegistry, Permission};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery};
use crate::model::*;

impl Session {
    /// Events of the log whose target this session may view, newest first (unless
    /// `query.oldest_first`), each with its actor's username. An event's action object that this session may not view is
    /// redacted to `None`: the event is shown, the hidden object is not. So is its actor, unless
    /// this session may view that user (itself, or `user_management.user_view`, as
    /// [`user`](Self::user) decides): who did something is a user like any other, and a user
    /// one may not look up must not be named by the log either.
    pub fn events(&self, query: &EventQuery) -> Result<Vec<EventView>> {
        let events = self.visible_events(query)?;
        let mut names: HashMap<UserId, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            out.push(self.with_actor(event, &mut names)?);
        }
        Ok(out)
    }

    /// `event` as [`events`](Self::events) would show it to this session, read when it is
    /// shown (a webhook's delivery, as its owner may see it then); `None` when this session
    /// may not view its target.
    pub(crate) fn event_as_seen(&self, event: Event) -> Result<Option<EventView>> {
        let event = if self.actor == Actor::System || self.is_superuser() {
            Some(event)
        } else {
            self.redacted(&self.db.kinds(), event)
        };
        match event {
            Some(event) => self.with_actor(event, &mut HashMap::new()).map(Some),
            None => Ok(None),
        }
    }

    /// Whether this session may view the target of an event, so sees the event at all.
    pub(crate) fn may_view_event(&self, target: &EventObject) -> bool {
        self.actor == Actor::System
            || self.is_superuser()
            || self.may_view_event_object(&self.db.kinds(), target)
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

    /// `e` as this session, neither docmeta itself nor a superuser (who see every event
    /// whole), may see it: `None` when it may not view its target; its action object and
    /// actor removed when it may not view them.
    fn redacted(&self, kinds: &KindRegistry, mut e: Event) -> Option<Event> {
        if !self.may_view_event_object(kinds, &e.target) {
            return None;
        }
        // The second object is shown only to those who may view it too (a hidden document
        // added to a visible cabinet, a hidden role in an ACL event).
        if e.action_object
            .as_ref()
            .is_some_and(|o| !self.may_view_event_object(kinds, o))
        {
            e.action_object = None;
        }
        if e.actor.is_some_and(|a| !self.may_view_user(a)) {
            e.actor = None;
        }
        Some(e)
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
            for e in batch {
                if let Some(e) = self.redacted(&kinds, e) {
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
