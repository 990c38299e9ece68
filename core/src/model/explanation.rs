//! The answer to "why may (or may not) this user do this here?": the grant that decides and
//! the others that apply. The access evaluator (`access`) makes them and describes them.

use super::{AclId, GroupId, ObjectRef, RoleId};

/// Why a permission is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// The actor is docmeta itself (tools, tasks, workflows).
    System,
    /// The user is a superuser.
    Superuser,
    /// A role of the user holds the permission globally.
    Global {
        /// The role holding the permission.
        role: RoleId,
        /// The group through which the user has the role.
        group: GroupId,
    },
    /// An ACL grants it to a role of the user.
    Acl {
        /// The ACL.
        acl: AclId,
        /// Its role.
        role: RoleId,
        /// The object the ACL is on.
        object: ObjectRef,
        /// The inheritance path from the checked object to `object` (both included).
        path: Vec<ObjectRef>,
    },
}

/// The answer of `explain` (of `Docmeta` and `Session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The grant that decides (the one a check finds first), or `None` when access is refused.
    pub grant: Option<Grant>,
    /// Every other grant that applies as well: access stays while any of them remains.
    pub also: Vec<Grant>,
    /// The objects whose ACLs were consulted, in order.
    pub checked: Vec<ObjectRef>,
    /// Why the user was refused outright (unknown or inactive user), if so.
    pub note: Option<String>,
}
