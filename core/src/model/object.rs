//! The objects ACLs are held on: a kind and an id (spec 5.3). The kinds docmeta knows, and what
//! each inherits from, are `access`'s registry.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use std::fmt;

/// A kind of object that can hold ACLs (`documents.document`, `cabinets.cabinet`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKind(pub(crate) u16);

/// One object: its kind and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: ObjectKind,
    /// The object's id within its kind.
    pub id: i64,
}

impl ObjectRef {
    /// The object `id` of `kind`.
    pub fn new(kind: ObjectKind, id: impl Into<i64>) -> Self {
        ObjectRef {
            kind,
            id: id.into(),
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kind#{}", self.0)
    }
}
