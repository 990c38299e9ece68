//! Roles, the groups they are given to, and global permissions. A change to a role is
//! answered with the role as the change left it.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::access::{GROUP, ROLE, check_name, keys_text, permission_set, role_of, role_ref};
use super::{Session, event_object, rename_conflict};
use crate::access::{Permission as P, Permission};
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::AccessChange;
use crate::model::*;
use crate::store::Tx;

impl Session {
    // ----- roles -----------------------------------------------------------------------------

    /// Creates a role, answered with it. Needs `permissions.role_create`.
    pub fn create_role(&self, label: &str) -> Result<Role> {
        self.require_global(P::RoleCreate)?;
        self.write(|u| {
            let id = self.create_role_in(u, label)?;
            role_of(&mut u.tx, id)
        })
    }

    pub(crate) fn create_role_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        label: &str,
    ) -> Result<RoleId> {
        check_name("label", label)?;
        let id = u
            .tx
            .insert_role(label.trim())
            .map_err(|e| rename_conflict(e, "label", "A role with that label already exists."))?;
        u.event(
            names::ROLE_EDITED,
            event_object(ROLE, id.0, label),
            None,
            Changes::new().created("label", label.trim()),
        )?;
        Ok(id)
    }

    /// Every role this session may view.
    pub fn roles(&self) -> Result<Vec<Role>> {
        let all = self.read(|tx| tx.roles())?;
        Ok(self
            .visible(P::RoleView, all, |(id, _)| role_ref(*id))
            .into_iter()
            .map(Role::from)
            .collect())
    }

    pub(crate) fn load_role(
        &self,
        tx: &mut Tx<'_>,
        id: RoleId,
        permission: Permission,
    ) -> Result<String> {
        let what = format!("role {id}");
        let label = tx
            .roles()?
            .into_iter()
            .find(|(r, _)| *r == id)
            .map(|(_, l)| l)
            .ok_or_else(|| Error::not_found(&what))?;
        self.require(permission, role_ref(id), what)?;
        Ok(label)
    }

    /// One role. Needs `permissions.role_view`.
    pub fn role(&self, id: RoleId) -> Result<Role> {
        let label = self.read(|tx| self.load_role(tx, id, P::RoleView))?;
        Ok(Role { id, label })
    }

    /// Renames a role. Needs `permissions.role_edit` on it and holding everything it grants.
    /// Answers the role: allowed to edit is enough to be shown it (`permissions.role_edit`
    /// without `permissions.role_view`).
    pub fn rename_role(&self, id: RoleId, label: &str) -> Result<Role> {
        check_name("label", label)?;
        self.write(|u| {
            let before = self.load_role(&mut u.tx, id, P::RoleEdit)?;
            self.require_holds_role(&mut u.tx, id)?;
            u.tx.update_role(id, label.trim()).map_err(|e| {
                rename_conflict(e, "label", "A role with that label already exists.")
            })?;
            u.event(
                names::ROLE_EDITED,
                event_object(ROLE, id.0, label),
                None,
                Changes::new().edited("label", before, label.trim()),
            )?;
            role_of(&mut u.tx, id)
        })
    }

    /// Deletes a role with its global permissions and ACLs. Needs `permissions.role_delete` on
    /// it and holding everything it grants (everyone holding it loses it).
    pub fn delete_role(&self, id: RoleId) -> Result<()> {
        self.write(|u| {
            let label = self.load_role(&mut u.tx, id, P::RoleDelete)?;
            self.require_holds_role(&mut u.tx, id)?;
            u.tx.delete_role(id)?;
            u.forget_object(ROLE, role_ref(id))?;
            u.access.push(AccessChange::RoleRemoved(id));
            u.event(
                names::ROLE_EDITED,
                event_object(ROLE, id.0, &label),
                None,
                Changes::new().removed("label", &label),
            )
        })
    }

    /// Assigns (`true`) or removes a role from a group. Needs `permissions.role_edit` on the
    /// role, seeing the group (`user_management.group_view`) and holding everything the role
    /// grants (its members gain it, or lose it: see [`set_group_member`](Self::set_group_member)).
    /// Answers the role (shown to whoever may edit it).
    pub fn set_role_group(&self, role: RoleId, group: GroupId, assigned: bool) -> Result<Role> {
        self.write(|u| self.set_role_group_in(u, role, group, assigned))
    }

    pub(crate) fn set_role_group_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        role: RoleId,
        group: GroupId,
        assigned: bool,
    ) -> Result<Role> {
        {
            let label = self.load_role(&mut u.tx, role, P::RoleEdit)?;
            // Unknown and invisible groups answer alike: no existence probe.
            let group_name =
                u.tx.groups()?
                    .into_iter()
                    .find(|(g, _)| *g == group)
                    .filter(|_| self.can_globally(P::GroupView))
                    .map(|(_, n)| n)
                    .ok_or_else(|| {
                        Error::validation("group_id", format!("Group {group} does not exist."))
                    })?;
            self.require_holds_role(&mut u.tx, role)?;
            if u.tx.set_role_group(role, group, assigned)? {
                u.access.push(AccessChange::RoleGroup {
                    role,
                    group,
                    assigned,
                });
                u.event(
                    names::ROLE_EDITED,
                    event_object(ROLE, role.0, &label),
                    Some(event_object(GROUP, group.0, &group_name)),
                    Changes::new().edited("assigned", !assigned, assigned),
                )?;
            }
            role_of(&mut u.tx, role)
        }
    }

    /// A page of the groups a role is assigned to that this session may see
    /// (`user_management.group_view`). Needs `permissions.role_view`.
    pub fn role_groups(&self, role: RoleId, page: PageRequest) -> Result<Page<Group>> {
        let groups = self.read(|tx| {
            self.load_role(tx, role, P::RoleView)?;
            if !self.can_globally(P::GroupView) {
                return Ok(Vec::new());
            }
            let ids = tx.groups_of_role(role)?;
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let names: std::collections::HashMap<GroupId, String> =
                tx.groups()?.into_iter().collect();
            Ok(ids
                .into_iter()
                .filter_map(|id| {
                    names.get(&id).map(|name| Group {
                        id,
                        name: name.clone(),
                    })
                })
                .collect())
        })?;
        Ok(Page::of(groups, page))
    }

    /// Grants a permission to a role globally (on every object). Needs `permissions.role_edit`
    /// globally (an ACL on one role is not enough: a global grant reaches every object) and
    /// holding `permission` globally: nobody grants more than they hold.
    pub fn grant_global(&self, permission: Permission, role: RoleId) -> Result<()> {
        self.set_global(permission, role, true)
    }

    /// Revokes a global permission of a role. Needs what [`grant_global`](Self::grant_global)
    /// needs.
    pub fn revoke_global(&self, permission: Permission, role: RoleId) -> Result<()> {
        self.set_global(permission, role, false)
    }

    fn set_global(&self, permission: Permission, role: RoleId, granted: bool) -> Result<()> {
        self.write(|u| self.set_global_in(u, permission, role, granted))
    }

    pub(crate) fn set_global_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        permission: Permission,
        role: RoleId,
        granted: bool,
    ) -> Result<()> {
        let label = self.load_role(&mut u.tx, role, P::RoleEdit)?;
        self.require_global(P::RoleEdit)?;
        if !self.can_globally(permission) {
            return Err(Error::PermissionDenied(format!(
                "'{}' can only be granted or revoked globally by someone who holds it globally",
                permission.key()
            )));
        }
        let before = u.tx.role_permissions(role)?;
        if u.tx.set_role_permission(role, permission.key(), granted)? {
            let after = u.tx.role_permissions(role)?;
            let changes =
                Changes::new().edited("permissions", keys_text(&before), keys_text(&after));
            u.access.push(AccessChange::RolePermissions {
                role,
                permissions: permission_set(after),
            });
            u.event(
                names::ROLE_EDITED,
                event_object(ROLE, role.0, &label),
                None,
                changes,
            )?;
        }
        Ok(())
    }

    /// A page of a role's global permissions, in the order of [`Permission::ALL`]. Needs
    /// `permissions.role_view`.
    pub fn role_permissions(&self, role: RoleId, page: PageRequest) -> Result<Page<Permission>> {
        let keys = self.read(|tx| {
            self.load_role(tx, role, P::RoleView)?;
            tx.role_permissions(role)
        })?;
        Ok(Page::of(permission_set(keys).iter().collect(), page))
    }

    /// Grants (`true`) or revokes a global permission of a role, answered with the role's global
    /// permissions (shown to whoever may change them). Needs what
    /// [`grant_global`](Self::grant_global) needs.
    pub fn set_role_permission(
        &self,
        role: RoleId,
        permission: Permission,
        granted: bool,
    ) -> Result<Vec<Permission>> {
        self.write(|u| {
            self.set_global_in(u, permission, role, granted)?;
            Ok(permission_set(u.tx.role_permissions(role)?)
                .iter()
                .collect())
        })
    }
}
