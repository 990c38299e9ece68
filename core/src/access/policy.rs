//! The access evaluator (spec 5.2-5.3): superuser, then global role permissions, then the ACLs
//! of the object and of every object it inherits from. There is no deny: refuse unless granted.
//!
//! It answers from an in-memory [`AccessSnapshot`] of users, groups, roles, ACLs and parent
//! links, which the writer updates in place right after each commit (a few hash-map updates),
//! so it is never stale for the next call. The parent links of the kinds that are too many to
//! hold in memory ([`STORED_PARENT_KINDS`]: files, metadata values, workflow instances and their
//! log entries) come from a [`ParentSource`] the caller passes: the store read in the caller's
//! transaction, or the links of a record the caller has already loaded. This is the only
//! evaluator of spec 5.3: `Docmeta::check`, `Session::can` and the session's operations all
//! call it.
//!
//! Imports: `model`, `error` and the rest of `access` only; never `store`, `session` or the
//! `Docmeta` handle (they implement [`ParentSource`] instead).

use rustc_hash::{FxHashMap, FxHashSet};

use super::inheritance::STORED_PARENT_KINDS;
use crate::model::{AclId, Explanation, Grant, GroupId, RoleId, UserId};
use crate::model::{ObjectKind, ObjectRef};
use crate::model::{Permission, PermissionSet};

/// Longest chain of parent links followed (guards against cycles in application-set links).
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, Default)]
struct UserAccess {
    superuser: bool,
    active: bool,
    groups: Vec<GroupId>,
    /// Sorted, for binary search.
    roles: Vec<RoleId>,
    global: PermissionSet,
}

/// One ACL as the evaluator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AclEntry {
    acl: AclId,
    role: RoleId,
    permissions: PermissionSet,
}

/// The evaluator's in-memory picture of every grant and parent link.
#[derive(Debug, Clone, Default)]
pub struct AccessSnapshot {
    users: FxHashMap<UserId, UserAccess>,
    group_members: FxHashMap<GroupId, Vec<UserId>>,
    group_roles: FxHashMap<GroupId, Vec<RoleId>>,
    role_groups: FxHashMap<RoleId, Vec<GroupId>>,
    role_global: FxHashMap<RoleId, PermissionSet>,
    acls: FxHashMap<ObjectRef, Vec<AclEntry>>,
    parents: FxHashMap<ObjectRef, Vec<ObjectRef>>,
    /// How many documents each document type has (from the documents' parent links), so that
    /// a list can count what a user may see without visiting every document.
    documents_of_type: FxHashMap<i64, usize>,
}

/// Where the evaluator learns the parent links that the snapshot does not hold: those of the
/// kinds in [`STORED_PARENT_KINDS`], for objects the application gave no links of its own.
pub trait ParentSource {
    /// The objects `object` inherits from, one level up, as stored (spec 5.3); empty when it
    /// has none or they cannot be read (then nothing is inherited: there is no deny, so a
    /// missing link can only refuse).
    fn stored_parents(&mut self, object: ObjectRef) -> Vec<ObjectRef>;
}

/// No stored links: the evaluator answers from the snapshot's links alone (right for every
/// kind outside [`STORED_PARENT_KINDS`], and for callers that hold no transaction).
#[derive(Debug, Clone, Copy, Default)]
pub struct SnapshotOnly;

impl ParentSource for SnapshotOnly {
    fn stored_parents(&mut self, _object: ObjectRef) -> Vec<ObjectRef> {
        Vec::new()
    }
}

/// Links already read: those of a record the caller holds (a file and its document), or those
/// fetched before the snapshot was locked. Objects it does not list have no stored links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownParents(FxHashMap<ObjectRef, Vec<ObjectRef>>);

impl KnownParents {
    /// `object` inherits from `parents`.
    pub fn of(object: ObjectRef, parents: Vec<ObjectRef>) -> Self {
        let mut known = KnownParents::default();
        known.insert(object, parents);
        known
    }

    /// Adds (or replaces) the links of `object`.
    pub fn insert(&mut self, object: ObjectRef, parents: Vec<ObjectRef>) {
        self.0.insert(object, parents);
    }

    /// Whether it lists `object`.
    pub fn contains(&self, object: ObjectRef) -> bool {
        self.0.contains_key(&object)
    }
}

impl ParentSource for KnownParents {
    fn stored_parents(&mut self, object: ObjectRef) -> Vec<ObjectRef> {
        self.0.get(&object).cloned().unwrap_or_default()
    }
}

/// See [`AccessSnapshot::document_visibility`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentVisibility {
    /// Every document.
    pub all: bool,
    /// Documents of these types.
    pub types: FxHashSet<i64>,
    /// These documents.
    pub documents: FxHashSet<i64>,
}

impl DocumentVisibility {
    /// Whether document `id` of type `document_type` is visible.
    #[inline]
    pub fn allows(&self, id: i64, document_type: i64) -> bool {
        self.all || self.types.contains(&document_type) || self.documents.contains(&id)
    }
}

impl Explanation {
    /// A sentence for people: which grant applies, or what was checked.
    pub fn describe(&self, kinds: &super::KindRegistry) -> String {
        let sentence = self.describe_decision(kinds);
        match self.also.len() {
            0 => sentence,
            1 => format!("{sentence}; 1 other grant also applies"),
            n => format!("{sentence}; {n} other grants also apply"),
        }
    }

    fn describe_decision(&self, kinds: &super::KindRegistry) -> String {
        let name = |o: &ObjectRef| format!("{} {}", kinds.name(o.kind), o.id);
        match (&self.grant, &self.note) {
            (_, Some(note)) => format!("refused: {note}"),
            (Some(Grant::System), _) => "granted: docmeta itself acts".to_owned(),
            (Some(Grant::Superuser), _) => "granted: the user is a superuser".to_owned(),
            (Some(Grant::Global { role, group }), _) => {
                format!("granted globally by role {role}, which the user has through group {group}")
            }
            (
                Some(Grant::Acl {
                    acl,
                    role,
                    object,
                    path,
                }),
                _,
            ) => {
                let via: Vec<String> = path.iter().map(name).collect();
                format!(
                    "granted by ACL {acl} of role {role} on {}, reached through {}",
                    name(object),
                    via.join(" -> ")
                )
            }
            (None, None) => {
                let checked: Vec<String> = self.checked.iter().map(name).collect();
                format!(
                    "refused: no global grant, and no ACL on {}",
                    checked.join(", ")
                )
            }
        }
    }
}

/// The document type among a document's parent links.
fn document_type_in(parents: &[ObjectRef]) -> Option<i64> {
    parents
        .iter()
        .find(|p| p.kind == ObjectKind::DOCUMENT_TYPE)
        .map(|p| p.id)
}

fn remove_item<T: PartialEq>(v: &mut Vec<T>, item: &T) {
    v.retain(|x| x != item);
}

impl AccessSnapshot {
    // ----- building and updating -------------------------------------------------------------

    /// Adds or updates a user.
    pub fn set_user(&mut self, user: UserId, superuser: bool, active: bool) {
        let u = self.users.entry(user).or_default();
        u.superuser = superuser;
        u.active = active;
    }

    /// Forgets a user.
    pub fn remove_user(&mut self, user: UserId) {
        if let Some(u) = self.users.remove(&user) {
            for g in u.groups {
                if let Some(m) = self.group_members.get_mut(&g) {
                    remove_item(m, &user);
                }
            }
        }
    }

    /// Adds or removes `user` from `group`.
    pub fn set_membership(&mut self, group: GroupId, user: UserId, member: bool) {
        let members = self.group_members.entry(group).or_default();
        let u = self.users.entry(user).or_default();
        remove_item(members, &user);
        remove_item(&mut u.groups, &group);
        if member {
            members.push(user);
            u.groups.push(group);
        }
        self.recompute_user(user);
    }

    /// Assigns `role` to `group` or removes it.
    pub fn set_role_group(&mut self, role: RoleId, group: GroupId, assigned: bool) {
        let roles = self.group_roles.entry(group).or_default();
        let groups = self.role_groups.entry(role).or_default();
        remove_item(roles, &role);
        remove_item(groups, &group);
        if assigned {
            roles.push(role);
            groups.push(group);
        }
        self.recompute_group(group);
    }

    /// Sets the global permissions of `role`.
    pub fn set_role_permissions(&mut self, role: RoleId, permissions: PermissionSet) {
        self.role_global.insert(role, permissions);
        for g in self.role_groups.get(&role).cloned().unwrap_or_default() {
            self.recompute_group(g);
        }
    }

    /// Forgets a role, its global permissions and its ACLs.
    pub fn remove_role(&mut self, role: RoleId) {
        self.role_global.remove(&role);
        let groups = self.role_groups.remove(&role).unwrap_or_default();
        for g in &groups {
            if let Some(r) = self.group_roles.get_mut(g) {
                remove_item(r, &role);
            }
        }
        self.acls.retain(|_, entries| {
            entries.retain(|e| e.role != role);
            !entries.is_empty()
        });
        for g in groups {
            self.recompute_group(g);
        }
    }

    /// Forgets a group and its memberships.
    pub fn remove_group(&mut self, group: GroupId) {
        let members = self.group_members.remove(&group).unwrap_or_default();
        for role in self.group_roles.remove(&group).unwrap_or_default() {
            if let Some(g) = self.role_groups.get_mut(&role) {
                remove_item(g, &group);
            }
        }
        for user in members {
            if let Some(u) = self.users.get_mut(&user) {
                remove_item(&mut u.groups, &group);
            }
            self.recompute_user(user);
        }
    }

    /// Sets the permissions of an ACL; an empty set removes the ACL.
    pub fn set_acl(
        &mut self,
        object: ObjectRef,
        acl: AclId,
        role: RoleId,
        permissions: PermissionSet,
    ) {
        let entries = self.acls.entry(object).or_default();
        entries.retain(|e| e.acl != acl);
        if !permissions.is_empty() {
            entries.push(AclEntry {
                acl,
                role,
                permissions,
            });
        }
        if entries.is_empty() {
            self.acls.remove(&object);
        }
    }

    /// Forgets every ACL on `object` (the object was deleted).
    pub fn remove_acls_of(&mut self, object: ObjectRef) {
        self.acls.remove(&object);
    }

    /// Sets the objects `object` inherits from (empty: none).
    pub fn set_parents(&mut self, object: ObjectRef, parents: Vec<ObjectRef>) {
        let old = if parents.is_empty() {
            self.parents.remove(&object)
        } else {
            self.parents.insert(object, parents)
        };
        if object.kind == ObjectKind::DOCUMENT {
            self.count_document(old.as_deref(), false);
            let new = self.parents.get(&object).cloned();
            self.count_document(new.as_deref(), true);
        }
    }

    /// Takes everything from `other` but the documents' parent links (and their counts per
    /// type), which stay: principals, roles, global grants, ACLs (on documents too), and the
    /// parent links of every other kind. For a process that follows another's changes: the
    /// documents are many and change one by one, the rest is small.
    pub fn replace_all_but_documents(&mut self, other: AccessSnapshot) {
        let AccessSnapshot {
            users,
            group_members,
            group_roles,
            role_groups,
            role_global,
            acls,
            parents,
            documents_of_type: _,
        } = other;
        self.users = users;
        self.group_members = group_members;
        self.group_roles = group_roles;
        self.role_groups = role_groups;
        self.role_global = role_global;
        self.acls = acls;
        self.parents.retain(|o, _| o.kind == ObjectKind::DOCUMENT);
        self.parents.extend(
            parents
                .into_iter()
                .filter(|(o, _)| o.kind != ObjectKind::DOCUMENT),
        );
    }

    /// Forgets an object: its parent links and its ACLs.
    pub fn remove_object(&mut self, object: ObjectRef) {
        let old = self.parents.remove(&object);
        if object.kind == ObjectKind::DOCUMENT {
            self.count_document(old.as_deref(), false);
        }
        self.acls.remove(&object);
    }

    /// Counts a document with parent links `parents` in (or out of) its type's count.
    fn count_document(&mut self, parents: Option<&[ObjectRef]>, add: bool) {
        let Some(t) = parents.and_then(document_type_in) else {
            return;
        };
        let n = self.documents_of_type.entry(t).or_default();
        if add {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.documents_of_type.remove(&t);
            }
        }
    }

    /// The type of document `id`, from its parent link (`None` for a document the snapshot
    /// does not know).
    pub fn document_type_of(&self, id: i64) -> Option<i64> {
        self.parents
            .get(&ObjectRef::new(ObjectKind::DOCUMENT, id))
            .and_then(|p| document_type_in(p))
    }

    /// How many documents `visible` allows, only those of type `of_type` when given: the
    /// documents of its types, counted per type, plus its single documents of other types. It
    /// costs the number of document types plus the number of single documents, never the
    /// number of documents; exact as [`document_visibility`](Self::document_visibility) is.
    pub fn count_documents(&self, visible: &DocumentVisibility, of_type: Option<i64>) -> usize {
        let wanted = |t: i64| of_type.is_none_or(|o| o == t);
        let by_type: usize = self
            .documents_of_type
            .iter()
            .filter(|(t, _)| wanted(**t) && (visible.all || visible.types.contains(*t)))
            .map(|(_, n)| *n)
            .sum();
        if visible.all {
            return by_type;
        }
        by_type
            + visible
                .documents
                .iter()
                .filter(|d| {
                    self.document_type_of(**d)
                        .is_some_and(|t| wanted(t) && !visible.types.contains(&t))
                })
                .count()
    }

    fn recompute_group(&mut self, group: GroupId) {
        for user in self.group_members.get(&group).cloned().unwrap_or_default() {
            self.recompute_user(user);
        }
    }

    fn recompute_user(&mut self, user: UserId) {
        let Some(u) = self.users.get(&user) else {
            return;
        };
        let mut roles: Vec<RoleId> = u
            .groups
            .iter()
            .filter_map(|g| self.group_roles.get(g))
            .flatten()
            .copied()
            .collect();
        roles.sort_unstable();
        roles.dedup();
        let global = roles
            .iter()
            .filter_map(|r| self.role_global.get(r))
            .fold(PermissionSet::EMPTY, |a, b| a.union(*b));
        if let Some(u) = self.users.get_mut(&user) {
            u.roles = roles;
            u.global = global;
        }
    }

    // ----- answering ------------------------------------------------------------------------

    fn user(&self, user: UserId) -> Option<&UserAccess> {
        self.users.get(&user).filter(|u| u.active)
    }

    /// Whether `user` is an active superuser.
    pub fn is_superuser(&self, user: UserId) -> bool {
        self.user(user).is_some_and(|u| u.superuser)
    }

    /// Whether `user` holds `permission` globally (superuser or a role).
    pub fn check_global(&self, user: UserId, permission: Permission) -> bool {
        self.user(user)
            .is_some_and(|u| u.superuser || u.global.contains(permission))
    }

    /// Whether an ACL on `object` itself grants `permission` to one of `u`'s roles.
    #[inline]
    fn acl_grants(
        &self,
        u: &UserAccess,
        permission: Permission,
        object: &ObjectRef,
    ) -> Option<&AclEntry> {
        self.acls
            .get(object)?
            .iter()
            .find(|e| e.permissions.contains(permission) && u.roles.binary_search(&e.role).is_ok())
    }

    /// The objects `object` inherits ACLs from, one level up: the snapshot's links, else (for
    /// the kinds whose links are stored) those `stored` gives. A cabinet inherits only from the
    /// root of its tree (spec 5.3: an ACL on a root cabinet covers all its sub-cabinets).
    fn inherited_from(&self, object: &ObjectRef, stored: &mut dyn ParentSource) -> Vec<ObjectRef> {
        if object.kind == ObjectKind::CABINET {
            let mut root = *object;
            for _ in 0..MAX_DEPTH {
                match self.parents.get(&root).and_then(|p| p.first()) {
                    Some(parent) => root = *parent,
                    None => break,
                }
            }
            return if root == *object {
                Vec::new()
            } else {
                vec![root]
            };
        }
        match self.parents.get(object) {
            Some(parents) => parents.clone(),
            None if STORED_PARENT_KINDS.contains(&object.kind) => stored.stored_parents(*object),
            None => Vec::new(),
        }
    }

    /// Whether the links of `object` must come from a [`ParentSource`]: its kind's links are
    /// stored and the application recorded none of its own (see [`STORED_PARENT_KINDS`]).
    pub fn needs_stored_parents(&self, object: ObjectRef) -> bool {
        STORED_PARENT_KINDS.contains(&object.kind) && !self.parents.contains_key(&object)
    }

    fn granted_on(
        &self,
        u: &UserAccess,
        permission: Permission,
        object: &ObjectRef,
        depth: usize,
        stored: &mut dyn ParentSource,
    ) -> bool {
        if self.acl_grants(u, permission, object).is_some() {
            return true;
        }
        if depth >= MAX_DEPTH {
            return false;
        }
        if object.kind == ObjectKind::CABINET {
            return self
                .inherited_from(object, stored)
                .iter()
                .any(|p| self.acl_grants(u, permission, p).is_some());
        }
        if let Some(parents) = self.parents.get(object) {
            return parents
                .iter()
                .any(|p| self.granted_on(u, permission, p, depth + 1, stored));
        }
        if STORED_PARENT_KINDS.contains(&object.kind) {
            return stored
                .stored_parents(*object)
                .iter()
                .any(|p| self.granted_on(u, permission, p, depth + 1, stored));
        }
        false
    }

    /// [`granted_on`](Self::granted_on) for a parent, remembered for the rest of one filter
    /// call (many documents share a type, many files a document).
    fn granted_on_memo(
        &self,
        memo: &mut FxHashMap<ObjectRef, bool>,
        u: &UserAccess,
        permission: Permission,
        parent: &ObjectRef,
        stored: &mut dyn ParentSource,
    ) -> bool {
        if let Some(granted) = memo.get(parent) {
            return *granted;
        }
        let granted = self.granted_on(u, permission, parent, 1, stored);
        memo.insert(*parent, granted);
        granted
    }

    /// Which documents `user` may do `permission` on, in a form cheap to test per search hit:
    /// every document, or those of the granted document types plus those with a granting ACL of
    /// their own. Exact because a document inherits from its document type only (docmeta keeps
    /// that link itself; see `Docmeta::set_object_parents`).
    pub fn document_visibility(&self, user: UserId, permission: Permission) -> DocumentVisibility {
        let mut v = DocumentVisibility::default();
        let Some(u) = self.user(user) else { return v };
        if u.superuser || u.global.contains(permission) {
            v.all = true;
            return v;
        }
        for (object, entries) in &self.acls {
            let set = match object.kind {
                ObjectKind::DOCUMENT_TYPE => &mut v.types,
                ObjectKind::DOCUMENT => &mut v.documents,
                _ => continue,
            };
            if entries.iter().any(|e| {
                e.permissions.contains(permission) && u.roles.binary_search(&e.role).is_ok()
            }) {
                set.insert(object.id);
            }
        }
        v
    }

    /// Whether the snapshot holds parent links for `object`.
    pub fn has_parents(&self, object: ObjectRef) -> bool {
        self.parents.contains_key(&object)
    }

    /// Whether `user` may do `permission` on `object` (spec 5.2), from the snapshot's links
    /// alone (see [`check_with`](Self::check_with)).
    pub fn check(&self, user: UserId, permission: Permission, object: ObjectRef) -> bool {
        self.check_with(&mut SnapshotOnly, user, permission, object)
    }

    /// [`check`](Self::check) on the document `document` as a document of `document_type`,
    /// whatever type the snapshot links it to: a document created or retyped in a transaction
    /// not yet committed is not linked (or still linked to its old type), and a check inside
    /// that transaction must use the type it has there. A document inherits from its type only.
    pub fn check_document(
        &self,
        user: UserId,
        permission: Permission,
        document: i64,
        document_type: i64,
    ) -> bool {
        let Some(u) = self.user(user) else {
            return false;
        };
        let doc = ObjectRef::new(ObjectKind::DOCUMENT, document);
        let dt = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, document_type);
        u.superuser
            || u.global.contains(permission)
            || self.acl_grants(u, permission, &doc).is_some()
            || self.granted_on(u, permission, &dt, 1, &mut SnapshotOnly)
    }

    /// Whether `user` may do `permission` on `object` (spec 5.2): superuser, a global grant,
    /// or an ACL on `object` or on an object it inherits from (spec 5.3), the links of the
    /// stored kinds coming from `stored`.
    pub fn check_with(
        &self,
        stored: &mut dyn ParentSource,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> bool {
        let Some(u) = self.user(user) else {
            return false;
        };
        u.superuser
            || u.global.contains(permission)
            || self.granted_on(u, permission, &object, 0, stored)
    }

    /// The subset of `objects` on which `user` may do `permission`, in the given order. Parents
    /// shared by many objects (a document type) are evaluated once per call.
    pub fn filter(
        &self,
        user: UserId,
        permission: Permission,
        objects: &[ObjectRef],
    ) -> Vec<ObjectRef> {
        self.filter_with(&mut SnapshotOnly, user, permission, objects)
    }

    /// Like [`filter`](Self::filter), the links of the stored kinds coming from `stored`.
    pub fn filter_with(
        &self,
        stored: &mut dyn ParentSource,
        user: UserId,
        permission: Permission,
        objects: &[ObjectRef],
    ) -> Vec<ObjectRef> {
        let mut keep = Vec::with_capacity(objects.len());
        self.filter_each_with(stored, user, permission, objects.iter().copied(), |o| {
            keep.push(o)
        });
        keep
    }

    /// Like [`filter`](Self::filter), calling `keep` for every permitted object of `objects`.
    pub fn filter_each(
        &self,
        user: UserId,
        permission: Permission,
        objects: impl IntoIterator<Item = ObjectRef>,
        keep: impl FnMut(ObjectRef),
    ) {
        self.filter_each_with(&mut SnapshotOnly, user, permission, objects, keep)
    }

    /// Like [`filter_each`](Self::filter_each), the links of the stored kinds coming from
    /// `stored`.
    pub fn filter_each_with(
        &self,
        stored: &mut dyn ParentSource,
        user: UserId,
        permission: Permission,
        objects: impl IntoIterator<Item = ObjectRef>,
        mut keep: impl FnMut(ObjectRef),
    ) {
        let Some(u) = self.user(user) else { return };
        if u.superuser || u.global.contains(permission) {
            objects.into_iter().for_each(keep);
            return;
        }
        let mut memo: FxHashMap<ObjectRef, bool> = FxHashMap::default();
        for object in objects {
            if self.acl_grants(u, permission, &object).is_some() {
                keep(object);
                continue;
            }
            let granted = if object.kind == ObjectKind::CABINET {
                self.granted_on(u, permission, &object, 0, stored)
            } else if let Some(parents) = self.parents.get(&object) {
                parents
                    .iter()
                    .any(|p| self.granted_on_memo(&mut memo, u, permission, p, stored))
            } else if STORED_PARENT_KINDS.contains(&object.kind) {
                stored
                    .stored_parents(object)
                    .iter()
                    .any(|p| self.granted_on_memo(&mut memo, u, permission, p, stored))
            } else {
                false
            };
            if granted {
                keep(object);
            }
        }
    }

    /// Says why `user` may or may not do `permission` on `object`, from the snapshot's links
    /// alone (see [`explain_with`](Self::explain_with)).
    pub fn explain(&self, user: UserId, permission: Permission, object: ObjectRef) -> Explanation {
        self.explain_with(&mut SnapshotOnly, user, permission, object)
    }

    /// Says why `user` may or may not do `permission` on `object`, the links of the stored
    /// kinds coming from `stored`: the same answer as [`check_with`](Self::check_with), with
    /// the grant and the path that leads to it.
    pub fn explain_with(
        &self,
        stored: &mut dyn ParentSource,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> Explanation {
        let mut checked = Vec::new();
        let Some(u) = self.users.get(&user) else {
            return Explanation {
                grant: None,
                also: Vec::new(),
                checked,
                note: Some("unknown user".into()),
            };
        };
        if !u.active {
            return Explanation {
                grant: None,
                also: Vec::new(),
                checked,
                note: Some("inactive user".into()),
            };
        }
        if u.superuser {
            return Explanation {
                grant: Some(Grant::Superuser),
                also: Vec::new(),
                checked,
                note: None,
            };
        }
        // Every grant that applies, the one `check_with` finds first in front: global grants,
        // then the ACLs breadth-first over the inheritance paths, remembering how each object
        // was reached.
        let mut grants = Vec::new();
        if u.global.contains(permission) {
            for g in &u.groups {
                for r in self.group_roles.get(g).into_iter().flatten() {
                    if self
                        .role_global
                        .get(r)
                        .is_some_and(|s| s.contains(permission))
                    {
                        grants.push(Grant::Global {
                            role: *r,
                            group: *g,
                        });
                    }
                }
            }
        }
        let mut queue = std::collections::VecDeque::from([vec![object]]);
        let mut seen = FxHashSet::default();
        while let Some(path) = queue.pop_front() {
            let Some(current) = path.last().copied() else {
                continue;
            };
            if !seen.insert(current) || path.len() > MAX_DEPTH {
                continue;
            }
            checked.push(current);
            for e in self.acls.get(&current).into_iter().flatten().filter(|e| {
                e.permissions.contains(permission) && u.roles.binary_search(&e.role).is_ok()
            }) {
                grants.push(Grant::Acl {
                    acl: e.acl,
                    role: e.role,
                    object: current,
                    path: path.clone(),
                });
            }
            if current.kind == ObjectKind::CABINET && path.len() > 1 {
                continue; // a root cabinet's own parents are not consulted.
            }
            for parent in self.inherited_from(&current, stored) {
                let mut next = path.clone();
                next.push(parent);
                queue.push_back(next);
            }
        }
        let mut grants = grants.into_iter();
        Explanation {
            grant: grants.next(),
            also: grants.collect(),
            checked,
            note: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: UserId = UserId(1);
    const GROUP: GroupId = GroupId(1);
    const ROLE: RoleId = RoleId(1);

    fn file(id: i64) -> ObjectRef {
        ObjectRef::new(ObjectKind::DOCUMENT_FILE, id)
    }

    fn doc(id: i64) -> ObjectRef {
        ObjectRef::new(ObjectKind::DOCUMENT, id)
    }

    fn dt(id: i64) -> ObjectRef {
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, id)
    }

    /// One user whose role holds `permission` through an ACL on document type 1, which
    /// document 1 belongs to.
    fn snapshot(permission: Permission) -> AccessSnapshot {
        let mut s = AccessSnapshot::default();
        s.set_user(USER, false, true);
        s.set_membership(GROUP, USER, true);
        s.set_role_group(ROLE, GROUP, true);
        s.set_parents(doc(1), vec![dt(1)]);
        s.set_acl(dt(1), AclId(1), ROLE, PermissionSet::of(&[permission]));
        s
    }

    #[test]
    fn a_stored_link_leads_through_the_snapshots_links() {
        let s = snapshot(Permission::DocumentFileParse);
        let mut stored = KnownParents::of(file(7), vec![doc(1)]);
        assert!(s.check_with(&mut stored, USER, Permission::DocumentFileParse, file(7)));
        assert!(
            !s.check(USER, Permission::DocumentFileParse, file(7)),
            "without a source, a file's link is unknown"
        );
    }

    #[test]
    fn a_document_is_checked_as_one_of_the_type_it_is_given() {
        let p = Permission::DocumentMetadataEdit;
        let mut s = snapshot(p);
        // Document 1 is linked to type 1 (granted); it is being moved to type 2 (not granted).
        assert!(s.check(USER, p, doc(1)));
        assert!(
            !s.check_document(USER, p, 1, 2),
            "the old type's grant does not follow it"
        );
        assert!(s.check_document(USER, p, 1, 1));
        // Document 5, not linked yet (created in the running transaction), of type 1.
        assert!(!s.check(USER, p, doc(5)));
        assert!(s.check_document(USER, p, 5, 1));
        // An ACL on the document itself counts whatever its type; an inactive user has nothing.
        s.set_acl(doc(1), AclId(2), ROLE, PermissionSet::of(&[p]));
        assert!(s.check_document(USER, p, 1, 2));
        s.set_user(USER, false, false);
        assert!(!s.check_document(USER, p, 1, 1));
    }

    #[test]
    fn an_applications_own_links_replace_the_stored_ones() {
        let mut s = snapshot(Permission::DocumentFileParse);
        s.set_parents(file(7), vec![doc(2)]);
        let mut stored = KnownParents::of(file(7), vec![doc(1)]);
        assert!(!s.check_with(&mut stored, USER, Permission::DocumentFileParse, file(7)));
    }

    #[test]
    fn filter_follows_stored_links_like_check() {
        let s = snapshot(Permission::DocumentFileParse);
        let mut stored = KnownParents::of(file(7), vec![doc(1)]);
        stored.insert(file(8), vec![doc(2)]);
        stored.insert(file(9), vec![doc(1)]);
        let kept = s.filter_with(
            &mut stored,
            USER,
            Permission::DocumentFileParse,
            &[file(7), file(8), file(9)],
        );
        assert_eq!(kept, vec![file(7), file(9)]);
    }

    #[test]
    fn explain_gives_the_path_through_stored_links() {
        let s = snapshot(Permission::DocumentFileParse);
        let mut stored = KnownParents::of(file(7), vec![doc(1)]);
        let e = s.explain_with(&mut stored, USER, Permission::DocumentFileParse, file(7));
        let Some(Grant::Acl { object, path, .. }) = e.grant else {
            panic!("granted by the document type's ACL: {e:?}");
        };
        assert_eq!(object, dt(1));
        assert_eq!(path, vec![file(7), doc(1), dt(1)]);
    }

    #[test]
    fn explain_lists_every_other_grant_that_applies() {
        let mut s = snapshot(Permission::DocumentView);
        s.set_acl(
            doc(1),
            AclId(2),
            ROLE,
            PermissionSet::of(&[Permission::DocumentView]),
        );
        s.set_role_permissions(ROLE, PermissionSet::of(&[Permission::DocumentView]));
        let e = s.explain(USER, Permission::DocumentView, doc(1));
        assert!(matches!(e.grant, Some(Grant::Global { .. })), "{e:?}");
        let acls: Vec<_> = e
            .also
            .iter()
            .filter_map(|g| match g {
                Grant::Acl { acl, .. } => Some(*acl),
                _ => None,
            })
            .collect();
        assert_eq!(acls, vec![AclId(2), AclId(1)]);
    }
}
