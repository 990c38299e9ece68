//! Search results as pages of view records (each document with its type, each value with its
//! document and type), what every face shows for a search.
//!
//! Layer 7 (part of `search`): imports sessions and the layers below.

use std::collections::HashMap;

use crate::error::Result;
use crate::model::*;
use crate::session::{DocumentView, MetadataValueView, Page, PageRequest, Session};

impl Session {
    /// A page of the documents matching a search query (spec 2.5), best first, each with its
    /// type.
    pub fn search_documents_page(
        &self,
        query: &str,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        let (count, ids) = self.document_hits(query, page.number, page.size)?;
        // One read for the documents and their types; one deleted since the index answered
        // (its removal reaches the index right after) is left out of the page.
        let items = self.document_views(&ids)?;
        Ok(Page { count, items })
    }

    /// A page of the metadata values matching a search query (spec 2.5), each with its document
    /// and type.
    pub fn search_metadata_page(
        &self,
        query: &str,
        page: PageRequest,
    ) -> Result<Page<MetadataValueView>> {
        let found = self.search_metadata(query, page.number, page.size)?;
        let mut details: HashMap<DocumentId, (Document, Vec<(DocumentMetadata, MetadataType)>)> =
            HashMap::new();
        let mut items = Vec::with_capacity(found.results.len());
        for m in &found.results {
            if let std::collections::hash_map::Entry::Vacant(e) = details.entry(m.document_id) {
                e.insert(self.document_metadata_details(m.document_id)?);
            }
            let Some((doc, values)) = details.get(&m.document_id) else {
                continue;
            };
            if let Some((value, metadata_type)) = values.iter().find(|(v, _)| v.id == m.id) {
                items.push(MetadataValueView {
                    value: value.clone(),
                    document: doc.clone(),
                    metadata_type: metadata_type.clone(),
                });
            }
        }
        Ok(Page {
            count: found.count,
            items,
        })
    }
}
