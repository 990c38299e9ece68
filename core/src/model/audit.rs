//! The records of a value's history and of the tamper-evident event log: a change of a value,
//! a value at a past time, a signed checkpoint, and what a verification found.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): plain data.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{EventActor, EventId, MetadataType, MetadataTypeId};

/// One change of a document's metadata value, from the event log (see
/// [`Session::history`](crate::Session::history)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueChange {
    /// The event that recorded it.
    pub event: EventId,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// Who did it: `None` for docmeta itself, a user deleted since, or a user the reader may not
    /// view.
    pub actor: Option<EventActor>,
    /// The metadata type whose value changed.
    pub metadata_type: MetadataTypeId,
    /// The type's label when it happened, as the log recorded it (`None` only for an event
    /// that recorded none; history lists only the types its reader may know of).
    pub metadata_type_label: Option<String>,
    /// What happened: the value was `added`, `edited` or `removed`.
    pub action: ValueAction,
    /// The value before (`None` when it was added, or is hidden from the reader).
    pub before: Option<String>,
    /// The value after (`None` when it was removed, or is hidden from the reader).
    pub after: Option<String>,
    /// Whether `before` and `after` are withheld: the reader may not view this type's values on
    /// this document now.
    pub hidden: bool,
}

/// What a [`ValueChange`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueAction {
    /// The value was added to the document.
    Added,
    /// The value was changed.
    Edited,
    /// The value was removed from the document.
    Removed,
}

impl ValueAction {
    /// `added`, `edited` or `removed`.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueAction::Added => "added",
            ValueAction::Edited => "edited",
            ValueAction::Removed => "removed",
        }
    }
}

/// A document's value of one metadata type as it was at a past time (see
/// [`Session::metadata_at`](crate::Session::metadata_at)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastValue {
    /// The metadata type, as it is now.
    pub metadata_type: MetadataType,
    /// The value then.
    pub value: String,
    /// When it took that value (the document's creation when no change of the log says).
    pub since: DateTime<Utc>,
    /// The event that set it (`EventId(0)` when no change of the log says).
    pub event: EventId,
}

/// A signed position of the event log: the hash of its event `seq` (which covers every event
/// before it), signed with the installation's Ed25519 key. Written periodically, into every
/// backup's manifest, by [`Docmeta::audit_checkpoint`](crate::Docmeta::audit_checkpoint), and
/// kept as the start of the chain after a prune. Serialized as JSON for `docmeta audit
/// checkpoint` and `docmeta audit verify --checkpoint FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The position in the chain (from 1) of the event it covers.
    pub seq: i64,
    /// That event's id.
    pub event_id: i64,
    /// That event's chain hash, lower-case hex.
    pub hash: String,
    /// When the checkpoint was made.
    pub created: DateTime<Utc>,
    /// The Ed25519 public key that signed it, lower-case hex.
    pub public_key: String,
    /// The signature, lower-case hex.
    pub signature: String,
    /// Whether it is a prune's base (where the chain starts after the prune), signed as one:
    /// no periodic checkpoint can be taken for a base.
    #[serde(default)]
    pub base: bool,
}

/// Where a verification of the event log stopped (see [`AuditReport::failure`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditFailure {
    /// The position in the chain where it failed, when it is known.
    pub seq: Option<i64>,
    /// The event that fails, when there is one (a deleted event has none; its successor is
    /// named).
    pub event_id: Option<i64>,
    /// What is wrong, in words.
    pub reason: String,
}

/// What a verification of the event log found (see
/// [`Docmeta::verify_events`](crate::Docmeta::verify_events)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    /// Events whose hash was recomputed and found right.
    pub verified: u64,
    /// Where the chain starts: 0 for the first event ever written, or the position of the
    /// checkpoint a prune kept.
    pub start: i64,
    /// The position of the last sealed event (equal to `start` for an empty chain).
    pub head: i64,
    /// Signed checkpoints checked against the chain (stored ones and the one given).
    pub checkpoints: u64,
    /// Events committed but not sealed yet (PostgreSQL seals them shortly after commit); they
    /// are verified once sealed.
    pub unsealed: u64,
    /// The first thing that failed; `None` when the log is intact.
    pub failure: Option<AuditFailure>,
}

impl AuditReport {
    /// Whether nothing failed.
    pub fn is_intact(&self) -> bool {
        self.failure.is_none()
    }
}

/// What [`Docmeta::prune_events`](crate::Docmeta::prune_events) removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// Events removed.
    pub removed: u64,
    /// The checkpoint the chain now starts from (`None` when nothing was removed).
    pub base: Option<Checkpoint>,
}
