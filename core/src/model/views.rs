//! View records: what an operation answers, already holding exactly what the caller may see,
//! and the pages lists come back in. The rules of *what accompanies a record* are the
//! operations' (each in the session's file of its resource): a visible document shows its type,
//! an ACL its role, a change's answer shows the changed record even when the change took away
//! the caller's view of it. Faces only convert these records to their own shapes.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::*;

/// What a session is shown of a cached document's metadata: see
/// [`Session::document_metadata_version_if_cached`](crate::Session::document_metadata_version_if_cached).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataPageVersion {
    /// The cached copy (unique per read of the store).
    pub(crate) copy: u64,
    /// The values shown, in order.
    pub(crate) shown: Vec<DocumentMetadataId>,
}

/// Which page of a list to return: `number` counts from 1, `size` items per page. The
/// operations that page a list take one and answer a [`Page`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// The page, from 1 (0 is read as 1).
    pub number: usize,
    /// Items per page (0 is read as 1).
    pub size: usize,
}

impl PageRequest {
    /// Every item of a list on one page, for a caller that wants the whole list.
    pub const ALL: PageRequest = PageRequest {
        number: 1,
        size: usize::MAX,
    };

    /// Page `number` (from 1) of `size` items.
    pub fn new(number: usize, size: usize) -> PageRequest {
        PageRequest {
            number: number.max(1),
            size: size.max(1),
        }
    }

    /// The positions of this page among `total` items (empty past the end).
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        let start = (self.number.max(1) - 1).saturating_mul(self.size.max(1));
        start.min(total)..start.saturating_add(self.size.max(1)).min(total)
    }

    /// Whether this page lies past the end of `total` items (page 1 of nothing does not: an
    /// empty list has an empty first page).
    pub fn is_past_end(self, total: usize) -> bool {
        self.number > 1 && self.range(total).is_empty()
    }
}

/// One page of a list: `count` items in all, `items` on this page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// Items in the whole list.
    pub count: usize,
    /// The items of the requested page.
    pub items: Vec<T>,
}

impl<T> Page<T> {
    /// The requested page of a complete list.
    pub fn of(mut all: Vec<T>, page: PageRequest) -> Page<T> {
        let count = all.len();
        let range = page.range(count);
        all.truncate(range.end);
        let items = all.split_off(range.start);
        Page { count, items }
    }

    /// The same page with each item converted.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            count: self.count,
            items: self.items.into_iter().map(f).collect(),
        }
    }
}

/// A document with its type (shown even without `documents.document_type_view`: seeing the
/// document is enough to see what type it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentView {
    /// The document.
    pub document: Document,
    /// Its type.
    pub document_type: DocumentType,
}

/// An ACL with its role (shown to whoever may view the ACL, without `permissions.role_view`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclView {
    /// The ACL.
    pub acl: Acl,
    /// The role it grants to.
    pub role: Role,
}

/// An association of a metadata type with a document type, with both types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssociationView {
    /// The association.
    pub association: DocumentTypeMetadataType,
    /// The document type.
    pub document_type: DocumentType,
    /// The metadata type.
    pub metadata_type: MetadataType,
}

/// A document's metadata value with its document and metadata type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataValueView {
    /// The value.
    pub value: DocumentMetadata,
    /// The document it belongs to.
    pub document: Document,
    /// Its metadata type; `None` only in the answer to an addition by a writer who may not
    /// view the type (neither `metadata.metadata_type_view` on it nor
    /// `metadata.document_metadata_view` on the type and the document): a write answers with
    /// what its writer may see, as a read would. Every read shows it.
    pub metadata_type: Option<MetadataType>,
}

/// Who did something in the event log, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventActor {
    /// The user.
    pub id: UserId,
    /// Their username.
    pub username: String,
}

/// An event with its actor's name: `None` for docmeta itself, a user deleted since, or a user
/// the reader may not view (see [`Session::events`](crate::Session::events)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventView {
    /// The event.
    pub event: Event,
    /// Who did it.
    pub actor: Option<EventActor>,
}

/// What a follower of the event log gets ([`Session::events_after`](crate::Session::events_after)):
/// the next events it may see, in commit order, and where to go on from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFeed {
    /// The events after the cursor given, in commit order, that the reader may see (redacted as
    /// [`Session::events`](crate::Session::events) redacts them); empty when none came in time.
    pub events: Vec<EventView>,
    /// Where to go on from: pass it as `after` to the next call. It is past every event read,
    /// those the reader may not see included (a follower never reads them again), and never
    /// past one that could still appear before it in commit order. `None` only while the log
    /// holds nothing after a `None` cursor.
    pub cursor: Option<EventId>,
}

/// What a metadata type's default and lookup templates render to, before they are saved
/// ([`Session::preview_templates`](crate::Session::preview_templates)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplatePreview {
    /// The default rendered; `None` when no default was given or it failed.
    pub default: Option<String>,
    /// Why the default did not render (a syntax or rendering error).
    pub default_error: Option<String>,
    /// The lookup's choices, in order; `None` when no lookup was given or it failed.
    pub lookup_choices: Option<Vec<String>>,
    /// Why the lookup did not render.
    pub lookup_error: Option<String>,
}
