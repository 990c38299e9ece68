//! Users, groups, roles, global permissions, object kinds and object ACLs (spec 2.11, 5), and
//! explanations of access decisions. An ACL is answered with its role ([`AclView`]), and a
//! change to a group or a role with the group or role as the change left it.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::{Session, event_object, obj, rename_conflict, view_permission};
use crate::access::password::{dummy_verify, hash_password, verify_password};
use crate::access::{ObjectKind, ObjectRef, Permission as P, Permission, PermissionSet};
use crate::error::{Error, Result};
use crate::events::{EventObject, names};
use crate::kernel::{AccessChange, Docmeta};
use crate::model::*;
use crate::store::Tx;
use crate::store::records::AclRow;

const USER: &str = "user_management.user";
const GROUP: &str = "user_management.group";
const ROLE: &str = "permissions.role";

fn role_ref(id: RoleId) -> ObjectRef {
    obj(ObjectKind::ROLE, id.0)
}

/// Role `id`, read in `tx` whatever the session may view (for an answer it is owed).
fn role_of(tx: &mut Tx<'_>, id: RoleId) -> Result<Role> {
    tx.roles()?
        .into_iter()
        .find(|(r, _)| *r == id)
        .map(Role::from)
        .ok_or_else(|| Error::not_found(format!("role {id}")))
}

/// Group `id`, read in `tx` whatever the session may view (for an answer it is owed).
fn group_of(tx: &mut Tx<'_>, id: GroupId) -> Result<Group> {
    tx.groups()?
        .into_iter()
        .find(|(g, _)| *g == id)
        .map(Group::from)
        .ok_or_else(|| Error::not_found(format!("group {id}")))
}

/// An ACL read for `object`, with its role.
fn acl_view(tx: &mut Tx<'_>, row: AclRow, object: ObjectRef) -> Result<AclView> {
    let role = role_of(tx, row.role_id)?;
    Ok(AclView {
        acl: Acl::of(row, object),
        role,
    })
}

fn check_username(username: &str) -> Result<()> {
    crate::model::check_no_nul("username", username)?;
    let ok = !username.is_empty()
        && username.chars().count() <= 150
        && username
            .chars()
            .all(|c| c.is_alphanumeric() || "@.+-_".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::validation(
            "username",
            "Use 1 to 150 letters, digits and @/./+/-/_ characters.",
        ))
    }
}

/// Longest group name or role label.
const MAX_NAME_LEN: usize = 150;

fn check_name(field: &str, name: &str) -> Result<()> {
    crate::model::check_text(field, name, MAX_NAME_LEN).map(drop)
}

impl Docmeta {
    /// The username of a user, for display (event actors); `None` when the user is gone.
    pub fn username(&self, id: UserId) -> Result<Option<String>> {
        Ok(self.read(|tx| tx.user(id))?.map(|u| u.username))
    }

    /// Checks a username and password; returns the active user they belong to. Unknown users
    /// cost the same time as known ones, so timing does not reveal which usernames exist.
    pub fn authenticate(&self, username: &str, password: &str) -> Result<Option<User>> {
        // No user has a NUL in their name (refused on creation); asking the store would be an
        // error, not a failed login.
        let user = if username.contains('\0') {
            None
        } else {
            self.read(|tx| tx.user_by_username(username))?
        };
        let cfg = self.config();
        match user {
            Some(u) if verify_password(password, &u.password_hash) && u.is_active => {
                Ok(Some(u.into()))
            }
            Some(_) => Ok(None),
            None => {
                dummy_verify(
                    password,
                    cfg.password_hash_memory_kib,
                    cfg.password_hash_iterations,
                );
                Ok(None)
            }
        }
    }
}

impl Session {
    fn hash(&self, password: &str) -> Result<String> {
        let cfg = self.db.config();
        hash_password(
            password,
            cfg.password_hash_memory_kib,
            cfg.password_hash_iterations,
        )
    }

    fn object_label(&self, tx: &mut Tx<'_>, object: ObjectRef) -> Result<Option<String>> {
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

    // ----- object kinds ----------------------------------------------------------------------

    /// The object `id` of the kind `app_label.model_name`; `NotFound` for an unknown kind.
    pub fn object_ref(&self, app_label: &str, model_name: &str, id: i64) -> Result<ObjectRef> {
        let kind = self.object_kind(app_label, model_name)?;
        Ok(ObjectRef::new(kind, id))
    }

    /// Parses `app_label.model_name` into a registered object kind (`InvalidInput` otherwise).
    pub fn parse_kind(&self, text: &str) -> Result<ObjectKind> {
        self.db.parse_kind(text)
    }

    /// The kind `app_label.model_name`; `NotFound` when no such kind is registered.
    pub fn object_kind(&self, app_label: &str, model_name: &str) -> Result<ObjectKind> {
        self.db
            .kinds()
            .find(app_label, model_name)
            .ok_or_else(|| Error::not_found(format!("kind {app_label}.{model_name}")))
    }

    /// The permissions an ACL on objects of `kind` may hold, in key order.
    pub fn grantable_permissions(&self, kind: ObjectKind) -> Vec<Permission> {
        self.db.kinds().grantable(kind).iter().collect()
    }

    /// Why `user` may or may not do `permission` on `object`. Needs `acls.acl_view` on the
    /// object; about oneself, viewing the object is enough (an object one may not view is not
    /// found, as one that does not exist: the answer would name its parents and grants).
    pub fn explain(
        &self,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> Result<crate::access::Explanation> {
        if self.actor != Actor::User(user) || !self.can(P::AclView, object) {
            let needed = if self.actor == Actor::User(user) {
                super::view_permission(object.kind)
            } else {
                P::AclView
            };
            self.require(needed, object, "the object")?;
        }
        Ok(self.db.explain(user, permission, object))
    }

    // ----- users -----------------------------------------------------------------------------

    /// Creates a user. Needs `user_management.user_create`; only a superuser creates superusers.
    pub fn create_user(&self, username: &str, password: &str, superuser: bool) -> Result<User> {
        self.require_global(P::UserCreate)?;
        if superuser && !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only a superuser may create a superuser".into(),
            ));
        }
        check_username(username)?;
        let hash = self.hash(password)?;
        self.write(|u| {
            let user = u.tx.insert_user(username, &hash, superuser).map_err(|e| {
                rename_conflict(e, "username", "A user with that username already exists.")
            })?;
            u.access.push(AccessChange::User {
                id: user.id,
                superuser,
                active: true,
            });
            u.event(
                names::USER_EDITED,
                event_object(USER, user.id.0, username),
                None,
                user_changes(None, Some(&user)),
            )?;
            Ok(user.into())
        })
    }

    /// Whether this session may view user `id`: itself, or `user_management.user_view`
    /// globally. The one rule for users, their names in events and their membership lists.
    pub(crate) fn may_view_user(&self, id: UserId) -> bool {
        self.actor == Actor::User(id) || self.can_globally(P::UserView)
    }

    /// One user. Needs `user_management.user_view`, or being that user.
    pub fn user(&self, id: UserId) -> Result<User> {
        if !self.may_view_user(id) {
            return Err(Error::not_found(format!("user {id}")));
        }
        self.read(|tx| tx.user(id))?
            .map(User::from)
            .ok_or_else(|| Error::not_found(format!("user {id}")))
    }

    /// The users this session may view.
    pub fn users(&self) -> Result<Vec<User>> {
        let all = self.read(|tx| tx.users())?;
        Ok(all
            .into_iter()
            .filter(|u| self.may_view_user(u.id))
            .map(User::from)
            .collect())
    }

    /// Changes a user (spec 5.4 `user_management.user_edit`). The rules, all checked before
    /// anything is written:
    /// - a user may set their own password without any permission;
    /// - every other change (another user's password, any username or activity) needs
    ///   `user_management.user_edit` globally;
    /// - changing another user needs holding everything that user holds: each global
    ///   permission of each of their roles globally, each permission of their roles' ACLs on
    ///   that ACL's object (whether or not they are active: reactivating them gives it back).
    ///   `user_edit` must not be a way to take over an account stronger than its holder's
    ///   (reset its password, then log in as it);
    /// - only a superuser may change superuser status, and only a superuser may change a
    ///   superuser at all (password, name, activity).
    ///
    /// A new username whose key (its case-folded confusable skeleton, Unicode Technical
    /// Standard 39) equals another user's is a `Conflict` on `username`.
    pub fn update_user(&self, id: UserId, update: UserUpdate) -> Result<User> {
        let own = self.actor == Actor::User(id);
        if !own && !self.may_view_user(id) {
            return Err(Error::not_found(format!("user {id}")));
        }
        if let Some(name) = &update.username {
            check_username(name)?;
        }
        let only_own_password = own
            && update.username.is_none()
            && update.is_superuser.is_none()
            && update.is_active.is_none();
        if !only_own_password {
            self.require_global(P::UserEdit)?;
        }
        if update.is_superuser.is_some() && !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only a superuser may change superuser status".into(),
            ));
        }
        // Argon2 takes tens of milliseconds: never inside the write transaction.
        let hash = update
            .password
            .as_deref()
            .map(|p| self.hash(p))
            .transpose()?;
        self.write(|u| {
            let mut user =
                u.tx.user(id)?
                    .ok_or_else(|| Error::not_found(format!("user {id}")))?;
            if user.is_superuser && !self.is_superuser() {
                return Err(Error::PermissionDenied(
                    "only a superuser may change a superuser".into(),
                ));
            }
            if !own {
                self.require_holds_user(&mut u.tx, id)?;
            }
            let before = user.clone();
            user.username = update.username.clone().unwrap_or(user.username);
            user.is_superuser = update.is_superuser.unwrap_or(user.is_superuser);
            user.is_active = update.is_active.unwrap_or(user.is_active);
            if let Some(hash) = &hash {
                user.password_hash = hash.clone();
            }
            u.tx.update_user(&user).map_err(|e| {
                rename_conflict(e, "username", "A user with that username already exists.")
            })?;
            u.access.push(AccessChange::User {
                id,
                superuser: user.is_superuser,
                active: user.is_active,
            });
            u.event(
                names::USER_EDITED,
                event_object(USER, id.0, &user.username),
                None,
                user_changes(Some(&before), Some(&user)),
            )?;
            Ok(user.into())
        })
    }

    /// Sets a user's password: [`update_user`](Self::update_user) with only a password (a user
    /// may set their own; another's needs `user_management.user_edit` and holding everything
    /// that user holds, and a superuser's only a superuser).
    pub fn set_password(&self, id: UserId, password: &str) -> Result<()> {
        self.update_user(
            id,
            UserUpdate {
                password: Some(password.to_owned()),
                ..UserUpdate::default()
            },
        )
        .map(|_| ())
    }

    /// Deletes a user. Needs `user_management.user_delete` and holding everything that user
    /// holds (see [`update_user`](Self::update_user)); a superuser only a superuser.
    pub fn delete_user(&self, id: UserId) -> Result<()> {
        self.write(|u| {
            // A user that does not exist is a 404 for everyone, a user the caller may not see
            // too; only then is the missing permission a 403.
            let user =
                u.tx.user(id)?
                    .filter(|_| self.may_view_user(id))
                    .ok_or_else(|| Error::not_found(format!("user {id}")))?;
            self.require_global(P::UserDelete)?;
            if user.is_superuser && !self.is_superuser() {
                return Err(Error::PermissionDenied(
                    "only a superuser may delete a superuser".into(),
                ));
            }
            self.require_holds_user(&mut u.tx, id)?;
            u.tx.delete_user(id)?;
            u.access.push(AccessChange::UserRemoved(id));
            u.event(
                names::USER_EDITED,
                event_object(USER, id.0, &user.username),
                None,
                user_changes(Some(&user), None),
            )
        })
    }

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

    /// Refuses unless this session holds everything `user` holds: everything each role of
    /// each of their groups grants (see [`require_holds_role`](Self::require_holds_role)).
    /// Nobody acts on a principal stronger than themselves.
    pub(super) fn require_holds_user(&self, tx: &mut Tx<'_>, user: UserId) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        for role in tx.roles_of_user(user)? {
            self.require_holds(tx, role, &format!("user {user} holds"))?;
        }
        Ok(())
    }

    /// Refuses unless this session holds everything the roles of `group` grant.
    fn require_holds_group(&self, tx: &mut Tx<'_>, group: GroupId) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        for role in tx.roles_of_group(group)? {
            self.require_holds(tx, role, &format!("group {group} holds"))?;
        }
        Ok(())
    }

    /// Refuses unless this session holds everything `role` grants: each of its global
    /// permissions globally and each permission of its ACLs on that ACL's object. Linking the
    /// role to a group, or a user to a group holding the role, must never give anyone more than
    /// the actor holds; unlinking, renaming or deleting it must never take from anyone what
    /// the actor does not hold.
    fn require_holds_role(&self, tx: &mut Tx<'_>, role: RoleId) -> Result<()> {
        self.require_holds(tx, role, &format!("role {role} grants"))
    }

    /// [`require_holds_role`](Self::require_holds_role), its refusal starting with `subject`
    /// ("user 4 holds", "role 2 grants").
    fn require_holds(&self, tx: &mut Tx<'_>, role: RoleId, subject: &str) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        let refuse = |what: String| {
            Err(Error::PermissionDenied(format!(
                "{subject} {what}, which you do not hold"
            )))
        };
        for key in tx.role_permissions(role)? {
            match Permission::from_key(&key) {
                Ok(p) if self.can_globally(p) => {}
                _ => return refuse(format!("'{key}' globally")),
            }
        }
        let kinds = self.db.kinds();
        for acl in tx.acls_of_role(role)? {
            let Ok(kind) = kinds.parse(&acl.object_kind) else {
                return refuse(format!("permissions on {}", acl.object_kind));
            };
            let object = obj(kind, acl.object_id);
            for key in &acl.permissions {
                match Permission::from_key(key) {
                    Ok(p) if self.can_in(tx, p, object) => {}
                    // An object the actor may not view is not named (no existence probe).
                    _ if self.can_in(tx, view_permission(kind), object) => {
                        return refuse(format!("'{key}' on {} {}", acl.object_kind, acl.object_id));
                    }
                    _ => return refuse("permissions on an object you may not view".into()),
                }
            }
        }
        Ok(())
    }

    /// The label of a role this session may view. Unknown and invisible roles give the same
    /// validation error on `field`, so a reference in a request cannot probe for existence.
    fn visible_role_label(&self, tx: &mut Tx<'_>, role: RoleId, field: &str) -> Result<String> {
        tx.roles()?
            .into_iter()
            .find(|(r, _)| *r == role)
            .filter(|_| self.can(P::RoleView, role_ref(role)))
            .map(|(_, l)| l)
            .ok_or_else(|| Error::validation(field, format!("Role {role} does not exist.")))
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

/// A set of permission keys as an event records it: sorted, joined with commas.
fn keys_text(keys: &[String]) -> String {
    let mut keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.join(",")
}

/// What changed of a user between `before` and `after` (`None`: not created yet, or deleted):
/// its username, superuser status and activity. Never its password.
fn user_changes(
    before: Option<&crate::store::records::UserRow>,
    after: Option<&crate::store::records::UserRow>,
) -> Changes {
    Changes::new()
        .set(
            "username",
            before.map(|u| &u.username),
            after.map(|u| &u.username),
        )
        .set(
            "is_superuser",
            before.map(|u| u.is_superuser),
            after.map(|u| u.is_superuser),
        )
        .set(
            "is_active",
            before.map(|u| u.is_active),
            after.map(|u| u.is_active),
        )
}

fn role_label(tx: &mut Tx<'_>, role: RoleId) -> Result<String> {
    Ok(tx
        .roles()?
        .into_iter()
        .find(|(r, _)| *r == role)
        .map(|(_, l)| l)
        .unwrap_or_default())
}

/// The set of the known keys among `keys` (unknown keys from a newer version are ignored).
pub(crate) fn permission_set(keys: Vec<String>) -> PermissionSet {
    keys.iter()
        .filter_map(|k| Permission::from_key(k).ok())
        .collect()
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

/// Races on PostgreSQL, where two processes' units of work run at once (on SQLite one writer
/// at a time makes them impossible): a unit paused while another process commits.
#[cfg(all(test, feature = "postgres"))]
mod postgres_races {
    use std::sync::mpsc;

    use crate::access::ObjectKind;
    use crate::model::Actor;
    use crate::{Config, Docmeta, Permission, PostgresStore, UserId};

    use super::*;

    /// Three handles on a new database (the third to read it afresh), or `None` without
    /// `DOCMETA_TEST_POSTGRES_URL`.
    #[allow(clippy::type_complexity)]
    fn handles(name: &str) -> Option<([Docmeta; 3], [tempfile::TempDir; 3])> {
        let Some(base) = std::env::var("DOCMETA_TEST_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            let required = std::env::var("DOCMETA_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set"
            );
            eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
            return None;
        };
        let url = crate::store::postgres::fresh_test_database(
            &base,
            &format!("docmeta_race_{name}_{}", std::process::id()),
        );
        let dirs = [(); 3].map(|()| tempfile::tempdir().expect("a temporary directory"));
        let open = |dir: &tempfile::TempDir| {
            Docmeta::builder()
                .config(Config {
                    password_hash_memory_kib: 64,
                    password_hash_iterations: 1,
                    ..Config::default()
                })
                .data_dir(dir.path())
                .worker(false)
                .store(PostgresStore::open(&url).expect("open"))
                .open()
                .expect("open")
        };
        Some((dirs.each_ref().map(open), dirs))
    }

    /// Bob, in a role holding `held` on a new document: the role, the document.
    fn bob_with(db: &Docmeta, held: Permission) -> (UserId, RoleId, ObjectRef) {
        let admin = db.system();
        let bob = admin
            .create_user("bob", "a long password", false)
            .expect("the race's step")
            .id;
        let group = admin.create_group("Lawyers").expect("the race's step").id;
        let role = admin.create_role("Lawyer").expect("the race's step").id;
        admin
            .set_group_member(group, bob, true)
            .expect("the race's step");
        admin
            .set_role_group(role, group, true)
            .expect("the race's step");
        let memo = admin
            .create_document_type("Memo")
            .expect("the race's step")
            .id;
        let doc = admin
            .create_document(memo, "Note", &[])
            .expect("the race's step")
            .document
            .id;
        let doc = ObjectRef::new(ObjectKind::DOCUMENT, doc.0);
        admin.grant(held, role, doc).expect("the race's step");
        (bob, role, doc)
    }

    /// Runs `change` in a unit of `a` that pauses before it commits while `b` commits `other`
    /// and `a` catches up with it; then lets the unit commit.
    fn paused_while(
        a: &Docmeta,
        change: impl Fn(&Session, &mut crate::kernel::Unit<'_>) -> Result<()> + Send + Sync,
        other: impl FnOnce(),
    ) {
        let (paused, wait) = mpsc::channel();
        let (resume, resumed) = mpsc::channel::<()>();
        let resumed = std::sync::Mutex::new(resumed);
        std::thread::scope(|s| {
            let unit = s.spawn(|| {
                let admin = a.system();
                let mut first = true;
                a.write(Actor::System, |u| {
                    change(&admin, u)?;
                    if std::mem::take(&mut first) {
                        paused.send(()).expect("the race's step");
                        resumed
                            .lock()
                            .expect("the race's step")
                            .recv()
                            .expect("the race's step");
                    }
                    Ok(())
                })
            });
            wait.recv().expect("the race's step");
            other();
            a.catch_up().expect("the race's step");
            resume.send(()).expect("the race's step");
            unit.join()
                .expect("the race's step")
                .expect("the race's step");
        });
    }

    /// A revocation that changes nothing, paused while another process grants on the same
    /// ACL, must not put the ACL as it read it over the grant (it did: the user lost the
    /// document in that process until the ACL changed again).
    #[test]
    fn a_revocation_that_changes_nothing_does_not_undo_a_concurrent_grant() {
        let Some(([a, b, _], _dirs)) = handles("noop_revoke") else {
            return;
        };
        let (bob, role, doc) = bob_with(&a, Permission::DocumentEdit);
        paused_while(
            &a,
            |admin, u| {
                admin
                    .revoke_in(u, Permission::DocumentMetadataView, role, doc)
                    .map(drop)
            },
            || {
                b.system()
                    .grant(Permission::DocumentView, role, doc)
                    .expect("the race's step");
            },
        );
        assert!(
            b.check(bob, Permission::DocumentView, doc),
            "the other process"
        );
        assert!(a.check(bob, Permission::DocumentView, doc), "this process");
    }

    /// The mirror: a grant that changes nothing, paused while another process revokes, must
    /// not bring the revoked permission back in this process.
    #[test]
    fn a_grant_that_changes_nothing_does_not_undo_a_concurrent_revocation() {
        let Some(([a, b, _], _dirs)) = handles("noop_grant") else {
            return;
        };
        let (bob, role, doc) = bob_with(&a, Permission::DocumentView);
        a.system()
            .grant(Permission::DocumentEdit, role, doc)
            .expect("the race's step");
        paused_while(
            &a,
            |admin, u| {
                admin
                    .grant_in(u, Permission::DocumentEdit, role, doc)
                    .map(drop)
            },
            || {
                b.system()
                    .revoke(Permission::DocumentView, role, doc)
                    .expect("the race's step");
            },
        );
        assert!(
            !b.check(bob, Permission::DocumentView, doc),
            "the other process"
        );
        assert!(!a.check(bob, Permission::DocumentView, doc), "this process");
    }

    /// One change of what a user may do, as the race below makes it.
    #[derive(Debug, Clone, Copy)]
    enum Change {
        Grant(Permission),
        Revoke(Permission),
        Member(bool),
        Assigned(bool),
        Global(bool),
    }

    const CHANGES: [Change; 10] = [
        Change::Grant(Permission::DocumentView),
        Change::Revoke(Permission::DocumentView),
        Change::Grant(Permission::DocumentEdit),
        Change::Revoke(Permission::DocumentEdit),
        Change::Member(true),
        Change::Member(false),
        Change::Assigned(true),
        Change::Assigned(false),
        Change::Global(true),
        Change::Global(false),
    ];

    /// A user in a group given a role, and a document the role has an ACL on: what one case
    /// of the race changes.
    struct Case {
        user: UserId,
        group: crate::GroupId,
        role: RoleId,
        doc: ObjectRef,
    }

    impl Case {
        /// A new case starting from the state in the bits of `state` (the ACL's two
        /// permissions, the membership, the role's group, the role's global permission).
        fn new(db: &Docmeta, n: usize, state: u32) -> Case {
            let (admin, step) = (db.system(), "the case's set-up");
            let user = admin.create_user(&format!("u{n}"), "a long password", false);
            let case = Case {
                user: user.expect(step).id,
                group: admin.create_group(&format!("g{n}")).expect(step).id,
                role: admin.create_role(&format!("r{n}")).expect(step).id,
                doc: {
                    let memo = admin.create_document_type(&format!("t{n}")).expect(step);
                    let doc = admin.create_document(memo.id, "d", &[]).expect(step);
                    ObjectRef::new(ObjectKind::DOCUMENT, doc.document.id.0)
                },
            };
            let view = state & 1 != 0;
            // At least one permission, so that the ACL exists.
            let edit = state & 2 != 0 || !view;
            for (on, p) in [
                (view, Permission::DocumentView),
                (edit, Permission::DocumentEdit),
            ] {
                if on {
                    admin.grant(p, case.role, case.doc).expect(step);
                }
            }
            let (member, assigned) = (state & 4 != 0, state & 8 != 0);
            admin
                .set_group_member(case.group, case.user, member)
                .expect(step);
            admin
                .set_role_group(case.role, case.group, assigned)
                .expect(step);
            if state & 16 != 0 {
                admin
                    .grant_global(Permission::DocumentView, case.role)
                    .expect(step);
            }
            case
        }

        fn run(&self, admin: &Session, u: &mut crate::kernel::Unit<'_>, c: Change) -> Result<()> {
            let (role, group) = (self.role, self.group);
            match c {
                Change::Grant(p) => admin.grant_in(u, p, role, self.doc).map(drop),
                Change::Revoke(p) => admin.revoke_in(u, p, role, self.doc).map(drop),
                Change::Member(m) => admin.set_group_member_in(u, group, self.user, m).map(drop),
                Change::Assigned(a) => admin.set_role_group_in(u, role, group, a).map(drop),
                Change::Global(g) => admin.set_global_in(u, Permission::DocumentView, role, g),
            }
        }

        /// What `db` answers about the case's user on the case's document.
        fn answers(&self, db: &Docmeta) -> [bool; 2] {
            [Permission::DocumentView, Permission::DocumentEdit]
                .map(|p| db.check(self.user, p, self.doc))
        }
    }

    /// The test that looks for the next door of the class above: for every ordered pair of
    /// changes to one user's access (an ACL's permissions, a membership, a role's group, a
    /// global permission; each of which may change nothing), the first runs in process A and
    /// pauses before its commit while process B commits the second and A catches up. Then A
    /// and B must answer what a process that reads the database afresh answers.
    #[test]
    fn every_pair_of_concurrent_access_changes_leaves_each_process_with_the_database_s_answer() {
        let Some(([a, b, fresh], _dirs)) = handles("pairs") else {
            return;
        };
        let mut wrong = Vec::new();
        let mut n = 0;
        for first in CHANGES {
            for second in CHANGES {
                for base in [0b00111, 0b11010] {
                    n += 1;
                    let state = (base + 5 * n as u32) % 32;
                    let case = Case::new(&a, n, state);
                    race(&a, &b, |admin, u, p| case.run(admin, u, [first, second][p]));
                    fresh.reload_access().expect("a fresh read");
                    let truth = case.answers(&fresh);
                    for (process, db) in [("A", &a), ("B", &b)] {
                        let got = case.answers(db);
                        if got != truth {
                            wrong.push(format!(
                                "{first:?} in A paused while {second:?} in B, from state \
                                 {state:05b}: {process} answers view/edit {got:?}, the database \
                                 {truth:?}"
                            ));
                        }
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "{} of {n} cases: {wrong:#?}", wrong.len());
    }

    /// Runs `change(.., 0)` in a unit of `a` that pauses before its commit while `b` runs
    /// `change(.., 1)` (on a thread of its own: it may wait for a row A's unit holds) and `a`
    /// catches up; then lets A's unit commit.
    fn race(
        a: &Docmeta,
        b: &Docmeta,
        change: impl Fn(&Session, &mut crate::kernel::Unit<'_>, usize) -> Result<()> + Sync,
    ) {
        let step = "the race's step";
        let (paused, wait) = mpsc::channel();
        let (resume, resumed) = mpsc::channel::<()>();
        let resumed = std::sync::Mutex::new(resumed);
        let (done, finished) = mpsc::channel();
        std::thread::scope(|s| {
            let change = &change;
            let first = s.spawn(move || {
                let admin = a.system();
                let mut pause = true;
                a.write(Actor::System, |u| {
                    change(&admin, u, 0)?;
                    if std::mem::take(&mut pause) {
                        paused.send(()).expect(step);
                        resumed.lock().expect(step).recv().expect(step);
                    }
                    Ok(())
                })
            });
            // A change that fails before its pause (none should) lets the race go on.
            let _ = wait.recv();
            let second = s.spawn(move || {
                let admin = b.system();
                let ran = b.write(Actor::System, |u| change(&admin, u, 1));
                let _ = done.send(());
                ran
            });
            let _ = finished.recv_timeout(std::time::Duration::from_millis(300));
            a.catch_up().expect(step);
            let _ = resume.send(());
            first.join().expect(step).expect("A's change");
            second.join().expect(step).expect("B's change");
        });
    }
}
