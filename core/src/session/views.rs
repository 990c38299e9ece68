//! How a session builds the view records of `model::views` from the kernel's cached documents.
//!
//! Layer 6 (part of `session`): imports `model` and the kernel's cached documents.

use crate::kernel::CachedDocument;
use crate::model::*;

impl MetadataPageVersion {
    pub(super) fn of(read: &CachedDocument, shown: &[&(DocumentMetadata, MetadataType)]) -> Self {
        MetadataPageVersion {
            copy: read.copy,
            shown: shown.iter().map(|(m, _)| m.id).collect(),
        }
    }
}
