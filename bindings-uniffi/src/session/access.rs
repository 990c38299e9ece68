//! Access: checks and their explanation, object kinds, global permissions and ACLs
//! (spec 4.4). Objects are named by kind (`documents.document`) and id; permissions by key.

use docmeta_core as core;

use super::Session;
use crate::errors::{Result, permission};
use crate::records::{Acl, Explanation, ObjectRef, keys};

#[uniffi::export]
impl Session {
    /// Whether this session may do `permission` on the object.
    pub fn can(&self, permission: String, kind: String, object_id: i64) -> Result<bool> {
        Ok(self.inner.can(
            self::permission(&permission)?,
            self.object(&kind, object_id)?,
        ))
    }

    /// Whether this session holds `permission` globally (not through an ACL).
    pub fn can_globally(&self, permission: String) -> Result<bool> {
        Ok(self.inner.can_globally(self::permission(&permission)?))
    }

    /// Why `user_id` may or may not do `permission` on the object (asking about another user
    /// needs the ACL view permission on it).
    pub fn explain(
        &self,
        user_id: i64,
        permission: String,
        kind: String,
        object_id: i64,
    ) -> Result<Explanation> {
        let e = self.inner.explain(
            core::UserId(user_id),
            self::permission(&permission)?,
            self.object(&kind, object_id)?,
        )?;
        Ok(Explanation::of(e, &self.db.kinds()))
    }

    /// The reference to object `id` of the kind `app_label.model_name`.
    pub fn object_ref(&self, app_label: String, model_name: String, id: i64) -> Result<ObjectRef> {
        let o = self.inner.object_ref(&app_label, &model_name, id)?;
        Ok(ObjectRef::of(o, &self.db.kinds()))
    }

    /// The kind `app_label.model_name`, by its canonical name; refused when unknown.
    pub fn object_kind(&self, app_label: String, model_name: String) -> Result<String> {
        let kind = self.inner.object_kind(&app_label, &model_name)?;
        Ok(self.db.kinds().name(kind))
    }

    /// The canonical name of a kind given by name; refused when unknown.
    pub fn parse_kind(&self, text: String) -> Result<String> {
        Ok(self.db.kinds().name(self.inner.parse_kind(&text)?))
    }

    /// The permissions an ACL on objects of `kind` may hold (keys).
    pub fn grantable_permissions(&self, kind: String) -> Result<Vec<String>> {
        let kind = self.inner.parse_kind(&kind)?;
        Ok(keys(self.inner.grantable_permissions(kind)))
    }

    /// Grants a permission to a role globally.
    pub fn grant_global(&self, permission: String, role: i64) -> Result<()> {
        Ok(self
            .inner
            .grant_global(self::permission(&permission)?, core::RoleId(role))?)
    }

    /// Revokes a role's global permission.
    pub fn revoke_global(&self, permission: String, role: i64) -> Result<()> {
        Ok(self
            .inner
            .revoke_global(self::permission(&permission)?, core::RoleId(role))?)
    }

    /// A role's global permissions (keys).
    pub fn role_permissions(&self, role: i64) -> Result<Vec<String>> {
        Ok(keys(
            self.inner
                .role_permissions(core::RoleId(role), core::PageRequest::ALL)?
                .items,
        ))
    }

    /// Grants (`granted`) or revokes a role's global permission; returns its permissions.
    pub fn set_role_permission(
        &self,
        role: i64,
        permission: String,
        granted: bool,
    ) -> Result<Vec<String>> {
        Ok(keys(self.inner.set_role_permission(
            core::RoleId(role),
            self::permission(&permission)?,
            granted,
        )?))
    }

    /// Grants `permission` to `role` on the object `kind` `object_id` (creating the ACL when
    /// needed); returns the ACL.
    pub fn grant(
        &self,
        permission: String,
        role: i64,
        kind: String,
        object_id: i64,
    ) -> Result<Acl> {
        let object = self.object(&kind, object_id)?;
        let acl = self
            .inner
            .grant(self::permission(&permission)?, core::RoleId(role), object)?;
        Ok(Acl::of(acl, &self.db.kinds()))
    }

    /// Revokes it; returns the ACL left, or `None` when none remains.
    pub fn revoke(
        &self,
        permission: String,
        role: i64,
        kind: String,
        object_id: i64,
    ) -> Result<Option<Acl>> {
        let object = self.object(&kind, object_id)?;
        let acl = self
            .inner
            .revoke(self::permission(&permission)?, core::RoleId(role), object)?;
        let kinds = self.db.kinds();
        Ok(acl.map(|a| Acl::of(a, &kinds)))
    }

    /// The ACLs on an object.
    pub fn acls(&self, object: ObjectRef) -> Result<Vec<Acl>> {
        let page = self
            .inner
            .acls(self.object_of(&object)?, core::PageRequest::ALL)?;
        let kinds = self.db.kinds();
        Ok(page.items.into_iter().map(|v| Acl::of(v, &kinds)).collect())
    }

    /// One ACL on an object.
    pub fn acl(&self, object: ObjectRef, acl: i64) -> Result<Acl> {
        let v = self.inner.acl(self.object_of(&object)?, core::AclId(acl))?;
        Ok(Acl::of(v, &self.db.kinds()))
    }

    /// Creates an empty ACL for `role` on an object.
    pub fn create_acl(&self, object: ObjectRef, role: i64) -> Result<Acl> {
        let v = self
            .inner
            .create_acl(self.object_of(&object)?, core::RoleId(role))?;
        Ok(Acl::of(v, &self.db.kinds()))
    }

    /// Adds a permission to an ACL.
    pub fn acl_add_permission(
        &self,
        object: ObjectRef,
        acl: i64,
        permission: String,
    ) -> Result<Acl> {
        let v = self.inner.acl_add_permission(
            self.object_of(&object)?,
            core::AclId(acl),
            self::permission(&permission)?,
        )?;
        Ok(Acl::of(v, &self.db.kinds()))
    }

    /// Removes a permission from an ACL; `None` when that emptied and deleted it.
    pub fn acl_remove_permission(
        &self,
        object: ObjectRef,
        acl: i64,
        permission: String,
    ) -> Result<Option<Acl>> {
        let v = self.inner.acl_remove_permission(
            self.object_of(&object)?,
            core::AclId(acl),
            self::permission(&permission)?,
        )?;
        let kinds = self.db.kinds();
        Ok(v.map(|v| Acl::of(v, &kinds)))
    }

    /// Deletes an ACL.
    pub fn delete_acl(&self, object: ObjectRef, acl: i64) -> Result<()> {
        Ok(self
            .inner
            .delete_acl(self.object_of(&object)?, core::AclId(acl))?)
    }
}
