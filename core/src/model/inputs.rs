//! What a caller hands to an operation that takes more than a few arguments: changes to a user
//! or a transition, a batch of new documents, which documents to list.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::{DocumentId, DocumentTypeId, MetadataTypeId, WorkflowStateId};

/// Which documents [`Session::documents`](crate::Session::documents) lists, and in which order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentQuery {
    /// Only the documents of this type.
    pub document_type: Option<DocumentTypeId>,
    /// Newest (highest id) first; oldest first otherwise.
    pub newest_first: bool,
    /// Only the documents past this one in the list's order: a cursor. A caller that walks a
    /// whole list asks for page 1 after the last document of the page before, so that each
    /// page costs the same however far the walk has gone, and a document deleted meanwhile
    /// makes it skip none. `count` still counts the whole list.
    pub after: Option<DocumentId>,
    /// In the order of the documents' values of a metadata type instead of by id (see
    /// [`OrderBy`]; `newest_first` and `after` do not apply). The list is then read from the
    /// search index, so it reaches [`MAX_RESULT_WINDOW`](crate::MAX_RESULT_WINDOW) documents deep.
    pub ordering: Option<OrderBy>,
}

/// An order by the values of one metadata type: compared by its value type (numbers as numbers,
/// dates and times in time, text by its characters' code points), documents without a value
/// last in either direction, ties by document id, so that paging is stable. A type the caller
/// may not view the values of (or no type of that name) orders as if no document had a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderBy {
    /// The metadata type's name.
    pub metadata_type: String,
    /// Largest (latest, last in text order) first.
    pub descending: bool,
}

impl OrderBy {
    /// Smallest first.
    pub fn ascending(metadata_type: impl Into<String>) -> Self {
        OrderBy {
            metadata_type: metadata_type.into(),
            descending: false,
        }
    }

    /// Largest first.
    pub fn descending(metadata_type: impl Into<String>) -> Self {
        OrderBy {
            metadata_type: metadata_type.into(),
            descending: true,
        }
    }

    /// The order an `ordering` parameter names: `amount` (ascending) or `-amount`
    /// (descending); `None` for an empty name. In a document list, `id` and `-id` are the
    /// list's own order by id (a metadata type cannot be reached by that name there).
    pub fn parse(ordering: &str) -> Option<Self> {
        let ordering = ordering.trim();
        let (descending, name) = match ordering.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, ordering),
        };
        (!name.is_empty()).then(|| OrderBy {
            metadata_type: name.to_owned(),
            descending,
        })
    }
}

impl std::fmt::Display for OrderBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.descending { "-" } else { "" };
        write!(f, "{sign}{}", self.metadata_type)
    }
}

/// A document search: the query text (spec 2.5's syntax and field-bound terms; see
/// [`Session::search_documents`](crate::Session::search_documents)) and its order. A `&str`
/// is a search by relevance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchQuery {
    /// The query.
    pub text: String,
    /// By the values of a metadata type rather than by relevance.
    pub ordering: Option<OrderBy>,
}

impl SearchQuery {
    /// A search for `text`, best first.
    pub fn new(text: impl Into<String>) -> Self {
        SearchQuery {
            text: text.into(),
            ordering: None,
        }
    }

    /// The same search in `ordering`'s order.
    pub fn ordered_by(mut self, ordering: OrderBy) -> Self {
        self.ordering = Some(ordering);
        self
    }
}

impl<T: AsRef<str> + ?Sized> From<&T> for SearchQuery {
    fn from(text: &T) -> Self {
        SearchQuery::new(text.as_ref())
    }
}

impl From<String> for SearchQuery {
    fn from(text: String) -> Self {
        SearchQuery::new(text)
    }
}

/// One document of a batch ([`Session::create_documents`](crate::Session::create_documents)): its type, its label and its
/// initial metadata values, as [`Session::create_document`](crate::Session::create_document) takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewDocument<'a> {
    /// The document's type.
    pub document_type: DocumentTypeId,
    /// Its label.
    pub label: &'a str,
    /// Its initial values: (metadata type, submitted value).
    pub values: &'a [(MetadataTypeId, &'a str)],
}

/// Changes to a user; `None` leaves a field as it is. All fields are checked before any is
/// written, and all are written in one transaction: a refused update changes nothing.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct UserUpdate {
    /// A new username.
    pub username: Option<String>,
    /// A new password (hashed before the transaction starts; never stored in clear).
    pub password: Option<String>,
    /// Grant or remove superuser status (only a superuser may change it).
    pub is_superuser: Option<bool>,
    /// Activate or deactivate the user.
    pub is_active: Option<bool>,
}

impl std::fmt::Debug for UserUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserUpdate")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("is_superuser", &self.is_superuser)
            .field("is_active", &self.is_active)
            .finish()
    }
}

/// A change to a transition: each field given replaces the stored one.
#[derive(Debug, Clone, Default)]
pub struct TransitionUpdate {
    /// A new label, unique in the workflow.
    pub label: Option<String>,
    /// A new origin state (of the same workflow).
    pub origin: Option<WorkflowStateId>,
    /// A new destination state (of the same workflow).
    pub destination: Option<WorkflowStateId>,
    /// A new condition template (empty: always allowed).
    pub condition: Option<String>,
}
