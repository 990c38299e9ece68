//! Access control (spec 2.11, 5): the permission registry, object kinds and their inheritance,
//! and the one evaluator of spec 5.2-5.3 ([`AccessSnapshot::check_with`] and its `filter` and
//! `explain` siblings), which every caller (`Docmeta::check`, `Session::can`, the session's
//! operations) goes through.
//!
//! Owns: permissions, kinds, the snapshot of grants and parent links, the evaluator, password
//! hashing. May import `model` and `error` only: the links it does not hold (files, metadata
//! values, workflow instances and log entries) it asks of a [`ParentSource`] that the caller
//! passes (the store's transaction implements it), never of `store`, `session` or `Docmeta`.
//!
//! Layer 4 (with `metadata` and `files`) of `scripts/check-structure`.

pub mod inheritance;
pub mod password;
pub mod policy;

pub use crate::model::{Explanation, ObjectKind, ObjectRef, Permission, PermissionSet};
pub use inheritance::{ExistenceCheck, KindInfo, KindRegistry, STORED_KINDS, STORED_PARENT_KINDS};
pub use policy::{AccessSnapshot, DocumentVisibility, KnownParents, ParentSource, SnapshotOnly};
