//! Users, groups, roles, ACLs, object references and the explanation of an access decision.

use docmeta_core as core;
use docmeta_core::KindRegistry;

/// One object: its kind (`app_label.model_name`, e.g. `documents.document`) and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Record)]
pub struct ObjectRef {
    /// `app_label.model_name`.
    pub kind: String,
    /// The object's id within its kind.
    pub id: i64,
}

impl ObjectRef {
    /// The record of a core reference, its kind named by `kinds`.
    pub(crate) fn of(o: core::ObjectRef, kinds: &KindRegistry) -> ObjectRef {
        ObjectRef {
            kind: kinds.name(o.kind),
            id: o.id,
        }
    }

    /// The core reference, its kind looked up in `kinds`.
    pub(crate) fn to_core(&self, kinds: &KindRegistry) -> crate::errors::Result<core::ObjectRef> {
        Ok(core::ObjectRef::new(kinds.parse(&self.kind)?, self.id))
    }
}

/// An object kind docmeta knows: its own or one an application registered.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ObjectKindInfo {
    /// `app_label.model_name`.
    pub name: String,
    /// The kinds it inherits ACLs from.
    pub parents: Vec<String>,
    /// The permissions about objects of this kind (keys).
    pub permissions: Vec<String>,
    /// Whether the application told docmeta how to check an object exists.
    pub checks_existence: bool,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct User {
    /// Identifier.
    pub id: i64,
    /// Username.
    pub username: String,
    /// Superuser.
    pub is_superuser: bool,
    /// Active.
    pub is_active: bool,
}

impl From<core::User> for User {
    fn from(u: core::User) -> Self {
        User {
            id: u.id.0,
            username: u.username,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        }
    }
}

/// Changes to a user: each given field replaces the stored one.
#[derive(Clone, Default, uniffi::Record)]
pub struct UserUpdate {
    /// A new username.
    #[uniffi(default = None)]
    pub username: Option<String>,
    /// A new password (hashed; never stored in clear).
    #[uniffi(default = None)]
    pub password: Option<String>,
    /// Grant or remove superuser status (only a superuser may).
    #[uniffi(default = None)]
    pub is_superuser: Option<bool>,
    /// Activate or deactivate the user.
    #[uniffi(default = None)]
    pub is_active: Option<bool>,
}

impl From<UserUpdate> for core::UserUpdate {
    fn from(u: UserUpdate) -> Self {
        core::UserUpdate {
            username: u.username,
            password: u.password,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        }
    }
}

/// A group of users (the core's `Group`; `Group` would collide with SwiftUI's).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct UserGroup {
    /// Identifier.
    pub id: i64,
    /// Unique name.
    pub name: String,
}

impl From<core::Group> for UserGroup {
    fn from(g: core::Group) -> Self {
        UserGroup {
            id: g.id.0,
            name: g.name,
        }
    }
}

/// A role: what groups are given, and what ACLs and global permissions name.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Role {
    /// Identifier.
    pub id: i64,
    /// Unique label.
    pub label: String,
}

impl From<core::Role> for Role {
    fn from(r: core::Role) -> Self {
        Role {
            id: r.id.0,
            label: r.label,
        }
    }
}

/// An access control list: the permissions a role holds on one object (spec 4.4).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Acl {
    /// Identifier.
    pub id: i64,
    /// Its role.
    pub role: Role,
    /// The object it is on (`target`: `object` is a Kotlin keyword).
    pub target: ObjectRef,
    /// The permissions it holds (keys).
    pub permissions: Vec<String>,
}

impl Acl {
    /// The record of a core ACL with its role.
    pub(crate) fn of(v: core::AclView, kinds: &KindRegistry) -> Acl {
        Acl {
            id: v.acl.id.0,
            role: v.role.into(),
            target: ObjectRef::of(v.acl.object, kinds),
            permissions: keys(v.acl.permissions.iter()),
        }
    }
}

/// Permission keys.
pub(crate) fn keys(permissions: impl IntoIterator<Item = core::Permission>) -> Vec<String> {
    permissions
        .into_iter()
        .map(|p| p.key().to_owned())
        .collect()
}

/// Something that grants a permission.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum Grant {
    /// The actor is docmeta itself (tools, tasks, workflows).
    System,
    /// The user is a superuser.
    Superuser,
    /// A role of the user holds the permission globally.
    Global {
        /// The role holding the permission.
        role: i64,
        /// The group through which the user has the role.
        group: i64,
    },
    /// An ACL grants it to a role of the user.
    Acl {
        /// The ACL.
        acl: i64,
        /// Its role.
        role: i64,
        /// The object the ACL is on.
        target: ObjectRef,
        /// The inheritance path from the checked object to `object` (both included).
        path: Vec<ObjectRef>,
    },
}

impl Grant {
    fn of(g: core::Grant, kinds: &KindRegistry) -> Grant {
        match g {
            core::Grant::System => Grant::System,
            core::Grant::Superuser => Grant::Superuser,
            core::Grant::Global { role, group } => Grant::Global {
                role: role.0,
                group: group.0,
            },
            core::Grant::Acl {
                acl,
                role,
                object,
                path,
            } => Grant::Acl {
                acl: acl.0,
                role: role.0,
                target: ObjectRef::of(object, kinds),
                path: path.into_iter().map(|o| ObjectRef::of(o, kinds)).collect(),
            },
        }
    }
}

/// Why a user may or may not do something on an object.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Explanation {
    /// The decision.
    pub granted: bool,
    /// The grant that decides (the one a check finds first); `None` when refused.
    pub grant: Option<Grant>,
    /// Every other grant that applies as well: access stays while any of them remains.
    pub also: Vec<Grant>,
    /// The objects whose ACLs were consulted, in order.
    pub checked: Vec<ObjectRef>,
    /// Why the user was refused outright (unknown or inactive user), if so.
    pub note: Option<String>,
    /// The decision in one sentence, for people.
    pub sentence: String,
}

impl Explanation {
    /// The record of a core explanation, its kinds named by `kinds`.
    pub(crate) fn of(e: core::Explanation, kinds: &KindRegistry) -> Explanation {
        let sentence = e.describe(kinds);
        Explanation {
            granted: e.grant.is_some(),
            grant: e.grant.map(|g| Grant::of(g, kinds)),
            also: e.also.into_iter().map(|g| Grant::of(g, kinds)).collect(),
            checked: e
                .checked
                .into_iter()
                .map(|o| ObjectRef::of(o, kinds))
                .collect(),
            note: e.note,
            sentence,
        }
    }
}
