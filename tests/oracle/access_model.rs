//! The access matrix's world description and reference evaluator (spec 5.2-5.4, api.md), shared
//! by the oracle that checks it over HTTP (`examples/server/tests/access_matrix.rs`) and the one
//! that checks it directly against `Session` (`tests/tests/access_matrix_session.rs`), each of
//! which includes this file with `#[path]`. It is written from the specification, never from
//! docmeta's code, and imports nothing of docmeta. Refusals are given as the HTTP status api.md
//! maps them to (404: an object the caller may not view, or that does not exist; 403: a visible
//! object without the needed permission, or a missing global permission).

use std::collections::{BTreeMap, BTreeSet};

// ----- permission keys (spec 5.4 and the keys api.md adds) ---------------------------------------

pub const DOC_VIEW: &str = "documents.document_view";
pub const DOC_EDIT: &str = "documents.document_edit";
pub const DOC_CREATE: &str = "documents.document_create";
pub const DOC_DELETE: &str = "documents.document_delete";
pub const DOC_CHANGE_TYPE: &str = "documents.document_change_type";
pub const FILE_NEW: &str = "documents.document_file_new";
pub const DT_VIEW: &str = "documents.document_type_view";
pub const DT_EDIT: &str = "documents.document_type_edit";
pub const DT_DELETE: &str = "documents.document_type_delete";
pub const DT_CREATE: &str = "documents.document_type_create";
pub const DM_VIEW: &str = "metadata.document_metadata_view";
pub const DM_ADD: &str = "metadata.document_metadata_add";
pub const DM_EDIT: &str = "metadata.document_metadata_edit";
pub const DM_REMOVE: &str = "metadata.document_metadata_remove";
pub const MT_VIEW: &str = "metadata.metadata_type_view";
pub const MT_EDIT: &str = "metadata.metadata_type_edit";
pub const MT_DELETE: &str = "metadata.metadata_type_delete";
pub const MT_CREATE: &str = "metadata.metadata_type_create";
pub const CAB_VIEW: &str = "cabinets.cabinet_view";
pub const CAB_CREATE: &str = "cabinets.cabinet_create";
pub const CAB_EDIT: &str = "cabinets.cabinet_edit";
pub const CAB_DELETE: &str = "cabinets.cabinet_delete";
pub const CAB_ADD_DOC: &str = "cabinets.cabinet_add_document";
pub const CAB_REMOVE_DOC: &str = "cabinets.cabinet_remove_document";
pub const WF_VIEW: &str = "document_states.workflow_template_view";
pub const WF_EDIT: &str = "document_states.workflow_template_edit";
pub const WF_DELETE: &str = "document_states.workflow_template_delete";
pub const WF_CREATE: &str = "document_states.workflow_template_create";
pub const WF_TRANSITION: &str = "document_states.workflow_instance_transition";
pub const ROLE_VIEW: &str = "permissions.role_view";
pub const ROLE_EDIT: &str = "permissions.role_edit";
pub const ROLE_DELETE: &str = "permissions.role_delete";
pub const ROLE_CREATE: &str = "permissions.role_create";
pub const USER_VIEW: &str = "user_management.user_view";
pub const USER_EDIT: &str = "user_management.user_edit";
pub const USER_CREATE: &str = "user_management.user_create";
pub const USER_DELETE: &str = "user_management.user_delete";
pub const GROUP_VIEW: &str = "user_management.group_view";
pub const GROUP_EDIT: &str = "user_management.group_edit";
pub const GROUP_CREATE: &str = "user_management.group_create";
pub const GROUP_DELETE: &str = "user_management.group_delete";
pub const ACL_VIEW: &str = "acls.acl_view";
pub const ACL_EDIT: &str = "acls.acl_edit";

/// What may be granted globally in the generated world.
pub const GLOBAL_POOL: &[&str] = &[
    MT_CREATE,
    DT_CREATE,
    ROLE_CREATE,
    USER_CREATE,
    USER_DELETE,
    USER_VIEW,
    USER_EDIT,
    GROUP_CREATE,
    GROUP_DELETE,
    GROUP_VIEW,
    GROUP_EDIT,
    CAB_CREATE,
    WF_CREATE,
    DOC_VIEW,
    DT_VIEW,
    MT_VIEW,
    DM_VIEW,
    CAB_VIEW,
    ROLE_VIEW,
    WF_VIEW,
    ACL_VIEW,
    DOC_EDIT,
    DM_EDIT,
];

// ----- a deterministic generator -----------------------------------------------------------------

/// SplitMix64: the world is the same at every run.
pub struct Dice(pub u64);

impl Dice {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }

    pub fn sample<T: Clone>(&mut self, v: &[T], k: usize) -> Vec<T> {
        let mut c = v.to_vec();
        self.shuffle(&mut c);
        c.truncate(k);
        c
    }
}

// ----- object kinds ------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum K {
    DocType,
    Doc,
    MetaType,
    Cabinet,
    Role,
    Workflow,
    File,
    Instance,
}

pub type Obj = (K, i64);

/// The kinds whose objects get ACLs in the world.
pub const ACL_KINDS: [K; 6] = [
    K::DocType,
    K::Doc,
    K::MetaType,
    K::Cabinet,
    K::Role,
    K::Workflow,
];

impl K {
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            K::DocType => ("documents", "documenttype"),
            K::Doc => ("documents", "document"),
            K::MetaType => ("metadata", "metadatatype"),
            K::Cabinet => ("cabinets", "cabinet"),
            K::Role => ("permissions", "role"),
            K::Workflow => ("document_states", "workflow"),
            K::File => ("documents", "documentfile"),
            K::Instance => ("document_states", "workflowinstance"),
        }
    }

    /// `app_label.model_name` as events name it.
    pub fn parse(name: &str) -> Option<K> {
        [
            K::DocType,
            K::Doc,
            K::MetaType,
            K::Cabinet,
            K::Role,
            K::Workflow,
            K::File,
            K::Instance,
        ]
        .into_iter()
        .find(|k| {
            let (a, m) = k.names();
            format!("{a}.{m}") == name
        })
    }

    /// The permission that lets a user see an object of this kind at all.
    pub fn view(self) -> &'static str {
        match self {
            K::DocType => DT_VIEW,
            K::Doc | K::File => DOC_VIEW,
            K::MetaType => MT_VIEW,
            K::Cabinet => CAB_VIEW,
            K::Role => ROLE_VIEW,
            K::Workflow | K::Instance => WF_VIEW,
        }
    }

    /// Keys an ACL on this kind may hold in the generated world (spec 5.3: those of the kind
    /// and of the kinds inheriting from it).
    pub fn pool(self) -> &'static [&'static str] {
        const DOC: &[&str] = &[
            DOC_VIEW,
            DOC_EDIT,
            DOC_DELETE,
            DOC_CHANGE_TYPE,
            FILE_NEW,
            DM_VIEW,
            DM_ADD,
            DM_EDIT,
            DM_REMOVE,
            CAB_ADD_DOC,
            CAB_REMOVE_DOC,
            WF_TRANSITION,
            ACL_VIEW,
            ACL_EDIT,
        ];
        const DT: &[&str] = &[
            DT_VIEW,
            DT_EDIT,
            DT_DELETE,
            DOC_CREATE,
            DOC_VIEW,
            DOC_EDIT,
            DOC_DELETE,
            DOC_CHANGE_TYPE,
            FILE_NEW,
            DM_VIEW,
            DM_ADD,
            DM_EDIT,
            DM_REMOVE,
            CAB_ADD_DOC,
            CAB_REMOVE_DOC,
            WF_TRANSITION,
            ACL_VIEW,
            ACL_EDIT,
        ];
        const MT: &[&str] = &[
            MT_VIEW, MT_EDIT, MT_DELETE, DM_VIEW, DM_ADD, DM_EDIT, DM_REMOVE, ACL_VIEW, ACL_EDIT,
        ];
        const CAB: &[&str] = &[
            CAB_VIEW,
            CAB_CREATE,
            CAB_EDIT,
            CAB_DELETE,
            CAB_ADD_DOC,
            CAB_REMOVE_DOC,
            ACL_VIEW,
            ACL_EDIT,
        ];
        const ROLE: &[&str] = &[ROLE_VIEW, ROLE_EDIT, ROLE_DELETE, ACL_VIEW, ACL_EDIT];
        const WF: &[&str] = &[
            WF_VIEW,
            WF_EDIT,
            WF_DELETE,
            WF_TRANSITION,
            ACL_VIEW,
            ACL_EDIT,
        ];
        match self {
            K::DocType => DT,
            K::Doc => DOC,
            K::MetaType => MT,
            K::Cabinet => CAB,
            K::Role => ROLE,
            K::Workflow => WF,
            K::File | K::Instance => &[ACL_VIEW, ACL_EDIT],
        }
    }
}

// ----- the model and the reference evaluator -----------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct UserM {
    pub name: String,
    pub superuser: bool,
    pub active: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoleM {
    pub groups: BTreeSet<i64>,
    pub global: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AclM {
    pub id: i64,
    pub perms: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AssocM {
    pub dt: i64,
    pub mt: i64,
    pub required: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValM {
    pub doc: i64,
    pub mt: i64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CabM {
    pub parent: Option<i64>,
    pub docs: BTreeSet<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrM {
    pub from: i64,
    pub to: i64,
    pub triggers: BTreeSet<String>,
}

/// What a workflow action does, as far as access goes.
#[derive(Clone, Debug, PartialEq)]
pub enum ActM {
    /// Grants or revokes this permission on the document.
    Access(String),
    /// `add_metadata`, `edit_metadata` or `remove_metadata` of these metadata types.
    Metadata(String, Vec<i64>),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WfM {
    pub dts: BTreeSet<i64>,
    /// State -> its actions.
    pub states: BTreeMap<i64, BTreeSet<i64>>,
    /// Action -> what it does.
    pub actions: BTreeMap<i64, ActM>,
    pub transitions: BTreeMap<i64, TrM>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InstM {
    pub doc: i64,
    pub wf: i64,
    pub state: Option<i64>,
}

/// Everything that decides access, and the objects it is about.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    pub users: BTreeMap<i64, UserM>,
    /// Group -> members.
    pub groups: BTreeMap<i64, BTreeSet<i64>>,
    pub roles: BTreeMap<i64, RoleM>,
    /// Object -> role -> ACL (objects with at least one ACL).
    pub acls: BTreeMap<Obj, BTreeMap<i64, AclM>>,
    pub dts: BTreeSet<i64>,
    pub mts: BTreeSet<i64>,
    pub assocs: BTreeMap<i64, AssocM>,
    /// Document -> its type.
    pub docs: BTreeMap<i64, i64>,
    pub values: BTreeMap<i64, ValM>,
    /// File -> its document.
    pub files: BTreeMap<i64, i64>,
    pub cabs: BTreeMap<i64, CabM>,
    pub wfs: BTreeMap<i64, WfM>,
    pub insts: BTreeMap<i64, InstM>,
}

/// What the evaluator expects of one call: passed (with this status) or refused (this status).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Exp {
    Ok(u16),
    No(u16),
    /// Refused with 403 or 404: both reveal nothing here (an ACL id addressed through another
    /// object, by a caller who may see that object but not act on its ACLs).
    Refused,
    /// The object no longer exists: 404 (api.md).
    Gone,
}

impl Model {
    pub fn roles_of(&self, u: i64) -> BTreeSet<i64> {
        let groups: BTreeSet<i64> = (self.groups.iter())
            .filter(|(_, m)| m.contains(&u))
            .map(|(g, _)| *g)
            .collect();
        (self.roles.iter())
            .filter(|(_, r)| r.groups.iter().any(|g| groups.contains(g)))
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn sup(&self, u: i64) -> bool {
        self.users.get(&u).is_some_and(|x| x.superuser && x.active)
    }

    /// Superuser, or a role of the user holds `p` globally (spec 5.2 level 1).
    pub fn glob(&self, u: i64, p: &str) -> bool {
        self.sup(u)
            || (self.roles_of(u).iter())
                .any(|r| self.roles.get(r).is_some_and(|r| r.global.contains(p)))
    }

    pub fn root(&self, c: i64) -> i64 {
        let mut r = c;
        for _ in 0..64 {
            match self.cabs.get(&r).and_then(|x| x.parent) {
                Some(p) => r = p,
                None => break,
            }
        }
        r
    }

    /// The object and the objects it inherits ACLs from (spec 5.3).
    pub fn chain(&self, o: Obj) -> Vec<Obj> {
        let mut out = vec![o];
        match o.0 {
            K::Doc => out.extend(self.docs.get(&o.1).map(|dt| (K::DocType, *dt))),
            K::File => {
                if let Some(d) = self.files.get(&o.1) {
                    out.extend(self.chain((K::Doc, *d)));
                }
            }
            K::Cabinet => {
                // Only the root's ACLs cover a whole tree.
                let root = self.root(o.1);
                if root != o.1 {
                    out.push((K::Cabinet, root));
                }
            }
            K::Instance => out.extend(self.insts.get(&o.1).map(|i| (K::Workflow, i.wf))),
            _ => {}
        }
        out
    }

    /// The reference evaluator (spec 5.2-5.3).
    pub fn has(&self, u: i64, p: &str, o: Obj) -> bool {
        if self.glob(u, p) {
            return true;
        }
        let roles = self.roles_of(u);
        self.chain(o).iter().any(|x| {
            self.acls.get(x).is_some_and(|m| {
                m.iter()
                    .any(|(r, a)| roles.contains(r) && a.perms.contains(p))
            })
        })
    }

    pub fn seen(&self, u: i64, o: Obj) -> bool {
        self.has(u, o.0.view(), o)
    }

    /// An action needing `p` on `o`: allowed, or refused 403 when `o` is visible, else 404.
    pub fn act(&self, u: i64, p: &str, o: Obj, ok: u16) -> Exp {
        if self.has(u, p, o) {
            Exp::Ok(ok)
        } else if self.seen(u, o) {
            Exp::No(403)
        } else {
            Exp::No(404)
        }
    }

    /// Whether `u` holds everything role `r` grants (its global permissions globally, each
    /// ACL permission on its object): linking the role to a group, or a user to a group holding
    /// it, must not give anyone more than the actor holds.
    pub fn holds_role(&self, u: i64, r: i64) -> bool {
        self.sup(u)
            || (self
                .roles
                .get(&r)
                .is_none_or(|role| role.global.iter().all(|p| self.glob(u, p)))
                && self.acls.iter().all(|(o, m)| {
                    m.get(&r)
                        .is_none_or(|a| a.perms.iter().all(|p| self.has(u, p, *o)))
                }))
    }

    /// Whether `u` could do what action `a` does on the documents of every type of `dts`: what
    /// adding the action needs, and, for every action of a workflow, what changing
    /// when they run needs. Nothing when `dts` is empty (the action runs nowhere).
    pub fn may_do(&self, u: i64, a: &ActM, dts: &BTreeSet<i64>) -> bool {
        if self.sup(u) || dts.is_empty() {
            return true;
        }
        let on_types = |ps: &[&str]| {
            dts.iter()
                .all(|t| ps.iter().all(|p| self.has(u, p, (K::DocType, *t))))
        };
        let (on_type, on_mt, mts): (&[&str], &[&str], &Vec<i64>) = match a {
            ActM::Access(p) => return on_types(&[ACL_EDIT, p.as_str()]),
            ActM::Metadata(kind, mts) => match kind.as_str() {
                "add_metadata" => (&[DOC_VIEW, DM_ADD], &[DM_ADD], mts),
                "edit_metadata" => (
                    &[DOC_VIEW, DM_VIEW, DM_ADD, DM_EDIT],
                    &[DM_VIEW, DM_ADD, DM_EDIT],
                    mts,
                ),
                _ => (&[DOC_VIEW, DM_VIEW, DM_REMOVE], &[DM_VIEW, DM_REMOVE], mts),
            },
        };
        on_types(on_type)
            && mts
                .iter()
                .all(|m| on_mt.iter().all(|p| self.has(u, p, (K::MetaType, *m))))
    }

    /// Whether `u` may change the definition of workflow `w` (its label, states, transitions,
    /// triggers; deleting it): what every one of its actions does on every type it is bound to.
    pub fn may_rewire(&self, u: i64, w: i64) -> bool {
        self.wfs
            .get(&w)
            .is_none_or(|wf| wf.actions.values().all(|a| self.may_do(u, a, &wf.dts)))
    }

    /// Whether `u` holds everything user `t` holds: everything each role of each of `t`'s
    /// groups grants, whether or not `t` is active (no permission acts on a principal
    /// stronger than its holder). A superuser `t` is the superuser rule's.
    pub fn holds_user(&self, u: i64, t: i64) -> bool {
        self.roles_of(t).iter().all(|r| self.holds_role(u, *r))
    }

    /// Whether `u` holds everything the roles of group `g` grant.
    pub fn holds_group(&self, u: i64, g: i64) -> bool {
        (self.roles.iter())
            .filter(|(_, role)| role.groups.contains(&g))
            .all(|(r, _)| self.holds_role(u, *r))
    }

    /// Changing document `d` to type `new` (spec 2.4 rule 4): viewing the document
    /// (404), `document_change_type` on it (403), viewing the new type (a body reference: 400),
    /// `document_create` on the new type (403).
    pub fn change_type(&self, u: i64, d: i64, new: i64) -> Exp {
        let doc = (K::Doc, d);
        if !self.seen(u, doc) {
            Exp::No(404)
        } else if !self.has(u, DOC_CHANGE_TYPE, doc) {
            Exp::No(403)
        } else if !self.seen(u, (K::DocType, new)) {
            Exp::No(400)
        } else if !self.has(u, DOC_CREATE, (K::DocType, new)) {
            Exp::No(403)
        } else {
            Exp::Ok(200)
        }
    }

    /// A document moved to type `new`: its values of types the new type lacks are gone (spec
    /// 2.4 rule 4; required types added with their default are not in this model's worlds).
    #[allow(dead_code)] // the HTTP matrix reads a moved document back from the server instead
    pub fn move_doc(&mut self, d: i64, new: i64) {
        self.docs.insert(d, new);
        let kept: BTreeSet<i64> = (self.assocs.values())
            .filter(|a| a.dt == new)
            .map(|a| a.mt)
            .collect();
        self.values
            .retain(|_, v| v.doc != d || kept.contains(&v.mt));
    }

    pub fn user_visible(&self, u: i64, t: i64) -> bool {
        self.users.contains_key(&t) && (u == t || self.glob(u, USER_VIEW))
    }

    pub fn value_visible(&self, u: i64, v: i64) -> bool {
        self.values.get(&v).is_some_and(|x| {
            self.seen(u, (K::Doc, x.doc))
                && self.has(u, DM_VIEW, (K::Doc, x.doc))
                && self.has(u, DM_VIEW, (K::MetaType, x.mt))
        })
    }

    pub fn inst_visible(&self, u: i64, i: i64) -> bool {
        self.insts.get(&i).is_some_and(|x| {
            self.seen(u, (K::Doc, x.doc)) && self.has(u, WF_VIEW, (K::Instance, i))
        })
    }

    pub fn event_visible(&self, u: i64, kind: &str, id: i64) -> bool {
        match kind {
            "user_management.user" => u == id || self.glob(u, USER_VIEW),
            "user_management.group" => self.glob(u, GROUP_VIEW),
            other => {
                let k = K::parse(other).unwrap_or_else(|| panic!("event target kind {other}"));
                self.seen(u, (k, id))
            }
        }
    }

    // ----- deletions, as the specification describes them ---------------------------------

    pub fn drop_acls(&mut self, o: Obj) {
        self.acls.remove(&o);
    }

    pub fn remove_doc(&mut self, d: i64) {
        self.docs.remove(&d);
        self.values.retain(|_, v| v.doc != d);
        let files: Vec<i64> = (self.files.iter())
            .filter(|(_, doc)| **doc == d)
            .map(|(f, _)| *f)
            .collect();
        for f in files {
            self.files.remove(&f);
            self.drop_acls((K::File, f));
        }
        self.drop_acls((K::Doc, d));
        let insts: Vec<i64> = (self.insts.iter())
            .filter(|(_, i)| i.doc == d)
            .map(|(i, _)| *i)
            .collect();
        for i in insts {
            self.insts.remove(&i);
            self.drop_acls((K::Instance, i));
        }
        for c in self.cabs.values_mut() {
            c.docs.remove(&d);
        }
    }

    pub fn remove_cab(&mut self, c: i64) {
        let mut stack = vec![c];
        while let Some(x) = stack.pop() {
            stack.extend(
                (self.cabs.iter())
                    .filter(|(_, cab)| cab.parent == Some(x))
                    .map(|(id, _)| *id),
            );
            self.cabs.remove(&x);
            self.drop_acls((K::Cabinet, x));
        }
    }

    pub fn remove_wf(&mut self, w: i64) {
        self.wfs.remove(&w);
        let insts: Vec<i64> = (self.insts.iter())
            .filter(|(_, i)| i.wf == w)
            .map(|(i, _)| *i)
            .collect();
        for i in insts {
            self.insts.remove(&i);
            self.drop_acls((K::Instance, i));
        }
        self.drop_acls((K::Workflow, w));
    }

    pub fn remove_dt(&mut self, dt: i64) {
        self.dts.remove(&dt);
        self.assocs.retain(|_, a| a.dt != dt);
        self.drop_acls((K::DocType, dt));
        for w in self.wfs.values_mut() {
            w.dts.remove(&dt);
        }
    }

    pub fn remove_mt(&mut self, mt: i64) {
        self.mts.remove(&mt);
        self.assocs.retain(|_, a| a.mt != mt);
        self.values.retain(|_, v| v.mt != mt);
        self.drop_acls((K::MetaType, mt));
    }

    pub fn remove_role(&mut self, r: i64) {
        self.roles.remove(&r);
        self.drop_acls((K::Role, r));
        for m in self.acls.values_mut() {
            m.remove(&r);
        }
        self.acls.retain(|_, m| !m.is_empty());
    }

    pub fn remove_group(&mut self, g: i64) {
        self.groups.remove(&g);
        for r in self.roles.values_mut() {
            r.groups.remove(&g);
        }
    }

    pub fn remove_user(&mut self, u: i64) {
        self.users.remove(&u);
        for m in self.groups.values_mut() {
            m.remove(&u);
        }
    }
}
