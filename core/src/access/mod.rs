//! Access control (spec 2.11, 5): the permission registry, object kinds and their inheritance,
//! and the evaluator.

pub mod inheritance;
pub mod password;
pub mod permission;
pub mod policy;

pub use inheritance::{KindInfo, KindRegistry, ObjectKind, ObjectRef, STORED_PARENT_KINDS};
pub use permission::{Permission, PermissionSet};
pub use policy::{
    AccessSnapshot, DocumentVisibility, Explanation, Grant, KnownParents, ParentSource,
    SnapshotOnly,
};
