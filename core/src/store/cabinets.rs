//! Statements of cabinets and their documents.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::Tx;
use super::records::*;
use crate::error::Result;
use crate::model::*;

impl Tx<'_> {
    // ----- cabinets ---------------------------------------------------------------------

    /// Inserts a cabinet.
    pub fn insert_cabinet(&mut self, label: &str, parent: Option<CabinetId>) -> Result<Cabinet> {
        let id = self.insert(
            "INSERT INTO cabinets (label, parent_id) VALUES (?1, ?2) RETURNING id",
            &[label.into(), parent.map(|p| p.0).into()],
        )?;
        Ok(Cabinet {
            id: CabinetId(id),
            label: label.to_owned(),
            parent_id: parent,
        })
    }

    /// Updates a cabinet.
    pub fn update_cabinet(&mut self, c: &Cabinet) -> Result<()> {
        self.execute(
            "UPDATE cabinets SET label = ?1, parent_id = ?2 WHERE id = ?3",
            &[
                (&c.label).into(),
                c.parent_id.map(|p| p.0).into(),
                c.id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Deletes a cabinet row and its document links (not the documents).
    pub fn delete_cabinet(&mut self, id: CabinetId) -> Result<()> {
        self.execute(
            "DELETE FROM cabinet_documents WHERE cabinet_id = ?1",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM cabinets WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One cabinet.
    pub fn cabinet(&mut self, id: CabinetId) -> Result<Option<Cabinet>> {
        self.optional(
            "SELECT id, label, parent_id FROM cabinets WHERE id = ?1",
            &[id.0.into()],
            cabinet,
        )
    }

    /// Every cabinet, by id.
    pub fn cabinets(&mut self) -> Result<Vec<Cabinet>> {
        self.rows(
            "SELECT id, label, parent_id FROM cabinets ORDER BY id",
            &[],
            cabinet,
        )
    }

    /// The direct children of a cabinet.
    pub fn child_cabinets(&mut self, parent: CabinetId) -> Result<Vec<Cabinet>> {
        self.rows(
            "SELECT id, label, parent_id FROM cabinets WHERE parent_id = ?1 ORDER BY id",
            &[parent.0.into()],
            cabinet,
        )
    }

    /// Adds or removes a document from a cabinet; returns whether anything changed.
    pub fn set_cabinet_document(
        &mut self,
        c: CabinetId,
        d: DocumentId,
        member: bool,
    ) -> Result<bool> {
        let n = if member {
            self.execute(
                "INSERT INTO cabinet_documents (cabinet_id, document_id) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[c.0.into(), d.0.into()],
            )?
        } else {
            self.execute(
                "DELETE FROM cabinet_documents WHERE cabinet_id = ?1 AND document_id = ?2",
                &[c.0.into(), d.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The documents of a cabinet.
    pub fn cabinet_documents(&mut self, c: CabinetId) -> Result<Vec<DocumentId>> {
        self.rows(
            "SELECT document_id FROM cabinet_documents WHERE cabinet_id = ?1 ORDER BY document_id",
            &[c.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// The cabinets a document is in, by id.
    pub fn cabinets_of_document(&mut self, d: DocumentId) -> Result<Vec<CabinetId>> {
        self.rows(
            "SELECT cabinet_id FROM cabinet_documents WHERE document_id = ?1 ORDER BY cabinet_id",
            &[d.0.into()],
            |r| r.int(0).map(CabinetId),
        )
    }
}
