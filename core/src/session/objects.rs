//! How the operations on documents, document types and metadata types name their objects:
//! the object references their permissions are checked on, and the event objects their events
//! are logged with.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::{event_object, obj};
use crate::access::{ObjectKind, ObjectRef};
use crate::events::EventObject;
use crate::model::*;

pub(super) const MT: &str = "metadata.metadatatype";
pub(super) const DT: &str = "documents.documenttype";
pub(super) const DOC: &str = "documents.document";

pub(super) fn mt_ref(id: MetadataTypeId) -> ObjectRef {
    obj(ObjectKind::METADATA_TYPE, id.0)
}
pub(super) fn dt_ref(id: DocumentTypeId) -> ObjectRef {
    obj(ObjectKind::DOCUMENT_TYPE, id.0)
}
pub(super) fn doc_ref(id: DocumentId) -> ObjectRef {
    obj(ObjectKind::DOCUMENT, id.0)
}

pub(super) fn mt_event(t: &MetadataType) -> EventObject {
    event_object(MT, t.id.0, &t.label)
}
pub(super) fn dt_event(t: &DocumentType) -> EventObject {
    event_object(DT, t.id.0, &t.label)
}
pub(super) fn doc_event(d: &Document) -> EventObject {
    event_object(DOC, d.id.0, &d.label)
}
