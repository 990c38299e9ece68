//! Search (spec 2.5): documents and metadata values matching a query, filtered to what this
//! session may view.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{MetadataSearchPage, SearchPage};

#[uniffi::export]
impl Session {
    /// Documents matching `query` this session may view: page `page` (from 1) of `pageSize`.
    ///
    /// `ordering`: in the order of a metadata type's values instead of by relevance (`amount`,
    /// or `-amount` largest first; documents without a value last).
    #[uniffi::method(default(ordering = None))]
    pub fn search_documents(
        &self,
        query: String,
        page: u32,
        page_size: u32,
        ordering: Option<String>,
    ) -> Result<SearchPage> {
        let mut search = core::SearchQuery::new(query);
        search.ordering = ordering.as_deref().and_then(core::OrderBy::parse);
        let p = self.inner.search_documents(
            search,
            core::PageRequest::new(page as usize, page_size as usize),
        )?;
        Ok(SearchPage {
            count: p.count as u64,
            results: p.items.into_iter().map(Into::into).collect(),
        })
    }

    /// Metadata values matching `query` this session may view.
    pub fn search_metadata(
        &self,
        query: String,
        page: u32,
        page_size: u32,
    ) -> Result<MetadataSearchPage> {
        let p = self.inner.search_metadata(
            &query,
            core::PageRequest::new(page as usize, page_size as usize),
        )?;
        Ok(MetadataSearchPage {
            count: p.count as u64,
            results: p.items.into_iter().map(Into::into).collect(),
        })
    }
}
