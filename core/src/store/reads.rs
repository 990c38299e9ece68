//! Statements that read across table groups for one reader: the access snapshot's links, the
//! search index's documents, template contexts, and the event cursor of followers.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::records::{IndexedValueRow, value_type};
use super::{Dialect, Tx};
use crate::error::Result;
use crate::model::*;

/// The stored links the access snapshot holds, as read from the store (kinds as their names).
#[derive(Debug, Default)]
pub(crate) struct AccessLinks {
    /// (group, user) memberships.
    pub(crate) members: Vec<(GroupId, UserId)>,
    /// (role, permission key) global grants.
    pub(crate) role_permissions: Vec<(RoleId, String)>,
    /// (role, group) assignments.
    pub(crate) role_groups: Vec<(RoleId, GroupId)>,
    /// (acl, object kind, object id, role, permission key), one row per permission.
    pub(crate) acl_permissions: Vec<(AclId, String, i64, RoleId, String)>,
    /// (document, its type).
    pub(crate) document_types: Vec<(DocumentId, DocumentTypeId)>,
    /// (cabinet, its parent).
    pub(crate) cabinet_parents: Vec<(i64, i64)>,
    /// (object kind, object id, parent kind, parent id) recorded by the application.
    pub(crate) object_parents: Vec<(String, i64, String, i64)>,
}

/// An event that changes what every process keeps in memory (see
/// `events::changes_shared_state`), as a process catching up reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowedEvent {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) target_kind: String,
    pub(crate) target_id: i64,
}

/// What [`Tx::followed_since`] read, in one statement (one snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowedSince {
    /// The followed events at or after the mark passed in, in commit order. On PostgreSQL the
    /// events of a transaction at the mark may come again in the next read: a caller keeps the
    /// ids it has applied.
    pub(crate) events: Vec<FollowedEvent>,
    /// Where the next read starts: every followed event before it has been read by now. SQLite:
    /// the newest event id (commits come one at a time, in id order). PostgreSQL: the oldest
    /// transaction still running (`pg_snapshot_xmin`): every older one has finished, so its
    /// events were visible to this read.
    pub(crate) mark: i64,
    /// Changes whenever any transaction has committed since the last read (the newest event id
    /// on SQLite; the snapshot's `xmin:xmax:xip` text on PostgreSQL), for caches that must
    /// drop what any write may have changed.
    pub(crate) version: String,
}

impl Tx<'_> {
    /// The followed events from `mark` on (see [`FollowedSince`]): one statement, and an index
    /// range of followed events only, so a process that is current reads no row.
    pub(crate) fn followed_since(&mut self, mark: i64) -> Result<FollowedSince> {
        let sql = match self.dialect() {
            Dialect::Postgres => {
                "SELECT h.mark, h.version, e.id, e.name, e.target_kind, e.target_id \
                 FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS mark, \
                     pg_current_snapshot()::text AS version) h \
                 LEFT JOIN events e ON e.follow = 1 AND e.tx >= ?1 \
                 ORDER BY e.tx, e.id"
            }
            _ => {
                "SELECT h.mark, CAST(h.mark AS TEXT), e.id, e.name, e.target_kind, e.target_id \
                 FROM (SELECT COALESCE(max(id), 0) AS mark FROM events) h \
                 LEFT JOIN events e ON e.follow = 1 AND e.id > ?1 \
                 ORDER BY e.id"
            }
        };
        self.followed(sql, &[mark.into()], mark)
    }

    /// Where following starts for a process that has just read the whole state in this
    /// transaction: the mark of the state read, and on PostgreSQL the followed events of the
    /// transactions at or after it that this state already holds (see [`FollowedSince`]).
    pub(crate) fn followed_horizon(&mut self) -> Result<FollowedSince> {
        let sql = match self.dialect() {
            Dialect::Postgres => {
                "SELECT h.mark, h.version, e.id, e.name, e.target_kind, e.target_id \
                 FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS mark, \
                     pg_current_snapshot()::text AS version) h \
                 LEFT JOIN events e ON e.follow = 1 AND e.tx >= h.mark \
                 ORDER BY e.tx, e.id"
            }
            _ => {
                "SELECT h.mark, CAST(h.mark AS TEXT), NULL, NULL, NULL, NULL \
                 FROM (SELECT COALESCE(max(id), 0) AS mark FROM events) h"
            }
        };
        self.followed(sql, &[], 0)
    }

    fn followed(
        &mut self,
        sql: &str,
        params: &[super::Param<'_>],
        mark: i64,
    ) -> Result<FollowedSince> {
        let mut out = FollowedSince {
            events: Vec::new(),
            mark,
            version: String::new(),
        };
        self.each(sql, params, &mut |r| {
            out.mark = r.int(0)?;
            out.version = r.text(1)?;
            if let Some(id) = r.opt_int(2)? {
                out.events.push(FollowedEvent {
                    id,
                    name: r.text(3)?,
                    target_kind: r.text(4)?,
                    target_id: r.int(5)?,
                });
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The document type of each of `documents` that exists now (a document missing from the
    /// answer has been deleted).
    pub(crate) fn types_of_documents(
        &mut self,
        documents: &[DocumentId],
    ) -> Result<Vec<(DocumentId, DocumentTypeId)>> {
        let filter = super::records::among_ids(self.dialect(), "id", 1);
        let ids = super::records::ids_param(documents.iter().map(|d| d.0));
        self.rows(
            &format!("SELECT id, document_type_id FROM documents WHERE {filter}"),
            &[ids.as_str().into()],
            |r| Ok((DocumentId(r.int(0)?), DocumentTypeId(r.int(1)?))),
        )
    }

    /// Everything the access snapshot is built from, besides the users; the documents' types
    /// only when `documents` (the largest part by far, which a process following another's
    /// changes keeps and updates document by document).
    pub(crate) fn access_links(&mut self, documents: bool) -> Result<AccessLinks> {
        Ok(AccessLinks {
            members: self.rows("SELECT group_id, user_id FROM group_users", &[], |r| {
                Ok((GroupId(r.int(0)?), UserId(r.int(1)?)))
            })?,
            role_permissions: self.rows(
                "SELECT role_id, permission FROM role_permissions",
                &[],
                |r| Ok((RoleId(r.int(0)?), r.text(1)?)),
            )?,
            role_groups: self.rows("SELECT role_id, group_id FROM role_groups", &[], |r| {
                Ok((RoleId(r.int(0)?), GroupId(r.int(1)?)))
            })?,
            acl_permissions: self.rows(
                "SELECT a.id, a.object_kind, a.object_id, a.role_id, p.permission \
                 FROM acls a \
                 JOIN acl_permissions p ON p.acl_id = a.id",
                &[],
                |r| {
                    Ok((
                        AclId(r.int(0)?),
                        r.text(1)?,
                        r.int(2)?,
                        RoleId(r.int(3)?),
                        r.text(4)?,
                    ))
                },
            )?,
            document_types: if documents {
                self.rows("SELECT id, document_type_id FROM documents", &[], |r| {
                    Ok((DocumentId(r.int(0)?), DocumentTypeId(r.int(1)?)))
                })?
            } else {
                Vec::new()
            },
            cabinet_parents: self.rows(
                "SELECT id, parent_id FROM cabinets WHERE parent_id IS NOT NULL",
                &[],
                |r| Ok((r.int(0)?, r.int(1)?)),
            )?,
            object_parents: self.rows(
                "SELECT object_kind, object_id, parent_kind, parent_id FROM object_parents",
                &[],
                |r| Ok((r.text(0)?, r.int(1)?, r.text(2)?, r.int(3)?)),
            )?,
        })
    }

    /// The id of the last event in the followers' order (0: none): a follower that starts from
    /// here, having read the state in a later statement, misses nothing (see
    /// [`follow_after`](super::events::follow_after)).
    pub(crate) fn newest_event_id(&mut self) -> Result<i64> {
        let sql = match self.dialect() {
            Dialect::Postgres => {
                "SELECT id \
                 FROM events \
                 WHERE tx < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) \
                 ORDER BY tx DESC, id DESC LIMIT 1"
            }
            _ => "SELECT max(id) FROM events",
        };
        Ok(self
            .optional(sql, &[], |r| r.opt_int(0))?
            .flatten()
            .unwrap_or(0))
    }

    /// On PostgreSQL, the followers' horizon (the oldest transaction still running: the events
    /// of every older one can be read) and the newest transaction whose events are visible
    /// now; `None` on SQLite, where every committed event can be read at once.
    pub(crate) fn follow_horizon(&mut self) -> Result<Option<(i64, i64)>> {
        if self.dialect() != Dialect::Postgres {
            return Ok(None);
        }
        self.optional(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, COALESCE(max(tx), 0) \
             FROM events",
            &[],
            |r| Ok((r.int(0)?, r.int(1)?)),
        )
    }

    /// The documents with ids in `lo..=hi` as the index holds them, with their values (the
    /// rebuild's bulk path: two queries for the whole range).
    pub(crate) fn indexed_documents(&mut self, lo: i64, hi: i64) -> Result<Vec<IndexedDocument>> {
        let mut docs: Vec<IndexedDocument> = self.rows(
            "SELECT d.id, d.label, t.label, t.id \
             FROM documents d \
             JOIN document_types t ON t.id = d.document_type_id \
             WHERE d.id BETWEEN ?1 AND ?2 \
             ORDER BY d.id",
            &[lo.into(), hi.into()],
            |r| {
                Ok(IndexedDocument {
                    id: r.int(0)?,
                    label: r.text(1)?,
                    document_type_label: r.text(2)?,
                    metadata: Vec::new(),
                    document_type_id: r.int(3)?,
                })
            },
        )?;
        let mut at = 0;
        self.each(
            "SELECT m.document_id, m.id, t.id, t.name, m.value, t.value_type \
             FROM document_metadata m \
             JOIN metadata_types t ON t.id = m.metadata_type_id \
             WHERE m.document_id BETWEEN ?1 AND ?2 \
             ORDER BY m.document_id, m.id",
            &[lo.into(), hi.into()],
            &mut |r| {
                let document = r.int(0)?;
                while docs.get(at).is_some_and(|d| d.id < document) {
                    at += 1;
                }
                if let Some(d) = docs.get_mut(at).filter(|d| d.id == document) {
                    d.metadata.push(IndexedValue {
                        id: r.int(1)?,
                        metadata_type_id: r.int(2)?,
                        metadata_type_name: r.text(3)?,
                        value: r.text(4)?,
                        value_type: value_type(&r.text(5)?),
                    });
                }
                Ok(())
            },
        )?;
        Ok(docs)
    }

    /// The documents holding a value of metadata type `t`.
    pub(crate) fn documents_with_metadata_type(
        &mut self,
        t: MetadataTypeId,
    ) -> Result<Vec<DocumentId>> {
        self.rows(
            "SELECT DISTINCT document_id FROM document_metadata WHERE metadata_type_id = ?1",
            &[t.0.into()],
            |r| r.int(0).map(DocumentId),
        )
    }

    /// Calls `each(value id, document)` for every metadata value.
    pub(crate) fn each_document_metadata(
        &mut self,
        each: &mut dyn FnMut(DocumentMetadataId, DocumentId),
    ) -> Result<()> {
        self.each(
            "SELECT id, document_id FROM document_metadata",
            &[],
            &mut |r| {
                each(DocumentMetadataId(r.int(0)?), DocumentId(r.int(1)?));
                Ok(())
            },
        )
    }

    /// Ids of every metadata type.
    pub(crate) fn metadata_type_ids(&mut self) -> Result<Vec<MetadataTypeId>> {
        self.rows("SELECT id FROM metadata_types", &[], |r| {
            r.int(0).map(MetadataTypeId)
        })
    }

    /// A document's values with their type's name, label and id, in the order they were added
    /// (a template's `document.metadata`).
    pub(crate) fn document_metadata_entries(
        &mut self,
        document: DocumentId,
    ) -> Result<Vec<(String, String, String, MetadataTypeId)>> {
        self.rows(
            "SELECT t.name, t.label, m.value, t.id \
             FROM document_metadata m \
             JOIN metadata_types t ON t.id = m.metadata_type_id \
             WHERE m.document_id = ?1 \
             ORDER BY m.id",
            &[document.0.into()],
            |r| {
                Ok((
                    r.text(0)?,
                    r.text(1)?,
                    r.text(2)?,
                    MetadataTypeId(r.int(3)?),
                ))
            },
        )
    }

    /// The documents among `ids` that exist, each with its type's label and its values (with
    /// their type's id and name, in value order), in one statement: what the search index
    /// stores of them. A document that is not found is left out.
    pub(crate) fn documents_for_index(
        &mut self,
        ids: &[DocumentId],
    ) -> Result<Vec<(Document, String, Vec<IndexedValueRow>)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = super::records::ids_param(ids.iter().map(|d| d.0));
        let among = super::records::among_ids(self.dialect(), "d.id", 1);
        let rows = self.rows(
            &format!(
                "SELECT d.id, d.label, d.document_type_id, d.created, y.label, m.id, t.id, t.name, \
                     m.value, t.value_type \
                 FROM documents d \
                 JOIN document_types y ON y.id = d.document_type_id \
                 LEFT JOIN document_metadata m ON m.document_id = d.id \
                 LEFT JOIN metadata_types t ON t.id = m.metadata_type_id \
                 WHERE {among} \
                 ORDER BY d.id, m.id"
            ),
            &[list.as_str().into()],
            |r| {
                let value = match (r.opt_int(5)?, r.opt_int(6)?) {
                    (Some(m), Some(t)) => Some(IndexedValueRow {
                        id: DocumentMetadataId(m),
                        metadata_type_id: MetadataTypeId(t),
                        metadata_type_name: r.text(7)?,
                        value: r.text(8)?,
                        value_type: value_type(&r.text(9)?),
                    }),
                    _ => None,
                };
                Ok((super::records::document(r)?, r.text(4)?, value))
            },
        )?;
        let mut out: Vec<(Document, String, Vec<_>)> = Vec::new();
        for (doc, type_label, value) in rows {
            if out.last().is_none_or(|(d, _, _)| d.id != doc.id) {
                out.push((doc, type_label, Vec::new()));
            }
            if let (Some(value), Some((_, _, values))) = (value, out.last_mut()) {
                values.push(value);
            }
        }
        Ok(out)
    }

    /// A document, its type's label and its metadata values (name, label, value, type), in one
    /// statement: what a workflow template sees of a document before filtering. `None`: no such
    /// document.
    #[allow(clippy::type_complexity)]
    pub(crate) fn document_with_entries(
        &mut self,
        document: DocumentId,
    ) -> Result<
        Option<(
            Document,
            String,
            Vec<(String, String, String, MetadataTypeId)>,
        )>,
    > {
        let rows = self.rows(
            "SELECT d.id, d.label, d.document_type_id, d.created, y.label, t.name, t.label, \
                 m.value, t.id \
             FROM documents d \
             JOIN document_types y ON y.id = d.document_type_id \
             LEFT JOIN document_metadata m ON m.document_id = d.id \
             LEFT JOIN metadata_types t ON t.id = m.metadata_type_id \
             WHERE d.id = ?1 \
             ORDER BY m.id",
            &[document.0.into()],
            |r| {
                let entry = match r.opt_int(8)? {
                    Some(t) => Some((r.text(5)?, r.text(6)?, r.text(7)?, MetadataTypeId(t))),
                    None => None,
                };
                Ok((super::records::document(r)?, r.text(4)?, entry))
            },
        )?;
        let mut rows = rows.into_iter();
        let Some((doc, type_label, first)) = rows.next() else {
            return Ok(None);
        };
        let entries = first
            .into_iter()
            .chain(rows.filter_map(|(_, _, entry)| entry))
            .collect();
        Ok(Some((doc, type_label, entries)))
    }

    /// The values of metadata type `t` with their document's id and label: (value id,
    /// document id, document label, value).
    pub(crate) fn values_of_metadata_type(
        &mut self,
        t: MetadataTypeId,
    ) -> Result<Vec<(DocumentMetadataId, i64, String, String)>> {
        self.rows(
            "SELECT m.id, d.id, d.label, m.value \
             FROM document_metadata m \
             JOIN documents d ON d.id = m.document_id \
             WHERE m.metadata_type_id = ?1 \
             ORDER BY m.id",
            &[t.0.into()],
            |r| {
                Ok((
                    DocumentMetadataId(r.int(0)?),
                    r.int(1)?,
                    r.text(2)?,
                    r.text(3)?,
                ))
            },
        )
    }

    /// Calls `each` with every non-empty value of metadata type `t` (value id, document id, the
    /// document's type, the value), by value id.
    pub(crate) fn each_value_of_metadata_type(
        &mut self,
        t: MetadataTypeId,
        each: &mut dyn FnMut(DocumentMetadataId, DocumentId, DocumentTypeId, &str),
    ) -> Result<()> {
        self.each(
            "SELECT m.id, d.id, d.document_type_id, m.value \
             FROM document_metadata m \
             JOIN documents d ON d.id = m.document_id \
             WHERE m.metadata_type_id = ?1 AND m.value <> '' \
             ORDER BY m.id",
            &[t.0.into()],
            &mut |r| {
                each(
                    DocumentMetadataId(r.int(0)?),
                    DocumentId(r.int(1)?),
                    DocumentTypeId(r.int(2)?),
                    &r.text(3)?,
                );
                Ok(())
            },
        )
    }

    /// How many documents there are.
    pub(crate) fn count_documents(&mut self) -> Result<u64> {
        Ok(self
            .optional("SELECT COUNT(*) FROM documents", &[], |r| r.int(0))?
            .map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    /// How many document files are stored encrypted (`true`) or plain.
    pub(crate) fn count_document_files(&mut self, encrypted: bool) -> Result<u64> {
        Ok(self
            .optional(
                "SELECT COUNT(*) FROM document_files WHERE encrypted = ?1",
                &[encrypted.into()],
                |r| r.int(0),
            )?
            .map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }
}
