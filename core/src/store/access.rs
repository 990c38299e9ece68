//! Statements of users, groups, roles, global permissions, object ACLs and the parent links applications record.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::Utc;

use super::Tx;
use super::records::*;
use crate::error::{Error, Result};
use crate::model::*;

impl Tx<'_> {
    // ----- users, groups, roles ---------------------------------------------------------

    /// Inserts a user. A username whose key (see `model::username_key`) equals another
    /// user's is an [`Error::Conflict`], as an equal username is.
    pub fn insert_user(
        &mut self,
        username: &str,
        password_hash: &str,
        superuser: bool,
    ) -> Result<UserRow> {
        let key = username_key(username);
        self.refuse_username_key(&key, None)?;
        let id = self.insert(
            "INSERT INTO users (username, password_hash, is_superuser, is_active, created, \
                 username_key) \
             VALUES (?1, ?2, ?3, 1, ?4, ?5) \
             RETURNING id",
            &[
                username.into(),
                password_hash.into(),
                superuser.into(),
                to_micros(Utc::now()).into(),
                (&key).into(),
            ],
        )?;
        Ok(UserRow {
            id: UserId(id),
            username: username.to_owned(),
            password_hash: password_hash.to_owned(),
            is_superuser: superuser,
            is_active: true,
        })
    }

    /// Updates a user. A new username whose key equals another user's is an
    /// [`Error::Conflict`]; keeping one's name is never refused, even where users from before
    /// the key existed collide.
    pub fn update_user(&mut self, u: &UserRow) -> Result<()> {
        let renamed = self
            .optional(
                "SELECT username FROM users WHERE id = ?1",
                &[u.id.0.into()],
                |r| r.text(0),
            )?
            .is_some_and(|old| old != u.username);
        if renamed {
            let key = username_key(&u.username);
            self.refuse_username_key(&key, Some(u.id))?;
            self.execute(
                "UPDATE users SET username_key = ?1 WHERE id = ?2",
                &[(&key).into(), u.id.0.into()],
            )?;
        }
        self.execute(
            "UPDATE users SET username = ?1, password_hash = ?2, is_superuser = ?3, is_active = ?4 \
             WHERE id = ?5",
            &[
                (&u.username).into(),
                (&u.password_hash).into(),
                u.is_superuser.into(),
                u.is_active.into(),
                u.id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Refuses a username key that another user than `except` has.
    fn refuse_username_key(&mut self, key: &str, except: Option<UserId>) -> Result<()> {
        let taken = self.optional(
            "SELECT id FROM users WHERE username_key = ?1 AND id <> ?2 LIMIT 1",
            &[key.into(), except.map_or(0, |u| u.0).into()],
            |r| r.int(0),
        )?;
        match taken {
            Some(_) => Err(Error::conflict(
                "username",
                "A user with a username that looks the same already exists.",
            )),
            None => Ok(()),
        }
    }

    /// Deletes a user and their memberships.
    pub fn delete_user(&mut self, id: UserId) -> Result<()> {
        self.execute("DELETE FROM group_users WHERE user_id = ?1", &[id.0.into()])?;
        self.execute("DELETE FROM users WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One user.
    pub fn user(&mut self, id: UserId) -> Result<Option<UserRow>> {
        self.optional(
            "SELECT id, username, password_hash, is_superuser, is_active FROM users WHERE id = ?1",
            &[id.0.into()],
            user,
        )
    }

    /// One user by username.
    pub fn user_by_username(&mut self, username: &str) -> Result<Option<UserRow>> {
        self.optional(
            "SELECT id, username, password_hash, is_superuser, is_active \
             FROM users \
             WHERE username = ?1",
            &[username.into()],
            user,
        )
    }

    /// Every user, by id.
    pub fn users(&mut self) -> Result<Vec<UserRow>> {
        self.rows(
            "SELECT id, username, password_hash, is_superuser, is_active FROM users ORDER BY id",
            &[],
            user,
        )
    }

    /// Inserts a group.
    pub fn insert_group(&mut self, name: &str) -> Result<GroupId> {
        self.insert(
            "INSERT INTO groups (name) VALUES (?1) RETURNING id",
            &[name.into()],
        )
        .map(GroupId)
    }

    /// Renames a group.
    pub fn update_group(&mut self, id: GroupId, name: &str) -> Result<()> {
        self.execute(
            "UPDATE groups SET name = ?1 WHERE id = ?2",
            &[name.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a group, its memberships and role assignments.
    pub fn delete_group(&mut self, id: GroupId) -> Result<()> {
        self.execute(
            "DELETE FROM group_users WHERE group_id = ?1",
            &[id.0.into()],
        )?;
        self.execute(
            "DELETE FROM role_groups WHERE group_id = ?1",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM groups WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// Every group `(id, name)`, by id.
    pub fn groups(&mut self) -> Result<Vec<(GroupId, String)>> {
        self.rows("SELECT id, name FROM groups ORDER BY id", &[], |r| {
            Ok((GroupId(r.int(0)?), r.text(1)?))
        })
    }

    /// Adds (`true`) or removes a user from a group; returns whether anything changed.
    pub fn set_group_member(&mut self, group: GroupId, user: UserId, member: bool) -> Result<bool> {
        let n = if member {
            self.execute(
                "INSERT INTO group_users (group_id, user_id) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[group.0.into(), user.0.into()],
            )?
        } else {
            self.execute(
                "DELETE FROM group_users WHERE group_id = ?1 AND user_id = ?2",
                &[group.0.into(), user.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The members of a group.
    pub fn group_members(&mut self, group: GroupId) -> Result<Vec<UserId>> {
        self.rows(
            "SELECT user_id FROM group_users WHERE group_id = ?1 ORDER BY user_id",
            &[group.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// Inserts a role.
    pub fn insert_role(&mut self, label: &str) -> Result<RoleId> {
        self.insert(
            "INSERT INTO roles (label) VALUES (?1) RETURNING id",
            &[label.into()],
        )
        .map(RoleId)
    }

    /// Renames a role.
    pub fn update_role(&mut self, id: RoleId, label: &str) -> Result<()> {
        self.execute(
            "UPDATE roles SET label = ?1 WHERE id = ?2",
            &[label.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a role with its assignments, global permissions and ACLs.
    pub fn delete_role(&mut self, id: RoleId) -> Result<()> {
        self.execute("DELETE FROM role_groups WHERE role_id = ?1", &[id.0.into()])?;
        self.execute(
            "DELETE FROM role_permissions WHERE role_id = ?1",
            &[id.0.into()],
        )?;
        self.execute(
            "DELETE FROM acl_permissions WHERE acl_id IN (SELECT id FROM acls WHERE role_id = ?1)",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM acls WHERE role_id = ?1", &[id.0.into()])?;
        self.execute("DELETE FROM roles WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// Every role `(id, label)`, by id.
    pub fn roles(&mut self) -> Result<Vec<(RoleId, String)>> {
        self.rows("SELECT id, label FROM roles ORDER BY id", &[], |r| {
            Ok((RoleId(r.int(0)?), r.text(1)?))
        })
    }

    /// The roles a user holds through the groups they belong to (whether or not they are
    /// active), by id.
    pub fn roles_of_user(&mut self, user: UserId) -> Result<Vec<RoleId>> {
        self.rows(
            "SELECT DISTINCT rg.role_id \
             FROM role_groups rg \
             JOIN group_users gu ON gu.group_id = rg.group_id \
             WHERE gu.user_id = ?1 \
             ORDER BY rg.role_id",
            &[user.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// Assigns (`true`) or removes a role from a group; returns whether anything changed.
    pub fn set_role_group(&mut self, role: RoleId, group: GroupId, assigned: bool) -> Result<bool> {
        let n = if assigned {
            self.execute(
                "INSERT INTO role_groups (role_id, group_id) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[role.0.into(), group.0.into()],
            )?
        } else {
            self.execute(
                "DELETE FROM role_groups WHERE role_id = ?1 AND group_id = ?2",
                &[role.0.into(), group.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The groups a role is assigned to.
    pub fn groups_of_role(&mut self, role: RoleId) -> Result<Vec<GroupId>> {
        self.rows(
            "SELECT group_id FROM role_groups WHERE role_id = ?1 ORDER BY group_id",
            &[role.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// The roles assigned to a group.
    pub fn roles_of_group(&mut self, group: GroupId) -> Result<Vec<RoleId>> {
        self.rows(
            "SELECT role_id FROM role_groups WHERE group_id = ?1 ORDER BY role_id",
            &[group.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// Grants (`true`) or revokes a global permission of a role; returns whether anything changed.
    pub fn set_role_permission(
        &mut self,
        role: RoleId,
        permission: &str,
        granted: bool,
    ) -> Result<bool> {
        let n = if granted {
            self.execute(
                "INSERT INTO role_permissions (role_id, permission) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[role.0.into(), permission.into()],
            )?
        } else {
            self.execute(
                "DELETE FROM role_permissions WHERE role_id = ?1 AND permission = ?2",
                &[role.0.into(), permission.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The global permission keys of a role.
    pub fn role_permissions(&mut self, role: RoleId) -> Result<Vec<String>> {
        self.rows(
            "SELECT permission FROM role_permissions WHERE role_id = ?1 ORDER BY permission",
            &[role.0.into()],
            |r| r.text(0),
        )
    }

    // ----- ACLs -------------------------------------------------------------------------

    /// The ACL of `role` on an object, if any.
    pub fn acl_for(&mut self, kind: &str, object_id: i64, role: RoleId) -> Result<Option<AclRow>> {
        let id = self.optional(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2 AND role_id = ?3",
            &[kind.into(), object_id.into(), role.0.into()],
            |r| r.int(0),
        )?;
        match id {
            Some(id) => self.acl(AclId(id)),
            None => Ok(None),
        }
    }

    /// One ACL with its permissions.
    pub fn acl(&mut self, id: AclId) -> Result<Option<AclRow>> {
        let Some(mut acl) = self.optional(
            "SELECT id, object_kind, object_id, role_id FROM acls WHERE id = ?1",
            &[id.0.into()],
            |r| {
                Ok(AclRow {
                    id: AclId(r.int(0)?),
                    object_kind: r.text(1)?,
                    object_id: r.int(2)?,
                    role_id: RoleId(r.int(3)?),
                    permissions: Vec::new(),
                })
            },
        )?
        else {
            return Ok(None);
        };
        acl.permissions = self.rows(
            "SELECT permission FROM acl_permissions WHERE acl_id = ?1 ORDER BY permission",
            &[id.0.into()],
            |r| r.text(0),
        )?;
        Ok(Some(acl))
    }

    /// The ACLs of an object.
    pub fn acls_of(&mut self, kind: &str, object_id: i64) -> Result<Vec<AclRow>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2 ORDER BY id",
            &[kind.into(), object_id.into()],
            |r| r.int(0),
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.acl(AclId(id))?);
        }
        Ok(out)
    }

    /// The ACLs held by a role, on every object.
    pub fn acls_of_role(&mut self, role: RoleId) -> Result<Vec<AclRow>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE role_id = ?1 ORDER BY id",
            &[role.0.into()],
            |r| r.int(0),
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.acl(AclId(id))?);
        }
        Ok(out)
    }

    /// Creates an empty ACL.
    pub fn insert_acl(&mut self, kind: &str, object_id: i64, role: RoleId) -> Result<AclId> {
        self.insert(
            "INSERT INTO acls (object_kind, object_id, role_id) VALUES (?1, ?2, ?3) RETURNING id",
            &[kind.into(), object_id.into(), role.0.into()],
        )
        .map(AclId)
        .map_err(|e| match e {
            Error::Conflict { .. } => {
                Error::conflict("role_id", "This role already has an ACL on the object.")
            }
            e => e,
        })
    }

    /// Adds or removes a permission of an ACL; returns whether anything changed.
    pub fn set_acl_permission(
        &mut self,
        acl: AclId,
        permission: &str,
        granted: bool,
    ) -> Result<bool> {
        let n = if granted {
            self.execute(
                "INSERT INTO acl_permissions (acl_id, permission) \
                 VALUES (?1, ?2) \
                 ON CONFLICT DO NOTHING",
                &[acl.0.into(), permission.into()],
            )?
        } else {
            self.execute(
                "DELETE FROM acl_permissions WHERE acl_id = ?1 AND permission = ?2",
                &[acl.0.into(), permission.into()],
            )?
        };
        Ok(n > 0)
    }

    /// Deletes an ACL.
    pub fn delete_acl(&mut self, acl: AclId) -> Result<()> {
        self.execute(
            "DELETE FROM acl_permissions WHERE acl_id = ?1",
            &[acl.0.into()],
        )?;
        self.execute("DELETE FROM acls WHERE id = ?1", &[acl.0.into()])
            .map(drop)
    }

    /// Deletes every ACL of an object (the object is being deleted); returns their ids.
    pub fn delete_acls_of(&mut self, kind: &str, object_id: i64) -> Result<Vec<AclId>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2",
            &[kind.into(), object_id.into()],
            |r| r.int(0),
        )?;
        for id in &ids {
            self.delete_acl(AclId(*id))?;
        }
        Ok(id_list(ids))
    }

    // ----- application object links -----------------------------------------------------

    /// Replaces the parents an application object inherits ACLs from.
    /// Whether the application declared the object `kind`/`id` with `set_object_parents`, as
    /// the object or as one of its parents.
    pub fn object_declared(&mut self, kind: &str, id: i64) -> Result<bool> {
        Ok(self
            .optional(
                "SELECT 1 \
                 FROM object_parents \
                 WHERE (object_kind = ?1 AND object_id = ?2) \
                     OR (parent_kind = ?1 AND parent_id = ?2) LIMIT 1",
                &[kind.into(), id.into()],
                |r| r.int(0),
            )?
            .is_some())
    }

    pub fn set_object_parents(
        &mut self,
        kind: &str,
        id: i64,
        parents: &[(String, i64)],
    ) -> Result<()> {
        self.execute(
            "DELETE FROM object_parents WHERE object_kind = ?1 AND object_id = ?2",
            &[kind.into(), id.into()],
        )?;
        for (pk, pid) in parents {
            self.execute(
                "INSERT INTO object_parents (object_kind, object_id, parent_kind, parent_id) \
                 VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT DO NOTHING",
                &[kind.into(), id.into(), pk.as_str().into(), (*pid).into()],
            )?;
        }
        Ok(())
    }
}
