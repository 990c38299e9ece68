//! What a replica pulls from the server: batches of the documents a user may see, and where the
//! replica stands (see [`Session::sync_changes`](crate::Session::sync_changes)).
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::{
    AssociationView, DocumentFile, DocumentId, DocumentType, DocumentView, EventId, MetadataType,
    MetadataValueView,
};
use crate::error::{Error, Result};

/// Where a replica stands in the server's changes. Every change committed up to `log` is
/// reflected in what the replica received; while `scan` is set, a full pass over the documents
/// the user may see is under way (documents after `scan_after` are still to come).
///
/// Faces carry it as an opaque text ([`SyncCursor::token`], [`SyncCursor::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncCursor {
    /// The last event of the log whose change the replica has (`None`: none yet).
    pub log: Option<EventId>,
    /// A full pass is under way.
    pub scan: bool,
    /// During a pass: the last document sent (`None`: none yet).
    pub scan_after: Option<DocumentId>,
}

impl SyncCursor {
    /// The cursor as text: `s1.<log>.<scan>.<after>`, each number or `-`.
    pub fn token(&self) -> String {
        let n = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        format!(
            "s1.{}.{}.{}",
            n(self.log.map(|e| e.0)),
            u8::from(self.scan),
            n(self.scan_after.map(|d| d.0))
        )
    }

    /// A cursor from [`token`](Self::token); anything else is [`Error::Validation`] on
    /// `cursor`.
    pub fn parse(token: &str) -> Result<SyncCursor> {
        let invalid = || Error::validation("cursor", "Not a cursor this server gave.");
        let parts: Vec<&str> = token.split('.').collect();
        let [version, log, scan, after] = parts.as_slice() else {
            return Err(invalid());
        };
        let n = |s: &str| -> Result<Option<i64>> {
            match s {
                "-" => Ok(None),
                s => s
                    .parse::<i64>()
                    .ok()
                    .filter(|v| *v >= 0)
                    .map(Some)
                    .ok_or_else(invalid),
            }
        };
        if *version != "s1" {
            return Err(invalid());
        }
        let scan = match *scan {
            "0" => false,
            "1" => true,
            _ => return Err(invalid()),
        };
        Ok(SyncCursor {
            log: n(log)?.map(EventId),
            scan,
            scan_after: n(after)?.map(DocumentId),
        })
    }
}

/// A document as a replica keeps it: the document with its type, the values the user may see,
/// each with its type, and its files' records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncedDocument {
    /// The document.
    pub document: DocumentView,
    /// Its values the user may see.
    pub values: Vec<MetadataValueView>,
    /// Its files (their records; the bytes are read on demand).
    pub files: Vec<DocumentFile>,
}

/// The types a user may see: what a replica needs to show documents and run values through
/// the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncSchema {
    /// The document types the user may view.
    pub document_types: Vec<DocumentType>,
    /// The metadata types the user may view.
    pub metadata_types: Vec<MetadataType>,
    /// The associations of those document types whose metadata type the user may view.
    pub associations: Vec<AssociationView>,
}

/// One batch of changes for a replica, applied in this order: when `scan_started`, every
/// document the replica holds becomes unconfirmed; `documents` replace the replica's copies
/// (and are confirmed); `removed` are deleted; when `scan_finished`, every document still
/// unconfirmed is deleted (the user may no longer see it). Then `cursor` is where the replica
/// stands, and `more` says whether to ask again at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncBatch {
    /// A full pass over the user's documents begins with this batch.
    pub scan_started: bool,
    /// Documents to store, whole.
    pub documents: Vec<SyncedDocument>,
    /// Documents the user may no longer see, or that are gone.
    pub removed: Vec<DocumentId>,
    /// The full pass ended with this batch.
    pub scan_finished: bool,
    /// The types, when they may have changed (with every batch that starts a pass).
    pub schema: Option<SyncSchema>,
    /// Where the replica stands once it applied this batch.
    pub cursor: SyncCursor,
    /// Whether more changes are ready now.
    pub more: bool,
}
