//! View records: what a face (HTTP, Python, Kotlin) shows for an operation, already holding
//! exactly what the caller may see. The rules of *what accompanies a record* live here, once:
//! a visible document shows its type's label, an ACL its role's label, a change's answer shows
//! the changed record even when the change took away the caller's view of it. Lists come back as
//! a [`Page`]. Faces only convert these records to their own shapes.
//!
//! Written on the session's checked operations and the store's record methods; no SQL here.
//!
//! Layer 6 (part of `session`): imports `model`, `access`, `events`, `error`, the store's `Tx`
//! and the session; never `workflows`, `tasks`, `search`, `backup` or the facade (search
//! results as pages are in `search/pages.rs`, above the session).

use std::collections::HashMap;

use super::Session;
use super::records::{Acl, Group, Role, User};
use crate::access::{DocumentVisibility, ObjectKind, ObjectRef, Permission as P, Permission};
use crate::error::{Error, Result};
use crate::events::{Event, EventQuery};
use crate::kernel::CachedDocument;
use crate::model::*;
use crate::store::Tx;

/// What a session is shown of a cached document's metadata: see
/// [`Session::document_metadata_version_if_cached`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataPageVersion {
    /// The cached copy (unique per read of the store).
    copy: u64,
    /// The values shown, in order.
    shown: Vec<DocumentMetadataId>,
}

impl MetadataPageVersion {
    fn of(read: &CachedDocument, shown: &[&(DocumentMetadata, MetadataType)]) -> Self {
        MetadataPageVersion {
            copy: read.copy,
            shown: shown.iter().map(|(m, _)| m.id).collect(),
        }
    }
}

/// Which page of a list to return: `number` counts from 1, `size` items per page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// The page, from 1 (0 is read as 1).
    pub number: usize,
    /// Items per page (0 is read as 1).
    pub size: usize,
}

impl PageRequest {
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
    /// Its metadata type.
    pub metadata_type: MetadataType,
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
/// the reader may not view (see [`Session::events`](super::Session::events)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventView {
    /// The event.
    pub event: Event,
    /// Who did it.
    pub actor: Option<EventActor>,
}

fn document_type_of(tx: &mut Tx<'_>, d: &Document) -> Result<DocumentType> {
    tx.document_type(d.document_type_id)?
        .ok_or_else(|| Error::not_found(format!("document type {}", d.document_type_id)))
}

/// The most single documents (visible through ACLs of their own, not through their type) a
/// documents page names in its statement; beyond, it walks the documents in order instead.
pub(crate) const MAX_LISTED_DOCUMENTS: usize = 1000;

/// Each document with its type, each type read once.
fn with_types(tx: &mut Tx<'_>, documents: Vec<Document>) -> Result<Vec<DocumentView>> {
    let mut types: HashMap<DocumentTypeId, DocumentType> = HashMap::new();
    let mut out = Vec::with_capacity(documents.len());
    for document in documents {
        let document_type = match types.get(&document.document_type_id) {
            Some(t) => t.clone(),
            None => {
                let t = document_type_of(tx, &document)?;
                types.insert(t.id, t.clone());
                t
            }
        };
        out.push(DocumentView {
            document,
            document_type,
        });
    }
    Ok(out)
}

fn role_of(tx: &mut Tx<'_>, id: RoleId) -> Result<Role> {
    tx.roles()?
        .into_iter()
        .find(|(r, _)| *r == id)
        .map(Role::from)
        .ok_or_else(|| Error::not_found(format!("role {id}")))
}

fn group_of(tx: &mut Tx<'_>, id: GroupId) -> Result<Group> {
    tx.groups()?
        .into_iter()
        .find(|(g, _)| *g == id)
        .map(Group::from)
        .ok_or_else(|| Error::not_found(format!("group {id}")))
}

impl Session {
    // ----- object kinds ----------------------------------------------------------------------

    /// The object `id` of the kind `app_label.model_name`; `NotFound` for an unknown kind.
    pub fn object_ref(&self, app_label: &str, model_name: &str, id: i64) -> Result<ObjectRef> {
        let kind = self.object_kind(app_label, model_name)?;
        Ok(ObjectRef::new(kind, id))
    }

    /// Parses `app_label.model_name` into a registered object kind (`InvalidInput` otherwise).
    pub fn parse_kind(&self, text: &str) -> Result<ObjectKind> {
        self.db.parse_kind(text)
    }

    /// The kind `app_label.model_name`; `NotFound` when no such kind is registered.
    pub fn object_kind(&self, app_label: &str, model_name: &str) -> Result<ObjectKind> {
        self.db
            .kinds()
            .find(app_label, model_name)
            .ok_or_else(|| Error::not_found(format!("kind {app_label}.{model_name}")))
    }

    /// The permissions an ACL on objects of `kind` may hold, in key order.
    pub fn grantable_permissions(&self, kind: ObjectKind) -> Vec<Permission> {
        self.db.kinds().grantable(kind).iter().collect()
    }

    // ----- documents -------------------------------------------------------------------------

    fn document_view_of(&self, document: Document) -> Result<DocumentView> {
        let document_type = self.read(|tx| document_type_of(tx, &document))?;
        Ok(DocumentView {
            document,
            document_type,
        })
    }

    /// Loads the documents `ids` this session may view with their types, in one transaction
    /// and one query per 1,000, in the order given; a document deleted (or hidden) since the ids were
    /// read is left out.
    pub(crate) fn document_views(&self, ids: &[DocumentId]) -> Result<Vec<DocumentView>> {
        let raw: Vec<i64> = ids.iter().map(|d| d.0).collect();
        self.read(|tx| {
            let mut found: HashMap<DocumentId, Document> = HashMap::with_capacity(raw.len());
            // A long list (a whole cabinet) in statements of a bounded size.
            for chunk in raw.chunks(MAX_LISTED_DOCUMENTS) {
                found.extend(tx.documents_by_id(chunk)?.into_iter().map(|d| (d.id, d)));
            }
            let documents: Vec<Document> = ids
                .iter()
                .filter_map(|id| found.remove(id))
                .filter(|d| {
                    self.can(
                        P::DocumentView,
                        ObjectRef::new(ObjectKind::DOCUMENT, d.id.0),
                    )
                })
                .collect();
            with_types(tx, documents)
        })
    }

    /// One document with its type. Needs `documents.document_view` on the document.
    pub fn document_view(&self, id: DocumentId) -> Result<DocumentView> {
        self.document_view_of(self.document(id)?)
    }

    /// A page of the documents this session may view (optionally of one type), by id, or newest
    /// first. `count` counts every visible document, exactly.
    ///
    /// Neither the count nor the page visits every document: who may view a document is
    /// decided by its type's ACLs or its own (a document inherits from its type only), so the
    /// count is the sum of the visible types' document counts (kept in the access snapshot)
    /// plus the documents visible through ACLs of their own, and the page is one query filtered
    /// by those types and documents (beyond 1,000 such documents, a walk of the documents in
    /// order that keeps the visible ones).
    pub fn documents_page(
        &self,
        of_type: Option<DocumentTypeId>,
        newest_first: bool,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        // The count comes from the access snapshot: it must know of documents other processes
        // committed before this call.
        self.catch_up()?;
        let (visible, count, types, documents, scan) = {
            let snapshot = self.snapshot();
            let visible = match self.actor {
                Actor::User(user) => snapshot.document_visibility(user, P::DocumentView),
                Actor::System => DocumentVisibility {
                    all: true,
                    ..Default::default()
                },
            };
            let count = snapshot.count_documents(&visible, of_type.map(|t| t.0));
            // The visible set as types (every document of them) plus single documents of
            // other types; `None` for every document.
            let (types, documents): (Option<Vec<i64>>, Vec<i64>) = match of_type {
                None if visible.all => (None, Vec::new()),
                Some(t) if visible.all || visible.types.contains(&t.0) => {
                    (Some(vec![t.0]), Vec::new())
                }
                _ => {
                    let wanted = |t: i64| of_type.is_none_or(|o| o.0 == t);
                    let mut types: Vec<i64> = match of_type {
                        Some(_) => Vec::new(),
                        None => visible.types.iter().copied().collect(),
                    };
                    types.sort_unstable();
                    let mut documents: Vec<i64> = visible
                        .documents
                        .iter()
                        .copied()
                        .filter(|d| {
                            snapshot
                                .document_type_of(*d)
                                .is_some_and(|t| wanted(t) && !visible.types.contains(&t))
                        })
                        .collect();
                    documents.sort_unstable();
                    (Some(types), documents)
                }
            };
            // Walking the documents by id costs about (offset + size) * total / count rows;
            // reading the visible ones through the type index and sorting them costs count.
            // One type alone is read through its index already in id order.
            let total = snapshot.count_documents(
                &DocumentVisibility {
                    all: true,
                    ..Default::default()
                },
                None,
            );
            let wanted_rows = page.range(count).end.max(1);
            let single_type = matches!(&types, Some(t) if t.len() == 1) && documents.is_empty();
            let scan = !single_type
                && (wanted_rows as u128) * (total as u128) <= (count as u128) * (count as u128);
            (visible, count, types, documents, scan)
        };
        let range = page.range(count);
        if range.is_empty() {
            return Ok(Page {
                count,
                items: Vec::new(),
            });
        }
        let items = self.read(|tx| {
            let found = if documents.len() > MAX_LISTED_DOCUMENTS {
                // Too many single documents to name in a statement: walk the documents in
                // order and keep the visible ones (what the statement would have done).
                let wanted = |d: &Document| {
                    of_type.is_none_or(|t| t == d.document_type_id)
                        && visible.allows(d.id.0, d.document_type_id.0)
                };
                let mut skip = range.start;
                let mut found = Vec::with_capacity(range.len());
                let mut cursor = DocumentId(if newest_first { i64::MAX } else { 0 });
                'walk: loop {
                    let rows = tx.documents_from(cursor, newest_first, 1000)?;
                    let Some(last) = rows.last().map(|d| d.id) else {
                        break;
                    };
                    let exhausted = rows.len() < 1000;
                    for d in rows.into_iter().filter(|d| wanted(d)) {
                        if skip > 0 {
                            skip -= 1;
                        } else {
                            found.push(d);
                            if found.len() == range.len() {
                                break 'walk;
                            }
                        }
                    }
                    if exhausted {
                        break;
                    }
                    cursor = last;
                }
                found
            } else {
                tx.documents_page_of(
                    types.as_deref(),
                    &documents,
                    scan,
                    newest_first,
                    range.start,
                    range.len(),
                )?
            };
            let found = found
                .into_iter()
                .filter(|d| visible.allows(d.id.0, d.document_type_id.0))
                .collect();
            with_types(tx, found)
        })?;
        Ok(Page { count, items })
    }

    /// [`create_document`](Self::create_document) answered with the new document and its type.
    pub fn create_document_view(
        &self,
        document_type: DocumentTypeId,
        label: &str,
    ) -> Result<DocumentView> {
        self.document_view_of(self.create_document(document_type, label, &[])?)
    }

    /// [`create_document`](Self::create_document) with initial metadata `values` and, when
    /// given, a first file (`(filename, content)`, see
    /// [`create_document_with_file`](Self::create_document_with_file)), answered with the
    /// document and its type.
    pub fn create_document_with_view(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
        file: Option<(&str, &mut dyn std::io::Read)>,
    ) -> Result<DocumentView> {
        let document = match file {
            Some((filename, content)) => {
                self.create_document_with_file(document_type, label, values, filename, content)?
                    .0
            }
            None => self.create_document(document_type, label, values)?,
        };
        self.document_view_of(document)
    }

    /// [`create_documents`](Self::create_documents) answered with each new document and its
    /// type, in the order given.
    pub fn create_documents_view(
        &self,
        documents: &[super::NewDocument<'_>],
    ) -> Result<Vec<DocumentView>> {
        let created = self.create_documents(documents)?;
        self.read(|tx| with_types(tx, created))
    }

    /// [`update_document`](Self::update_document) answered with the document and its type.
    pub fn update_document_view(&self, id: DocumentId, label: &str) -> Result<DocumentView> {
        self.document_view_of(self.update_document(id, label)?)
    }

    /// [`change_document_type`](Self::change_document_type) answered with the document and its
    /// new type.
    pub fn change_document_type_view(
        &self,
        id: DocumentId,
        document_type: DocumentTypeId,
    ) -> Result<DocumentView> {
        self.document_view_of(self.change_document_type(id, document_type)?)
    }

    /// A page of the documents of a cabinet this session may view. Needs
    /// `cabinets.cabinet_view` on the cabinet.
    pub fn cabinet_documents_page(
        &self,
        cabinet: CabinetId,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        let ids = self.cabinet_documents(cabinet)?;
        let count = ids.len();
        let items = self.document_views(&ids[page.range(count)])?;
        Ok(Page { count, items })
    }

    // ----- metadata values -------------------------------------------------------------------

    fn metadata_value_in(
        document: Document,
        values: Vec<(DocumentMetadata, MetadataType)>,
        id: DocumentMetadataId,
    ) -> Result<MetadataValueView> {
        let (value, metadata_type) = values
            .into_iter()
            .find(|(m, _)| m.id == id)
            .ok_or_else(|| Error::not_found(format!("document metadata {id}")))?;
        Ok(MetadataValueView {
            value,
            document,
            metadata_type,
        })
    }

    /// One metadata value of a document, with its document and type. Needs view on the
    /// document and on the value (`metadata.document_metadata_view`).
    pub fn metadata_value_view(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<MetadataValueView> {
        let (doc, values) = self.document_metadata_details(document)?;
        Self::metadata_value_in(doc, values, id)
    }

    /// A page of a document's visible metadata values, each with its type.
    pub fn document_metadata_page(
        &self,
        document: DocumentId,
        page: PageRequest,
    ) -> Result<Page<MetadataValueView>> {
        let details = self.document_metadata_details(document)?;
        Ok(Self::metadata_page_of(details, page))
    }

    /// [`document_metadata_page`](Self::document_metadata_page) when the document is in the
    /// read cache (see `Config::read_cache_documents`), with the page's
    /// [version](Self::document_metadata_version_if_cached); `None` when it is not there. It
    /// never reads the store, so an async server may call it on its own workers and move to a
    /// blocking thread only when it is `None`. What the session may see is checked as in the
    /// blocking call.
    pub fn document_metadata_page_if_cached(
        &self,
        document: DocumentId,
        page: PageRequest,
    ) -> Option<Result<(MetadataPageVersion, Page<MetadataValueView>)>> {
        // Only when what other processes committed is known to be applied without a read:
        // otherwise the blocking call catches up first.
        if !self.caught_up_without_reading() {
            return None;
        }
        let cached = self.db.cached_document_with_metadata(document)?;
        Some(
            self.metadata_shown(document, Some(&cached))
                .map(|(read, shown)| {
                    let version = MetadataPageVersion::of(read, &shown);
                    let values = shown.into_iter().cloned().collect();
                    (
                        version,
                        Self::metadata_page_of((read.document.clone(), values), page),
                    )
                }),
        )
    }

    /// Identifies what [`document_metadata_page`](Self::document_metadata_page) shows this
    /// session of a document in the read cache, `None` when it is not there (as
    /// [`document_metadata_page_if_cached`](Self::document_metadata_page_if_cached), it never
    /// reads the store). Two versions are equal exactly when they name the same copy of the
    /// document and the same values of it, so a face may keep what it made of a page (an
    /// HTTP answer's bytes) with the version that page came with, and give it again, for the
    /// same page, to any caller whose version is equal: the copy changes with every write,
    /// and the values shown with the caller's permissions, checked here on every call. A
    /// caller who may not view the document gets the error the page would give.
    pub fn document_metadata_version_if_cached(
        &self,
        document: DocumentId,
    ) -> Option<Result<MetadataPageVersion>> {
        if !self.caught_up_without_reading() {
            return None;
        }
        let cached = self.db.cached_document_with_metadata(document)?;
        Some(
            self.metadata_shown(document, Some(&cached))
                .map(|(read, shown)| MetadataPageVersion::of(read, &shown)),
        )
    }

    fn metadata_page_of(
        (doc, values): (Document, Vec<(DocumentMetadata, MetadataType)>),
        page: PageRequest,
    ) -> Page<MetadataValueView> {
        Page::of(values, page).map(|(value, metadata_type)| MetadataValueView {
            value,
            document: doc.clone(),
            metadata_type,
        })
    }

    /// [`add_document_metadata`](Self::add_document_metadata) answered with the stored value:
    /// who may add a value is shown it, even without `metadata.document_metadata_view`.
    pub fn add_document_metadata_view(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<MetadataValueView> {
        let m = self.add_document_metadata(document, metadata_type, value)?;
        let (doc, values) = self.read(|tx| {
            let doc = tx
                .document(m.document_id)?
                .ok_or_else(|| Error::not_found(format!("document {}", m.document_id)))?;
            Ok((doc, tx.metadata_with_types_of_document(m.document_id)?))
        })?;
        Self::metadata_value_in(doc, values, m.id)
    }

    // ----- associations ----------------------------------------------------------------------

    fn association_view_of(
        &self,
        association: DocumentTypeMetadataType,
    ) -> Result<AssociationView> {
        let (document_type, metadata_type) = self.read(|tx| {
            let dt = tx
                .document_type(association.document_type_id)?
                .ok_or_else(|| {
                    Error::not_found(format!("document type {}", association.document_type_id))
                })?;
            let mt = tx
                .metadata_type(association.metadata_type_id)?
                .ok_or_else(|| {
                    Error::not_found(format!("metadata type {}", association.metadata_type_id))
                })?;
            Ok((dt, mt))
        })?;
        Ok(AssociationView {
            association,
            document_type,
            metadata_type,
        })
    }

    /// One association with both types. Needs view on both types.
    pub fn association_view(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
    ) -> Result<AssociationView> {
        self.association_view_of(self.association(document_type, id)?)
    }

    /// A page of the associations of a document type whose metadata type this session may view.
    pub fn associations_page(
        &self,
        document_type: DocumentTypeId,
        page: PageRequest,
    ) -> Result<Page<AssociationView>> {
        let all = self.associations(document_type)?;
        let Page { count, items } = Page::of(all, page);
        let items = items
            .into_iter()
            .map(|a| self.association_view_of(a))
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { count, items })
    }

    /// [`associate`](Self::associate) answered with the association and both types: who may
    /// create it is shown it (edit without view included).
    pub fn associate_view(
        &self,
        document_type: DocumentTypeId,
        metadata_type: MetadataTypeId,
        required: bool,
    ) -> Result<AssociationView> {
        self.association_view_of(self.associate(document_type, metadata_type, required)?)
    }

    /// [`update_association`](Self::update_association) answered with the association and both
    /// types.
    pub fn update_association_view(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
        required: bool,
    ) -> Result<AssociationView> {
        self.association_view_of(self.update_association(document_type, id, required)?)
    }

    // ----- ACLs ------------------------------------------------------------------------------

    fn acl_view_of(&self, acl: Acl) -> Result<AclView> {
        let role = self.read(|tx| role_of(tx, acl.role_id))?;
        Ok(AclView { acl, role })
    }

    /// One ACL of an object with its role. Needs `acls.acl_view` on the object.
    pub fn acl_view(&self, object: ObjectRef, acl: AclId) -> Result<AclView> {
        self.acl_view_of(self.acl(object, acl)?)
    }

    /// A page of the ACLs of an object, each with its role. Needs `acls.acl_view` on it.
    pub fn acls_page(&self, object: ObjectRef, page: PageRequest) -> Result<Page<AclView>> {
        let Page { count, items } = Page::of(self.acls(object)?, page);
        let roles: HashMap<RoleId, Role> = self
            .read(|tx| tx.roles())?
            .into_iter()
            .map(|r| (r.0, Role::from(r)))
            .collect();
        let items = items
            .into_iter()
            .map(|acl| {
                let role = roles
                    .get(&acl.role_id)
                    .cloned()
                    .ok_or_else(|| Error::not_found(format!("role {}", acl.role_id)))?;
                Ok(AclView { acl, role })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { count, items })
    }

    /// [`create_acl`](Self::create_acl) answered with the ACL and its role.
    pub fn create_acl_view(&self, object: ObjectRef, role: RoleId) -> Result<AclView> {
        self.acl_view_of(self.create_acl(object, role)?)
    }

    /// [`acl_add_permission`](Self::acl_add_permission) answered with the ACL and its role.
    pub fn acl_add_permission_view(
        &self,
        object: ObjectRef,
        acl: AclId,
        permission: Permission,
    ) -> Result<AclView> {
        self.acl_view_of(self.acl_add_permission(object, acl, permission)?)
    }

    /// [`acl_remove_permission`](Self::acl_remove_permission) answered with the ACL and its role,
    /// or `None` when its last permission was removed (and the ACL with it).
    pub fn acl_remove_permission_view(
        &self,
        object: ObjectRef,
        acl: AclId,
        permission: Permission,
    ) -> Result<Option<AclView>> {
        self.acl_remove_permission(object, acl, permission)?
            .map(|a| self.acl_view_of(a))
            .transpose()
    }

    // ----- users, groups, roles --------------------------------------------------------------

    /// A page of the members of a group that this session may view. Needs
    /// `user_management.group_view`.
    pub fn group_users_page(&self, group: GroupId, page: PageRequest) -> Result<Page<User>> {
        let members = self.group_members(group)?;
        let mut users = Vec::with_capacity(members.len());
        for id in members {
            match self.user(id) {
                Ok(u) => users.push(u),
                Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Page::of(users, page))
    }

    /// Adds (`true`) or removes a member of a group, answered with the group: the change was
    /// the caller's to make, so the answer shows the group even when the caller just left the
    /// group that let them see it.
    pub fn set_group_member_view(
        &self,
        group: GroupId,
        user: UserId,
        member: bool,
    ) -> Result<Group> {
        self.set_group_member(group, user, member)?;
        self.read(|tx| group_of(tx, group))
    }

    /// [`create_group`](Self::create_group) answered with the group: allowed to create is
    /// enough to be shown what was created (`user_management.group_create` without
    /// `user_management.group_view`).
    pub fn create_group_view(&self, name: &str) -> Result<Group> {
        let id = self.create_group(name)?;
        self.read(|tx| group_of(tx, id))
    }

    /// Renames a group, answered with it: allowed to edit is enough to be shown the group.
    pub fn rename_group_view(&self, id: GroupId, name: &str) -> Result<Group> {
        self.rename_group(id, name)?;
        self.read(|tx| group_of(tx, id))
    }

    /// [`create_role`](Self::create_role) answered with the role.
    pub fn create_role_view(&self, label: &str) -> Result<Role> {
        let id = self.create_role(label)?;
        self.read(|tx| role_of(tx, id))
    }

    /// Renames a role, answered with it: allowed to edit is enough to be shown the role
    /// (`permissions.role_edit` without `permissions.role_view`).
    pub fn rename_role_view(&self, id: RoleId, label: &str) -> Result<Role> {
        self.rename_role(id, label)?;
        self.read(|tx| role_of(tx, id))
    }

    /// Assigns (`true`) or removes a role from a group, answered with the role (shown to whoever
    /// may edit it).
    pub fn set_role_group_view(
        &self,
        role: RoleId,
        group: GroupId,
        assigned: bool,
    ) -> Result<Role> {
        self.set_role_group(role, group, assigned)?;
        self.read(|tx| role_of(tx, role))
    }

    /// A page of the groups a role is assigned to that this session may see. Needs
    /// `permissions.role_view`.
    pub fn role_groups_page(&self, role: RoleId, page: PageRequest) -> Result<Page<Group>> {
        let ids = self.role_groups(role)?;
        if ids.is_empty() {
            return Ok(Page::of(Vec::new(), page));
        }
        let names: HashMap<GroupId, String> = self.read(|tx| tx.groups())?.into_iter().collect();
        let groups = ids
            .into_iter()
            .filter_map(|id| {
                names.get(&id).map(|name| Group {
                    id,
                    name: name.clone(),
                })
            })
            .collect();
        Ok(Page::of(groups, page))
    }

    /// A page of a role's global permissions, in the order of [`Permission::ALL`]. Needs
    /// `permissions.role_view`.
    pub fn role_permissions_page(
        &self,
        role: RoleId,
        page: PageRequest,
    ) -> Result<Page<Permission>> {
        Ok(Page::of(self.role_permissions(role)?, page))
    }

    /// Grants (`true`) or revokes a global permission of a role, answered with the role's global
    /// permissions (shown to whoever may change them).
    pub fn set_role_permission(
        &self,
        role: RoleId,
        permission: Permission,
        granted: bool,
    ) -> Result<Vec<Permission>> {
        if granted {
            self.grant_global(permission, role)?;
        } else {
            self.revoke_global(permission, role)?;
        }
        let keys = self.read(|tx| tx.role_permissions(role))?;
        Ok(super::permission_set(keys).iter().collect())
    }

    // ----- events ----------------------------------------------------------------------------

    /// [`events`](Self::events), each with its actor's username.
    pub fn event_views(&self, query: &EventQuery) -> Result<Vec<EventView>> {
        let events = self.events(query)?;
        let mut names: HashMap<UserId, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let actor = match event.actor {
                None => None,
                Some(id) => {
                    if let std::collections::hash_map::Entry::Vacant(e) = names.entry(id) {
                        e.insert(self.read(|tx| tx.user(id))?.map(|u| u.username));
                    }
                    names
                        .get(&id)
                        .cloned()
                        .flatten()
                        .map(|username| EventActor { id, username })
                }
            };
            out.push(EventView { event, actor });
        }
        Ok(out)
    }
}
