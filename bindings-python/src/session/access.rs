//! `Session` methods: users, groups, roles, permissions and access-control lists (spec 5).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::{permission, py_err, run};
use crate::records::{Acl, Explanation, Group, ObjectRef, Role, User, all};

#[pymethods]
impl Session {
    /// Creates a user.
    #[pyo3(signature = (username, password, *, superuser = false))]
    fn create_user(
        &self,
        py: Python<'_>,
        username: String,
        password: String,
        superuser: bool,
    ) -> PyResult<User> {
        run(py, || {
            self.inner.create_user(&username, &password, superuser)
        })
        .map(Into::into)
    }

    /// The users this session may view.
    fn users(&self, py: Python<'_>) -> PyResult<Vec<User>> {
        run(py, || self.inner.users()).map(all)
    }

    /// Changes a user's username, password, superuser status or activity, all or nothing.
    /// Another user's changes need `user_edit` and holding everything that user holds; a name
    /// that looks like another user's (confusable skeleton) is a conflict on `username`.
    #[pyo3(signature = (id, *, username = None, password = None, is_superuser = None, is_active = None))]
    fn update_user(
        &self,
        py: Python<'_>,
        id: i64,
        username: Option<String>,
        password: Option<String>,
        is_superuser: Option<bool>,
        is_active: Option<bool>,
    ) -> PyResult<User> {
        let update = core::UserUpdate {
            username,
            password,
            is_superuser,
            is_active,
        };
        run(py, || self.inner.update_user(core::UserId(id), update)).map(Into::into)
    }

    /// Sets a user's password.
    fn set_password(&self, py: Python<'_>, id: i64, password: String) -> PyResult<()> {
        run(py, || self.inner.set_password(core::UserId(id), &password))
    }

    /// Deletes a user.
    fn delete_user(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_user(core::UserId(id)))
    }

    /// One user.
    fn user(&self, py: Python<'_>, id: i64) -> PyResult<User> {
        run(py, || self.inner.user(core::UserId(id))).map(Into::into)
    }

    /// The groups this session may view.
    fn groups(&self, py: Python<'_>) -> PyResult<Vec<Group>> {
        run(py, || self.inner.groups()).map(all)
    }

    /// One group.
    fn group(&self, py: Python<'_>, id: i64) -> PyResult<Group> {
        run(py, || self.inner.group(core::GroupId(id))).map(Into::into)
    }

    /// The members of a group that this session may view.
    fn group_members(&self, py: Python<'_>, group: i64) -> PyResult<Vec<User>> {
        run(py, || {
            self.inner
                .group_members(core::GroupId(group), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// Renames a group.
    fn rename_group(&self, py: Python<'_>, id: i64, name: String) -> PyResult<Group> {
        run(py, || self.inner.rename_group(core::GroupId(id), &name)).map(Into::into)
    }

    /// Deletes a group.
    fn delete_group(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_group(core::GroupId(id)))
    }

    /// The roles this session may view.
    fn roles(&self, py: Python<'_>) -> PyResult<Vec<Role>> {
        run(py, || self.inner.roles()).map(all)
    }

    /// One role.
    fn role(&self, py: Python<'_>, id: i64) -> PyResult<Role> {
        run(py, || self.inner.role(core::RoleId(id))).map(Into::into)
    }

    /// The groups a role is assigned to that this session may view.
    fn role_groups(&self, py: Python<'_>, role: i64) -> PyResult<Vec<Group>> {
        run(py, || {
            self.inner
                .role_groups(core::RoleId(role), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// A role's global permissions (keys), in the order of the permission list.
    fn role_permissions(&self, py: Python<'_>, role: i64) -> PyResult<Vec<String>> {
        run(py, || {
            self.inner
                .role_permissions(core::RoleId(role), core::PageRequest::ALL)
        })
        .map(|page| page.items.into_iter().map(|p| p.key().to_owned()).collect())
    }

    /// Grants (`granted=True`) or revokes a global permission of a role; returns the role's
    /// global permissions afterwards (keys).
    #[pyo3(signature = (role, permission, *, granted = true))]
    fn set_role_permission(
        &self,
        py: Python<'_>,
        role: i64,
        permission: &str,
        granted: bool,
    ) -> PyResult<Vec<String>> {
        let p = self::permission(permission)?;
        run(py, || {
            self.inner
                .set_role_permission(core::RoleId(role), p, granted)
        })
        .map(|all| all.into_iter().map(|p| p.key().to_owned()).collect())
    }

    /// Renames a role.
    fn rename_role(&self, py: Python<'_>, id: i64, label: String) -> PyResult<Role> {
        run(py, || self.inner.rename_role(core::RoleId(id), &label)).map(Into::into)
    }

    /// Deletes a role.
    fn delete_role(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_role(core::RoleId(id)))
    }

    /// Creates a group.
    fn create_group(&self, py: Python<'_>, name: String) -> PyResult<Group> {
        run(py, || self.inner.create_group(&name)).map(Into::into)
    }

    /// Adds (or removes) a user to a group; returns the group.
    #[pyo3(signature = (group, user, *, member = true))]
    fn set_group_member(
        &self,
        py: Python<'_>,
        group: i64,
        user: i64,
        member: bool,
    ) -> PyResult<Group> {
        run(py, || {
            self.inner
                .set_group_member(core::GroupId(group), core::UserId(user), member)
        })
        .map(Into::into)
    }

    /// Creates a role.
    fn create_role(&self, py: Python<'_>, label: String) -> PyResult<Role> {
        run(py, || self.inner.create_role(&label)).map(Into::into)
    }

    /// Assigns (or unassigns) a role to a group; returns the role.
    #[pyo3(signature = (role, group, *, assigned = true))]
    fn set_role_group(
        &self,
        py: Python<'_>,
        role: i64,
        group: i64,
        assigned: bool,
    ) -> PyResult<Role> {
        run(py, || {
            self.inner
                .set_role_group(core::RoleId(role), core::GroupId(group), assigned)
        })
        .map(Into::into)
    }

    /// Grants a permission to a role globally.
    fn grant_global(&self, py: Python<'_>, permission: &str, role: i64) -> PyResult<()> {
        let p = self::permission(permission)?;
        run(py, || self.inner.grant_global(p, core::RoleId(role)))
    }

    /// Revokes a global permission.
    fn revoke_global(&self, py: Python<'_>, permission: &str, role: i64) -> PyResult<()> {
        let p = self::permission(permission)?;
        run(py, || self.inner.revoke_global(p, core::RoleId(role)))
    }

    /// Grants `permission` to `role` on the object `kind` `object_id` (an ACL).
    fn grant(
        &self,
        py: Python<'_>,
        permission: &str,
        role: i64,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Acl> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.grant(p, core::RoleId(role), object)).map(|a| Acl::of_view(a, kind))
    }

    /// Revokes it; returns the ACL, or None when it was left empty and deleted.
    fn revoke(
        &self,
        py: Python<'_>,
        permission: &str,
        role: i64,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Option<Acl>> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.revoke(p, core::RoleId(role), object))
            .map(|a| a.map(|a| Acl::of_view(a, kind)))
    }

    /// The ACLs of an object, each with its role. Needs `acls.acl_view` on it.
    fn acls(&self, py: Python<'_>, kind: &str, object_id: i64) -> PyResult<Vec<Acl>> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.acls(object, core::PageRequest::ALL)).map(|page| {
            page.items
                .into_iter()
                .map(|a| Acl::of_view(a, kind))
                .collect()
        })
    }

    /// One ACL of an object, with its role.
    fn acl(&self, py: Python<'_>, kind: &str, object_id: i64, acl: i64) -> PyResult<Acl> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.acl(object, core::AclId(acl))).map(|a| Acl::of_view(a, kind))
    }

    /// Creates an empty ACL of `role` on an object (permissions are added one by one).
    fn create_acl(&self, py: Python<'_>, kind: &str, object_id: i64, role: i64) -> PyResult<Acl> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.create_acl(object, core::RoleId(role))).map(|a| Acl::of_view(a, kind))
    }

    /// Adds a permission to an ACL (the same rules as `grant`).
    fn acl_add_permission(
        &self,
        py: Python<'_>,
        kind: &str,
        object_id: i64,
        acl: i64,
        permission: &str,
    ) -> PyResult<Acl> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || {
            self.inner.acl_add_permission(object, core::AclId(acl), p)
        })
        .map(|a| Acl::of_view(a, kind))
    }

    /// Removes a permission from an ACL; returns it, or None when it was left empty and
    /// deleted.
    fn acl_remove_permission(
        &self,
        py: Python<'_>,
        kind: &str,
        object_id: i64,
        acl: i64,
        permission: &str,
    ) -> PyResult<Option<Acl>> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || {
            self.inner
                .acl_remove_permission(object, core::AclId(acl), p)
        })
        .map(|a| a.map(|a| Acl::of_view(a, kind)))
    }

    /// Deletes an ACL with all its permissions.
    fn delete_acl(&self, py: Python<'_>, kind: &str, object_id: i64, acl: i64) -> PyResult<()> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.delete_acl(object, core::AclId(acl)))
    }

    /// The permissions an ACL on objects of `kind` may hold (keys).
    fn grantable_permissions(&self, kind: &str) -> PyResult<Vec<String>> {
        let kind = self.inner.parse_kind(kind).map_err(py_err)?;
        Ok(self
            .inner
            .grantable_permissions(kind)
            .into_iter()
            .map(|p| p.key().to_owned())
            .collect())
    }

    /// Whether this session may do `permission` on the object.
    fn can(&self, py: Python<'_>, permission: &str, kind: &str, object_id: i64) -> PyResult<bool> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        if crate::errors::reads_the_store(object) {
            // See `Docmeta.check`: a read may wait for a writer waiting for the GIL.
            return Ok(py.detach(|| self.inner.can(p, object)));
        }
        Ok(self.inner.can(p, object))
    }

    /// Whether this session holds `permission` globally (through a role, or as a superuser).
    fn can_globally(&self, permission: &str) -> PyResult<bool> {
        Ok(self.inner.can_globally(self::permission(permission)?))
    }

    /// Why `user_id` may or may not do `permission` on the object (see `Docmeta.explain`).
    /// Needs `acls.acl_view` on the object, unless a user asks about themselves.
    fn explain(
        &self,
        py: Python<'_>,
        user_id: i64,
        permission: &str,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Explanation> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        let e = run(py, || self.inner.explain(core::UserId(user_id), p, object))?;
        Ok(Explanation::of(e, &self.db.kinds()))
    }

    /// The user this session acts as, or None for the system session.
    fn actor(&self) -> Option<i64> {
        self.inner.actor().user().map(|u| u.0)
    }

    /// The registered kind `text` (`app_label.model_name`), checked; `NotFound` otherwise.
    fn parse_kind(&self, text: &str) -> PyResult<String> {
        let kind = self.inner.parse_kind(text).map_err(py_err)?;
        Ok(self.db.kinds().name(kind))
    }

    /// The kind `app_label.model_name`, checked; `NotFound` when none is registered.
    fn object_kind(&self, app_label: &str, model_name: &str) -> PyResult<String> {
        let kind = self
            .inner
            .object_kind(app_label, model_name)
            .map_err(py_err)?;
        Ok(self.db.kinds().name(kind))
    }

    /// The object `id` of kind `app_label.model_name`, its kind checked.
    fn object_ref(&self, app_label: &str, model_name: &str, id: i64) -> PyResult<ObjectRef> {
        let o = self
            .inner
            .object_ref(app_label, model_name, id)
            .map_err(py_err)?;
        Ok(ObjectRef::of(o, &self.db.kinds()))
    }

    /// This session, whose changes must commit within `seconds` from now (later they fail
    /// with `DeadlineExceeded` and change nothing).
    fn with_deadline(&self, seconds: f64) -> PyResult<Session> {
        let deadline = crate::errors::deadline(seconds)?;
        Ok(Session::new(
            self.inner.clone().with_deadline(deadline),
            self.db.clone(),
        ))
    }
}
