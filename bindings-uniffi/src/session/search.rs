//! Search (spec 2.5): documents and metadata values matching a query, filtered to what this
//! session may view.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{MetadataSearchPage, SearchPage};

#[uniffi::export]
impl Session {
    /// Documents matching `query` this session may view: page `page` (from 1) of `pageSize`.
    pub fn search_documents(&self, query: String, page: u32, page_size: u32) -> Result<SearchPage> {
        let p = self.inner.search_documents(
            &query,
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
