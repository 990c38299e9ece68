//! The access snapshot and the store: loading the snapshot, applying to it the changes a unit
//! of work made once it has committed, and answering the evaluator's questions about the parent
//! links the snapshot does not hold. Imports only the layers below the kernel.

use crate::access::{
    AccessSnapshot, KindRegistry, ObjectKind, ObjectRef, ParentSource, Permission, PermissionSet,
};
use crate::error::Result;
use crate::model::*;
use crate::store::Tx;

/// A change to the access snapshot, applied right after the transaction that made it commits.
#[derive(Debug, Clone)]
pub(crate) enum AccessChange {
    User {
        id: UserId,
        superuser: bool,
        active: bool,
    },
    UserRemoved(UserId),
    Membership {
        group: GroupId,
        user: UserId,
        member: bool,
    },
    RoleGroup {
        role: RoleId,
        group: GroupId,
        assigned: bool,
    },
    RolePermissions {
        role: RoleId,
        permissions: PermissionSet,
    },
    RoleRemoved(RoleId),
    GroupRemoved(GroupId),
    Acl {
        object: ObjectRef,
        acl: AclId,
        role: RoleId,
        permissions: PermissionSet,
    },
    Parents {
        object: ObjectRef,
        parents: Vec<ObjectRef>,
    },
    ObjectRemoved(ObjectRef),
}

/// Applies one change of a committed unit of work to the snapshot.
pub(super) fn apply(s: &mut AccessSnapshot, change: AccessChange) {
    match change {
        AccessChange::User {
            id,
            superuser,
            active,
        } => s.set_user(id, superuser, active),
        AccessChange::UserRemoved(id) => s.remove_user(id),
        AccessChange::Membership {
            group,
            user,
            member,
        } => s.set_membership(group, user, member),
        AccessChange::RoleGroup {
            role,
            group,
            assigned,
        } => s.set_role_group(role, group, assigned),
        AccessChange::RolePermissions { role, permissions } => {
            s.set_role_permissions(role, permissions)
        }
        AccessChange::RoleRemoved(role) => s.remove_role(role),
        AccessChange::GroupRemoved(group) => s.remove_group(group),
        AccessChange::Acl {
            object,
            acl,
            role,
            permissions,
        } => s.set_acl(object, acl, role, permissions),
        AccessChange::Parents { object, parents } => s.set_parents(object, parents),
        AccessChange::ObjectRemoved(object) => s.remove_object(object),
    }
}

/// Builds the access snapshot from the store; without the documents' links unless
/// `documents` (see [`AccessSnapshot::replace_all_but_documents`]). Rows naming an unknown kind
/// or permission key (written by a newer build, or by an application kind not registered in
/// this process) are left out: they grant nothing here.
pub(crate) fn load_access(
    tx: &mut Tx<'_>,
    kinds: &KindRegistry,
    documents: bool,
) -> Result<AccessSnapshot> {
    let mut s = AccessSnapshot::default();
    for u in tx.users()? {
        s.set_user(u.id, u.is_superuser, u.is_active);
    }
    let links = tx.access_links(documents)?;
    for (g, u) in links.members {
        s.set_membership(g, u, true);
    }
    let mut role_perms: rustc_hash::FxHashMap<RoleId, PermissionSet> = Default::default();
    for (role, key) in links.role_permissions {
        if let Ok(p) = Permission::from_key(&key) {
            let e = role_perms.entry(role).or_default();
            *e = e.with(p);
        }
    }
    for (role, set) in role_perms {
        s.set_role_permissions(role, set);
    }
    for (role, group) in links.role_groups {
        s.set_role_group(role, group, true);
    }
    let mut acls: rustc_hash::FxHashMap<AclId, (ObjectRef, RoleId, PermissionSet)> =
        Default::default();
    for (acl, kind, id, role, key) in links.acl_permissions {
        let (Ok(kind), Ok(p)) = (kinds.parse(&kind), Permission::from_key(&key)) else {
            continue;
        };
        let e = acls
            .entry(acl)
            .or_insert((ObjectRef::new(kind, id), role, PermissionSet::EMPTY));
        e.2 = e.2.with(p);
    }
    for (acl, (object, role, set)) in acls {
        s.set_acl(object, acl, role, set);
    }
    for (doc, doc_type) in links.document_types {
        s.set_parents(
            ObjectRef::new(ObjectKind::DOCUMENT, doc.0),
            vec![ObjectRef::new(ObjectKind::DOCUMENT_TYPE, doc_type.0)],
        );
    }
    for (cabinet, parent) in links.cabinet_parents {
        s.set_parents(
            ObjectRef::new(ObjectKind::CABINET, cabinet),
            vec![ObjectRef::new(ObjectKind::CABINET, parent)],
        );
    }
    let mut parents: rustc_hash::FxHashMap<ObjectRef, Vec<ObjectRef>> = Default::default();
    for (kind, id, parent_kind, parent_id) in links.object_parents {
        if let (Ok(k), Ok(pk)) = (kinds.parse(&kind), kinds.parse(&parent_kind)) {
            parents
                .entry(ObjectRef::new(k, id))
                .or_default()
                .push(ObjectRef::new(pk, parent_id));
        }
    }
    for (o, p) in parents {
        s.set_parents(o, p);
    }
    Ok(s)
}

/// The store answers the evaluator's questions about stored parent links (spec 5.3), in the
/// caller's transaction: a document file inherits from its document, a metadata value from its
/// metadata type, a workflow instance from its workflow, a log entry from its instance.
impl ParentSource for Tx<'_> {
    fn stored_parents(&mut self, object: ObjectRef) -> Vec<ObjectRef> {
        let found = match object.kind {
            ObjectKind::DOCUMENT_FILE => self
                .document_file(DocumentFileId(object.id))
                .map(|f| f.map(|f| ObjectRef::new(ObjectKind::DOCUMENT, f.file.document_id.0))),
            ObjectKind::DOCUMENT_METADATA => self
                .document_metadata(DocumentMetadataId(object.id))
                .map(|v| {
                    v.map(|v| ObjectRef::new(ObjectKind::METADATA_TYPE, v.metadata_type_id.0))
                }),
            ObjectKind::WORKFLOW_INSTANCE => self
                .workflow_instance(WorkflowInstanceId(object.id))
                .map(|i| i.map(|i| ObjectRef::new(ObjectKind::WORKFLOW, i.workflow_id.0))),
            ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY => self
                .workflow_log_entry(WorkflowLogEntryId(object.id))
                .map(|e| e.map(|e| ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, e.instance_id.0))),
            _ => Ok(None),
        };
        found.ok().flatten().into_iter().collect()
    }
}
