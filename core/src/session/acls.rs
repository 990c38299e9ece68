//! Object ACLs (spec 4.4): an ACL is answered with its role ([`AclView`]).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::access::{ROLE, keys_text, permission_set, role_label, role_of};
use super::{Session, event_object, view_permission};
use crate::access::{ObjectKind, ObjectRef, Permission as P, Permission, PermissionSet};
use crate::error::{Error, Result};
use crate::events::{EventObject, names};
use crate::kernel::AccessChange;
use crate::model::*;
use crate::store::Tx;
use crate::store::records::AclRow;

/// An ACL read for `object`, with its role.
fn acl_view(tx: &mut Tx<'_>, row: AclRow, object: ObjectRef) -> Result<AclView> {
    let role = role_of(tx, row.role_id)?;
    Ok(AclView {
        acl: Acl::of(row, object),
        role,
    })
}

impl Session {
    pub(super) fn object_label(
        &self,
        tx: &mut Tx<'_>,
        object: ObjectRef,
    ) -> Result<Option<String>> {
        let id = object.id;
        Ok(match object.kind {
            ObjectKind::DOCUMENT => tx.document(DocumentId(id))?.map(|d| d.label),
            ObjectKind::DOCUMENT_TYPE => tx.document_type(DocumentTypeId(id))?.map(|d| d.label),
            ObjectKind::METADATA_TYPE => tx.metadata_type(MetadataTypeId(id))?.map(|d| d.label),
            ObjectKind::CABINET => tx.cabinet(CabinetId(id))?.map(|d| d.label),
            ObjectKind::ROLE => tx
                .roles()?
                .into_iter()
                .find(|(r, _)| r.0 == id)
                .map(|(_, l)| l),
            ObjectKind::DOCUMENT_METADATA => tx
                .document_metadata(DocumentMetadataId(id))?
                .map(|m| m.value),
            ObjectKind::DOCUMENT_FILE => tx
                .document_file(DocumentFileId(id))?
                .map(|f| f.file.filename),
            ObjectKind::WORKFLOW => tx.workflow(WorkflowId(id))?.map(|w| w.label),
            ObjectKind::WORKFLOW_INSTANCE => tx
                .workflow_instance(WorkflowInstanceId(id))?
                .map(|i| format!("workflow instance {}", i.id)),
            ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY => tx
                .workflow_log_entry(WorkflowLogEntryId(id))?
                .map(|e| format!("workflow log entry {}", e.id)),
            // Kinds whose records the application keeps: its existence check answers, or else
            // the objects it declared with `set_object_parents` exist.
            _ => {
                let kinds = self.db.kinds();
                let name = kinds.name(object.kind);
                let exists = match kinds.info(object.kind).and_then(|k| k.exists.clone()) {
                    Some(check) => check.exists(id),
                    None => tx.object_declared(&name, id)?,
                };
                exists.then(|| format!("{name}#{id}"))
            }
        })
    }

    // ----- ACLs (spec 4.4) -------------------------------------------------------------------

    /// Checks that `object` exists (for kinds docmeta stores) and that the session may do
    /// `permission` on it.
    fn acl_target(
        &self,
        tx: &mut Tx<'_>,
        object: ObjectRef,
        permission: Permission,
    ) -> Result<EventObject> {
        let kinds = self.db.kinds();
        let name = kinds.name(object.kind);
        let what = format!("{name} {}", object.id);
        kinds
            .info(object.kind)
            .ok_or_else(|| Error::not_found(&what))?;
        let label = self
            .object_label(tx, object)?
            .ok_or_else(|| Error::not_found(&what))?;
        if !self.can_in(tx, view_permission(object.kind), object)
            && !self.can_in(tx, permission, object)
        {
            return Err(Error::not_found(what));
        }
        self.require_with(tx, permission, object, &what)?;
        Ok(event_object(&name, object.id, &label))
    }

    /// A page of the ACLs of an object, each with its role (shown to whoever may view the
    /// ACL, without `permissions.role_view`). Needs `acls.acl_view` on the object.
    pub fn acls(&self, object: ObjectRef, page: PageRequest) -> Result<Page<AclView>> {
        let kind = self.db.kinds().name(object.kind);
        self.read(|tx| {
            self.acl_target(tx, object, P::AclView)?;
            let Page { count, items } = Page::of(tx.acls_of(&kind, object.id)?, page);
            let roles: std::collections::HashMap<RoleId, Role> = tx
                .roles()?
                .into_iter()
                .map(|r| (r.0, Role::from(r)))
                .collect();
            let items = items
                .into_iter()
                .map(|row| {
                    let role = roles
                        .get(&row.role_id)
                        .cloned()
                        .ok_or_else(|| Error::not_found(format!("role {}", row.role_id)))?;
                    Ok(AclView {
                        acl: Acl::of(row, object),
                        role,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Page { count, items })
        })
    }

    /// One ACL of an object, with its role. Needs `acls.acl_view` on the object.
    pub fn acl(&self, object: ObjectRef, acl: AclId) -> Result<AclView> {
        let kind = self.db.kinds().name(object.kind);
        self.read(|tx| {
            self.acl_target(tx, object, P::AclView)?;
            let row = tx
                .acl(acl)?
                .filter(|a| a.object_kind == kind && a.object_id == object.id)
                .ok_or_else(|| Error::not_found(format!("ACL {acl}")))?;
            acl_view(tx, row, object)
        })
    }

    /// Creates an ACL for `role` on `object`, with no permission yet (spec 4.4), answered with
    /// its role. Needs `acls.acl_edit` on the object.
    pub fn create_acl(&self, object: ObjectRef, role: RoleId) -> Result<AclView> {
        let kind = self.db.kinds().name(object.kind);
        self.write(|u| {
            let target = self.acl_target(&mut u.tx, object, P::AclEdit)?;
            let role_label = self.visible_role_label(&mut u.tx, role, "role_id")?;
            let id = u.tx.insert_acl(&kind, object.id, role)?;
            u.event(
                names::ACL_CREATED,
                target,
                Some(event_object(ROLE, role.0, &role_label)),
                Changes::new().created("permissions", ""),
            )?;
            let row =
                u.tx.acl(id)?
                    .ok_or_else(|| Error::not_found(format!("ACL {id}")))?;
            acl_view(&mut u.tx, row, object)
        })
    }

    /// Grants `permission` to `role` on `object` (spec 5.2 rule 1), creating the ACL if needed.
    /// A permission the object's kind cannot hold is refused. Needs `acls.acl_edit` on the
    /// object, seeing the role, and holding `permission` on the object (directly, inherited or
    /// globally): `acl_edit` lets its holder share what they have, never more. Answers the ACL
    /// with its role.
    ///
    /// Users get permissions through their groups' roles: a clerk in the group of a role that
    /// may view invoices sees them, and another user is not even told they exist:
    ///
    /// ```
    /// use docmeta_core::{Error, ObjectKind, ObjectRef, Permission};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let doc = admin.create_document(invoice.id, "March invoice", &[])?.document;
    /// let clerk = admin.create_user("clerk", "a long password", false)?;
    /// let visitor = admin.create_user("visitor", "another long password", false)?;
    /// let group = admin.create_group("Accounting")?;
    /// let role = admin.create_role("Clerks")?;
    /// admin.set_group_member(group.id, clerk.id, true)?;
    /// admin.set_role_group(role.id, group.id, true)?;
    ///
    /// let on_invoices = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.id.0);
    /// let acl = admin.grant(Permission::DocumentView, role.id, on_invoices)?;
    /// assert!(acl.acl.permissions.contains(Permission::DocumentView));
    /// assert_eq!(acl.role.label, "Clerks");
    ///
    /// assert_eq!(db.session(clerk.id).document(doc.id)?.document.label, "March invoice");
    /// assert!(matches!(db.session(visitor.id).document(doc.id), Err(Error::NotFound(_))));
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn grant(
        &self,
        permission: Permission,
        role: RoleId,
        object: ObjectRef,
    ) -> Result<AclView> {
        let kinds = self.db.kinds();
        if !kinds.grantable(object.kind).contains(permission) {
            return Err(Error::validation(
                "permission",
                format!(
                    "'{}' cannot be granted on {}.",
                    permission.key(),
                    kinds.name(object.kind)
                ),
            ));
        }
        self.write(|u| {
            let row = self.grant_in(u, permission, role, object)?;
            acl_view(&mut u.tx, row, object)
        })
    }

    pub(crate) fn grant_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        permission: Permission,
        role: RoleId,
        object: ObjectRef,
    ) -> Result<AclRow> {
        let kind = self.db.kinds().name(object.kind);
        {
            let target = self.acl_target(&mut u.tx, object, P::AclEdit)?;
            let role_label = self.visible_role_label(&mut u.tx, role, "role_id")?;
            if !self.can_in(&mut u.tx, permission, object) {
                return Err(Error::PermissionDenied(format!(
                    "'{}' can only be granted on this object by someone who holds it there",
                    permission.key()
                )));
            }
            let (acl, before) = match u.tx.acl_for(&kind, object.id, role)? {
                Some(a) => (a.id, a.permissions),
                None => {
                    let id = u.tx.insert_acl(&kind, object.id, role)?;
                    u.event(
                        names::ACL_CREATED,
                        target.clone(),
                        Some(event_object(ROLE, role.0, &role_label)),
                        Changes::new().created("permissions", ""),
                    )?;
                    (id, Vec::new())
                }
            };
            let changed = u.tx.set_acl_permission(acl, permission.key(), true)?;
            let row =
                u.tx.acl(acl)?
                    .ok_or_else(|| Error::not_found(format!("ACL {acl}")))?;
            // Only what this unit wrote goes into the access snapshot. The ACL as read here
            // is not news when the grant changed nothing: on PostgreSQL another process may
            // have changed it since this transaction's snapshot (a unit that only read the
            // ACL commits after such a change without a conflict), and applying the ACL as read
            // would undo that change in this process (found by `postgres_races`).
            if changed {
                u.event(
                    names::ACL_EDITED,
                    target,
                    Some(event_object(ROLE, role.0, &role_label)),
                    Changes::new().edited(
                        "permissions",
                        keys_text(&before),
                        keys_text(&row.permissions),
                    ),
                )?;
                u.access.push(AccessChange::Acl {
                    object,
                    acl,
                    role,
                    permissions: permission_set(row.permissions.clone()),
                });
            }
            Ok(row)
        }
    }

    /// Revokes `permission` from `role` on `object` (spec 5.2 rule 1). An ACL left with no
    /// permission is deleted (spec 2.11): then `None` is returned. Needs `acls.acl_edit` on the
    /// object, seeing the role, and holding `permission` on the object, as granting does:
    /// nobody takes from a role what they do not hold themselves. Answers the ACL with its
    /// role.
    pub fn revoke(
        &self,
        permission: Permission,
        role: RoleId,
        object: ObjectRef,
    ) -> Result<Option<AclView>> {
        self.write(|u| {
            self.revoke_in(u, permission, role, object)?
                .map(|row| acl_view(&mut u.tx, row, object))
                .transpose()
        })
    }

    pub(crate) fn revoke_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        permission: Permission,
        role: RoleId,
        object: ObjectRef,
    ) -> Result<Option<AclRow>> {
        let kind = self.db.kinds().name(object.kind);
        {
            let target = self.acl_target(&mut u.tx, object, P::AclEdit)?;
            let role_label = self.visible_role_label(&mut u.tx, role, "role_id")?;
            // Checked whether or not the ACL exists and holds the permission: the answer must
            // not tell a caller without `acl_view` what the ACL holds.
            if !self.can_in(&mut u.tx, permission, object) {
                return Err(Error::PermissionDenied(format!(
                    "'{}' can only be revoked on this object by someone who holds it there",
                    permission.key()
                )));
            }
            let Some(acl) = u.tx.acl_for(&kind, object.id, role)? else {
                return Ok(None);
            };
            let role_obj = Some(event_object(ROLE, role.0, &role_label));
            let changed = u.tx.set_acl_permission(acl.id, permission.key(), false)?;
            let row =
                u.tx.acl(acl.id)?
                    .ok_or_else(|| Error::not_found(format!("ACL {}", acl.id)))?;
            if changed {
                u.event(
                    names::ACL_EDITED,
                    target.clone(),
                    role_obj.clone(),
                    Changes::new().edited(
                        "permissions",
                        keys_text(&acl.permissions),
                        keys_text(&row.permissions),
                    ),
                )?;
            }
            let set = permission_set(row.permissions.clone());
            // Only what this unit wrote (see `grant_in`): an emptied ACL is deleted below.
            if changed || set.is_empty() {
                u.access.push(AccessChange::Acl {
                    object,
                    acl: acl.id,
                    role,
                    permissions: set,
                });
            }
            if set.is_empty() {
                u.tx.delete_acl(acl.id)?;
                u.event(
                    names::ACL_DELETED,
                    target,
                    role_obj,
                    Changes::new().removed("permissions", keys_text(&row.permissions)),
                )?;
                return Ok(None);
            }
            Ok(Some(row))
        }
    }

    /// [`grant`](Self::grant) addressed by ACL id (the HTTP form of spec 4.4), answered with
    /// the ACL and its role.
    pub fn acl_add_permission(
        &self,
        object: ObjectRef,
        acl: AclId,
        permission: Permission,
    ) -> Result<AclView> {
        let kind = self.db.kinds().name(object.kind);
        // Only an ACL of this object (found by the access-matrix test: any ACL id used to be
        // accepted); `grant` then decides by `acls.acl_edit` alone, so a caller with edit but
        // neither view nor ACL view still addresses it (found by the session access matrix:
        // that caller got NotFound), and one without edit learns nothing.
        let row = self
            .read(|tx| tx.acl(acl))?
            .filter(|a| a.object_kind == kind && a.object_id == object.id)
            .ok_or_else(|| Error::not_found(format!("ACL {acl}")))?;
        self.grant(permission, row.role_id, object)
    }

    /// [`revoke`](Self::revoke) addressed by ACL id, answered with the ACL and its role, or
    /// `None` when its last permission was removed (and the ACL with it).
    pub fn acl_remove_permission(
        &self,
        object: ObjectRef,
        acl: AclId,
        permission: Permission,
    ) -> Result<Option<AclView>> {
        let kind = self.db.kinds().name(object.kind);
        let row = self
            .read(|tx| tx.acl(acl))?
            .filter(|a| a.object_kind == kind && a.object_id == object.id)
            .ok_or_else(|| Error::not_found(format!("ACL {acl}")))?;
        self.revoke(permission, row.role_id, object)
    }

    /// Deletes an ACL. Needs `acls.acl_edit` on the object and holding every permission of the
    /// ACL there (see [`revoke`](Self::revoke)).
    pub fn delete_acl(&self, object: ObjectRef, acl: AclId) -> Result<()> {
        let kind = self.db.kinds().name(object.kind);
        self.write(|u| {
            let target = self.acl_target(&mut u.tx, object, P::AclEdit)?;
            let row =
                u.tx.acl(acl)?
                    .filter(|a| a.object_kind == kind && a.object_id == object.id)
                    .ok_or_else(|| Error::not_found(format!("ACL {acl}")))?;
            // The refusal names no key: a caller without `acl_view` must not learn what it holds.
            for key in &row.permissions {
                match Permission::from_key(key) {
                    Ok(p) if self.can_in(&mut u.tx, p, object) => {}
                    _ => {
                        return Err(Error::PermissionDenied(
                            "this ACL grants permissions you do not hold on this object".into(),
                        ));
                    }
                }
            }
            u.tx.delete_acl(acl)?;
            u.access.push(AccessChange::Acl {
                object,
                acl,
                role: row.role_id,
                permissions: PermissionSet::EMPTY,
            });
            let role = event_object(ROLE, row.role_id.0, &role_label(&mut u.tx, row.role_id)?);
            u.event(
                names::ACL_DELETED,
                target,
                Some(role),
                Changes::new().removed("permissions", keys_text(&row.permissions)),
            )
        })
    }
}

impl Acl {
    /// The ACL of a stored row on `object` (the object the row was read for).
    pub(crate) fn of(row: AclRow, object: ObjectRef) -> Acl {
        Acl {
            id: row.id,
            role_id: row.role_id,
            object,
            permissions: super::permission_set(row.permissions),
        }
    }
}
