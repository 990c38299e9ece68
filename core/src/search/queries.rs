//! The session's searches (spec 2.5): [`Session::search_documents`] and
//! [`Session::search_metadata`], and the documents of a list in the order of a metadata type's
//! values (`sorted_documents`, the kernel's hook behind `Session::documents`). Each answers
//! only what the session may see: its scope of the index, and the metadata type names it may
//! know of.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::MAX_RESULT_WINDOW;
use super::collectors::Sort;
use super::query::{self, Expr, Lookup, ResolvedType, parse};
use super::visible::{SearchScope, TypeVisibility};
use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::Result;
use crate::kernel::Docmeta;
use crate::model::*;
use crate::session::Session;

impl Session {
    /// What this session may see of the index, by the rules `session/documents.rs` and
    /// `session/values.rs` apply to each object: documents with `documents.document_view`; a
    /// value when, in addition, `metadata.document_metadata_view` is held on its document
    /// (directly, through its document type, or globally) and on its metadata type (an ACL, or
    /// globally). Every answer comes from the access policy (`document_visibility`, exact since
    /// a document inherits from its type only; `check_global` and `filter_each` on every
    /// metadata type).
    fn search_scope(&self) -> Result<SearchScope> {
        let Actor::User(user) = self.actor else {
            return Ok(SearchScope::everything());
        };
        let types: Vec<i64> = self
            .read(|tx| tx.metadata_type_ids())?
            .into_iter()
            .map(|t| t.0)
            .collect();
        let snapshot = self.db.inner.access.read();
        let mut metadata_types = TypeVisibility {
            all: snapshot.check_global(user, Permission::DocumentMetadataView),
            ..Default::default()
        };
        if !metadata_types.all {
            snapshot.filter_each(
                user,
                Permission::DocumentMetadataView,
                types
                    .iter()
                    .map(|t| ObjectRef::new(ObjectKind::METADATA_TYPE, *t)),
                |o| {
                    metadata_types.ids.insert(o.id);
                },
            );
        }
        Ok(SearchScope {
            documents: snapshot.document_visibility(user, Permission::DocumentView),
            document_metadata: snapshot.document_visibility(user, Permission::DocumentMetadataView),
            metadata_types,
        })
    }

    /// What this session may know of each metadata type, by name: the types whose values it
    /// may view (in `scope`) are found; those it may view, or whose values it may view
    /// somewhere (how `require_on_metadata_type` decides a caller knows a type), are hidden; the
    /// others are not listed (unknown, as a name that is no type).
    fn known_types(&self, scope: &SearchScope) -> Result<HashMap<String, Lookup>> {
        let types = self.read(|tx| tx.metadata_types())?;
        Ok(types
            .into_iter()
            .filter_map(|t| {
                let id = t.id.0;
                let lookup = if scope.metadata_types.all || scope.metadata_types.ids.contains(&id) {
                    Lookup::Found(ResolvedType {
                        id,
                        value_type: t.value_type,
                    })
                } else if self.can(
                    Permission::MetadataTypeView,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, id),
                ) || self.can(
                    Permission::DocumentMetadataView,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, id),
                ) {
                    Lookup::Hidden
                } else {
                    return None;
                };
                Some((t.name, lookup))
            })
            .collect())
    }

    /// `expr` with its metadata type names resolved, and the order, for this session's scope.
    ///
    /// An order by a name whose values the caller may not read is no order of values: a search
    /// keeps its relevance order (as Django REST framework ignores an unknown `ordering`), and
    /// a list (`listing`) its order by id, the order of documents without values.
    fn prepared(
        &self,
        mut expr: Expr,
        ordering: Option<&OrderBy>,
        listing: bool,
        scope: &SearchScope,
    ) -> Result<(Expr, Option<Sort>)> {
        let mut types = None;
        let mut find = |name: &str| -> Result<Lookup> {
            if types.is_none() {
                types = Some(self.known_types(scope)?);
            }
            Ok(types
                .as_ref()
                .and_then(|t| t.get(name).copied())
                .unwrap_or(Lookup::Unknown))
        };
        let mut failed = None;
        let resolved = query::resolve(&mut expr, &mut |name| match find(name) {
            Ok(found) => found,
            Err(e) => {
                failed.get_or_insert(e);
                Lookup::Hidden
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        resolved?;
        let sort = match ordering {
            None => None,
            Some(o) => match find(&o.metadata_type)? {
                Lookup::Found(t) => Some(Sort {
                    by: Some(t),
                    descending: o.descending,
                }),
                Lookup::Hidden | Lookup::Unknown if listing => Some(Sort {
                    by: None,
                    descending: o.descending,
                }),
                Lookup::Hidden | Lookup::Unknown => None,
            },
        };
        Ok((expr, sort))
    }

    /// A page of the documents matching `query` (spec 2.5 syntax, and field-bound terms: see
    /// below) that this session may view, best first (or in the query's
    /// [`ordering`](SearchQuery::ordering)), each with its type. Metadata terms match only values
    /// this session may view (the search scope): a hidden value never changes the results,
    /// their count or their order. A document deleted since the index answered (its removal
    /// reaches the index right after) is left out of the page rather than failing it.
    ///
    /// Beyond the spec's fields, `<name>:<term>` matches only values of the metadata type
    /// `name`, compared by its [`ValueType`] (`amount:>1000`, `due:[2024-01-01 TO 2024-03-31]`,
    /// `paid:true`; a word that does not read as the type matches the values' text, as
    /// `value:` would), and `has:<name>` the documents with a value of it (`NOT has:<name>`
    /// those without). A type whose values this session may not view matches nothing; a name
    /// that is no metadata type this session may know of (`metadata_type_view` on it, or
    /// `document_metadata_view` on it) is an unknown field, `InvalidInput`, whether or not such
    /// a type exists: no answer tells a hidden type from an absent one.
    ///
    /// ```
    /// use docmeta_core::{MetadataTypeInput, PageRequest};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    /// admin.associate(invoice.id, number.id, false)?;
    /// let doc = admin.create_document(invoice.id, "March", &[(number.id, "INV-2024-42")])?;
    /// admin.create_document(invoice.id, "April", &[(number.id, "INV-2024-43")])?;
    ///
    /// // Apply the log to the index (a search also catches up by itself, unless a rebuild runs).
    /// db.wait_for_index()?;
    /// let first = PageRequest::new(1, 20);
    /// let found = admin.search_documents("metadata_type__name:number metadata_value:42", first)?;
    /// assert_eq!(found.count, 1);
    /// assert_eq!(found.items[0].document.id, doc.document.id);
    /// assert_eq!(admin.search_documents("value:2024", first)?.count, 2);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    ///
    /// Typed fields and an order:
    ///
    /// ```
    /// use docmeta_core::{MetadataTypeInput, OrderBy, PageRequest, SearchQuery, ValueType};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let amount = MetadataTypeInput::new("amount", "Amount").value_type(ValueType::Decimal);
    /// let amount = admin.create_metadata_type(amount)?;
    /// admin.associate(invoice.id, amount.id, false)?;
    /// for (label, value) in [("small", "95.50"), ("large", "1200"), ("none", "")] {
    ///     admin.create_document(invoice.id, label, &[(amount.id, value)])?;
    /// }
    /// let first = PageRequest::new(1, 20);
    /// // 95.50 < 1200 as numbers (as text, "1200" < "95.50").
    /// let found = admin.search_documents("amount:>100", first)?;
    /// assert_eq!(found.items[0].document.label, "large");
    /// assert_eq!(admin.search_documents("NOT has:amount", first)?.count, 1);
    /// assert!(admin.search_documents("amont:>100", first).is_err()); // an unknown field
    /// // Largest first; a document without a value last.
    /// let sorted = SearchQuery::new("document_type__label:invoice")
    ///     .ordered_by(OrderBy::descending("amount"));
    /// let labels: Vec<String> = admin.search_documents(sorted, first)?
    ///     .items.into_iter().map(|d| d.document.label).collect();
    /// assert_eq!(labels, ["large", "small", "none"]);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn search_documents(
        &self,
        query: impl Into<SearchQuery>,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        let query = query.into();
        let expr = parse(&query.text)?;
        let (count, ids) =
            self.document_hits(expr, query.ordering.as_ref(), false, page.number, page.size)?;
        // The page's documents and their types in one read.
        let items = self.document_views(&ids)?;
        Ok(Page { count, items })
    }

    /// The visible documents matching `query` in all, and the ids of page `page`, best first
    /// (what [`search_documents`](Self::search_documents) reads the documents of).
    pub(crate) fn document_hits(
        &self,
        expr: Expr,
        ordering: Option<&OrderBy>,
        listing: bool,
        page: usize,
        page_size: usize,
    ) -> Result<(usize, Vec<DocumentId>)> {
        let offset = page.saturating_sub(1).saturating_mul(page_size);
        if offset.saturating_add(page_size) > MAX_RESULT_WINDOW {
            return Err(crate::error::Error::InvalidInput(format!(
                "query: results beyond the first {MAX_RESULT_WINDOW} cannot be paged to; refine the query"
            )));
        }
        self.db.index_catch_up(false)?;
        let scope = self.search_scope()?;
        let (expr, sort) = self.prepared(expr, ordering, listing, &scope)?;
        let (count, hits) = self.db.inner.search.index().search_visible(
            RecordKind::Document,
            &expr,
            std::sync::Arc::new(scope),
            sort,
            offset,
            page_size,
        )?;
        Ok((
            count,
            hits.iter().map(|h| DocumentId(h.document_id)).collect(),
        ))
    }

    /// A page of the metadata values matching `query` (DocumentMetadataSearchResult) that this
    /// session may view (their document with `documents.document_view`, and
    /// `metadata.document_metadata_view` on the document and on the metadata type), best first,
    /// each with its document and type. A value deleted since the index answered is left out
    /// of the page.
    pub fn search_metadata(
        &self,
        query: &str,
        page: PageRequest,
    ) -> Result<Page<MetadataValueView>> {
        let expr = parse(query)?;
        self.db.index_catch_up(false)?;
        let scope = self.search_scope()?;
        let (expr, _) = self.prepared(expr, None, false, &scope)?;
        let (count, hits) = self.db.inner.search.index().search_visible(
            RecordKind::Metadata,
            &expr,
            std::sync::Arc::new(scope),
            None,
            page.number.saturating_sub(1).saturating_mul(page.size),
            page.size,
        )?;
        // Each document's visible values read once, as `metadata_value` would show them.
        let mut details: HashMap<DocumentId, (Document, Vec<(DocumentMetadata, MetadataType)>)> =
            HashMap::new();
        let mut items = Vec::with_capacity(hits.len());
        for (document, id) in hits
            .iter()
            .filter_map(|h| Some((DocumentId(h.document_id), h.metadata_id?)))
        {
            let details = match details.entry(document) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => match self.document_metadata_details(document) {
                    Ok(d) => e.insert(d),
                    // Deleted, or hidden, since the index answered: left out of the page.
                    Err(
                        crate::error::Error::NotFound(_) | crate::error::Error::PermissionDenied(_),
                    ) => {
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            let (doc, values) = &*details;
            if let Some((value, metadata_type)) = values.iter().find(|(v, _)| v.id.0 == id) {
                items.push(MetadataValueView {
                    value: value.clone(),
                    document: doc.clone(),
                    metadata_type: Some(metadata_type.clone()),
                });
            }
        }
        Ok(Page { count, items })
    }
}

/// The kernel's hook behind `Session::documents` with an order (see `DocumentQuery::ordering`):
/// every document `actor` may view (of type `of_type`), in `ordering`'s order, from the index.
pub(crate) fn sorted_documents(
    db: &Docmeta,
    actor: Actor,
    of_type: Option<DocumentTypeId>,
    ordering: &OrderBy,
    page: PageRequest,
) -> Result<(usize, Vec<DocumentId>)> {
    let session = match actor {
        Actor::User(user) => db.session(user),
        Actor::System => db.system(),
    };
    let expr = match of_type {
        Some(t) => Expr::DocumentType(t.0),
        None => Expr::All,
    };
    session.document_hits(expr, Some(ordering), true, page.number, page.size)
}
