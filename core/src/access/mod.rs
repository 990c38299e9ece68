//! Access control (spec 2.11, 5): the permission registry, object kinds and their inheritance,
//! and the evaluator.
//!
//! Layer 4 (with `metadata` and `files`): imports only `error` and `model`; it never reads the
//! store itself (the kernel loads the snapshot, and hands it parent links).

pub mod inheritance;
pub mod password;
pub mod permission;
pub mod policy;

pub use inheritance::{KindInfo, KindRegistry, ObjectKind, ObjectRef};
pub use permission::{Permission, PermissionSet};
pub use policy::{AccessSnapshot, DocumentVisibility, Explanation, Grant};
