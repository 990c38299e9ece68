//! What a caller hands to an operation that takes more than a few arguments: changes to a user
//! or a transition, a batch of new documents, which documents to list.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::{DocumentId, DocumentTypeId, MetadataTypeId, WorkflowStateId};

/// Which documents [`Session::documents`](crate::Session::documents) lists, and in which order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
