//! `Session` methods: searching documents and metadata values (spec 2.5).

use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{DocumentPage, MetadataPage, all};

#[pymethods]
impl Session {
    /// Documents matching `query` (spec 2.5, and field-bound terms such as `amount:>1000` or
    /// `has:due`) that this session may view, each with its type; best first, or with
    /// `ordering` in the order of a metadata type's values (`"amount"`, `"-amount"` largest
    /// first; documents without a value last).
    #[pyo3(signature = (query, *, page = 1, page_size = 20, ordering = None))]
    fn search_documents(
        &self,
        py: Python<'_>,
        query: String,
        page: usize,
        page_size: usize,
        ordering: Option<String>,
    ) -> PyResult<DocumentPage> {
        let mut search = docmeta_core::SearchQuery::new(query);
        search.ordering = ordering.as_deref().and_then(docmeta_core::OrderBy::parse);
        let p = run(py, || {
            self.inner
                .search_documents(search, docmeta_core::PageRequest::new(page, page_size))
        })?;
        Ok(DocumentPage {
            count: p.count,
            results: all(p.items),
        })
    }

    /// Metadata values matching `query` (spec 2.5's DocumentMetadataSearchResult).
    #[pyo3(signature = (query, *, page = 1, page_size = 20))]
    fn search_metadata(
        &self,
        py: Python<'_>,
        query: String,
        page: usize,
        page_size: usize,
    ) -> PyResult<MetadataPage> {
        let p = run(py, || {
            self.inner
                .search_metadata(&query, docmeta_core::PageRequest::new(page, page_size))
        })?;
        Ok(MetadataPage {
            count: p.count,
            results: all(p.items),
        })
    }
}
