//! Every permission key of spec 5.4, plus the keys api.md adds and docmeta's own (`webhooks.*`),
//! as typed constants.
//!
//! A key from outside (`"documents.document_view"`) is parsed once with [`Permission::from_key`];
//! inside docmeta permissions are small integers and sets of them are bitsets.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use std::fmt;

use crate::error::{Error, Result};

macro_rules! permissions {
    ($( $ns:literal $ns_label:literal { $( $variant:ident $name:literal $label:literal ),* $(,)? } )*) => {
        /// A permission of docmeta, identified by its key `<namespace>.<name>`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum Permission {
            $($(
                #[doc = concat!("`", $ns, ".", $name, "`: ", $label, ".")]
                $variant,
            )*)*
        }

        impl Permission {
            /// Every permission, in registry order.
            pub const ALL: &'static [Permission] = &[$($(Permission::$variant,)*)*];

            /// The full key, `<namespace>.<name>`.
            pub fn key(self) -> &'static str {
                match self { $($(Permission::$variant => concat!($ns, ".", $name),)*)* }
            }

            /// The namespace (`documents`, `metadata`, ...).
            pub fn namespace(self) -> &'static str {
                match self { $($(Permission::$variant => $ns,)*)* }
            }

            /// The name within the namespace (`document_view`).
            pub fn name(self) -> &'static str {
                match self { $($(Permission::$variant => $name,)*)* }
            }

            /// A human-readable label.
            pub fn label(self) -> &'static str {
                match self { $($(Permission::$variant => $label,)*)* }
            }

            /// The human-readable label of the namespace.
            pub fn namespace_label(self) -> &'static str {
                match self { $($(Permission::$variant => $ns_label,)*)* }
            }
        }
    };
}

permissions! {
    "documents" "Documents" {
        DocumentView "document_view" "View documents",
        DocumentEdit "document_edit" "Edit documents",
        DocumentCreate "document_create" "Create documents",
        DocumentChangeType "document_change_type" "Change the type of documents",
        DocumentFileNew "document_file_new" "Upload new document files",
        DocumentVersionCreate "document_version_create" "Create document versions",
        DocumentTools "document_tools" "Execute document modifying tools",
        DocumentTrash "document_trash" "Move documents to the trash",
        TrashedDocumentRestore "trashed_document_restore" "Restore trashed documents",
        TrashedDocumentDelete "trashed_document_delete" "Delete trashed documents",
        DocumentDelete "document_delete" "Delete documents",
        DocumentTypeCreate "document_type_create" "Create document types",
        DocumentTypeEdit "document_type_edit" "Edit document types",
        DocumentTypeDelete "document_type_delete" "Delete document types",
        DocumentTypeView "document_type_view" "View document types",
    }
    "cabinets" "Cabinets" {
        CabinetView "cabinet_view" "View cabinets",
        CabinetCreate "cabinet_create" "Create cabinets",
        CabinetEdit "cabinet_edit" "Edit cabinets",
        CabinetDelete "cabinet_delete" "Delete cabinets (not their content)",
        CabinetAddDocument "cabinet_add_document" "Add documents to cabinets",
        CabinetRemoveDocument "cabinet_remove_document" "Remove documents from cabinets",
    }
    "document_states" "Workflows" {
        WorkflowTemplateCreate "workflow_template_create" "Create workflow templates",
        WorkflowTemplateView "workflow_template_view" "View workflow templates",
        WorkflowTemplateEdit "workflow_template_edit" "Edit workflow templates",
        WorkflowTemplateDelete "workflow_template_delete" "Delete workflow templates",
        WorkflowInstanceTransition "workflow_instance_transition" "Transition workflows",
        WorkflowInstanceDelete "workflow_instance_delete" "Delete workflow instances",
        WorkflowTools "workflow_tools" "Execute workflow tools",
    }
    "metadata" "Metadata" {
        DocumentMetadataView "document_metadata_view" "View a document's metadata",
        DocumentMetadataAdd "document_metadata_add" "Add metadata types to a document",
        DocumentMetadataEdit "document_metadata_edit" "Edit metadata values",
        DocumentMetadataRemove "document_metadata_remove" "Remove metadata from a document",
        MetadataTypeCreate "metadata_type_create" "Create metadata types",
        MetadataTypeEdit "metadata_type_edit" "Edit a metadata type",
        MetadataTypeDelete "metadata_type_delete" "Delete a metadata type",
        MetadataTypeView "metadata_type_view" "View metadata type configuration",
    }
    "sources" "Sources" {
        SourcesView "sources_view" "View sources",
        SourcesEdit "sources_edit" "Edit sources",
        SourcesDelete "sources_delete" "Delete sources",
    }
    "tags" "Tags" {
        TagView "tag_view" "View tags",
        TagEdit "tag_edit" "Edit tags",
        TagDelete "tag_delete" "Delete tags",
        TagAttach "tag_attach" "Attach tags to documents",
        TagRemove "tag_remove" "Remove tags from documents",
    }
    "ocr" "OCR" {
        DocumentVersionOcr "document_version_ocr" "Submit documents for OCR",
        DocumentVersionOcrContentView "document_version_ocr_content_view" "View the OCR text",
    }
    "document_comments" "Document comments" {
        DocumentCommentCreate "document_comment_create" "Create comments",
        DocumentCommentDelete "document_comment_delete" "Delete comments",
        DocumentCommentView "document_comment_view" "View comments",
    }
    "document_signatures" "Document signatures" {
        DocumentFileSignDetached "document_file_sign_detached" "Sign document files with detached signatures",
        DocumentFileSignatureView "document_file_signature_view" "View document file signatures",
        DocumentFileSignatureUpload "document_file_signature_upload" "Upload detached signatures",
    }
    "document_parsing" "Document parsing" {
        DocumentFileParse "document_file_parse" "Parse document files",
        DocumentFileContentView "document_file_content_view" "View the content of document files",
    }
    "linking" "Smart links" {
        SmartLinkView "smart_link_view" "View smart links",
        SmartLinkEdit "smart_link_edit" "Edit smart links",
        SmartLinkDelete "smart_link_delete" "Delete smart links",
    }
    "web_links" "Web links" {
        WebLinkView "web_link_view" "View web links",
        WebLinkEdit "web_link_edit" "Edit web links",
        WebLinkInstanceView "web_link_instance_view" "View web link instances",
    }
    "checkouts" "Checkouts" {
        DocumentCheckOut "document_check_out" "Check out documents",
        DocumentCheckIn "document_check_in" "Check in documents",
        DocumentCheckInOverride "document_check_in_override" "Forcefully check in documents checked out by others",
    }
    "mailer" "Mailing" {
        MailingProfileView "mailing_profile_view" "View mailing profiles",
        MailingProfileUse "mailing_profile_use" "Use mailing profiles",
    }
    "permissions" "Permissions" {
        RoleCreate "role_create" "Create roles",
        RoleView "role_view" "View roles",
        RoleEdit "role_edit" "Edit roles",
        RoleDelete "role_delete" "Delete roles",
    }
    "user_management" "User management" {
        UserCreate "user_create" "Create users",
        UserDelete "user_delete" "Delete users",
        UserView "user_view" "View users",
        UserEdit "user_edit" "Edit users",
        GroupCreate "group_create" "Create groups",
        GroupDelete "group_delete" "Delete groups",
        GroupView "group_view" "View groups",
        GroupEdit "group_edit" "Edit groups",
    }
    "file_metadata" "File metadata" {
        FileMetadataView "file_metadata_view" "View file metadata",
        FileMetadataSubmit "file_metadata_submit" "Submit documents for file metadata processing",
    }
    "document_qa" "Document questions" {
        DocumentQaAsk "document_qa_ask" "Ask questions about documents",
        DocumentQaView "document_qa_view" "View questions and answers",
        DocumentQaDelete "document_qa_delete" "Delete questions and answers",
    }
    "redactions" "Redactions" {
        RedactionCreate "redaction_create" "Create redactions",
        RedactionDelete "redaction_delete" "Delete redactions",
        RedactionView "redaction_view" "View redactions",
    }
    "quotas" "Quotas" {
        QuotaView "quota_view" "View quotas",
        QuotaEdit "quota_edit" "Edit quotas",
    }
    "acls" "Access control lists" {
        AclView "acl_view" "View access control lists",
        AclEdit "acl_edit" "Edit access control lists",
    }
    "webhooks" "Webhooks" {
        WebhookCreate "webhook_create" "Create webhooks",
        WebhookView "webhook_view" "View one's own webhooks and their deliveries",
        WebhookEdit "webhook_edit" "Edit one's own webhooks and retry their deliveries",
        WebhookDelete "webhook_delete" "Delete one's own webhooks",
    }
}

impl Permission {
    /// Parses a key `<namespace>.<name>`; an unknown key is [`Error::InvalidInput`].
    pub fn from_key(key: &str) -> Result<Permission> {
        static BY_KEY: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Permission>> =
            std::sync::OnceLock::new();
        let by_key = BY_KEY.get_or_init(|| Permission::ALL.iter().map(|p| (p.key(), *p)).collect());
        by_key
            .get(key.trim())
            .copied()
            .ok_or_else(|| Error::InvalidInput(format!("unknown permission '{key}'")))
    }

    fn bit(self) -> u128 {
        1u128 << (self as u8)
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

const _: () = assert!(
    Permission::ALL.len() <= 128,
    "PermissionSet holds at most 128 permissions"
);

/// A set of permissions, as a bitset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PermissionSet(u128);

impl PermissionSet {
    /// The empty set.
    pub const EMPTY: PermissionSet = PermissionSet(0);

    /// A set of the given permissions.
    pub fn of(permissions: &[Permission]) -> Self {
        permissions.iter().fold(Self::EMPTY, |s, p| s.with(*p))
    }

    /// Whether `p` is in the set.
    #[inline]
    pub fn contains(self, p: Permission) -> bool {
        self.0 & p.bit() != 0
    }

    /// The set with `p` added.
    #[must_use]
    pub fn with(self, p: Permission) -> Self {
        PermissionSet(self.0 | p.bit())
    }

    /// The set with `p` removed.
    #[must_use]
    pub fn without(self, p: Permission) -> Self {
        PermissionSet(self.0 & !p.bit())
    }

    /// The union of two sets.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        PermissionSet(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The permissions of the set, in registry order.
    pub fn iter(self) -> impl Iterator<Item = Permission> {
        Permission::ALL
            .iter()
            .copied()
            .filter(move |p| self.contains(*p))
    }
}

impl FromIterator<Permission> for PermissionSet {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        iter.into_iter().fold(Self::EMPTY, |s, p| s.with(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_are_unique() {
        let mut keys = std::collections::HashSet::new();
        for p in Permission::ALL {
            assert_eq!(Permission::from_key(p.key()).ok(), Some(*p));
            assert!(keys.insert(p.key()), "duplicate {}", p.key());
        }
        assert!(Permission::from_key("documents.nope").is_err());
        assert_eq!(Permission::DocumentView.key(), "documents.document_view");
    }
}
