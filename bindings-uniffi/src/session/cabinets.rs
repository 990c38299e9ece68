//! Cabinets: a tree of folders holding documents (a document may be in several).

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::Cabinet;

#[uniffi::export]
impl Session {
    /// Creates a cabinet, at the root or under `parent`.
    #[uniffi::method(default(parent = None))]
    pub fn create_cabinet(&self, label: String, parent: Option<i64>) -> Result<Cabinet> {
        Ok(self
            .inner
            .create_cabinet(&label, parent.map(core::CabinetId))?
            .into())
    }

    /// One cabinet.
    pub fn cabinet(&self, id: i64) -> Result<Cabinet> {
        Ok(self.inner.cabinet(core::CabinetId(id))?.into())
    }

    /// The cabinets this session may view.
    pub fn cabinets(&self) -> Result<Vec<Cabinet>> {
        Ok(self.inner.cabinets()?.into_iter().map(Into::into).collect())
    }

    /// Renames a cabinet.
    pub fn rename_cabinet(&self, id: i64, label: String) -> Result<Cabinet> {
        Ok(self
            .inner
            .rename_cabinet(core::CabinetId(id), &label)?
            .into())
    }

    /// Deletes a cabinet and those under it (their documents stay).
    pub fn delete_cabinet(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_cabinet(core::CabinetId(id))?)
    }

    /// Puts a document in a cabinet (`member`), or takes it out.
    pub fn set_cabinet_document(&self, cabinet: i64, document: i64, member: bool) -> Result<()> {
        Ok(self.inner.set_cabinet_document(
            core::CabinetId(cabinet),
            core::DocumentId(document),
            member,
        )?)
    }

    /// The ids of a cabinet's documents this session may view.
    pub fn cabinet_documents(&self, cabinet: i64) -> Result<Vec<i64>> {
        Ok(self
            .inner
            .cabinet_documents(core::CabinetId(cabinet), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(|d| d.document.id.0)
            .collect())
    }
}
