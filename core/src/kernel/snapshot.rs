//! Loading the access snapshot from the store. Imports only the layers below the kernel.

use crate::access::{
    AccessSnapshot, KindRegistry, ObjectKind, ObjectRef, Permission, PermissionSet,
};
use crate::error::Result;
use crate::model::*;
use crate::store::Tx;

/// Builds the access snapshot from the store.
pub(crate) fn load_access(tx: &mut Tx<'_>, kinds: &KindRegistry) -> Result<AccessSnapshot> {
    let mut s = AccessSnapshot::default();
    for u in tx.users()? {
        s.set_user(u.id, u.is_superuser, u.is_active);
    }
    let mut pairs = Vec::new();
    tx.each("SELECT group_id, user_id FROM group_users", &[], &mut |r| {
        pairs.push((GroupId(r.int(0)?), UserId(r.int(1)?)));
        Ok(())
    })?;
    for (g, u) in pairs {
        s.set_membership(g, u, true);
    }
    let mut role_perms: rustc_hash::FxHashMap<RoleId, PermissionSet> = Default::default();
    tx.each(
        "SELECT role_id, permission FROM role_permissions",
        &[],
        &mut |r| {
            if let Ok(p) = Permission::from_key(&r.text(1)?) {
                let e = role_perms.entry(RoleId(r.int(0)?)).or_default();
                *e = e.with(p);
            }
            Ok(())
        },
    )?;
    for (role, set) in role_perms {
        s.set_role_permissions(role, set);
    }
    let mut role_groups = Vec::new();
    tx.each("SELECT role_id, group_id FROM role_groups", &[], &mut |r| {
        role_groups.push((RoleId(r.int(0)?), GroupId(r.int(1)?)));
        Ok(())
    })?;
    for (role, group) in role_groups {
        s.set_role_group(role, group, true);
    }
    let mut acls: rustc_hash::FxHashMap<AclId, (ObjectRef, RoleId, PermissionSet)> =
        Default::default();
    tx.each("SELECT a.id, a.object_kind, a.object_id, a.role_id, p.permission FROM acls a JOIN acl_permissions p ON p.acl_id = a.id", &[], &mut |r| {
        let (Ok(kind), Ok(p)) = (kinds.parse(&r.text(1)?), Permission::from_key(&r.text(4)?)) else { return Ok(()) };
        let e = acls.entry(AclId(r.int(0)?)).or_insert((ObjectRef::new(kind, r.int(2)?), RoleId(r.int(3)?), PermissionSet::EMPTY));
        e.2 = e.2.with(p);
        Ok(())
    })?;
    for (acl, (object, role, set)) in acls {
        s.set_acl(object, acl, role, set);
    }
    tx.each(
        "SELECT id, document_type_id FROM documents",
        &[],
        &mut |r| {
            s.set_parents(
                ObjectRef::new(ObjectKind::DOCUMENT, r.int(0)?),
                vec![ObjectRef::new(ObjectKind::DOCUMENT_TYPE, r.int(1)?)],
            );
            Ok(())
        },
    )?;
    tx.each(
        "SELECT id, parent_id FROM cabinets WHERE parent_id IS NOT NULL",
        &[],
        &mut |r| {
            s.set_parents(
                ObjectRef::new(ObjectKind::CABINET, r.int(0)?),
                vec![ObjectRef::new(ObjectKind::CABINET, r.int(1)?)],
            );
            Ok(())
        },
    )?;
    let mut links: rustc_hash::FxHashMap<ObjectRef, Vec<ObjectRef>> = Default::default();
    tx.each(
        "SELECT object_kind, object_id, parent_kind, parent_id FROM object_parents",
        &[],
        &mut |r| {
            if let (Ok(k), Ok(pk)) = (kinds.parse(&r.text(0)?), kinds.parse(&r.text(2)?)) {
                links
                    .entry(ObjectRef::new(k, r.int(1)?))
                    .or_default()
                    .push(ObjectRef::new(pk, r.int(3)?));
            }
            Ok(())
        },
    )?;
    for (o, parents) in links {
        s.set_parents(o, parents);
    }
    Ok(s)
}
