//! Users, groups and roles: who may do what is given to roles, roles to groups, groups to
//! users.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{Role, User, UserGroup, UserUpdate};

fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(Into::into).collect()
}

#[uniffi::export]
impl Session {
    /// Creates a user.
    pub fn create_user(&self, username: String, password: String, superuser: bool) -> Result<User> {
        Ok(self
            .inner
            .create_user(&username, &password, superuser)?
            .into())
    }

    /// One user.
    pub fn user(&self, id: i64) -> Result<User> {
        Ok(self.inner.user(core::UserId(id))?.into())
    }

    /// Every user.
    pub fn users(&self) -> Result<Vec<User>> {
        Ok(all(self.inner.users()?))
    }

    /// Changes a user: each given field of `update` replaces the stored one. Another user's
    /// changes need `user_edit` and holding everything that user holds; a name that looks like
    /// another user's (confusable skeleton) is a conflict on `username`.
    pub fn update_user(&self, id: i64, update: UserUpdate) -> Result<User> {
        Ok(self
            .inner
            .update_user(core::UserId(id), update.into())?
            .into())
    }

    /// Sets a user's password.
    pub fn set_password(&self, id: i64, password: String) -> Result<()> {
        Ok(self.inner.set_password(core::UserId(id), &password)?)
    }

    /// Deletes a user.
    pub fn delete_user(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_user(core::UserId(id))?)
    }

    /// Creates a group.
    pub fn create_group(&self, name: String) -> Result<UserGroup> {
        Ok(self.inner.create_group(&name)?.into())
    }

    /// Every group.
    pub fn groups(&self) -> Result<Vec<UserGroup>> {
        Ok(all(self.inner.groups()?))
    }

    /// One group.
    pub fn group(&self, id: i64) -> Result<UserGroup> {
        Ok(self.inner.group(core::GroupId(id))?.into())
    }

    /// Renames a group.
    pub fn rename_group(&self, id: i64, name: String) -> Result<UserGroup> {
        Ok(self.inner.rename_group(core::GroupId(id), &name)?.into())
    }

    /// Deletes a group.
    pub fn delete_group(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_group(core::GroupId(id))?)
    }

    /// Adds a user to a group (`member`), or removes it.
    pub fn set_group_member(&self, group: i64, user: i64, member: bool) -> Result<UserGroup> {
        Ok(self
            .inner
            .set_group_member(core::GroupId(group), core::UserId(user), member)?
            .into())
    }

    /// The ids of a group's members.
    pub fn group_members(&self, group: i64) -> Result<Vec<i64>> {
        Ok(self
            .inner
            .group_members(core::GroupId(group), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(|u| u.id.0)
            .collect())
    }

    /// Creates a role.
    pub fn create_role(&self, label: String) -> Result<Role> {
        Ok(self.inner.create_role(&label)?.into())
    }

    /// Every role.
    pub fn roles(&self) -> Result<Vec<Role>> {
        Ok(all(self.inner.roles()?))
    }

    /// One role.
    pub fn role(&self, id: i64) -> Result<Role> {
        Ok(self.inner.role(core::RoleId(id))?.into())
    }

    /// Renames a role.
    pub fn rename_role(&self, id: i64, label: String) -> Result<Role> {
        Ok(self.inner.rename_role(core::RoleId(id), &label)?.into())
    }

    /// Deletes a role.
    pub fn delete_role(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_role(core::RoleId(id))?)
    }

    /// Gives a role to a group (`assigned`), or takes it back.
    pub fn set_role_group(&self, role: i64, group: i64, assigned: bool) -> Result<Role> {
        Ok(self
            .inner
            .set_role_group(core::RoleId(role), core::GroupId(group), assigned)?
            .into())
    }

    /// The ids of the groups a role is given to.
    pub fn role_groups(&self, role: i64) -> Result<Vec<i64>> {
        Ok(self
            .inner
            .role_groups(core::RoleId(role), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(|g| g.id.0)
            .collect())
    }
}
