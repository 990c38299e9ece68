//! A document's metadata values through time, and what a verification of the tamper-evident
//! event log found.

use std::time::SystemTime;

use docmeta_core as core;

use super::MetadataType;

/// One change of a document's metadata value (see `Session.history`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ValueChange {
    /// The event that recorded it.
    pub event_id: i64,
    /// When.
    pub timestamp: SystemTime,
    /// Who, when the reader may know (`null` for docmeta itself too).
    pub actor_id: Option<i64>,
    /// Their username.
    pub actor_username: Option<String>,
    /// The metadata type whose value changed.
    pub metadata_type_id: i64,
    /// The type's label then, as the log recorded it (history lists only the types the reader
    /// may know of).
    pub metadata_type_label: Option<String>,
    /// `added`, `edited` or `removed`.
    pub action: String,
    /// The value before; `null` when it was added, or is hidden.
    pub before: Option<String>,
    /// The value after; `null` when it was removed, or is hidden.
    pub after: Option<String>,
    /// Whether `before` and `after` are withheld: the reader may not view this type's values
    /// on this document now.
    pub hidden: bool,
}

impl From<core::ValueChange> for ValueChange {
    fn from(c: core::ValueChange) -> Self {
        ValueChange {
            event_id: c.event.0,
            timestamp: c.timestamp.into(),
            actor_id: c.actor.as_ref().map(|a| a.id.0),
            actor_username: c.actor.map(|a| a.username),
            metadata_type_id: c.metadata_type.0,
            metadata_type_label: c.metadata_type_label,
            action: c.action.as_str().to_owned(),
            before: c.before,
            after: c.after,
            hidden: c.hidden,
        }
    }
}

/// A page of a value history.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct HistoryPage {
    /// Changes in all.
    pub count: u64,
    /// This page's.
    pub results: Vec<ValueChange>,
}

impl From<core::Page<core::ValueChange>> for HistoryPage {
    fn from(p: core::Page<core::ValueChange>) -> Self {
        HistoryPage {
            count: p.count as u64,
            results: p.items.into_iter().map(Into::into).collect(),
        }
    }
}

/// A document's value of one metadata type at a past time (see `Session.metadataAt`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PastValue {
    /// The metadata type, as it is now.
    pub metadata_type: MetadataType,
    /// The value then.
    pub value: String,
    /// Since when it had that value.
    pub since: SystemTime,
    /// The event that set it.
    pub event_id: i64,
}

impl From<core::PastValue> for PastValue {
    fn from(v: core::PastValue) -> Self {
        PastValue {
            metadata_type: v.metadata_type.into(),
            value: v.value,
            since: v.since.into(),
            event_id: v.event.0,
        }
    }
}

/// What a verification of the event log found (see `Docmeta.verifyEvents`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct AuditReport {
    /// Whether nothing failed.
    pub intact: bool,
    /// Events whose hash was recomputed and found right.
    pub verified: u64,
    /// Where the chain starts (0, or the checkpoint a prune kept).
    pub start: i64,
    /// The position of the last sealed event.
    pub head: i64,
    /// Checkpoints checked.
    pub checkpoints: u64,
    /// Events just committed and not sealed yet (PostgreSQL).
    pub unsealed: u64,
    /// Where the first failure is, when known.
    pub failed_seq: Option<i64>,
    /// The event that fails, when there is one.
    pub failed_event_id: Option<i64>,
    /// What is wrong; `null` when intact.
    pub reason: Option<String>,
}

impl From<core::AuditReport> for AuditReport {
    fn from(r: core::AuditReport) -> Self {
        AuditReport {
            intact: r.is_intact(),
            verified: r.verified,
            start: r.start,
            head: r.head,
            checkpoints: r.checkpoints,
            unsealed: r.unsealed,
            failed_seq: r.failure.as_ref().and_then(|f| f.seq),
            failed_event_id: r.failure.as_ref().and_then(|f| f.event_id),
            reason: r.failure.map(|f| f.reason),
        }
    }
}
