//! `Session` methods: users, groups, roles, permissions and access-control lists (spec 5).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::{permission, run};
use crate::records::{Acl, User, all};

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

    /// The groups, as `(id, name)`.
    fn groups(&self, py: Python<'_>) -> PyResult<Vec<(i64, String)>> {
        run(py, || self.inner.groups())
            .map(|all| all.into_iter().map(|g| (g.id.0, g.name)).collect())
    }

    /// The members of a group (user ids).
    fn group_members(&self, py: Python<'_>, group: i64) -> PyResult<Vec<i64>> {
        run(py, || self.inner.group_members(core::GroupId(group)))
            .map(|all| all.into_iter().map(|u| u.0).collect())
    }

    /// Renames a group.
    fn rename_group(&self, py: Python<'_>, id: i64, name: String) -> PyResult<()> {
        run(py, || self.inner.rename_group(core::GroupId(id), &name))
    }

    /// Deletes a group.
    fn delete_group(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_group(core::GroupId(id)))
    }

    /// The roles, as `(id, label)`.
    fn roles(&self, py: Python<'_>) -> PyResult<Vec<(i64, String)>> {
        run(py, || self.inner.roles())
            .map(|all| all.into_iter().map(|r| (r.id.0, r.label)).collect())
    }

    /// The groups a role is assigned to.
    fn role_groups(&self, py: Python<'_>, role: i64) -> PyResult<Vec<i64>> {
        run(py, || self.inner.role_groups(core::RoleId(role)))
            .map(|all| all.into_iter().map(|g| g.0).collect())
    }

    /// A role's global permissions (keys).
    fn role_permissions(&self, py: Python<'_>, role: i64) -> PyResult<Vec<String>> {
        run(py, || self.inner.role_permissions(core::RoleId(role)))
            .map(|all| all.into_iter().map(|p| p.key().to_owned()).collect())
    }

    /// Renames a role.
    fn rename_role(&self, py: Python<'_>, id: i64, label: String) -> PyResult<()> {
        run(py, || self.inner.rename_role(core::RoleId(id), &label))
    }

    /// Deletes a role.
    fn delete_role(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_role(core::RoleId(id)))
    }

    /// Creates a group; returns its id.
    fn create_group(&self, py: Python<'_>, name: String) -> PyResult<i64> {
        run(py, || self.inner.create_group(&name)).map(|g| g.0)
    }

    /// Adds (or removes) a user to a group.
    #[pyo3(signature = (group, user, *, member = true))]
    fn set_group_member(
        &self,
        py: Python<'_>,
        group: i64,
        user: i64,
        member: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner
                .set_group_member(core::GroupId(group), core::UserId(user), member)
        })
    }

    /// Creates a role; returns its id.
    fn create_role(&self, py: Python<'_>, label: String) -> PyResult<i64> {
        run(py, || self.inner.create_role(&label)).map(|r| r.0)
    }

    /// Assigns (or unassigns) a role to a group.
    #[pyo3(signature = (role, group, *, assigned = true))]
    fn set_role_group(
        &self,
        py: Python<'_>,
        role: i64,
        group: i64,
        assigned: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner
                .set_role_group(core::RoleId(role), core::GroupId(group), assigned)
        })
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
        run(py, || self.inner.grant(p, core::RoleId(role), object)).map(|a| Acl::of(a, kind))
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
            .map(|a| a.map(|a| Acl::of(a, kind)))
    }

    /// The ACLs of an object.
    fn acls(&self, py: Python<'_>, kind: &str, object_id: i64) -> PyResult<Vec<Acl>> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.acls(object))
            .map(|acls| acls.into_iter().map(|a| Acl::of(a, kind)).collect())
    }

    /// Whether this session may do `permission` on the object.
    fn can(&self, permission: &str, kind: &str, object_id: i64) -> PyResult<bool> {
        Ok(self
            .inner
            .can(self::permission(permission)?, self.object(kind, object_id)?))
    }
}
