//! Access control as the handle offers it: whether a user may do something on an object
//! (checked, filtered and explained against the access snapshot, with the stored parent links
//! it needs read first), the object kinds applications register, and the parent links of
//! their objects.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use super::{AccessChange, Docmeta};
use crate::access::{Explanation, KnownParents, ObjectKind, ObjectRef, ParentSource, Permission};
use crate::error::{Error, Result};
use crate::events::EventObject;
use crate::model::*;

impl Docmeta {
    /// Whether `user` may do `permission` on `object` (the evaluator of `access::policy`),
    /// with every change committed before the call applied (see [`catch_up`](Self::catch_up));
    /// a catch-up that fails refuses.
    pub fn check(&self, user: UserId, permission: Permission, object: ObjectRef) -> bool {
        self.catch_up().is_ok() && self.check_now(user, permission, object)
    }

    /// [`check`](Self::check) on the state this process holds now, for an operation that
    /// caught up when it began.
    pub(crate) fn check_now(
        &self,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> bool {
        let mut stored = self.stored_ancestors(&[object]);
        self.inner
            .access
            .read()
            .check_with(&mut stored, user, permission, object)
    }

    /// The subset of `objects` on which `user` may do `permission` (after a
    /// [`catch_up`](Self::catch_up); none when it fails).
    pub fn filter(
        &self,
        user: UserId,
        permission: Permission,
        objects: &[ObjectRef],
    ) -> Vec<ObjectRef> {
        if self.catch_up().is_err() {
            return Vec::new();
        }
        let mut stored = self.stored_ancestors(objects);
        self.inner
            .access
            .read()
            .filter_with(&mut stored, user, permission, objects)
    }

    /// Why `user` may or may not do `permission` on `object`, with every change committed
    /// before the call applied (a catch-up that fails is ignored: the explanation is then of
    /// the state this process holds).
    pub fn explain(&self, user: UserId, permission: Permission, object: ObjectRef) -> Explanation {
        let _ = self.catch_up();
        let mut stored = self.stored_ancestors(&[object]);
        self.inner
            .access
            .read()
            .explain_with(&mut stored, user, permission, object)
    }

    /// The stored links of spec 5.3 (see [`crate::access::STORED_PARENT_KINDS`]) of `objects` and of their
    /// ancestors, read in one transaction before the snapshot is locked, so that no store read
    /// happens under the snapshot's lock. Reads nothing when no object needs them.
    fn stored_ancestors(&self, objects: &[ObjectRef]) -> KnownParents {
        let mut known = KnownParents::default();
        if !objects
            .iter()
            .any(|o| crate::access::STORED_PARENT_KINDS.contains(&o.kind))
        {
            return known;
        }
        let needed: Vec<ObjectRef> = {
            let snapshot = self.inner.access.read();
            objects
                .iter()
                .copied()
                .filter(|o| snapshot.needs_stored_parents(*o))
                .collect()
        };
        if needed.is_empty() {
            return known;
        }
        let read = self.read(|tx| {
            let mut next = needed;
            while let Some(object) = next.pop() {
                if known.contains(object) {
                    continue;
                }
                let parents = tx.stored_parents(object);
                next.extend(
                    parents
                        .iter()
                        .copied()
                        .filter(|p| self.inner.access.read().needs_stored_parents(*p)),
                );
                known.insert(object, parents);
            }
            Ok(())
        });
        // An unreadable link inherits nothing (refuse unless granted), as the evaluator does.
        drop(read);
        known
    }

    /// Registers an application object kind after opening (see [`KindRegistry::register`]).
    ///
    /// [`KindRegistry::register`]: crate::access::KindRegistry::register
    pub fn register_kind(
        &self,
        app_label: &str,
        model_name: &str,
        parents: &[ObjectKind],
        own: &[Permission],
    ) -> Result<ObjectKind> {
        self.inner
            .kinds
            .write()
            .register(app_label, model_name, parents, own)
    }

    /// Gives an application kind its existence check (see [`KindRegistry::set_existence`]):
    /// an ACL on an object the check denies is refused as not found. Without one, an object of
    /// an application kind exists once declared with [`Docmeta::set_object_parents`].
    ///
    /// [`KindRegistry::set_existence`]: crate::access::KindRegistry::set_existence
    pub fn set_kind_existence(
        &self,
        kind: ObjectKind,
        exists: impl Fn(i64) -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        self.inner.kinds.write().set_existence(kind, exists)
    }

    /// Records the objects an application object inherits ACLs from (spec 5.3 for kinds that
    /// docmeta does not store: versions, comments, sources, tags, index nodes...).
    pub fn set_object_parents(&self, object: ObjectRef, parents: &[ObjectRef]) -> Result<()> {
        if [
            ObjectKind::DOCUMENT,
            ObjectKind::DOCUMENT_TYPE,
            ObjectKind::METADATA_TYPE,
            ObjectKind::CABINET,
            ObjectKind::ROLE,
        ]
        .contains(&object.kind)
        {
            return Err(Error::InvalidInput(format!(
                "docmeta keeps the links of {} itself",
                self.kinds().name(object.kind)
            )));
        }
        let kinds = self.inner.kinds.read().clone();
        let names: Vec<(String, i64)> =
            parents.iter().map(|p| (kinds.name(p.kind), p.id)).collect();
        self.write(Actor::System, |u| {
            u.tx.set_object_parents(&kinds.name(object.kind), object.id, &names)?;
            // Followed by every other process on the database (see `follow`).
            u.event(
                crate::events::names::OBJECT_PARENTS_SET,
                EventObject {
                    kind: kinds.name(object.kind),
                    id: object.id,
                    label: String::new(),
                },
                None,
                Changes::new(),
            )?;
            u.access.push(AccessChange::Parents {
                object,
                parents: parents.to_vec(),
            });
            Ok(())
        })
    }
}
