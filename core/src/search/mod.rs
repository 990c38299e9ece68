//! Search (spec 2.5): a tantivy index of documents and metadata values that follows the event
//! log, and permission-filtered queries.
//!
//! The index is derived data. It keeps, in the `settings` table, the id of the last event it
//! applied; [`Docmeta::wait_for_index`] (also run by the worker thread and before each search)
//! applies every event after it, so a crash or restart loses nothing: the index catches up.

pub mod index;
pub mod query;

use std::collections::BTreeSet;

pub use index::{Hit, IndexedDocument, RecordKind, SearchIndex};
pub use query::{Expr, parse};

use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::docmeta::Docmeta;
use crate::error::Result;
use crate::events::{EventQuery, names};
use crate::model::*;
use crate::session::Session;
use crate::store::Tx;

const CURSOR: &str = "search.cursor";
const BATCH: u32 = 1000;

/// One page of search results and how many results the caller may see in all.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage<T> {
    /// Visible results in all.
    pub count: usize,
    /// The results of the page, best first.
    pub results: Vec<T>,
}

fn load_documents(tx: &mut Tx<'_>, ids: &[DocumentId]) -> Result<(Vec<IndexedDocument>, Vec<i64>)> {
    let mut found = Vec::new();
    let mut removed = Vec::new();
    for id in ids {
        let Some(d) = tx.document(*id)? else {
            removed.push(id.0);
            continue;
        };
        let document_type_label = tx
            .document_type(d.document_type_id)?
            .map(|t| t.label)
            .unwrap_or_default();
        let metadata = tx
            .metadata_with_types_of_document(d.id)?
            .into_iter()
            .map(|(m, t)| (m.id.0, t.name, m.value))
            .collect();
        found.push(IndexedDocument {
            id: d.id.0,
            label: d.label,
            document_type_label,
            metadata,
        });
    }
    Ok((found, removed))
}

impl Docmeta {
    /// Applies every event after the index's cursor; returns how many events were applied.
    pub fn wait_for_index(&self) -> Result<usize> {
        let _one_at_a_time = self.inner.search_lock.lock();
        let mut applied = 0;
        loop {
            let cursor = self
                .read(|tx| tx.setting(CURSOR))?
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let events = self.events(&EventQuery {
                after: Some(EventId(cursor)),
                oldest_first: true,
                limit: Some(BATCH),
                ..Default::default()
            })?;
            let Some(last) = events.last().map(|e| e.id) else {
                return Ok(applied);
            };
            let mut documents = BTreeSet::new();
            let mut types = BTreeSet::new();
            let mut metadata_types = BTreeSet::new();
            for e in &events {
                for o in std::iter::once(&e.target).chain(e.action_object.as_ref()) {
                    match o.kind.as_str() {
                        "documents.document" => {
                            documents.insert(DocumentId(o.id));
                        }
                        "documents.documenttype" if e.name == names::DOCUMENT_TYPE_EDITED => {
                            types.insert(DocumentTypeId(o.id));
                        }
                        "metadata.metadatatype" if e.name == names::METADATA_TYPE_EDITED => {
                            metadata_types.insert(MetadataTypeId(o.id));
                        }
                        _ => {}
                    }
                }
            }
            let (docs, removed) = self.read(|tx| {
                // A renamed type changes the records of its documents: reindex those only.
                for t in &types {
                    documents.extend(tx.document_ids(Some(*t))?);
                }
                for t in &metadata_types {
                    let ids = tx.rows("SELECT DISTINCT document_id FROM document_metadata WHERE metadata_type_id = ?1", &[t.0.into()], |r| r.int(0).map(DocumentId))?;
                    documents.extend(ids);
                }
                load_documents(tx, &documents.iter().copied().collect::<Vec<_>>())
            })?;
            self.inner.search.update(&docs, &removed)?;
            self.write_system(|tx| tx.set_setting(CURSOR, &last.0.to_string()))?;
            applied += events.len();
        }
    }

    /// Rebuilds the whole index from the database (spec 4.6 `search_reindex`), calling
    /// `progress(done, total)` after each batch; returns the number of documents indexed.
    pub fn search_reindex(&self, mut progress: impl FnMut(usize, usize)) -> Result<usize> {
        let _one_at_a_time = self.inner.search_lock.lock();
        // Events up to here are covered by the rebuild; later ones are applied after it.
        let (cursor, ids) = self.read(|tx| {
            let cursor = tx
                .events(&EventQuery {
                    limit: Some(1),
                    ..Default::default()
                })?
                .first()
                .map_or(0, |e| e.id.0);
            Ok((cursor, tx.document_ids(None)?))
        })?;
        self.inner.search.clear()?;
        let total = ids.len();
        for (i, chunk) in ids.chunks(BATCH as usize).enumerate() {
            let (docs, _) = self.read(|tx| load_documents(tx, chunk))?;
            self.inner.search.update(&docs, &[])?;
            progress((i * BATCH as usize + chunk.len()).min(total), total);
        }
        self.write_system(|tx| tx.set_setting(CURSOR, &cursor.to_string()))?;
        Ok(total)
    }

    /// Records in the index: (documents, metadata values), and how many events it is behind.
    pub fn search_status(&self) -> Result<(usize, usize, usize)> {
        let cursor = self
            .read(|tx| tx.setting(CURSOR))?
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let behind = self
            .events(&EventQuery {
                after: Some(EventId(cursor)),
                oldest_first: true,
                limit: Some(100_000),
                ..Default::default()
            })?
            .len();
        Ok((
            self.inner.search.count(RecordKind::Document)?,
            self.inner.search.count(RecordKind::Metadata)?,
            behind,
        ))
    }
}

impl Session {
    fn search_hits(&self, kind: RecordKind, text: &str) -> Result<Vec<Hit>> {
        let expr = parse(text)?;
        self.db.wait_for_index()?;
        let hits = self.db.inner.search.search(kind, &expr)?;
        Ok(match self.actor {
            Actor::System => hits,
            Actor::User(_) => hits
                .into_iter()
                .filter(|h| {
                    let doc = ObjectRef::new(ObjectKind::DOCUMENT, h.document_id);
                    self.can(Permission::DocumentView, doc)
                })
                .collect(),
        })
    }

    /// Documents matching `query` (spec 2.5 syntax) that this session may view, best first;
    /// `page` counts from 1.
    pub fn search_documents(
        &self,
        query: &str,
        page: usize,
        page_size: usize,
    ) -> Result<SearchPage<Document>> {
        let hits = self.search_hits(RecordKind::Document, query)?;
        let start = page.saturating_sub(1) * page_size;
        let results = hits
            .iter()
            .skip(start)
            .take(page_size)
            .map(|h| self.document(DocumentId(h.document_id)))
            .collect::<Result<_>>()?;
        Ok(SearchPage {
            count: hits.len(),
            results,
        })
    }

    /// Metadata values matching `query` (DocumentMetadataSearchResult) whose document and
    /// metadata type this session may view, best first.
    pub fn search_metadata(
        &self,
        query: &str,
        page: usize,
        page_size: usize,
    ) -> Result<SearchPage<DocumentMetadata>> {
        let hits = self.search_hits(RecordKind::Metadata, query)?;
        let values: Vec<DocumentMetadata> = hits
            .iter()
            .filter_map(|h| h.metadata_id)
            .filter_map(|id| {
                self.read(|tx| tx.document_metadata(DocumentMetadataId(id)))
                    .ok()
                    .flatten()
            })
            .filter(|m| {
                self.can(
                    Permission::DocumentMetadataView,
                    ObjectRef::new(ObjectKind::DOCUMENT, m.document_id.0),
                ) && self.can(
                    Permission::DocumentMetadataView,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, m.metadata_type_id.0),
                )
            })
            .collect();
        let start = page.saturating_sub(1) * page_size;
        Ok(SearchPage {
            count: values.len(),
            results: values.into_iter().skip(start).take(page_size).collect(),
        })
    }
}
