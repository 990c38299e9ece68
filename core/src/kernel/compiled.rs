//! The cache of compiled metadata types: a type's templates, validator and parser, compiled
//! once and kept until a unit of work changes the type.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Docmeta;
use crate::error::{Error, Result};
use crate::metadata::CompiledMetadataType;
use crate::model::MetadataTypeId;
use crate::store::Tx;

impl Docmeta {
    /// The compiled form of a metadata type, cached until the type changes.
    pub(crate) fn compiled(
        &self,
        tx: &mut Tx<'_>,
        id: MetadataTypeId,
    ) -> Result<Arc<CompiledMetadataType>> {
        if let Some(c) = self.inner.compiled.read().get(&id) {
            return Ok(c.clone());
        }
        let generation = self.inner.compiled_generation.load(Ordering::SeqCst);
        let t = tx
            .metadata_type(id)?
            .ok_or_else(|| Error::not_found(format!("metadata type {id}")))?;
        let shapers = tx.metadata_type_shapers(id)?.unwrap_or_default();
        let c = Arc::new(CompiledMetadataType::new(t, &self.inner.classes)?.shaped_by(shapers));
        let mut cache = self.inner.compiled.write();
        if self.inner.compiled_generation.load(Ordering::SeqCst) == generation {
            cache.insert(id, c.clone());
        }
        Ok(c)
    }

    /// Drops the compiled forms of `ids` (their types changed, or a change to them rolled
    /// back), and keeps a compilation that raced the change out of the cache.
    pub(super) fn forget_compiled(&self, ids: &[MetadataTypeId]) {
        if ids.is_empty() {
            return;
        }
        self.inner
            .compiled_generation
            .fetch_add(1, Ordering::SeqCst);
        let mut compiled = self.inner.compiled.write();
        for id in ids {
            compiled.remove(id);
        }
    }
}
