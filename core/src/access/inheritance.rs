//! Object kinds and the inheritance of spec 5.3: which kinds inherit ACLs from which, and which
//! permissions an ACL on each kind may hold.
//!
//! Part of `access` (layer 4 of `scripts/check-structure`): it may import only what `access`
//! may (see `access`'s module documentation).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{ObjectKind, Permission, PermissionSet};

macro_rules! kinds {
    ($( $konst:ident = $n:literal, $app:literal, $model:literal, parents [$($parent:ident),*], own [$($perm:ident),*]; )*) => {
        impl ObjectKind {
            $(
                #[doc = concat!("`", $app, ".", $model, "`")]
                pub const $konst: ObjectKind = ObjectKind($n);
            )*
        }

        fn builtin_kinds() -> Vec<KindInfo> {
            vec![$(KindInfo {
                app_label: $app.to_owned(),
                model_name: $model.to_owned(),
                parents: vec![$(ObjectKind::$parent),*],
                own: PermissionSet::of(&[$(Permission::$perm),*]),
                exists: None,
            }),*]
        }
    };
}

use Permission as P;

kinds! {
    DOCUMENT_TYPE = 0, "documents", "documenttype", parents [], own [
        DocumentTypeView, DocumentTypeEdit, DocumentTypeDelete, DocumentCreate];
    DOCUMENT = 1, "documents", "document", parents [DOCUMENT_TYPE], own [
        DocumentView, DocumentEdit, DocumentChangeType, DocumentFileNew, DocumentVersionCreate,
        DocumentTools, DocumentTrash, TrashedDocumentRestore, TrashedDocumentDelete, DocumentDelete,
        DocumentMetadataView, DocumentMetadataAdd, DocumentMetadataEdit, DocumentMetadataRemove,
        CabinetAddDocument, CabinetRemoveDocument, TagAttach, TagRemove, WebLinkInstanceView,
        DocumentCheckOut, DocumentCheckIn, WorkflowInstanceTransition];
    DOCUMENT_FILE = 2, "documents", "documentfile", parents [DOCUMENT], own [
        DocumentFileSignDetached, DocumentFileSignatureView, DocumentFileSignatureUpload,
        DocumentFileParse, DocumentFileContentView, FileMetadataView, FileMetadataSubmit];
    METADATA_TYPE = 3, "metadata", "metadatatype", parents [], own [
        MetadataTypeView, MetadataTypeEdit, MetadataTypeDelete];
    DOCUMENT_METADATA = 4, "metadata", "documentmetadata", parents [METADATA_TYPE], own [
        DocumentMetadataView, DocumentMetadataAdd, DocumentMetadataEdit, DocumentMetadataRemove];
    CABINET = 5, "cabinets", "cabinet", parents [], own [
        CabinetView, CabinetCreate, CabinetEdit, CabinetDelete, CabinetAddDocument,
        CabinetRemoveDocument];
    ROLE = 6, "permissions", "role", parents [], own [RoleView, RoleEdit, RoleDelete];
    WORKFLOW = 7, "document_states", "workflow", parents [], own [
        WorkflowTemplateView, WorkflowTemplateEdit, WorkflowTemplateDelete];
    WORKFLOW_INSTANCE = 8, "document_states", "workflowinstance", parents [WORKFLOW], own [
        WorkflowInstanceTransition, WorkflowInstanceDelete];
    WORKFLOW_INSTANCE_LOG_ENTRY = 9, "document_states", "workflowinstancelogentry",
        parents [WORKFLOW_INSTANCE], own [];
    SOURCE = 10, "sources", "source", parents [], own [
        SourcesView, SourcesEdit, SourcesDelete, DocumentCreate];
    TAG = 11, "tags", "tag", parents [], own [TagView, TagEdit, TagDelete, TagAttach, TagRemove];
    INDEX_TEMPLATE = 12, "document_indexing", "indextemplate", parents [], own [];
    INDEX_TEMPLATE_NODE = 13, "document_indexing", "indextemplatenode", parents [INDEX_TEMPLATE], own [];
    INDEX_INSTANCE_NODE = 14, "document_indexing", "indexinstancenode",
        parents [INDEX_TEMPLATE_NODE], own [];
    DOCUMENT_VERSION = 15, "documents", "documentversion", parents [DOCUMENT], own [
        DocumentVersionOcr, DocumentVersionOcrContentView, RedactionCreate, RedactionDelete,
        RedactionView];
    DOCUMENT_COMMENT = 16, "document_comments", "comment", parents [DOCUMENT], own [
        DocumentCommentCreate, DocumentCommentDelete, DocumentCommentView];
    DOCUMENT_CHECKOUT = 17, "checkouts", "documentcheckout", parents [DOCUMENT], own [
        DocumentCheckIn];
    DOCUMENT_QA_ENTRY = 18, "document_qa", "documentqaentry", parents [DOCUMENT], own [
        DocumentQaAsk, DocumentQaView, DocumentQaDelete];
}

/// Kinds whose parent links (spec 5.3) are kept in the store, not in the access snapshot,
/// because their objects are many: a document metadata value inherits from its metadata type, a
/// document file from its document, a workflow instance from its workflow, a log entry from its
/// instance. The evaluator asks the store for them, unless the
/// application recorded links of its own for the object (`Docmeta::set_object_parents`).
pub const STORED_PARENT_KINDS: [ObjectKind; 4] = [
    ObjectKind::DOCUMENT_METADATA,
    ObjectKind::DOCUMENT_FILE,
    ObjectKind::WORKFLOW_INSTANCE,
    ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY,
];

/// Tells whether an object of an application kind exists: the application keeps those records,
/// so it answers for them (set with [`KindRegistry::set_existence`]).
#[derive(Clone)]
pub struct ExistenceCheck(Arc<dyn Fn(i64) -> bool + Send + Sync>);

impl ExistenceCheck {
    /// Whether the object `id` exists.
    pub fn exists(&self, id: i64) -> bool {
        (self.0)(id)
    }
}

impl fmt::Debug for ExistenceCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ExistenceCheck(..)")
    }
}

/// Kinds whose records docmeta stores, so it knows by itself whether an object exists.
pub const STORED_KINDS: [ObjectKind; 10] = [
    ObjectKind::DOCUMENT_TYPE,
    ObjectKind::DOCUMENT,
    ObjectKind::DOCUMENT_FILE,
    ObjectKind::METADATA_TYPE,
    ObjectKind::DOCUMENT_METADATA,
    ObjectKind::CABINET,
    ObjectKind::ROLE,
    ObjectKind::WORKFLOW,
    ObjectKind::WORKFLOW_INSTANCE,
    ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY,
];

/// What docmeta knows of one object kind.
#[derive(Debug, Clone)]
pub struct KindInfo {
    /// The application label (`documents`).
    pub app_label: String,
    /// The model name (`document`).
    pub model_name: String,
    /// The kinds this kind inherits ACLs from (spec 5.3).
    pub parents: Vec<ObjectKind>,
    /// Permissions that are about objects of this kind.
    pub own: PermissionSet,
    /// For a kind whose records the application keeps: how to tell whether an object exists.
    /// Without it, an object of such a kind exists once the application declared it with
    /// `Docmeta::set_object_parents` (as the object or as a parent).
    pub exists: Option<ExistenceCheck>,
}

/// The known object kinds: docmeta's own and those an embedding application registers.
#[derive(Debug, Clone)]
pub struct KindRegistry {
    kinds: Vec<KindInfo>,
}

impl Default for KindRegistry {
    fn default() -> Self {
        KindRegistry {
            kinds: builtin_kinds(),
        }
    }
}

/// Permissions grantable on every kind: managing the ACLs themselves.
const ACL_PERMISSIONS: [Permission; 2] = [P::AclView, P::AclEdit];

impl KindRegistry {
    /// Registers an application's object kind with the kinds it inherits from and the
    /// permissions that are about it. Registering an existing `app_label.model_name` again
    /// updates it (keeping its existence check) and returns the same kind.
    pub fn register(
        &mut self,
        app_label: &str,
        model_name: &str,
        parents: &[ObjectKind],
        own: &[Permission],
    ) -> Result<ObjectKind> {
        if let Some(p) = parents
            .iter()
            .find(|p| usize::from(p.0) >= self.kinds.len())
        {
            return Err(Error::InvalidInput(format!("unknown parent kind {}", p.0)));
        }
        let mut info = KindInfo {
            app_label: app_label.to_owned(),
            model_name: model_name.to_owned(),
            parents: parents.to_vec(),
            own: PermissionSet::of(own),
            exists: None,
        };
        if let Some(kind) = self.find(app_label, model_name) {
            let slot = &mut self.kinds[usize::from(kind.0)];
            info.exists = slot.exists.take();
            *slot = info;
            return Ok(kind);
        }
        let n = u16::try_from(self.kinds.len())
            .map_err(|_| Error::InvalidInput("too many object kinds".into()))?;
        self.kinds.push(info);
        Ok(ObjectKind(n))
    }

    /// Gives an application kind the check that tells whether one of its objects exists, so
    /// that an ACL on an object that does not exist is refused as not found. Kinds whose records
    /// docmeta stores (documents, types, files, cabinets, roles, workflows, ...) are always
    /// checked against the store and refuse a check of their own.
    pub fn set_existence(
        &mut self,
        kind: ObjectKind,
        exists: impl Fn(i64) -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        if STORED_KINDS.contains(&kind) {
            return Err(Error::InvalidInput(format!(
                "docmeta checks the objects of {} itself",
                self.name(kind)
            )));
        }
        let info = self
            .kinds
            .get_mut(usize::from(kind.0))
            .ok_or_else(|| Error::InvalidInput(format!("unknown kind {}", kind.0)))?;
        info.exists = Some(ExistenceCheck(Arc::new(exists)));
        Ok(())
    }

    /// The kind named `app_label.model_name`.
    pub fn find(&self, app_label: &str, model_name: &str) -> Option<ObjectKind> {
        self.kinds
            .iter()
            .position(|k| k.app_label == app_label && k.model_name == model_name)
            .and_then(|i| u16::try_from(i).ok())
            .map(ObjectKind)
    }

    /// Parses `app_label.model_name`.
    pub fn parse(&self, text: &str) -> Result<ObjectKind> {
        let (app, model) = text
            .split_once('.')
            .ok_or_else(|| Error::InvalidInput(format!("'{text}' is not app_label.model_name")))?;
        self.find(app, model)
            .ok_or_else(|| Error::not_found(format!("object kind {text}")))
    }

    /// What is known of `kind`.
    pub fn info(&self, kind: ObjectKind) -> Option<&KindInfo> {
        self.kinds.get(usize::from(kind.0))
    }

    /// `app_label.model_name` of `kind`.
    pub fn name(&self, kind: ObjectKind) -> String {
        self.info(kind).map_or_else(
            || format!("kind#{}", kind.0),
            |k| format!("{}.{}", k.app_label, k.model_name),
        )
    }

    /// Every known kind.
    pub fn kinds(&self) -> impl Iterator<Item = (ObjectKind, &KindInfo)> {
        self.kinds
            .iter()
            .enumerate()
            .filter_map(|(i, k)| Some((ObjectKind(u16::try_from(i).ok()?), k)))
    }

    /// Permissions an ACL on `kind` may hold: its own, those of every kind inheriting from it
    /// (transitively), and the ACL permissions.
    pub fn grantable(&self, kind: ObjectKind) -> PermissionSet {
        let mut set = PermissionSet::of(&ACL_PERMISSIONS);
        let mut stack = vec![kind];
        let mut seen = vec![false; self.kinds.len()];
        while let Some(k) = stack.pop() {
            let i = usize::from(k.0);
            if i >= seen.len() || seen[i] {
                continue;
            }
            seen[i] = true;
            set = set.union(self.kinds[i].own);
            for (child, info) in self.kinds() {
                if info.parents.contains(&k) {
                    stack.push(child);
                }
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grantable_follows_children() {
        let r = KindRegistry::default();
        let dt = r.grantable(ObjectKind::DOCUMENT_TYPE);
        assert!(dt.contains(P::DocumentView));
        assert!(dt.contains(P::DocumentMetadataView));
        assert!(
            dt.contains(P::DocumentFileSignatureView),
            "grand-child permissions"
        );
        assert!(!dt.contains(P::MetadataTypeEdit));
        assert!(
            r.grantable(ObjectKind::METADATA_TYPE)
                .contains(P::DocumentMetadataEdit)
        );
        assert!(
            !r.grantable(ObjectKind::DOCUMENT)
                .contains(P::MetadataTypeCreate)
        );
        assert!(r.grantable(ObjectKind::SOURCE).contains(P::DocumentCreate));
        assert_eq!(
            r.parse("documents.document").ok(),
            Some(ObjectKind::DOCUMENT)
        );
        assert!(r.parse("x.y").is_err());
    }
}
