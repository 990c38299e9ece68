//! Object kinds and explanations of access decisions, and what the files of users, groups,
//! roles and ACLs share: the names events give principals, that nobody acts on a principal
//! stronger than themselves, role lookups and permission sets as stored.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::{Session, obj, view_permission};
use crate::access::{ObjectKind, ObjectRef, Permission as P, Permission};
use crate::error::{Error, Result};
use crate::model::*;
use crate::store::Tx;

pub(super) const USER: &str = "user_management.user";
pub(super) const GROUP: &str = "user_management.group";
pub(super) const ROLE: &str = "permissions.role";

/// Longest group name or role label.
pub(super) const MAX_NAME_LEN: usize = 150;

pub(super) fn check_name(field: &str, name: &str) -> Result<()> {
    crate::model::check_text(field, name, MAX_NAME_LEN).map(drop)
}

impl Session {
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
    pub(super) fn require_holds_group(&self, tx: &mut Tx<'_>, group: GroupId) -> Result<()> {
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
    pub(super) fn require_holds_role(&self, tx: &mut Tx<'_>, role: RoleId) -> Result<()> {
        self.require_holds(tx, role, &format!("role {role} grants"))
    }

    /// [`require_holds_role`](Self::require_holds_role), its refusal starting with `subject`
    /// ("user 4 holds", "role 2 grants").
    pub(super) fn require_holds(&self, tx: &mut Tx<'_>, role: RoleId, subject: &str) -> Result<()> {
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
    pub(super) fn visible_role_label(
        &self,
        tx: &mut Tx<'_>,
        role: RoleId,
        field: &str,
    ) -> Result<String> {
        tx.roles()?
            .into_iter()
            .find(|(r, _)| *r == role)
            .filter(|_| self.can(P::RoleView, role_ref(role)))
            .map(|(_, l)| l)
            .ok_or_else(|| Error::validation(field, format!("Role {role} does not exist.")))
    }
}

pub(super) fn role_ref(id: RoleId) -> ObjectRef {
    obj(ObjectKind::ROLE, id.0)
}

/// Role `id`, read in `tx` whatever the session may view (for an answer it is owed).
pub(super) fn role_of(tx: &mut Tx<'_>, id: RoleId) -> Result<Role> {
    tx.roles()?
        .into_iter()
        .find(|(r, _)| *r == id)
        .map(Role::from)
        .ok_or_else(|| Error::not_found(format!("role {id}")))
}

pub(super) fn role_label(tx: &mut Tx<'_>, role: RoleId) -> Result<String> {
    Ok(tx
        .roles()?
        .into_iter()
        .find(|(r, _)| *r == role)
        .map(|(_, l)| l)
        .unwrap_or_default())
}

/// A set of permission keys as an event records it: sorted, joined with commas.
pub(super) fn keys_text(keys: &[String]) -> String {
    let mut keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.join(",")
}

/// The set of the known keys among `keys` (unknown keys from a newer version are ignored).
pub(crate) fn permission_set(keys: Vec<String>) -> PermissionSet {
    keys.iter()
        .filter_map(|k| Permission::from_key(k).ok())
        .collect()
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
