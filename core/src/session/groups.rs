//! Groups and their members. A change to a group is answered with the group as the change
//! left it.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::access::{GROUP, USER, check_name};
use super::{Session, event_object, rename_conflict};
use crate::access::{Permission as P, Permission};
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::AccessChange;
use crate::model::*;
use crate::store::Tx;

/// Group `id`, read in `tx` whatever the session may view (for an answer it is owed).
fn group_of(tx: &mut Tx<'_>, id: GroupId) -> Result<Group> {
    tx.groups()?
        .into_iter()
        .find(|(g, _)| *g == id)
        .map(Group::from)
        .ok_or_else(|| Error::not_found(format!("group {id}")))
}

impl Session {
    // ----- groups ----------------------------------------------------------------------------

    /// Creates a group, answered with it: allowed to create is enough to be shown what was
    /// created (`user_management.group_create` without `user_management.group_view`). Needs
    /// `user_management.group_create`.
    pub fn create_group(&self, name: &str) -> Result<Group> {
        self.require_global(P::GroupCreate)?;
        check_name("name", name)?;
        self.write(|u| {
            let id = u.tx.insert_group(name.trim()).map_err(|e| {
                rename_conflict(e, "name", "A group with that name already exists.")
            })?;
            u.event(
                names::GROUP_EDITED,
                event_object(GROUP, id.0, name),
                None,
                Changes::new().created("name", name.trim()),
            )?;
            group_of(&mut u.tx, id)
        })
    }

    /// Every group. Needs `user_management.group_view`.
    pub fn groups(&self) -> Result<Vec<Group>> {
        if !self.can_globally(P::GroupView) {
            return Ok(Vec::new());
        }
        Ok(self
            .read(|tx| tx.groups())?
            .into_iter()
            .map(Group::from)
            .collect())
    }

    /// One group. Needs `user_management.group_view`.
    pub fn group(&self, id: GroupId) -> Result<Group> {
        let name = self.read(|tx| self.load_group(tx, id, P::GroupView))?;
        Ok(Group { id, name })
    }

    pub(crate) fn load_group(
        &self,
        tx: &mut Tx<'_>,
        id: GroupId,
        permission: Permission,
    ) -> Result<String> {
        let name = tx
            .groups()?
            .into_iter()
            .find(|(g, _)| *g == id)
            .map(|(_, n)| n);
        let what = format!("group {id}");
        let name = name
            .filter(|_| self.can_globally(P::GroupView))
            .ok_or_else(|| Error::not_found(&what))?;
        self.require_global(permission)?;
        Ok(name)
    }

    /// Renames a group. Needs `user_management.group_edit` and holding everything the group's
    /// roles grant (nobody acts on a principal stronger than themselves: renaming the
    /// administrators' group could mislead whoever adds members to it). Answers the group.
    pub fn rename_group(&self, id: GroupId, name: &str) -> Result<Group> {
        check_name("name", name)?;
        self.write(|u| {
            let before = self.load_group(&mut u.tx, id, P::GroupEdit)?;
            self.require_holds_group(&mut u.tx, id)?;
            u.tx.update_group(id, name.trim()).map_err(|e| {
                rename_conflict(e, "name", "A group with that name already exists.")
            })?;
            u.event(
                names::GROUP_EDITED,
                event_object(GROUP, id.0, name),
                None,
                Changes::new().edited("name", before, name.trim()),
            )?;
            group_of(&mut u.tx, id)
        })
    }

    /// Deletes a group. Needs `user_management.group_delete` and holding everything the group's
    /// roles grant (its members lose them).
    pub fn delete_group(&self, id: GroupId) -> Result<()> {
        self.write(|u| {
            let name = self.load_group(&mut u.tx, id, P::GroupDelete)?;
            self.require_holds_group(&mut u.tx, id)?;
            u.tx.delete_group(id)?;
            u.access.push(AccessChange::GroupRemoved(id));
            u.event(
                names::GROUP_EDITED,
                event_object(GROUP, id.0, &name),
                None,
                Changes::new().removed("name", &name),
            )
        })
    }

    /// Adds (`true`) or removes a user from a group. Needs `user_management.group_edit`, seeing
    /// the user, and holding everything the group's roles grant: a member gains them, so
    /// `group_edit` must not hand anyone, the editor included, more than the editor holds; and
    /// a member removed loses them, so it must not strip anyone of authority the editor does
    /// not hold either (emptying the administrators' group).
    ///
    /// Answers the group: the change was the caller's to make, so the answer shows the group
    /// even when the caller just left the group that let them see it.
    pub fn set_group_member(&self, group: GroupId, user: UserId, member: bool) -> Result<Group> {
        self.write(|u| self.set_group_member_in(u, group, user, member))
    }

    pub(crate) fn set_group_member_in(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        group: GroupId,
        user: UserId,
        member: bool,
    ) -> Result<Group> {
        {
            let name = self.load_group(&mut u.tx, group, P::GroupEdit)?;
            // Unknown and invisible users answer alike: no existence probe.
            let username =
                u.tx.user(user)?
                    .filter(|_| self.may_view_user(user))
                    .ok_or_else(|| {
                        Error::validation("user_id", format!("User {user} does not exist."))
                    })?
                    .username;
            self.require_holds_group(&mut u.tx, group)?;
            if u.tx.set_group_member(group, user, member)? {
                u.access.push(AccessChange::Membership {
                    group,
                    user,
                    member,
                });
                u.event(
                    names::GROUP_EDITED,
                    event_object(GROUP, group.0, &name),
                    Some(event_object(USER, user.0, &username)),
                    Changes::new().edited("member", !member, member),
                )?;
            }
            group_of(&mut u.tx, group)
        }
    }

    /// A page of the members of a group that the session may view (itself, or every user with
    /// `user_management.user_view`). Needs `user_management.group_view`. (The HTTP route used
    /// to drop the others itself, so Python saw every member; found by the session access
    /// matrix.)
    pub fn group_members(&self, group: GroupId, page: PageRequest) -> Result<Page<User>> {
        let members = self.read(|tx| {
            self.load_group(tx, group, P::GroupView)?;
            tx.group_members(group)
        })?;
        let members: Vec<UserId> = members
            .into_iter()
            .filter(|u| self.may_view_user(*u))
            .collect();
        let count = members.len();
        let users = self.read(|tx| {
            let mut users = Vec::with_capacity(page.range(count).len());
            for id in &members[page.range(count)] {
                // A user deleted since the members were read is left out of the page.
                users.extend(tx.user(*id)?.map(User::from));
            }
            Ok(users)
        })?;
        Ok(Page {
            count,
            items: users,
        })
    }
}
