//! The public records of users, groups, roles, ACLs, cabinets and tasks: typed, and without anything a
//! caller must never see (no password hash). The store's rows (`UserRow`, `AclRow`, `TaskRow`)
//! are converted into them by the store.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::{AclId, CabinetId, GroupId, ObjectRef, PermissionSet, RoleId, TaskId, UserId};

/// A user, as a session shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Identifier.
    pub id: UserId,
    /// Unique login name.
    pub username: String,
    /// Bypasses every permission check.
    pub is_superuser: bool,
    /// Inactive users are refused everything.
    pub is_active: bool,
}

/// A group of users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Identifier.
    pub id: GroupId,
    /// Unique name.
    pub name: String,
}

impl From<(GroupId, String)> for Group {
    fn from((id, name): (GroupId, String)) -> Self {
        Group { id, name }
    }
}

/// A role: what groups are given, and what ACLs and global permissions name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// Identifier.
    pub id: RoleId,
    /// Unique label.
    pub label: String,
}

impl From<(RoleId, String)> for Role {
    fn from((id, label): (RoleId, String)) -> Self {
        Role { id, label }
    }
}

/// An access control list: the permissions a role holds on one object (spec 4.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    /// Identifier.
    pub id: AclId,
    /// The role that holds the permissions.
    pub role_id: RoleId,
    /// The object they are held on.
    pub object: ObjectRef,
    /// The permissions (keys unknown to this version are left out).
    pub permissions: PermissionSet,
}

/// Where a durable background task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Waiting to run (or to run again after a failed attempt).
    Pending,
    /// Claimed by a worker.
    Running,
    /// Finished.
    Done,
    /// Given up after its last attempt.
    Failed,
}

impl TaskState {
    /// The stored name: `pending`, `running`, `done` or `failed`.
    pub fn key(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Running => "running",
            TaskState::Done => "done",
            TaskState::Failed => "failed",
        }
    }

    /// The state of a stored name.
    pub fn from_key(key: &str) -> Option<TaskState> {
        match key {
            "pending" => Some(TaskState::Pending),
            "running" => Some(TaskState::Running),
            "done" => Some(TaskState::Done),
            "failed" => Some(TaskState::Failed),
            _ => None,
        }
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// A durable background task (spec 2.4 lifecycle rules, workflow triggers ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Identifier.
    pub id: TaskId,
    /// Task name, e.g. `task_add_required_metadata_type`.
    pub name: String,
    /// JSON arguments.
    pub payload: String,
    /// Where it is.
    pub state: TaskState,
    /// How many times it was tried.
    pub attempts: i64,
    /// The last error.
    pub error: String,
    /// The id of the search index it must run on (a search task handed to an index's writer,
    /// a restore's rebuild); `None` when any worker may run it.
    pub target: Option<String>,
}

/// A cabinet (a node of a tree of document folders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cabinet {
    /// Identifier.
    pub id: CabinetId,
    /// Label.
    pub label: String,
    /// Parent cabinet, `None` for a root (level 0).
    pub parent_id: Option<CabinetId>,
}
