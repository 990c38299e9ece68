//! Cabinets: trees of document folders whose root ACLs cover the whole tree (spec 5.3).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::{Session, body_reference, event_object, obj, parents_change};
use crate::access::{ObjectKind, ObjectRef, Permission as P, Permission};
use crate::error::{Error, Result};
use crate::events::names;
use crate::model::*;
use crate::store::Tx;

/// Longest cabinet label.
const MAX_LABEL_LEN: usize = 128;

const CABINET: &str = "cabinets.cabinet";

fn cab_ref(id: CabinetId) -> ObjectRef {
    obj(ObjectKind::CABINET, id.0)
}

impl Session {
    fn load_cabinet(
        &self,
        tx: &mut Tx<'_>,
        id: CabinetId,
        permission: Permission,
    ) -> Result<Cabinet> {
        self.checked(
            tx.cabinet(id)?,
            permission,
            cab_ref(id),
            format!("cabinet {id}"),
        )
    }

    /// Creates a cabinet: a root needs `cabinets.cabinet_create` globally; a sub-cabinet needs
    /// it on the parent (or its root).
    ///
    /// ```
    /// use docmeta_core::PageRequest;
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let doc = admin.create_document(invoice.id, "March invoice", &[])?.document;
    ///
    /// let archive = admin.create_cabinet("Archive", None)?;
    /// let year = admin.create_cabinet("2024", Some(archive.id))?;
    /// assert_eq!(year.parent_id, Some(archive.id));
    /// admin.set_cabinet_document(year.id, doc.id, true)?;
    ///
    /// let filed = admin.cabinet_documents(year.id, PageRequest::ALL)?;
    /// assert_eq!(filed.count, 1);
    /// assert_eq!(filed.items[0].document.label, "March invoice");
    /// assert_eq!(admin.cabinet_documents(archive.id, PageRequest::ALL)?.count, 0);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn create_cabinet(&self, label: &str, parent: Option<CabinetId>) -> Result<Cabinet> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        if parent.is_none() {
            self.require_global(P::CabinetCreate)?;
        }
        self.write(|u| {
            if let Some(p) = parent {
                body_reference(
                    "parent_id",
                    p,
                    self.load_cabinet(&mut u.tx, p, P::CabinetCreate),
                )?;
            }
            let c = u.tx.insert_cabinet(label, parent)?;
            if let Some(p) = parent {
                u.access
                    .push(parents_change(cab_ref(c.id), vec![cab_ref(p)]));
            }
            u.event(
                names::CABINET_EDITED,
                event_object(CABINET, c.id.0, label),
                None,
                Changes::new().created("label", &c.label).set(
                    "parent",
                    None::<CabinetId>,
                    c.parent_id,
                ),
            )?;
            Ok(c)
        })
    }

    /// One cabinet. Needs `cabinets.cabinet_view`.
    pub fn cabinet(&self, id: CabinetId) -> Result<Cabinet> {
        self.read(|tx| self.load_cabinet(tx, id, P::CabinetView))
    }

    /// The cabinets this session may view.
    pub fn cabinets(&self) -> Result<Vec<Cabinet>> {
        let all = self.read(|tx| tx.cabinets())?;
        Ok(self.visible(P::CabinetView, all, |c| cab_ref(c.id)))
    }

    /// Renames a cabinet. Needs `cabinets.cabinet_edit`.
    pub fn rename_cabinet(&self, id: CabinetId, label: &str) -> Result<Cabinet> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        self.write(|u| {
            let mut c = self.load_cabinet(&mut u.tx, id, P::CabinetEdit)?;
            let before = std::mem::replace(&mut c.label, label.to_owned());
            u.tx.update_cabinet(&c)?;
            u.event(
                names::CABINET_EDITED,
                event_object(CABINET, id.0, label),
                None,
                Changes::new().edited("label", before, &c.label),
            )?;
            Ok(c)
        })
    }

    /// Deletes a cabinet and its sub-cabinets, not their documents (spec 5.4). Needs
    /// `cabinets.cabinet_delete`.
    pub fn delete_cabinet(&self, id: CabinetId) -> Result<()> {
        self.write(|u| {
            let c = self.load_cabinet(&mut u.tx, id, P::CabinetDelete)?;
            // Depth-first: children before parents (foreign keys).
            let mut order = Vec::new();
            let mut stack = vec![c.id];
            while let Some(next) = stack.pop() {
                order.push(next);
                stack.extend(u.tx.child_cabinets(next)?.into_iter().map(|c| c.id));
            }
            for cab in order.into_iter().rev() {
                u.forget_object(CABINET, cab_ref(cab))?;
                u.tx.delete_cabinet(cab)?;
            }
            u.event(
                names::CABINET_EDITED,
                event_object(CABINET, id.0, &c.label),
                None,
                Changes::new().removed("label", &c.label).set(
                    "parent",
                    c.parent_id,
                    None::<CabinetId>,
                ),
            )
        })
    }

    /// Adds (`true`) or removes a document from a cabinet. Needs
    /// `cabinets.cabinet_add_document` / `cabinet_remove_document` on both.
    pub fn set_cabinet_document(
        &self,
        cabinet: CabinetId,
        document: DocumentId,
        member: bool,
    ) -> Result<()> {
        let permission = if member {
            P::CabinetAddDocument
        } else {
            P::CabinetRemoveDocument
        };
        self.write(|u| {
            let c = self.load_cabinet(&mut u.tx, cabinet, permission)?;
            let d = body_reference(
                "document_id",
                document,
                u.tx.document(document)?
                    .ok_or_else(|| Error::not_found(format!("document {document}")))
                    .and_then(|d| {
                        self.require(
                            permission,
                            obj(ObjectKind::DOCUMENT, document.0),
                            format!("document {document}"),
                        )?;
                        Ok(d)
                    }),
            )?;
            if u.tx.set_cabinet_document(cabinet, document, member)? {
                u.event(
                    names::CABINET_EDITED,
                    event_object(CABINET, cabinet.0, &c.label),
                    Some(event_object("documents.document", d.id.0, &d.label)),
                    Changes::new().edited("member", !member, member),
                )?;
            }
            Ok(())
        })
    }

    /// A page of the documents of a cabinet this session may view, each with its type. Needs
    /// `cabinets.cabinet_view` on the cabinet.
    pub fn cabinet_documents(
        &self,
        cabinet: CabinetId,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        let ids = self.read(|tx| {
            self.load_cabinet(tx, cabinet, P::CabinetView)?;
            tx.cabinet_documents(cabinet)
        })?;
        let ids = self.visible(P::DocumentView, ids, |d| obj(ObjectKind::DOCUMENT, d.0));
        let count = ids.len();
        let items = self.document_views(&ids[page.range(count)])?;
        Ok(Page { count, items })
    }
}
