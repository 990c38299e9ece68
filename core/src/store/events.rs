//! Statements of the event log.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::Utc;

use super::Tx;
use super::records::*;
use crate::error::Result;
use crate::events::{Event, EventObject, EventQuery};
use crate::model::*;

impl Tx<'_> {
    // ----- events -----------------------------------------------------------------------

    /// Appends an event; its id and time are assigned here.
    pub fn append_event(
        &mut self,
        name: &str,
        actor: Option<UserId>,
        target: &EventObject,
        action: Option<&EventObject>,
    ) -> Result<Event> {
        let timestamp = Utc::now();
        let id = self.insert(
            "INSERT INTO events (timestamp, name, actor_id, target_kind, target_id, target_label, action_kind, action_id, action_label) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
            &[
                to_micros(timestamp).into(),
                name.into(),
                actor.map(|a| a.0).into(),
                (&target.kind).into(),
                target.id.into(),
                (&target.label).into(),
                action.map(|a| a.kind.as_str()).into(),
                action.map(|a| a.id).into(),
                action.map(|a| a.label.as_str()).into(),
            ],
        )?;
        Ok(Event {
            id: EventId(id),
            timestamp: from_micros(to_micros(timestamp)),
            name: name.to_owned(),
            actor,
            target: target.clone(),
            action_object: action.cloned(),
        })
    }

    /// Events matching `q`.
    pub fn events(&mut self, q: &EventQuery) -> Result<Vec<Event>> {
        let mut sql = String::from(
            "SELECT id, timestamp, name, actor_id, target_kind, target_id, target_label, action_kind, action_id, action_label FROM events WHERE id > ?1 AND id < ?2",
        );
        let before = q.before.map_or(i64::MAX, |b| b.0);
        let after = q.after.map_or(0, |a| a.0);
        let limit = i64::from(q.limit.unwrap_or(100));
        let (kind, id) = q.object.clone().unwrap_or_default();
        if q.object.is_some() {
            sql.push_str(" AND ((target_kind = ?3 AND target_id = ?4) OR (action_kind = ?3 AND action_id = ?4))");
        } else {
            sql.push_str(" AND ?3 = ?3 AND ?4 = ?4");
        }
        sql.push_str(if q.oldest_first {
            " ORDER BY id ASC"
        } else {
            " ORDER BY id DESC"
        });
        sql.push_str(" LIMIT ?5");
        self.rows(
            &sql,
            &[
                after.into(),
                before.into(),
                kind.as_str().into(),
                id.into(),
                limit.into(),
            ],
            event,
        )
    }
}
