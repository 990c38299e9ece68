//! The access matrix, directly against `Session`.
//!
//! The same reference evaluator as the HTTP access matrix
//! (`examples/server/tests/access_matrix.rs`; both include `tests/oracle/access_model.rs`),
//! written from spec 5.2-5.4 and api.md, checks core itself, so that the rules the HTTP routes used to hold are checked where they now live.
//! A deterministic pseudo-random world (users, groups, roles with global permissions, ACLs on
//! document types, documents, metadata types, cabinets, roles, workflows, document files and
//! workflow instances, and the objects they protect) is built through `Docmeta::system()`; then,
//! for every caller, every operation below is run on every relevant object and its answer is
//! compared with the evaluator's:
//!
//! * the evaluator itself: `Session::can`, `Docmeta::check` and `Docmeta::filter` for every
//!   permission grantable on each kind, on every object (files and workflow instances included);
//! * reads and lists: documents, document types, metadata types, metadata values, files,
//!   workflows (states, transitions) and their instances (logs), cabinets and their documents,
//!   roles (groups, global permissions), groups (members), users, ACLs (lists and by id);
//! * writes: renaming documents, document types, cabinets, roles, groups and users, editing
//!   metadata values, adding a document to a cabinet, taking a workflow transition, a role's
//!   groups and global permissions, a group's members, creating an ACL, granting a permission
//!   and adding or removing a key through an ACL id on every kind. A refused write must change
//!   nothing (what it would change is read back as the system); an allowed one must take effect
//!   (it is then undone as the system), and every write must be seen both allowed and refused;
//! * deletions, last: every other file, document, cabinet, workflow, metadata type and document
//!   type, tried by each caller in turn (the superuser last); refusals must change nothing, the
//!   first allowed try deletes, and the model forgets the object as the specification says
//!   (its ACLs and dependents). Then the evaluator and the reads run again on what is left.
//!
//! Refusals map as api.md maps them to HTTP: `NotFound` is 404 (an object the caller may not
//! view), `PermissionDenied` 403 (a visible object without the permission, or a missing global
//! permission), a validation error 400.

#[path = "../oracle/access_model.rs"]
#[allow(dead_code)] // The HTTP oracle uses parts of the model this one has no operation for.
mod access_model;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use access_model::*;
use docmeta_core::{
    CabinetId, Docmeta, DocumentId, DocumentMetadataId, DocumentQuery, DocumentTypeId, Error,
    GroupId, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef, PageRequest, Permission,
    Result, RoleId, Session, UserId, UserUpdate, WorkflowId, WorkflowInstanceId,
};

const SEED: u64 = 0x5E55_10AC_CE55;

/// How a call ended, as api.md would answer it over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Out {
    Ok,
    /// 403.
    Denied,
    /// 404.
    NotFound,
    /// 400.
    Invalid,
    Other,
}

fn out<T>(r: &Result<T>) -> Out {
    match r {
        Ok(_) => Out::Ok,
        Err(Error::PermissionDenied(_)) => Out::Denied,
        Err(Error::NotFound(_)) => Out::NotFound,
        Err(e) if e.kind() == docmeta_core::ErrorKind::Validation => Out::Invalid,
        Err(_) => Out::Other,
    }
}

fn expected(e: Exp) -> Out {
    match e {
        Exp::Ok(_) => Out::Ok,
        Exp::No(403) => Out::Denied,
        Exp::No(404) | Exp::Gone => Out::NotFound,
        Exp::No(400) => Out::Invalid,
        other => panic!("the session oracle has no mapping for {other:?}"),
    }
}

fn kind(k: K) -> ObjectKind {
    match k {
        K::DocType => ObjectKind::DOCUMENT_TYPE,
        K::Doc => ObjectKind::DOCUMENT,
        K::MetaType => ObjectKind::METADATA_TYPE,
        K::Cabinet => ObjectKind::CABINET,
        K::Role => ObjectKind::ROLE,
        K::Workflow => ObjectKind::WORKFLOW,
        K::File => ObjectKind::DOCUMENT_FILE,
        K::Instance => ObjectKind::WORKFLOW_INSTANCE,
    }
}

fn oref(o: Obj) -> ObjectRef {
    ObjectRef::new(kind(o.0), o.1)
}

fn perm(key: &str) -> Permission {
    Permission::from_key(key).unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// Every kind the world has objects of.
const ALL_KINDS: [K; 8] = [
    K::DocType,
    K::Doc,
    K::MetaType,
    K::Cabinet,
    K::Role,
    K::Workflow,
    K::File,
    K::Instance,
];

struct World {
    db: Docmeta,
    admin: Session,
    model: Model,
    /// Callers: a superuser and regular users (the inactive user cannot act).
    callers: Vec<i64>,
    /// A role in no group and with no grant: ACLs are created for it and removed again, which
    /// changes nobody's access.
    spare: i64,
    /// Workflow instance -> its document.
    inst_doc: BTreeMap<i64, i64>,
}

impl World {
    fn objects(&self, k: K) -> Vec<Obj> {
        let m = &self.model;
        let ids: Vec<i64> = match k {
            K::DocType => m.dts.iter().copied().collect(),
            K::Doc => m.docs.keys().copied().collect(),
            K::MetaType => m.mts.iter().copied().collect(),
            K::Cabinet => m.cabs.keys().copied().collect(),
            K::Role => m.roles.keys().copied().collect(),
            K::Workflow => m.wfs.keys().copied().collect(),
            K::File => m.files.keys().copied().collect(),
            K::Instance => m.insts.keys().copied().collect(),
        };
        ids.into_iter().map(|id| (k, id)).collect()
    }
}

fn fast_hashing() -> docmeta_core::Config {
    docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

fn build_world() -> Result<World> {
    let db = Docmeta::builder().config(fast_hashing()).open()?;
    let admin = db.system();
    let mut dice = Dice(SEED);
    let mut m = Model::default();
    let mut callers = Vec::new();

    let add_user = |m: &mut Model, name: &str, superuser: bool| -> Result<i64> {
        let u = admin.create_user(name, "a long password", superuser)?.id.0;
        m.users.insert(
            u,
            UserM {
                name: name.to_owned(),
                superuser,
                active: true,
            },
        );
        Ok(u)
    };
    callers.push(add_user(&mut m, "boss", true)?);
    let mut regular = Vec::new();
    for n in 1..=7 {
        regular.push(add_user(&mut m, &format!("user{n}"), false)?);
    }
    callers.extend(&regular);
    let target = add_user(&mut m, "target", false)?;
    let sleeper = add_user(&mut m, "sleeper", false)?;
    admin.update_user(
        UserId(sleeper),
        UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    if let Some(u) = m.users.get_mut(&sleeper) {
        u.active = false;
    }

    // Groups: user(k) in group(k), sometimes in another; user6 in two; user7 in none.
    let mut groups = Vec::new();
    for n in 1..=5 {
        let g = admin.create_group(&format!("group{n}"))?.id.0;
        groups.push(g);
        m.groups.insert(g, BTreeSet::new());
    }
    let mut membership = BTreeSet::new();
    for (k, g) in groups.iter().enumerate() {
        membership.insert((*g, regular[k]));
        if dice.chance(30) {
            membership.insert((groups[dice.below(groups.len())], regular[k]));
        }
    }
    for g in dice.sample(&groups, 2) {
        membership.insert((g, regular[5]));
    }
    // The target of user edits holds what group1's roles grant: editing it needs holding
    // that too.
    membership.insert((groups[0], target));
    for (g, u) in membership {
        admin.set_group_member(GroupId(g), UserId(u), true)?;
        m.groups.entry(g).or_default().insert(u);
    }

    // Roles: role(k) in group(k), sometimes another; a few global permissions each.
    let mut roles = Vec::new();
    for n in 1..=5 {
        let r = admin.create_role(&format!("role{n}"))?.id.0;
        roles.push(r);
        let mut to = BTreeSet::from([groups[n - 1]]);
        if dice.chance(25) {
            to.insert(groups[dice.below(groups.len())]);
        }
        let mut role = RoleM::default();
        for g in to {
            admin.set_role_group(RoleId(r), GroupId(g), true)?;
            role.groups.insert(g);
        }
        for p in GLOBAL_POOL {
            if dice.chance(12) {
                admin.grant_global(perm(p), RoleId(r))?;
                role.global.insert((*p).to_owned());
            }
        }
        m.roles.insert(r, role);
    }
    // role5 administers principals (user5 holds it), so that holding everything a user, group
    // or role holds decides some of its edits.
    for p in [
        USER_VIEW, USER_EDIT, GROUP_VIEW, GROUP_EDIT, ROLE_VIEW, ROLE_EDIT,
    ] {
        admin.grant_global(perm(p), RoleId(roles[4]))?;
        if let Some(role) = m.roles.get_mut(&roles[4]) {
            role.global.insert(p.to_owned());
        }
    }
    let spare = admin.create_role("spare")?.id.0;
    m.roles.insert(spare, RoleM::default());

    // The protected objects.
    for n in 1..=3 {
        m.dts
            .insert(admin.create_document_type(&format!("type{n}"))?.id.0);
    }
    for n in 1..=3 {
        let mt = admin.create_metadata_type(MetadataTypeInput::new(
            format!("field{n}"),
            format!("Field {n}"),
        ))?;
        m.mts.insert(mt.id.0);
    }
    let dts: Vec<i64> = m.dts.iter().copied().collect();
    let mts: Vec<i64> = m.mts.iter().copied().collect();
    for dt in &dts {
        for mt in &mts {
            if dice.chance(60) {
                let a = admin
                    .associate(DocumentTypeId(*dt), MetadataTypeId(*mt), false)?
                    .association;
                m.assocs.insert(
                    a.id.0,
                    AssocM {
                        dt: *dt,
                        mt: *mt,
                        required: false,
                    },
                );
            }
        }
    }
    for n in 1..=2 {
        let bound = dice.sample(&dts, 2);
        let types: Vec<DocumentTypeId> = bound.iter().map(|d| DocumentTypeId(*d)).collect();
        let wf = admin.create_workflow(&format!("flow{n}"), &types)?;
        let start = admin.create_workflow_state(wf.id, "start", true)?;
        let done = admin.create_workflow_state(wf.id, "done", false)?;
        let mut transitions = BTreeMap::new();
        for (label, from, to) in [("finish", &start, &done), ("reopen", &done, &start)] {
            let t = admin.create_workflow_transition(wf.id, label, from.id, to.id, "")?;
            transitions.insert(
                t.id.0,
                TrM {
                    from: from.id.0,
                    to: to.id.0,
                    triggers: BTreeSet::new(),
                },
            );
        }
        m.wfs.insert(
            wf.id.0,
            WfM {
                dts: bound.into_iter().collect(),
                states: BTreeMap::from([
                    (start.id.0, BTreeSet::new()),
                    (done.id.0, BTreeSet::new()),
                ]),
                actions: BTreeMap::new(),
                transitions,
            },
        );
    }
    for n in 1..=8 {
        let dt = dts[dice.below(dts.len())];
        let d = admin
            .create_document(DocumentTypeId(dt), &format!("doc{n}"), &[])?
            .document
            .id
            .0;
        m.docs.insert(d, dt);
        for a in m.assocs.values().filter(|a| a.dt == dt) {
            if dice.chance(70) {
                let v = admin
                    .add_document_metadata(
                        DocumentId(d),
                        MetadataTypeId(a.mt),
                        &format!("value{n}"),
                    )?
                    .value;
                m.values.insert(v.id.0, ValM { doc: d, mt: a.mt });
            }
        }
        if dice.chance(60) {
            let f = admin.add_file(DocumentId(d), "scan.pdf", &mut &b"%PDF-1.4"[..])?;
            m.files.insert(f.id.0, d);
        }
    }
    db.run_pending_tasks()?;
    let mut inst_doc = BTreeMap::new();
    for d in m.docs.keys() {
        for i in admin.workflow_instances(DocumentId(*d))? {
            m.insts.insert(
                i.id.0,
                InstM {
                    doc: *d,
                    wf: i.workflow_id.0,
                    state: i.state_id.map(|s| s.0),
                },
            );
            inst_doc.insert(i.id.0, *d);
        }
    }
    // Two cabinet trees: 1 > 2 > 3, and 4 > 5.
    let cab = |m: &mut Model, label: &str, parent: Option<i64>| -> Result<i64> {
        let c = admin.create_cabinet(label, parent.map(CabinetId))?.id.0;
        m.cabs.insert(
            c,
            CabM {
                parent,
                docs: BTreeSet::new(),
            },
        );
        Ok(c)
    };
    let c1 = cab(&mut m, "c1", None)?;
    let c2 = cab(&mut m, "c2", Some(c1))?;
    cab(&mut m, "c3", Some(c2))?;
    let c4 = cab(&mut m, "c4", None)?;
    cab(&mut m, "c5", Some(c4))?;
    let docs: Vec<i64> = m.docs.keys().copied().collect();
    let cabs: Vec<i64> = m.cabs.keys().copied().collect();
    for c in &cabs {
        for d in dice.sample(&docs, 3) {
            admin.set_cabinet_document(CabinetId(*c), DocumentId(d), true)?;
            m.cabs.entry(*c).or_default().docs.insert(d);
        }
    }

    let mut world = World {
        db,
        admin,
        model: m,
        callers,
        spare,
        inst_doc,
    };

    // ACLs: each role gets a few keys on some objects of every kind, often with the kind's
    // view permission so that the keys matter.
    for r in &roles {
        for k in ALL_KINDS {
            for o in world.objects(k) {
                if !dice.chance(if matches!(k, K::File | K::Instance) {
                    15
                } else {
                    22
                }) {
                    continue;
                }
                let pool = k.pool();
                let n = 1 + dice.below(4);
                let mut keys = dice.sample(pool, n);
                if ACL_KINDS.contains(&k) && dice.chance(60) {
                    keys.push(k.view());
                }
                for p in keys {
                    grant_acl(&world.admin, &mut world.model, *r, o, p)?;
                }
            }
        }
    }

    // The last caller holds only corner cases, through a role of its own: seeing groups without
    // editing them; a root cabinet's view and an intermediate cabinet's edit; metadata values
    // it may see but not edit; ACL rights on documents it may not see; ACL view on a document
    // type, which its documents' files inherit (spec 5.3); changing the type of documents to a
    // type it sees but may not create documents of.
    let edge = *world.callers.last().expect("callers");
    let (group, role) = (
        admin_group(&world, "edge")?,
        world.admin.create_role("edge")?.id,
    );
    world.admin.set_group_member(group, UserId(edge), true)?;
    world.admin.set_role_group(role, group, true)?;
    world.admin.grant_global(perm(GROUP_VIEW), role)?;
    world.model.groups.insert(group.0, BTreeSet::from([edge]));
    world.model.roles.insert(
        role.0,
        RoleM {
            groups: BTreeSet::from([group.0]),
            global: BTreeSet::from([GROUP_VIEW.to_owned()]),
        },
    );
    let edge_acls: [(Obj, &[&str]); 7] = [
        ((K::Cabinet, c1), &[CAB_VIEW]),
        ((K::Cabinet, c2), &[CAB_EDIT]),
        // Moving documents of type 1 to type 2, which it sees but may not create documents of.
        (
            (K::DocType, dts[0]),
            &[DOC_VIEW, DM_VIEW, ACL_VIEW, DOC_CHANGE_TYPE],
        ),
        ((K::DocType, dts[1]), &[ACL_EDIT, DM_EDIT, DT_VIEW]),
        ((K::MetaType, mts[0]), &[DM_VIEW]),
        ((K::MetaType, mts[1]), &[DM_VIEW, DM_EDIT]),
        (
            (
                K::Workflow,
                *world.model.wfs.keys().next().expect("a workflow"),
            ),
            &[WF_VIEW, ACL_EDIT],
        ),
    ];
    for (o, keys) in edge_acls {
        for p in keys {
            grant_acl(&world.admin, &mut world.model, role.0, o, p)?;
        }
    }
    Ok(world)
}

/// Grants `key` to role `r` on `o` as the system, and records the ACL in the model.
fn grant_acl(admin: &Session, m: &mut Model, r: i64, o: Obj, key: &str) -> Result<()> {
    let acl = admin.grant(perm(key), RoleId(r), oref(o))?.acl;
    m.acls
        .entry(o)
        .or_default()
        .entry(r)
        .or_insert_with(|| AclM {
            id: acl.id.0,
            perms: BTreeSet::new(),
        })
        .perms
        .insert(key.to_owned());
    Ok(())
}

fn admin_group(w: &World, name: &str) -> Result<GroupId> {
    w.admin.create_group(name).map(|g| g.id)
}

/// Differences between core and the reference evaluator.
#[derive(Default)]
struct Report {
    checks: usize,
    failures: Vec<String>,
    /// Write operation -> the outcomes it had, so that every write is seen both allowed and
    /// refused (an operation that is never allowed, or never refused, checks little).
    outcomes: BTreeMap<String, BTreeSet<Out>>,
}

impl Report {
    fn same<T: PartialEq + Debug>(&mut self, what: impl FnOnce() -> String, got: T, want: T) {
        self.checks += 1;
        if got != want {
            self.failures
                .push(format!("{}: core {got:?}, evaluator {want:?}", what()));
        }
    }
}

fn name(w: &World, u: i64) -> String {
    w.model.users.get(&u).map_or("?".into(), |x| x.name.clone())
}

// ----- the evaluator itself ---------------------------------------------------------------------

fn evaluator(w: &World, r: &mut Report, u: i64) {
    let s = w.db.session(UserId(u));
    let m = &w.model;
    for k in ALL_KINDS {
        let objects = w.objects(k);
        let refs: Vec<ObjectRef> = objects.iter().map(|o| oref(*o)).collect();
        let mut keys: BTreeSet<&str> = k.pool().iter().copied().collect();
        keys.insert(k.view());
        for key in keys {
            let p = perm(key);
            for o in &objects {
                let want = m.has(u, key, *o);
                r.same(
                    || format!("{} Session::can({key}, {o:?})", name(w, u)),
                    s.can(p, oref(*o)),
                    want,
                );
                r.same(
                    || format!("{} Docmeta::check({key}, {o:?})", name(w, u)),
                    w.db.check(UserId(u), p, oref(*o)),
                    want,
                );
            }
            let want: Vec<ObjectRef> = objects
                .iter()
                .filter(|o| m.has(u, key, **o))
                .map(|o| oref(*o))
                .collect();
            r.same(
                || format!("{} Docmeta::filter({key}, {k:?})", name(w, u)),
                w.db.filter(UserId(u), p, &refs),
                want,
            );
        }
    }
}

// ----- reads and lists --------------------------------------------------------------------------

/// An object read: passes when the caller may view it, else NotFound.
fn seen_or_404(visible: bool) -> Out {
    if visible { Out::Ok } else { Out::NotFound }
}

fn reads(w: &World, r: &mut Report, u: i64) -> Result<()> {
    let s = w.db.session(UserId(u));
    let m = &w.model;
    let who = name(w, u);

    // Documents, their metadata values, files and workflow instances.
    for d in m.docs.keys() {
        let doc = (K::Doc, *d);
        let got = s.document(DocumentId(*d));
        r.same(
            || format!("{who} document {d}"),
            out(&got),
            seen_or_404(m.seen(u, doc)),
        );
        let files = s.files(DocumentId(*d));
        r.same(
            || format!("{who} files of document {d}"),
            out(&files),
            seen_or_404(m.seen(u, doc)),
        );
        if let Ok(files) = files {
            let got: BTreeSet<i64> = files.iter().map(|f| f.id.0).collect();
            let want: BTreeSet<i64> = m
                .files
                .iter()
                .filter(|(_, x)| **x == *d)
                .map(|(f, _)| *f)
                .collect();
            r.same(|| format!("{who} file list of document {d}"), got, want);
        }
        let values = s
            .document_metadata(DocumentId(*d), PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>());
        r.same(
            || format!("{who} metadata of document {d}"),
            out(&values),
            seen_or_404(m.seen(u, doc)),
        );
        if let Ok(values) = values {
            let got: BTreeSet<i64> = values.iter().map(|v| v.id.0).collect();
            let want: BTreeSet<i64> = (m.values.iter())
                .filter(|(id, v)| v.doc == *d && m.value_visible(u, **id))
                .map(|(id, _)| *id)
                .collect();
            r.same(|| format!("{who} metadata list of document {d}"), got, want);
        }
        let insts = s.workflow_instances(DocumentId(*d));
        r.same(
            || format!("{who} workflow instances of document {d}"),
            out(&insts),
            seen_or_404(m.seen(u, doc)),
        );
        if let Ok(insts) = insts {
            let got: BTreeSet<i64> = insts.iter().map(|i| i.id.0).collect();
            let want: BTreeSet<i64> = (m.insts.iter())
                .filter(|(id, i)| i.doc == *d && m.inst_visible(u, **id))
                .map(|(id, _)| *id)
                .collect();
            r.same(|| format!("{who} instance list of document {d}"), got, want);
        }
    }
    let listed: BTreeSet<i64> = s
        .documents(DocumentQuery::default(), PageRequest::new(1, 1000))?
        .items
        .iter()
        .map(|d| d.document.id.0)
        .collect();
    let want: BTreeSet<i64> = m
        .docs
        .keys()
        .copied()
        .filter(|d| m.seen(u, (K::Doc, *d)))
        .collect();
    r.same(|| format!("{who} document list"), listed, want);
    for (v, x) in &m.values {
        let got = s.metadata_value(DocumentId(x.doc), DocumentMetadataId(*v));
        r.same(
            || format!("{who} metadata value {v}"),
            out(&got),
            seen_or_404(m.value_visible(u, *v)),
        );
    }
    for f in m.files.keys() {
        let got = s.file(docmeta_core::DocumentFileId(*f));
        r.same(
            || format!("{who} file {f}"),
            out(&got),
            seen_or_404(m.seen(u, (K::File, *f))),
        );
    }
    for (i, d) in &w.inst_doc {
        let got = s.workflow_instance(DocumentId(*d), WorkflowInstanceId(*i));
        r.same(
            || format!("{who} workflow instance {i}"),
            out(&got),
            seen_or_404(m.inst_visible(u, *i)),
        );
    }

    // Document types, metadata types, workflows, cabinets, roles: one read each and the list.
    for dt in &m.dts {
        let got = s.document_type(DocumentTypeId(*dt));
        r.same(
            || format!("{who} document type {dt}"),
            out(&got),
            seen_or_404(m.seen(u, (K::DocType, *dt))),
        );
    }
    let listed: BTreeSet<i64> = s.document_types()?.iter().map(|t| t.id.0).collect();
    let want: BTreeSet<i64> = m
        .dts
        .iter()
        .copied()
        .filter(|t| m.seen(u, (K::DocType, *t)))
        .collect();
    r.same(|| format!("{who} document type list"), listed, want);
    for mt in &m.mts {
        let got = s.metadata_type(MetadataTypeId(*mt));
        r.same(
            || format!("{who} metadata type {mt}"),
            out(&got),
            seen_or_404(m.seen(u, (K::MetaType, *mt))),
        );
    }
    let listed: BTreeSet<i64> = s.metadata_types()?.iter().map(|t| t.id.0).collect();
    let want: BTreeSet<i64> = m
        .mts
        .iter()
        .copied()
        .filter(|t| m.seen(u, (K::MetaType, *t)))
        .collect();
    r.same(|| format!("{who} metadata type list"), listed, want);
    for wf in m.wfs.keys() {
        let got = s.workflow(WorkflowId(*wf));
        r.same(
            || format!("{who} workflow {wf}"),
            out(&got),
            seen_or_404(m.seen(u, (K::Workflow, *wf))),
        );
    }
    let listed: BTreeSet<i64> = s.workflows()?.iter().map(|x| x.id.0).collect();
    let want: BTreeSet<i64> = m
        .wfs
        .keys()
        .copied()
        .filter(|x| m.seen(u, (K::Workflow, *x)))
        .collect();
    r.same(|| format!("{who} workflow list"), listed, want);
    for (c, cab) in &m.cabs {
        let visible = m.seen(u, (K::Cabinet, *c));
        let got = s.cabinet(CabinetId(*c));
        r.same(
            || format!("{who} cabinet {c}"),
            out(&got),
            seen_or_404(visible),
        );
        let docs = s.cabinet_documents(CabinetId(*c), PageRequest::ALL);
        r.same(
            || format!("{who} documents of cabinet {c}"),
            out(&docs),
            seen_or_404(visible),
        );
        if let Ok(docs) = docs {
            let got: BTreeSet<i64> = docs.items.iter().map(|d| d.document.id.0).collect();
            let want: BTreeSet<i64> = cab
                .docs
                .iter()
                .copied()
                .filter(|d| m.seen(u, (K::Doc, *d)))
                .collect();
            r.same(|| format!("{who} document list of cabinet {c}"), got, want);
        }
    }
    let listed: BTreeSet<i64> = s.cabinets()?.iter().map(|c| c.id.0).collect();
    let want: BTreeSet<i64> = m
        .cabs
        .keys()
        .copied()
        .filter(|c| m.seen(u, (K::Cabinet, *c)))
        .collect();
    r.same(|| format!("{who} cabinet list"), listed, want);
    for role in m.roles.keys() {
        let got = s.role(RoleId(*role));
        r.same(
            || format!("{who} role {role}"),
            out(&got),
            seen_or_404(m.seen(u, (K::Role, *role))),
        );
    }
    let listed: BTreeSet<i64> = s.roles()?.iter().map(|r| r.id.0).collect();
    let want: BTreeSet<i64> = m
        .roles
        .keys()
        .copied()
        .filter(|x| m.seen(u, (K::Role, *x)))
        .collect();
    r.same(|| format!("{who} role list"), listed, want);

    // Groups and users: global permissions only.
    let group_view = m.glob(u, GROUP_VIEW);
    for g in m.groups.keys() {
        let got = s.group(GroupId(*g));
        r.same(
            || format!("{who} group {g}"),
            out(&got),
            seen_or_404(group_view),
        );
    }
    let listed: BTreeSet<i64> = s.groups()?.iter().map(|g| g.id.0).collect();
    let want: BTreeSet<i64> = if group_view {
        m.groups.keys().copied().collect()
    } else {
        BTreeSet::new()
    };
    r.same(|| format!("{who} group list"), listed, want);
    for t in m.users.keys() {
        let got = s.user(UserId(*t));
        r.same(
            || format!("{who} user {t}"),
            out(&got),
            seen_or_404(m.user_visible(u, *t)),
        );
    }
    let listed: BTreeSet<i64> = s.users()?.iter().map(|x| x.id.0).collect();
    let want: BTreeSet<i64> = m
        .users
        .keys()
        .copied()
        .filter(|t| m.user_visible(u, *t))
        .collect();
    r.same(|| format!("{who} user list"), listed, want);

    // What a group or a role holds: its members, groups and global permissions.
    for (g, members) in &m.groups {
        let got = s.group_members(GroupId(*g), PageRequest::ALL);
        r.same(
            || format!("{who} members of group {g}"),
            out(&got),
            seen_or_404(group_view),
        );
        if let Ok(got) = got {
            let got: BTreeSet<i64> = got.items.iter().map(|x| x.id.0).collect();
            let want: BTreeSet<i64> = members
                .iter()
                .copied()
                .filter(|t| m.user_visible(u, *t))
                .collect();
            r.same(|| format!("{who} member list of group {g}"), got, want);
        }
    }
    for (role, rm) in &m.roles {
        let visible = m.seen(u, (K::Role, *role));
        let got = s.role_groups(RoleId(*role), PageRequest::ALL);
        r.same(
            || format!("{who} groups of role {role}"),
            out(&got),
            seen_or_404(visible),
        );
        if let Ok(got) = got {
            let got: BTreeSet<i64> = got.items.iter().map(|x| x.id.0).collect();
            let want = if group_view {
                rm.groups.clone()
            } else {
                BTreeSet::new()
            };
            r.same(|| format!("{who} group list of role {role}"), got, want);
        }
        let got = s.role_permissions(RoleId(*role), PageRequest::ALL);
        r.same(
            || format!("{who} permissions of role {role}"),
            out(&got),
            seen_or_404(visible),
        );
        if let Ok(got) = got {
            let got: BTreeSet<String> = got.items.iter().map(|p| p.key().to_owned()).collect();
            r.same(
                || format!("{who} permission list of role {role}"),
                got,
                rm.global.clone(),
            );
        }
    }
    // A workflow's states and transitions, an instance's log: as the workflow, the instance.
    for wf in m.wfs.keys() {
        let visible = m.seen(u, (K::Workflow, *wf));
        let got = s.workflow_states(WorkflowId(*wf));
        r.same(
            || format!("{who} states of workflow {wf}"),
            out(&got),
            seen_or_404(visible),
        );
        let got = s.workflow_transitions(WorkflowId(*wf));
        r.same(
            || format!("{who} transitions of workflow {wf}"),
            out(&got),
            seen_or_404(visible),
        );
    }
    for (i, d) in &w.inst_doc {
        let got = s.workflow_log(DocumentId(*d), WorkflowInstanceId(*i));
        r.same(
            || format!("{who} log of workflow instance {i}"),
            out(&got),
            seen_or_404(m.inst_visible(u, *i)),
        );
    }

    // One ACL by id: acl_view on the object (403/404); an ACL of another object is not found.
    let all_acls: Vec<(Obj, i64)> = (m.acls.iter())
        .flat_map(|(o, x)| x.values().map(move |acl| (*o, acl.id)))
        .collect();
    for k in ALL_KINDS {
        for o in w.objects(k) {
            let view = expected(m.act(u, ACL_VIEW, o, 200));
            let own = all_acls.iter().find(|(x, _)| *x == o);
            let foreign = all_acls.iter().find(|(x, _)| *x != o);
            for (case, own) in [(own, true), (foreign, false)] {
                let Some((_, acl)) = case else { continue };
                let want = match view {
                    Out::Ok if !own => Out::NotFound,
                    v => v,
                };
                let got = s.acl(oref(o), docmeta_core::AclId(*acl));
                r.same(|| format!("{who} ACL {acl} through {o:?}"), out(&got), want);
            }
        }
    }

    // ACLs of every object: acl_view on it (403/404); the list is all its ACLs.
    for k in ALL_KINDS {
        for o in w.objects(k) {
            let got = s.acls(oref(o), PageRequest::ALL);
            r.same(
                || format!("{who} ACLs of {o:?}"),
                out(&got),
                expected(m.act(u, ACL_VIEW, o, 200)),
            );
            if let Ok(acls) = got {
                let got: BTreeSet<i64> = acls.items.iter().map(|a| a.acl.id.0).collect();
                let want: BTreeSet<i64> = m
                    .acls
                    .get(&o)
                    .map(|x| x.values().map(|a| a.id).collect())
                    .unwrap_or_default();
                r.same(|| format!("{who} ACL list of {o:?}"), got, want);
            }
        }
    }
    Ok(())
}

// ----- writes -----------------------------------------------------------------------------------

/// Runs a write as the caller and compares its outcome with `want`; `probe` reads (as the
/// system) what the write changes, which must stay the same when refused and differ when
/// allowed; `undo` puts the world back after an allowed write.
fn write<T, S: PartialEq + Debug>(
    r: &mut Report,
    what: String,
    want: Out,
    probe: impl Fn() -> Result<S>,
    call: impl FnOnce() -> Result<T>,
    undo: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let before = probe()?;
    let got = call();
    let outcome = out(&got);
    let detail = got
        .as_ref()
        .err()
        .map(|e| format!(" [{e}]"))
        .unwrap_or_default();
    r.same(|| format!("{what}{detail}"), outcome, want);
    let operation = what.split(' ').nth(1).unwrap_or_default().to_owned();
    r.outcomes.entry(operation).or_default().insert(outcome);
    let after = probe()?;
    if outcome == Out::Ok {
        r.same(|| format!("{what}: took effect"), after != before, true);
        undo()?;
        r.same(|| format!("{what}: undone"), probe()?, before);
    } else {
        r.same(|| format!("{what}: changed nothing"), after, before);
    }
    Ok(())
}

fn writes(w: &World, r: &mut Report, u: i64) -> Result<()> {
    let s = w.db.session(UserId(u));
    let a = &w.admin;
    let m = &w.model;
    let who = name(w, u);
    let new = format!("renamed by {who}");

    for d in m.docs.keys().copied() {
        let old = a.document(DocumentId(d))?.document.label;
        write(
            r,
            format!("{who} update_document {d}"),
            expected(m.act(u, DOC_EDIT, (K::Doc, d), 200)),
            || Ok(a.document(DocumentId(d))?.document.label),
            || s.update_document(DocumentId(d), &new),
            || a.update_document(DocumentId(d), &old).map(drop),
        )?;
    }
    for dt in m.dts.iter().copied() {
        let old = a.document_type(DocumentTypeId(dt))?.label;
        write(
            r,
            format!("{who} update_document_type {dt}"),
            expected(m.act(u, DT_EDIT, (K::DocType, dt), 200)),
            || Ok(a.document_type(DocumentTypeId(dt))?.label),
            || s.update_document_type(DocumentTypeId(dt), &new),
            || a.update_document_type(DocumentTypeId(dt), &old).map(drop),
        )?;
    }
    for c in m.cabs.keys().copied() {
        let old = a.cabinet(CabinetId(c))?.label;
        write(
            r,
            format!("{who} rename_cabinet {c}"),
            expected(m.act(u, CAB_EDIT, (K::Cabinet, c), 200)),
            || Ok(a.cabinet(CabinetId(c))?.label),
            || s.rename_cabinet(CabinetId(c), &new),
            || a.rename_cabinet(CabinetId(c), &old).map(drop),
        )?;
        // Adding a document: cabinet_add_document on the cabinet, then on the document; the
        // document is a reference of the body, so one the caller cannot see is invalid input.
        let outside = m
            .docs
            .keys()
            .copied()
            .find(|d| !m.cabs[&c].docs.contains(d));
        if let Some(d) = outside {
            let want = match m.act(u, CAB_ADD_DOC, (K::Cabinet, c), 200) {
                Exp::Ok(_) => match m.act(u, CAB_ADD_DOC, (K::Doc, d), 200) {
                    Exp::No(404) => Exp::No(400),
                    e => e,
                },
                refused => refused,
            };
            write(
                r,
                format!("{who} set_cabinet_document {c} +{d}"),
                expected(want),
                || a.cabinet_documents(CabinetId(c), PageRequest::ALL),
                || s.set_cabinet_document(CabinetId(c), DocumentId(d), true),
                || a.set_cabinet_document(CabinetId(c), DocumentId(d), false),
            )?;
        }
    }
    for role in m.roles.keys().copied() {
        let old = a.role(RoleId(role))?;
        // Renaming a role needs holding everything it grants.
        let want = match m.act(u, ROLE_EDIT, (K::Role, role), 200) {
            Exp::Ok(_) if !m.holds_role(u, role) => Out::Denied,
            e => expected(e),
        };
        write(
            r,
            format!("{who} rename_role {role}"),
            want,
            || a.role(RoleId(role)),
            || s.rename_role(RoleId(role), &new),
            || a.rename_role(RoleId(role), &old.label).map(drop),
        )?;
    }
    for g in m.groups.keys().copied() {
        let old = a.group(GroupId(g))?;
        let want = if !m.glob(u, GROUP_VIEW) {
            Out::NotFound
        } else if !m.glob(u, GROUP_EDIT) || !m.holds_group(u, g) {
            // Renaming a group needs holding what its roles grant.
            Out::Denied
        } else {
            Out::Ok
        };
        write(
            r,
            format!("{who} rename_group {g}"),
            want,
            || a.group(GroupId(g)),
            || s.rename_group(GroupId(g), &new),
            || a.rename_group(GroupId(g), &old.name).map(drop),
        )?;
    }
    // Users: another user's account needs seeing it (404), then user_edit (403); a superuser's
    // only a superuser changes (403); another user's, holding everything they hold (403).
    for (t, tm) in &m.users {
        let id = UserId(*t);
        let old = tm.name.clone();
        let want = if !m.user_visible(u, *t) {
            Out::NotFound
        } else if !m.glob(u, USER_EDIT)
            || (tm.superuser && !m.sup(u))
            || (*t != u && !m.holds_user(u, *t))
        {
            Out::Denied
        } else {
            Out::Ok
        };
        let rename = UserUpdate {
            username: Some(format!("{old}-renamed")),
            ..Default::default()
        };
        let back = UserUpdate {
            username: Some(old.clone()),
            ..Default::default()
        };
        write(
            r,
            format!("{who} update_user {t}"),
            want,
            || Ok(a.user(id)?.username),
            || s.update_user(id, rename),
            || a.update_user(id, back).map(drop),
        )?;
    }
    // Group members: group_view (404) then group_edit (403); the user must be visible (400);
    // adding and removing need holding what the group's roles grant.
    for (g, members) in &m.groups {
        let gid = GroupId(*g);
        let outside = m.users.keys().copied().find(|t| !members.contains(t));
        let inside = members.iter().next().copied();
        for (add, t) in [(true, outside), (false, inside)] {
            let Some(t) = t else { continue };
            let want = if !m.glob(u, GROUP_VIEW) {
                Out::NotFound
            } else if !m.glob(u, GROUP_EDIT) {
                Out::Denied
            } else if !m.user_visible(u, t) {
                Out::Invalid
            } else if !m.holds_group(u, *g) {
                Out::Denied
            } else {
                Out::Ok
            };
            write(
                r,
                format!("{who} set_group_member {g} {t} {add}"),
                want,
                || a.group_members(gid, PageRequest::ALL),
                || s.set_group_member(gid, UserId(t), add),
                || a.set_group_member(gid, UserId(t), !add).map(drop),
            )?;
        }
    }
    for (v, x) in &m.values {
        let (d, id) = (DocumentId(x.doc), DocumentMetadataId(*v));
        let old = a.metadata_value(d, id)?.value.value;
        let want = if !m.value_visible(u, *v) {
            Out::NotFound
        } else if m.has(u, DM_EDIT, (K::Doc, x.doc)) && m.has(u, DM_EDIT, (K::MetaType, x.mt)) {
            Out::Ok
        } else {
            Out::Denied
        };
        write(
            r,
            format!("{who} edit_document_metadata {v}"),
            want,
            || Ok(a.metadata_value(d, id)?.value.value),
            || s.edit_document_metadata(d, id, &new, None),
            || a.edit_document_metadata(d, id, &old, None).map(drop),
        )?;
    }

    // Taking a transition: the instance visible (404), then workflow_instance_transition on
    // the instance, its workflow or the document (403). Undone by the transition back.
    for (i, inst) in &m.insts {
        let (d, id) = (DocumentId(inst.doc), WorkflowInstanceId(*i));
        let wf = &m.wfs[&inst.wf];
        let forward = wf
            .transitions
            .iter()
            .find(|(_, t)| Some(t.from) == inst.state);
        let back = wf
            .transitions
            .iter()
            .find(|(_, t)| Some(t.to) == inst.state);
        let (Some((forward, _)), Some((back, _))) = (forward, back) else {
            continue;
        };
        let want = if !m.inst_visible(u, *i) {
            Out::NotFound
        } else if m.has(u, WF_TRANSITION, (K::Instance, *i))
            || m.has(u, WF_TRANSITION, (K::Doc, inst.doc))
        {
            Out::Ok
        } else {
            Out::Denied
        };
        let (forward, back) = (
            docmeta_core::WorkflowTransitionId(*forward),
            docmeta_core::WorkflowTransitionId(*back),
        );
        write(
            r,
            format!("{who} transition_workflow {i}"),
            want,
            || Ok(a.workflow_instance(d, id)?.state_id),
            || s.transition_workflow(d, id, forward, "by the matrix"),
            || a.transition_workflow(d, id, back, "undone").map(drop),
        )?;
    }

    // Roles: their groups and global permissions (linking or unlinking a role needs holding
    // what it grants; a global grant needs role_edit and the permission globally).
    for (role, rm) in &m.roles {
        let rid = RoleId(*role);
        let edit = m.act(u, ROLE_EDIT, (K::Role, *role), 200);
        let out_group = m.groups.keys().copied().find(|g| !rm.groups.contains(g));
        let in_group = rm.groups.iter().next().copied();
        for (add, g) in [(true, out_group), (false, in_group)] {
            let Some(g) = g else { continue };
            let want = match edit {
                Exp::Ok(_) if !m.glob(u, GROUP_VIEW) => Out::Invalid,
                Exp::Ok(_) if !m.holds_role(u, *role) => Out::Denied,
                e => expected(e),
            };
            write(
                r,
                format!("{who} set_role_group {role} {g} {add}"),
                want,
                || a.role_groups(rid, PageRequest::ALL),
                || s.set_role_group(rid, GroupId(g), add),
                || a.set_role_group(rid, GroupId(g), !add).map(drop),
            )?;
        }
        let missing = GLOBAL_POOL.iter().find(|p| !rm.global.contains(**p));
        let held = rm.global.iter().next();
        for (add, key) in [(true, missing.copied()), (false, held.map(String::as_str))] {
            let Some(key) = key else { continue };
            let want = match edit {
                Exp::Ok(_) if !m.glob(u, ROLE_EDIT) || !m.glob(u, key) => Out::Denied,
                e => expected(e),
            };
            write(
                r,
                format!("{who} grant_global {role} {key} {add}"),
                want,
                || a.role_permissions(rid, PageRequest::ALL),
                || {
                    if add {
                        s.grant_global(perm(key), rid)
                    } else {
                        s.revoke_global(perm(key), rid)
                    }
                },
                || {
                    if add {
                        a.revoke_global(perm(key), rid)
                    } else {
                        a.grant_global(perm(key), rid)
                    }
                },
            )?;
        }
    }
    // Adding or removing a key through an ACL id: acl_edit on the object (403/404), the ACL's
    // role visible (400), and adding or removing needs holding the key
    // there (403); an ACL of another object is not found.
    let all_acls: Vec<(Obj, i64, i64)> = (m.acls.iter())
        .flat_map(|(o, x)| x.iter().map(move |(role, acl)| (*o, *role, acl.id)))
        .collect();
    for (o, acl_map) in &m.acls {
        let o = *o;
        let edit = m.act(u, ACL_EDIT, o, 200);
        let mut cases: Vec<(i64, i64, bool, &str, bool)> = Vec::new();
        for (role, acl) in acl_map {
            if let Some(p) = o.0.pool().iter().find(|p| !acl.perms.contains(**p)) {
                cases.push((acl.id, *role, true, p, true));
            }
            if acl.perms.len() >= 2 {
                let p = acl.perms.iter().next().map_or("", String::as_str);
                cases.push((acl.id, *role, false, p, true));
            }
        }
        let foreign = all_acls.iter().find(|(other, _, _)| *other != o);
        if let Some((_, role, acl)) = foreign {
            cases.push((*acl, *role, true, o.0.pool()[0], false));
            cases.push((*acl, *role, false, o.0.pool()[0], false));
        }
        for (acl, role, add, key, own) in cases {
            let want = if !own {
                Out::NotFound
            } else {
                match edit {
                    Exp::Ok(_) if !m.seen(u, (K::Role, role)) => Out::Invalid,
                    Exp::Ok(_) if !m.has(u, key, o) => Out::Denied,
                    e => expected(e),
                }
            };
            let id = docmeta_core::AclId(acl);
            write(
                r,
                format!("{who} acl_permission {o:?} ACL {acl} {key} add={add} own={own}"),
                want,
                || {
                    // This object's ACLs, and those of the object the foreign ACL is on.
                    let mut seen = Vec::new();
                    for x in [o, foreign.map_or(o, |(other, _, _)| *other)] {
                        seen.extend(
                            a.acls(oref(x), PageRequest::ALL)?
                                .items
                                .into_iter()
                                .map(|x| (x.acl.id.0, x.acl.permissions)),
                        );
                    }
                    Ok(seen)
                },
                || {
                    if add {
                        s.acl_add_permission(oref(o), id, perm(key)).map(drop)
                    } else {
                        s.acl_remove_permission(oref(o), id, perm(key)).map(drop)
                    }
                },
                || {
                    if add {
                        a.acl_remove_permission(oref(o), id, perm(key)).map(drop)
                    } else {
                        a.acl_add_permission(oref(o), id, perm(key)).map(drop)
                    }
                },
            )?;
        }
    }

    // ACLs for the spare role, on every object: acl_edit on the object (403/404), then the
    // role must be visible (400 otherwise), then a granted key must be held there (403).
    let spare = RoleId(w.spare);
    let spare_seen = m.seen(u, (K::Role, w.spare));
    let acls_of = |o: Obj| -> Result<Vec<i64>> {
        Ok(a.acls(oref(o), PageRequest::ALL)?
            .items
            .iter()
            .map(|x| x.acl.id.0)
            .collect())
    };
    let drop_spare = |o: Obj| -> Result<()> {
        for acl in a.acls(oref(o), PageRequest::ALL)?.items {
            if acl.acl.role_id == spare {
                a.delete_acl(oref(o), acl.acl.id)?;
            }
        }
        Ok(())
    };
    for k in ALL_KINDS {
        for o in w.objects(k) {
            let gate = match m.act(u, ACL_EDIT, o, 200) {
                Exp::Ok(_) if !spare_seen => Out::Invalid,
                e => expected(e),
            };
            write(
                r,
                format!("{who} create_acl {o:?}"),
                gate,
                || acls_of(o),
                || s.create_acl(oref(o), spare),
                || drop_spare(o),
            )?;
            let key = k.pool()[(o.1 as usize) % k.pool().len()];
            let want = match gate {
                Out::Ok if !m.has(u, key, o) => Out::Denied,
                other => other,
            };
            write(
                r,
                format!("{who} grant {key} on {o:?}"),
                want,
                || {
                    Ok(a.acls(oref(o), PageRequest::ALL)?
                        .items
                        .into_iter()
                        .map(|x| (x.acl.id.0, x.acl.permissions))
                        .collect::<Vec<_>>())
                },
                || s.grant(perm(key), spare, oref(o)),
                || drop_spare(o),
            )?;
        }
    }
    Ok(())
}

// ----- deletions, last, against the model ------------------------------------------------------

/// What a deletion may change, read as the system.
fn fingerprint(w: &World) -> Result<Vec<(String, BTreeSet<i64>)>> {
    let a = &w.admin;
    let mut out = vec![
        (
            "documents".to_owned(),
            a.document_ids(None)?.iter().map(|d| d.0).collect(),
        ),
        (
            "document types".to_owned(),
            a.document_types()?.iter().map(|x| x.id.0).collect(),
        ),
        (
            "metadata types".to_owned(),
            a.metadata_types()?.iter().map(|x| x.id.0).collect(),
        ),
        (
            "cabinets".to_owned(),
            a.cabinets()?.iter().map(|x| x.id.0).collect(),
        ),
        (
            "workflows".to_owned(),
            a.workflows()?.iter().map(|x| x.id.0).collect(),
        ),
    ];
    for d in a.document_ids(None)? {
        let of_type = BTreeSet::from([a.document(d)?.document.document_type_id.0]);
        out.push((format!("type of {d}"), of_type));
        let files = a.files(d)?.iter().map(|f| f.id.0).collect();
        out.push((format!("files of {d}"), files));
        let values = a
            .document_metadata(d, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .iter()
            .map(|v| v.id.0)
            .collect();
        out.push((format!("values of {d}"), values));
        let insts = a.workflow_instances(d)?.iter().map(|i| i.id.0).collect();
        out.push((format!("instances of {d}"), insts));
    }
    Ok(out)
}

/// Deletes every other object of each kind: each caller tries in turn (the superuser last),
/// a refused try must change nothing, and the first allowed one deletes the object, which
/// the model then forgets as the specification says (its ACLs, its dependents).
fn deletions(w: &mut World, r: &mut Report) -> Result<()> {
    let mut order = w.callers.clone();
    order.rotate_left(1);
    let kinds = [
        K::File,
        K::Doc,
        K::Cabinet,
        K::Workflow,
        K::MetaType,
        K::DocType,
    ];
    change_types(w, r, &order)?;
    for k in kinds {
        let targets: Vec<Obj> = w.objects(k).into_iter().step_by(2).collect();
        for o in targets {
            if !w.objects(k).contains(&o) {
                continue; // gone with an earlier deletion (a sub-cabinet).
            }
            for u in &order {
                let u = *u;
                let m = &w.model;
                let want = match o.0 {
                    K::File if !m.seen(u, o) => Out::NotFound,
                    K::File if !m.has(u, DOC_EDIT, o) => Out::Denied,
                    K::File => Out::Ok,
                    K::Doc => expected(m.act(u, DOC_DELETE, o, 204)),
                    K::Cabinet => expected(m.act(u, CAB_DELETE, o, 204)),
                    K::Workflow => expected(m.act(u, WF_DELETE, o, 204)),
                    K::MetaType => expected(m.act(u, MT_DELETE, o, 204)),
                    _ => match m.act(u, DT_DELETE, o, 204) {
                        Exp::Ok(_) if m.docs.values().any(|dt| *dt == o.1) => Out::Invalid,
                        e => expected(e),
                    },
                };
                let s = w.db.session(UserId(u));
                let before = fingerprint(w)?;
                let got = match o.0 {
                    K::File => s.delete_file(docmeta_core::DocumentFileId(o.1)),
                    K::Doc => s.delete_document(DocumentId(o.1)),
                    K::Cabinet => s.delete_cabinet(CabinetId(o.1)),
                    K::Workflow => s.delete_workflow(WorkflowId(o.1)),
                    K::MetaType => s.delete_metadata_type(MetadataTypeId(o.1)),
                    _ => s.delete_document_type(DocumentTypeId(o.1)),
                };
                let outcome = out(&got);
                let what = format!("{} delete {o:?}", name(w, u));
                r.same(|| what.clone(), outcome, want);
                r.outcomes
                    .entry(format!("delete {k:?}"))
                    .or_default()
                    .insert(outcome);
                w.db.run_pending_tasks()?;
                let after = fingerprint(w)?;
                if outcome != Out::Ok {
                    r.same(|| format!("{what}: changed nothing"), &after, &before);
                    if after != before {
                        return Ok(()); // the model no longer matches: stop here.
                    }
                    continue;
                }
                let m = &mut w.model;
                match o.0 {
                    K::File => {
                        m.files.remove(&o.1);
                        m.drop_acls(o);
                    }
                    K::Doc => m.remove_doc(o.1),
                    K::Cabinet => m.remove_cab(o.1),
                    K::Workflow => m.remove_wf(o.1),
                    K::MetaType => m.remove_mt(o.1),
                    _ => m.remove_dt(o.1),
                }
                w.inst_doc.retain(|i, _| w.model.insts.contains_key(i));
                let left = fingerprint(w)?;
                r.same(|| format!("{what}: took effect"), left != before, true);
                break;
            }
        }
    }
    Ok(())
}

/// Moves every document to the next type: each caller tries in turn, a refused try must change
/// nothing, and the first allowed one moves it (viewing the document, change_type on
/// it, viewing the new type and creating documents of it); the model then drops the values the
/// new type lacks (spec 2.4 rule 4) and reads the document's instances again (the new type's
/// workflows start).
fn change_types(w: &mut World, r: &mut Report, order: &[i64]) -> Result<()> {
    let docs: Vec<i64> = w.model.docs.keys().copied().collect();
    for d in docs {
        let current = w.model.docs[&d];
        let new = (w.model.dts.iter())
            .find(|t| **t > current)
            .or_else(|| w.model.dts.iter().next())
            .copied()
            .expect("a type");
        for u in order {
            let want = expected(w.model.change_type(*u, d, new));
            let before = fingerprint(w)?;
            let got =
                w.db.session(UserId(*u))
                    .change_document_type(DocumentId(d), DocumentTypeId(new));
            let outcome = out(&got);
            let what = format!("{} change_document_type {d} to {new}", name(w, *u));
            r.same(|| what.clone(), outcome, want);
            r.outcomes
                .entry("change_document_type".into())
                .or_default()
                .insert(outcome);
            let after = fingerprint(w)?;
            if outcome != Out::Ok {
                r.same(|| format!("{what}: changed nothing"), &after, &before);
                continue;
            }
            r.same(|| format!("{what}: took effect"), after != before, true);
            w.model.move_doc(d, new);
            for i in w.admin.workflow_instances(DocumentId(d))? {
                w.model.insts.insert(
                    i.id.0,
                    InstM {
                        doc: d,
                        wf: i.workflow_id.0,
                        state: i.state_id.map(|s| s.0),
                    },
                );
                w.inst_doc.insert(i.id.0, d);
            }
            break;
        }
    }
    Ok(())
}

#[test]
fn every_session_operation_as_every_user_agrees_with_the_reference_evaluator() -> Result<()> {
    let started = std::time::Instant::now();
    let mut w = build_world()?;
    let mut r = Report::default();
    for u in w.callers.clone() {
        evaluator(&w, &mut r, u);
        reads(&w, &mut r, u)?;
        writes(&w, &mut r, u)?;
    }
    deletions(&mut w, &mut r)?;
    // What is left: the evaluator and the reads again, now that objects, their ACLs and
    // their dependents are gone.
    for u in w.callers.clone() {
        evaluator(&w, &mut r, u);
        reads(&w, &mut r, u)?;
    }
    eprintln!(
        "session access matrix: {} callers, {} checks, {:?}",
        w.callers.len(),
        r.checks,
        started.elapsed()
    );
    for (operation, seen) in r.outcomes.clone() {
        eprintln!("  {operation}: {seen:?}");
        r.same(
            || format!("{operation} is both allowed and refused by someone"),
            seen.contains(&Out::Ok) && seen.iter().any(|o| *o != Out::Ok),
            true,
        );
    }
    assert!(
        r.failures.is_empty(),
        "{} of {} answers differ from the reference evaluator:\n{}",
        r.failures.len(),
        r.checks,
        r.failures
            .iter()
            .take(60)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}
