//! Statements of the event log.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::Utc;

use super::records::*;
use super::{Dialect, Param, Tx};
use crate::error::Result;
use crate::events::chain::{StoredEvent, chain_hash, hex};
use crate::events::{Event, EventObject, EventQuery};
use crate::model::*;

/// The events after the one with id `?1`, in commit order, for followers (the access snapshot
/// of each process, the search index, a client of the events API paging with `after`).
///
/// SQLite commits one writer at a time, so event ids are committed in id order and `id > ?1` is
/// gap-free. PostgreSQL writers run concurrently: an event with a smaller id may commit after
/// one with a larger id that a follower has already read. There each event records the id of
/// the transaction that wrote it (`tx`, migration 6), and followers read in `(tx, id)` order
/// only the events of transactions older than the oldest one still running
/// (`pg_snapshot_xmin` of the statement's snapshot): those have all finished, so nothing can
/// later appear before the last event read, and every transaction still running (or yet to
/// start) has a larger `tx`. The position of event `?1` is its own `tx`; for an id that is not
/// in the log, that of the nearest earlier event (`-1` when there is none).
const FOLLOW_AFTER: &str = "(tx, id) > \
    (COALESCE((SELECT p.tx FROM events p WHERE p.id <= ?1 ORDER BY p.id DESC LIMIT 1), -1), ?1) \
    AND tx < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint)";

/// The follower's filter of events after `?1` in `dialect` (see [`FOLLOW_AFTER`]).
pub(crate) fn follow_after(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => FOLLOW_AFTER,
        _ => "id > ?1",
    }
}

impl Tx<'_> {
    // ----- events -----------------------------------------------------------------------

    /// Appends an event with what it changed (stored as JSON text, see [`changes_json`]); its
    /// id and time are assigned here. In the same transaction, every webhook that is for it
    /// gets a pending delivery (see
    /// [`enqueue_webhook_deliveries`](Self::enqueue_webhook_deliveries)), so an event is never
    /// committed without them.
    pub fn append_event(
        &mut self,
        name: &str,
        actor: Option<UserId>,
        target: &EventObject,
        action: Option<&EventObject>,
        changes: Vec<EventChange>,
    ) -> Result<Event> {
        let timestamp = Utc::now();
        let json = changes_json(&changes);
        let follow = crate::events::changes_shared_state(name);
        // SQLite commits one writer at a time, in id order: the event is sealed into the chain
        // as it is written (its hash covers its id, read ahead from AUTOINCREMENT's counter).
        // PostgreSQL's commit order is known only later: a sealer takes it then
        // (`seal_events`).
        let sealed = match self.dialect() {
            Dialect::Postgres => None,
            _ => {
                let (next, head) = self.sqlite_next_event()?;
                let stored = StoredEvent {
                    seq: head.seq + 1,
                    id: next,
                    timestamp: to_micros(timestamp),
                    name: name.to_owned(),
                    actor_id: actor.map(|a| a.0),
                    target_kind: target.kind.clone(),
                    target_id: target.id,
                    target_label: target.label.clone(),
                    action_kind: action.map(|a| a.kind.clone()),
                    action_id: action.map(|a| a.id),
                    action_label: action.map(|a| a.label.clone()),
                    follow: i64::from(follow),
                    changes: json.clone(),
                    tx: 0,
                };
                Some((next, stored.seq, hex(&chain_hash(&head.hash, &stored))))
            }
        };
        let mut params: Vec<Param<'_>> = vec![
            to_micros(timestamp).into(),
            name.into(),
            actor.map(|a| a.0).into(),
            (&target.kind).into(),
            target.id.into(),
            (&target.label).into(),
            action.map(|a| a.kind.as_str()).into(),
            action.map(|a| a.id).into(),
            action.map(|a| a.label.as_str()).into(),
            follow.into(),
            (&json).into(),
        ];
        let sql = match &sealed {
            Some((id, seq, hash)) => {
                params.extend::<[Param<'_>; 3]>([
                    (*id).into(),
                    (*seq).into(),
                    hash.as_str().into(),
                ]);
                "INSERT INTO events (timestamp, name, actor_id, target_kind, target_id, \
                     target_label, action_kind, action_id, action_label, follow, changes, \
                     id, seq, hash) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
                 RETURNING id"
            }
            None => {
                "INSERT INTO events (timestamp, name, actor_id, target_kind, target_id, \
                     target_label, action_kind, action_id, action_label, follow, changes) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 RETURNING id"
            }
        };
        let id = self.insert(sql, &params)?;
        if sealed.as_ref().is_some_and(|s| s.0 != id) {
            return Err(crate::error::Error::storage(
                "appending an event",
                "the event's id is not the one its chain hash covers",
            ));
        }
        self.enqueue_webhook_deliveries(EventId(id), name, timestamp)?;
        Ok(Event {
            id: EventId(id),
            timestamp: from_micros(to_micros(timestamp)),
            name: name.to_owned(),
            actor,
            target: target.clone(),
            action_object: action.cloned(),
            changes,
        })
    }

    /// Tells the store's watches in other processes that this transaction wrote events (see
    /// [`Transaction::notify_events`](super::Transaction::notify_events)): once per unit of
    /// work that appended any, before its commit.
    pub fn notify_events(&mut self) -> Result<()> {
        self.inner.notify_events()
    }

    /// The last event a follower may read now (`None` while there is none): every event a
    /// follower reads after it (see [`FOLLOW_AFTER`]) committed after this statement's
    /// snapshot, or is yet to commit. On PostgreSQL, the last in commit order of the events of
    /// transactions older than the oldest one still running.
    pub fn follow_position(&mut self) -> Result<Option<EventId>> {
        let sql = match self.dialect() {
            Dialect::Postgres => {
                "SELECT id \
                 FROM events \
                 WHERE tx < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) \
                 ORDER BY tx DESC, id DESC \
                 LIMIT 1"
            }
            _ => {
                "SELECT id \
                 FROM events \
                 ORDER BY id DESC \
                 LIMIT 1"
            }
        };
        self.optional(sql, &[], |r| r.int(0).map(EventId))
    }

    /// One event.
    pub fn event(&mut self, id: EventId) -> Result<Option<Event>> {
        self.optional(
            "SELECT id, timestamp, name, actor_id, target_kind, target_id, target_label, \
                 action_kind, action_id, action_label, changes \
             FROM events \
             WHERE id = ?1",
            &[id.0.into()],
            event,
        )
    }

    /// Events matching `q`. Oldest first, they come in commit order, gap-free (see
    /// [`FOLLOW_AFTER`]): a follower that passes the last event it read as `q.after` never
    /// misses one.
    pub fn events(&mut self, q: &EventQuery) -> Result<Vec<Event>> {
        let mut sql = String::from(
            "SELECT id, timestamp, name, actor_id, target_kind, target_id, target_label, \
                 action_kind, action_id, action_label, changes \
             FROM events \
             WHERE ",
        );
        sql.push_str(if q.oldest_first {
            follow_after(self.dialect())
        } else {
            "id > ?1"
        });
        sql.push_str(" AND id < ?2");
        let before = q.before.map_or(i64::MAX, |b| b.0);
        let after = q.after.map_or(0, |a| a.0);
        let limit = i64::from(q.limit.unwrap_or(100));
        let (kind, id) = q.object.clone().unwrap_or_default();
        if q.object.is_some() {
            sql.push_str(
                " AND ((target_kind = ?3 AND target_id = ?4) \
                 OR (action_kind = ?3 AND action_id = ?4))",
            );
        } else {
            sql.push_str(" AND ?3 = ?3 AND ?4 = ?4");
        }
        sql.push_str(if !q.oldest_first {
            " ORDER BY id DESC"
        } else if self.dialect() == Dialect::Postgres {
            " ORDER BY tx, id"
        } else {
            " ORDER BY id"
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

/// The events of a document's metadata values (`?1`: the document's kind, `?2` its id, `?3` the
/// metadata types' kind): the only events whose target is a document and whose second object a
/// metadata type are the three `document_metadata_*` ones, so the index `events_history` finds
/// them without reading the rows.
const VALUE_EVENTS: &str = "target_kind = ?1 AND target_id = ?2 AND action_kind = ?3";

const EVENT_COLUMNS: &str = "id, timestamp, name, actor_id, target_kind, target_id, \
    target_label, action_kind, action_id, action_label, changes";

/// The events table read through `events_history`. SQLite, without statistics, would rather
/// take `events_by_action_object` for a metadata type's events (one equality and the order of
/// `action_id`) and read every event of that type on every document: it is told. PostgreSQL
/// chooses by its statistics.
fn history_table(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "events",
        _ => "events INDEXED BY events_history",
    }
}

impl Tx<'_> {
    /// The metadata types document `document`'s value events name, in id order.
    pub fn value_event_types(
        &mut self,
        kinds: (&str, &str),
        document: DocumentId,
    ) -> Result<Vec<MetadataTypeId>> {
        let table = history_table(self.dialect());
        self.rows(
            &format!(
                "SELECT DISTINCT action_id \
                 FROM {table} \
                 WHERE {VALUE_EVENTS} AND action_id IS NOT NULL \
                 ORDER BY action_id"
            ),
            &[kinds.0.into(), document.0.into(), kinds.1.into()],
            |r| r.int(0).map(MetadataTypeId),
        )
    }

    /// The events of document `document`'s values of the metadata types `types`, newest
    /// first, `limit` of them after skipping `offset`, and how many there are in all. `kinds`
    /// are the kinds of a document and of a metadata type.
    pub fn value_events(
        &mut self,
        kinds: (&str, &str),
        document: DocumentId,
        types: &[MetadataTypeId],
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Event>, usize)> {
        if types.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let table = history_table(self.dialect());
        let list = (0..types.len())
            .map(|i| format!("?{}", i + 6))
            .collect::<Vec<_>>()
            .join(", ");
        let mut params: Vec<Param<'_>> = vec![
            kinds.0.into(),
            document.0.into(),
            kinds.1.into(),
            i64::try_from(limit).unwrap_or(i64::MAX).into(),
            i64::try_from(offset).unwrap_or(i64::MAX).into(),
        ];
        params.extend(types.iter().map(|t| Param::from(t.0)));
        let count = self
            .optional(
                &format!(
                    "SELECT count(*) \
                     FROM {table} \
                     WHERE {VALUE_EVENTS} AND ?4 = ?4 AND ?5 = ?5 AND action_id IN ({list})"
                ),
                &params,
                |r| r.int(0),
            )?
            .unwrap_or(0);
        let events = self.rows(
            &format!(
                "SELECT {EVENT_COLUMNS} \
                 FROM {table} \
                 WHERE {VALUE_EVENTS} AND action_id IN ({list}) \
                 ORDER BY timestamp DESC, id DESC \
                 LIMIT ?4 OFFSET ?5"
            ),
            &params,
            event,
        )?;
        Ok((events, usize::try_from(count).unwrap_or(0)))
    }

    /// The last event of document `document`'s value of `metadata_type` written at or before
    /// `at` (microseconds): what set (or removed) the value it had then; with `after`, the
    /// first one written after `at` instead.
    pub fn value_event_at(
        &mut self,
        kinds: (&str, &str),
        document: DocumentId,
        metadata_type: MetadataTypeId,
        at: i64,
        after: bool,
    ) -> Result<Option<Event>> {
        let table = history_table(self.dialect());
        let (when, order) = if after {
            ("timestamp > ?5", "timestamp, id")
        } else {
            ("timestamp <= ?5", "timestamp DESC, id DESC")
        };
        self.optional(
            &format!(
                "SELECT {EVENT_COLUMNS} \
                 FROM {table} \
                 WHERE {VALUE_EVENTS} AND action_id = ?4 AND {when} \
                 ORDER BY {order} \
                 LIMIT 1"
            ),
            &[
                kinds.0.into(),
                document.0.into(),
                kinds.1.into(),
                metadata_type.0.into(),
                at.into(),
            ],
            event,
        )
    }
}
