//! Tests that look for the next door: the canary hunt and the monotone-authority
//! check, in the library (the rules live in `docmeta-core`; the faces only convert).
//!
//! **The world.** Each case builds, through `Docmeta::system()`, a small generated world: three
//! document types (a public one the narrow users read through a shared *baseline* role, a secret
//! and a quiet one they do not), five metadata types (`note`, `code` with a regular-expression
//! validator, `pick` with a default and a lookup listing users and groups, and `stamp` with a
//! regular-expression parser, whose values the baseline reads, and a secret `salary`), documents
//! with values and files, a cabinet tree, two workflows an administrator built (`review`: draft
//! → published under a condition, and back, with entry actions that grant the baseline role
//! `document_view` on the published document and stamp a value; `intake`: a transition fired by
//! a trigger), an administrator, a strong non-superuser (`vic`, holding every permission) and an
//! inactive one holding as much, groups, roles, ACLs, and *narrow users*: each holds exactly one
//! permission, globally or through one ACL on one object, through a role and group of its own;
//! most of them also hold the baseline (view the public type, its documents and the public
//! values), and one more user holds only the baseline.
//! Every label, name, value, file name and file content, username, device name, group name, role
//! label, workflow text and log comment the world holds is a unique canary (`cnry` + serial +
//! random);
//! metadata type *names* are not (they are identifiers an attacker is assumed to know, as
//! `salary` in the reported attack), and the narrow users only ever write text of their own.
//!
//! **The operations.** proptest generates sequences of operations: the narrow users try what
//! their permission suggests (and sometimes anything): store defaults, lookups, validators,
//! conditions, triggers and workflow actions that try to read canaries, add states and
//! transitions, bind workflows, change document types, reset passwords, edit users, add
//! themselves to groups, link roles, grant globally and through ACLs, save empty values so that
//! their defaults render, take transitions, create documents, cabinets and principals, rename,
//! upload and delete; an administrator (`Docmeta::session` of a superuser, or
//! `Docmeta::system`) acts on the same objects (saves empty values so that defaults render,
//! makes associations required so that the backfill renders, takes transitions, edits values that
//! fire triggers, creates documents, changes types, renames, uploads, reads lookups and available
//! transitions; a quarter of the time it runs what the latest narrow change planted); and the
//! lifecycle tasks run (`run_pending_tasks`). A narrow user holds one permission besides the
//! baseline, so none can both read a hidden canary and store or write anything: no canary is
//! ever legitimately copied, and one seen outside its home's visibility is a leak.
//!
//! **After every operation**, for every narrow user:
//! * *canaries*: everything the user can read through `Session` (a replica of their device
//!   synced from scratch included) is scanned for canaries; one the
//!   reference model (`tests/oracle/access_model.rs`, spec 5.2-5.4, plus the records api.md
//!   nests: a document shows its type, a value its metadata type, an ACL its role, an instance
//!   its workflow) says the user may not see fails the case. Every user's lists (documents,
//!   types, workflows, cabinets, users, groups, roles) and the answers to its own operations
//!   (errors included) are read at every step; the users whose view permissions are the same
//!   form a class, and one of them, in turn, reads everything else: every object the model lets
//!   it view and one it may not of each kind, one at a time (documents and their views, values
//!   listed, paged and one by one, lookups and their choices, files and their bytes, metadata
//!   and document types, associations, cabinets and their documents, workflows, states,
//!   transitions, actions, instances, logs, available transitions, users, groups and members,
//!   roles, their groups and permissions, ACLs, explain, tasks), and the event log and event
//!   views (the new events while its view stays the same, else the last 1,000), each event's
//!   changes (the values before and after) on a channel of their own. Every fourth
//!   step (a search first applies the index's pending events, a commit that four steps share),
//!   both searches are asked for a hidden canary, whole or a partial value, and must answer as
//!   for one that exists nowhere; the pages they return are scanned too.
//! * *monotone authority*: the user's effective permissions (`Docmeta::filter` over every object
//!   and every permission of its kind, `Session::can_globally` for every key) and visible sets
//!   (the ids the list operations return) may grow only through a change of grants (ACL, global,
//!   membership, role link, superuser or activity) that the model says its maker was entitled
//!   to make, or through a change of document type made by someone entitled to it (viewing the
//!   document, `document_change_type` on it, `document_create` on the new type). A grant made
//!   by a workflow action counts as made by everyone who changed that workflow's graph (an
//!   administrator who built it delegates when granting someone the transition); a grant nobody
//!   made directly is a violation; so is taking over another account (a password reset) or
//!   renaming or deactivating it without holding everything it holds. The same goes
//!   for writes: a value added, edited or removed by a workflow action must be one every user
//!   who changed that workflow may write directly.
//!
//! A failure prints the shortest case found (the failing step's prefix, then runs of operations
//! removed while the same class of failure shows): who holds what, the operations (who did what,
//! with what answer), where the canary appeared or what grew, and the line that replays it.
//!
//! Runs: `DOCMETA_CANARY_OPS` (default 6,000) operations in all, spread over the roster of narrow
//! users (every permission key of `Permission`, globally and through an ACL on every kind whose
//! pool holds it), a chunk of five per world, on up to four threads; before them, every case of
//! `tests/proptest-regressions/canary_hunt.cases` (the doors found so far, one line each, with
//! the narrow users they need: a failure prints its line). proptest keeps no seeds of its own
//! here: a seed replays only with the roster chunk it failed in, and would be replayed in every
//! chunk. `DOCMETA_CANARY_SURVEY=1` runs every case to the
//! end instead of stopping at the first failure, sorts what it found into classes, shortens one
//! case of each and prints them all; `DOCMETA_CANARY_CHUNK=<k>` runs one chunk of the roster,
//! `DOCMETA_CANARY_TRACE=1` prints every operation as it runs.

#[path = "../oracle/access_model.rs"]
#[allow(dead_code)] // The HTTP oracle uses parts of the model this test has no use for.
mod access_model;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{Debug, Write as _};

use access_model::{
    ACL_EDIT, ACL_KINDS, ACL_VIEW, AclM, ActM, AssocM, CAB_EDIT, CabM, DM_VIEW, DOC_CREATE,
    DOC_EDIT, DT_EDIT, Dice, GROUP_EDIT, GROUP_VIEW, InstM, K, Model, Obj, ROLE_EDIT, RoleM, TrM,
    USER_EDIT, USER_VIEW, UserM, ValM, WF_EDIT, WfM,
};
use docmeta_core::TransitionUpdate;
use docmeta_core::{
    AclId, ActionKind, CabinetId, DeviceId, Docmeta, DocumentFileId, DocumentId,
    DocumentMetadataId, DocumentQuery, DocumentTypeId, EventQuery, GroupId, MetadataTypeId,
    MetadataTypeInput, ObjectKind, ObjectRef, OrderBy, PageRequest, Permission, Result, RoleId,
    Session, UserId, UserUpdate, WorkflowId, WorkflowInstanceId, WorkflowStateId,
    WorkflowTransitionId,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestError, TestRunner};

// ----- the roster of narrow users ---------------------------------------------------------------

/// Where a narrow user's one permission applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Global,
    /// Through one ACL on one object of this kind (chosen per world).
    Acl(K),
}

/// One narrow user's permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pair {
    perm: Permission,
    scope: Scope,
}

/// Every permission key, globally, and through an ACL on every kind whose pool (spec 5.3: the
/// kind's keys and those of the kinds inheriting from it) holds it; in a fixed shuffled order,
/// so that one chunk mixes administrative and ordinary permissions.
fn roster() -> Vec<Pair> {
    let mut out = Vec::new();
    for p in Permission::ALL {
        out.push(Pair {
            perm: *p,
            scope: Scope::Global,
        });
        for k in ACL_KINDS {
            if k.pool().contains(&p.key()) {
                out.push(Pair {
                    perm: *p,
                    scope: Scope::Acl(k),
                });
            }
        }
    }
    Dice(0xC0FF_EE00_CA7A_2032).shuffle(&mut out);
    out
}

/// Narrow users per world: the roster is run in chunks of this size.
const CHUNK: usize = 5;

/// The permissions that store code someone else runs, or administer principals and access: the
/// doors the security reviews found open. Every world holds two of them (in turn), so a run of a
/// few thousand operations tries each several times, in different company.
const KEEN: &[&str] = &[
    "metadata.metadata_type_edit",
    "document_states.workflow_template_edit",
    "user_management.user_edit",
    "user_management.group_edit",
    "permissions.role_edit",
    "acls.acl_edit",
    "documents.document_change_type",
    "document_states.workflow_template_create",
    "metadata.metadata_type_create",
];

fn chunks() -> Vec<Vec<Pair>> {
    let (keen, rest): (Vec<Pair>, Vec<Pair>) =
        (roster().into_iter()).partition(|p| KEEN.contains(&p.perm.key()));
    (rest.chunks(CHUNK - 2).enumerate())
        .map(|(k, c)| {
            let mut c = c.to_vec();
            for j in [2 * k, 2 * k + 1] {
                if let Some(p) = keen.get(j % keen.len().max(1)) {
                    c.push(*p);
                }
            }
            c
        })
        .collect()
}

// ----- canaries ---------------------------------------------------------------------------------

/// Where a canary lives: who may see it is decided by the reference model from this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Home {
    DocLabel(i64),
    DocTypeLabel(i64),
    /// A metadata type's label (its name is not a canary).
    MetaTypeLabel(i64),
    /// The value of metadata type `.1` on document `.0`.
    Value(i64, i64),
    /// A document file's name and content.
    File(i64),
    Cabinet(i64),
    Role(i64),
    Group(i64),
    /// A username, or the name of one of the user's devices.
    User(i64),
    /// A workflow's label, its states', transitions' and actions' labels.
    Workflow(i64),
    /// A comment in a workflow instance's log.
    Comment(i64),
}

impl Home {
    fn kind(self) -> &'static str {
        match self {
            Home::DocLabel(_) => "document label",
            Home::DocTypeLabel(_) => "document type label",
            Home::MetaTypeLabel(_) => "metadata type label",
            Home::Value(..) => "metadata value",
            Home::File(_) => "file name or content",
            Home::Cabinet(_) => "cabinet label",
            Home::Role(_) => "role label",
            Home::Group(_) => "group name",
            Home::User(_) => "username or device name",
            Home::Workflow(_) => "workflow text",
            Home::Comment(_) => "workflow log comment",
        }
    }
}

/// Whether the model lets user `u` see a canary living at `home` (spec 5.2-5.4, and the records
/// api.md nests: a document record shows its type, a value its metadata type, an ACL its role,
/// an instance its workflow's states and transitions).
fn entitled(m: &Model, u: i64, home: Home) -> bool {
    match home {
        Home::DocLabel(d) => m.seen(u, (K::Doc, d)),
        Home::DocTypeLabel(t) => {
            m.seen(u, (K::DocType, t))
                || (m.docs.iter()).any(|(d, dt)| *dt == t && m.seen(u, (K::Doc, *d)))
        }
        Home::MetaTypeLabel(t) => {
            m.seen(u, (K::MetaType, t))
                || (m.values.iter()).any(|(v, x)| x.mt == t && m.value_visible(u, *v))
        }
        Home::Value(d, t) => {
            m.seen(u, (K::Doc, d))
                && m.has(u, DM_VIEW, (K::Doc, d))
                && m.has(u, DM_VIEW, (K::MetaType, t))
        }
        Home::File(f) => m.seen(u, (K::File, f)),
        Home::Cabinet(c) => m.seen(u, (K::Cabinet, c)),
        Home::Role(r) => {
            m.seen(u, (K::Role, r))
                || (m.acls.iter()).any(|(o, x)| x.contains_key(&r) && m.has(u, ACL_VIEW, *o))
        }
        Home::Group(_) => m.glob(u, GROUP_VIEW),
        Home::User(t) => u == t || m.glob(u, USER_VIEW),
        Home::Workflow(w) => {
            m.seen(u, (K::Workflow, w))
                || (m.insts.iter()).any(|(i, x)| x.wf == w && m.inst_visible(u, *i))
        }
        Home::Comment(i) => m.inst_visible(u, i),
    }
}

/// Whether user `u` may change the object `home` lives in with a permission that does not
/// also need viewing it (the answer to that change shows the object).
fn edits(m: &Model, u: i64, home: Home) -> bool {
    match home {
        Home::DocLabel(d) => m.has(u, DOC_EDIT, (K::Doc, d)),
        // The answer to the creation or a change of a document shows the document as a view
        // does, with its type (docs/server.md: a creator gets the new record even without the
        // view permission on it).
        Home::DocTypeLabel(t) => {
            m.has(u, DT_EDIT, (K::DocType, t))
                || m.has(u, DOC_CREATE, (K::DocType, t))
                || (m.docs.iter()).any(|(d, dt)| *dt == t && m.has(u, DOC_EDIT, (K::Doc, *d)))
        }
        Home::Cabinet(c) => m.has(u, CAB_EDIT, (K::Cabinet, c)),
        Home::Role(r) => m.has(u, ROLE_EDIT, (K::Role, r)),
        Home::Workflow(w) => m.has(u, WF_EDIT, (K::Workflow, w)),
        _ => false,
    }
}

/// What a user's list operations show: the ids, by list.
type Visible = BTreeMap<String, BTreeSet<i64>>;
/// An answer a narrow user got: its index, the channel (`answer:<operation> -> <outcome>`), the
/// answer's text.
type Answer = (usize, String, String);

const CANARY_PREFIX: &str = "cnry";
const CANARY_LEN: usize = 13;
/// The serial of canaries that exist nowhere (search probes).
const ABSENT_SERIAL: &str = "9999";

/// Every canary of a world and where it lives.
#[derive(Default)]
struct Canaries {
    homes: BTreeMap<String, Home>,
    serial: u32,
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxy0123456789";

fn suffix(dice: &mut Dice) -> String {
    (0..5)
        .map(|_| char::from(ALPHABET[dice.below(ALPHABET.len())]))
        .collect()
}

impl Canaries {
    fn token(&mut self, dice: &mut Dice) -> String {
        self.serial += 1;
        assert!(self.serial < 9000, "too many canaries in one world");
        format!("{CANARY_PREFIX}{:04}{}", self.serial, suffix(dice))
    }

    fn register(&mut self, token: &str, home: Home) {
        self.homes.insert(token.to_owned(), home);
    }

    /// The canaries in `text`, with their position.
    fn find(&self, text: &str) -> Vec<(usize, String)> {
        let lower = text.to_lowercase();
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(at) = lower[from..].find(CANARY_PREFIX) {
            let start = from + at;
            from = start + CANARY_PREFIX.len();
            let Some(token) = lower.get(start..start + CANARY_LEN) else {
                continue;
            };
            let b = token.as_bytes();
            let shaped = b[4..8].iter().all(u8::is_ascii_digit)
                && b[8..].iter().all(|c| ALPHABET.contains(c));
            if !shaped || &b[4..8] == ABSENT_SERIAL.as_bytes() {
                continue;
            }
            out.push((start, token.to_owned()));
        }
        out
    }
}

/// Up to 60 characters on each side of `at`.
fn excerpt(text: &str, at: usize) -> String {
    let mut start = at.saturating_sub(60);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + CANARY_LEN + 60).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("…{}…", &text[start..end])
}

// ----- what narrow users store: templates that try to read canaries -----------------------------

/// Defaults (context `document`, `now`) and lookups (context `users`, `groups`, `now`, and
/// `document` when rendered for one).
const TEMPLATES: &[&str] = &[
    "{{ document.metadata_value_of.salary }}",
    "{% for m in document.metadata.all %}{{ m.metadata_type.label }}={{ m.value }};{% endfor %}",
    "{{ document.metadata_value_of.salary or 'x' }},{% for u in users %}{{ u }},{% endfor %}",
    "{{ document.label }}|{{ document.document_type.label }}",
    "{% for u in users %}{{ u.username }},{% endfor %}",
    "{% for g in groups %}{{ g }},{% endfor %}",
    "{{ document.metadata_value_of.note }}{{ document.metadata_value_of.code }}",
];

/// A template by `sel`: the first three (which read hidden values) twice as often.
fn template(sel: u8) -> &'static str {
    let k = usize::from(sel) % (TEMPLATES.len() + 3);
    TEMPLATES[if k < TEMPLATES.len() {
        k
    } else {
        k - TEMPLATES.len()
    }]
}

/// Values of workflow `edit_metadata` actions.
const ACTION_TEMPLATES: &[&str] = &[
    "{{ workflow_instance.document.metadata_value_of.salary }}",
    "{% for m in workflow_instance.document.metadata.all %}{{ m.metadata_type.label }}={{ m.value }};{% endfor %}",
    "{{ workflow_instance.document.label }} {{ workflow_instance.workflow.label }} {{ workflow_instance.current_state.label }}",
    "{{ workflow_instance.context }} {{ workflow_instance_context }}",
];

/// Transition conditions.
const CONDITIONS: &[&str] = &[
    "{% if workflow_instance.document.metadata_value_of.salary %}True{% endif %}",
    "True",
    "",
    "{% if 'cnry' in (workflow_instance.document.metadata_value_of.salary or '') %}True{% endif %}",
];

const TRIGGERS: &[&str] = &[
    "document_metadata_edited",
    "document_metadata_added",
    "document_metadata_removed",
];

/// Validators and parsers a narrow `metadata_type_edit` holder may set.
const VALIDATIONS: &[(&str, &str, &str, &str)] = &[
    ("", "", "", ""),
    (
        "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
        "pattern: '^[a-z0-9 ]*$'",
        "",
        "",
    ),
    (
        "",
        "",
        "svc.apps.metadata.metadata_parsers.RegularExpressionParser",
        "{pattern: 'zz', replacement: 'z'}",
    ),
    (
        "svc.apps.metadata.metadata_validators.DateValidator",
        "",
        "",
        "",
    ),
];

// ----- actors and what they do ------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
enum Who {
    /// `Docmeta::session` of the superuser account.
    Root,
    /// `Docmeta::system()` (and the lifecycle tasks).
    #[default]
    System,
    Narrow(usize),
}

/// One generated operation; its bytes select the action and its targets in the world as it is
/// when it runs, so that any subsequence of operations is still a valid case.
#[derive(Clone, Debug)]
enum Op {
    Narrow {
        n: u8,
        act: u8,
        a: u8,
        b: u8,
        c: u8,
    },
    Admin {
        system: bool,
        act: u8,
        a: u8,
        b: u8,
        c: u8,
    },
    Tasks,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(n, act, a, b, c)| Op::Narrow { n, act, a, b, c }),
        6 => (any::<bool>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(system, act, a, b, c)| Op::Admin { system, act, a, b, c }),
        2 => Just(Op::Tasks),
    ]
}

/// A generated case: the world's seed and the operations.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    ops: Vec<Op>,
}

/// What a narrow user may try; `NARROW_ACTS` indexes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    SetDefault,
    SetLookup,
    SetValidation,
    CreateMetadataType,
    Associate,
    SetCondition,
    AddTrigger,
    AddAction,
    AddStateOrTransition,
    BindWorkflow,
    CreateWorkflow,
    ChangeType,
    SetPassword,
    UpdateUser,
    AddMember,
    LinkRole,
    GrantGlobal,
    AclGrant,
    SaveValue,
    RemoveValue,
    Transition,
    CreateDocument,
    Cabinet,
    Rename,
    UploadFile,
    Delete,
    CreatePrincipal,
}

const NARROW_ACTS: &[Act] = &[
    Act::SetDefault,
    Act::SetLookup,
    Act::SetValidation,
    Act::CreateMetadataType,
    Act::Associate,
    Act::SetCondition,
    Act::AddTrigger,
    Act::AddAction,
    Act::AddStateOrTransition,
    Act::BindWorkflow,
    Act::CreateWorkflow,
    Act::ChangeType,
    Act::SetPassword,
    Act::UpdateUser,
    Act::AddMember,
    Act::LinkRole,
    Act::GrantGlobal,
    Act::AclGrant,
    Act::SaveValue,
    Act::RemoveValue,
    Act::Transition,
    Act::CreateDocument,
    Act::Cabinet,
    Act::Rename,
    Act::UploadFile,
    Act::Delete,
    Act::CreatePrincipal,
];

/// What a holder of `p` would try first.
fn acts_for(p: Permission) -> &'static [Act] {
    use Permission as P;
    match p {
        P::MetadataTypeEdit => &[Act::SetDefault, Act::SetLookup, Act::SetValidation],
        P::MetadataTypeCreate => &[Act::CreateMetadataType],
        P::DocumentTypeEdit => &[Act::Associate, Act::Rename],
        P::WorkflowTemplateEdit => &[
            Act::SetCondition,
            Act::AddTrigger,
            Act::AddAction,
            Act::AddStateOrTransition,
            Act::BindWorkflow,
        ],
        P::WorkflowTemplateCreate => &[Act::CreateWorkflow],
        P::WorkflowInstanceTransition => &[Act::Transition],
        P::DocumentChangeType => &[Act::ChangeType],
        P::UserEdit => &[Act::SetPassword, Act::UpdateUser],
        P::GroupEdit => &[Act::AddMember, Act::Rename],
        P::RoleEdit => &[Act::LinkRole, Act::GrantGlobal, Act::Rename],
        P::AclEdit => &[Act::AclGrant],
        P::DocumentMetadataAdd | P::DocumentMetadataEdit => &[Act::SaveValue],
        P::DocumentMetadataRemove => &[Act::RemoveValue],
        P::DocumentCreate => &[Act::CreateDocument],
        P::CabinetCreate | P::CabinetAddDocument | P::CabinetRemoveDocument => &[Act::Cabinet],
        P::CabinetEdit | P::DocumentEdit => &[Act::Rename, Act::Delete],
        P::DocumentFileNew => &[Act::UploadFile],
        P::DocumentDelete
        | P::CabinetDelete
        | P::WorkflowTemplateDelete
        | P::MetadataTypeDelete
        | P::RoleDelete
        | P::GroupDelete
        | P::UserDelete
        | P::DocumentTypeDelete => &[Act::Delete],
        P::UserCreate | P::GroupCreate | P::RoleCreate => &[Act::CreatePrincipal],
        _ => NARROW_ACTS,
    }
}

/// The kind a delete permission deletes.
fn delete_kind(p: Permission) -> Option<u8> {
    use Permission as P;
    Some(match p {
        P::DocumentEdit => 0, // files
        P::DocumentDelete => 1,
        P::CabinetDelete => 2,
        P::WorkflowTemplateDelete => 3,
        P::MetadataTypeDelete => 4,
        P::RoleDelete => 5,
        P::GroupDelete => 6,
        P::UserDelete => 7,
        P::AclEdit => 8,
        P::DocumentTypeDelete => 9,
        _ => return None,
    })
}

// ----- grants, and who may make them ------------------------------------------------------------

/// One unit of what decides access: an addition of one of these is a grant.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Grant {
    Acl(Obj, i64, String),
    Global(i64, String),
    Member(i64, i64),
    Link(i64, i64),
    Superuser(i64),
    Active(i64),
    /// Someone other than the user set its password: whoever did now acts as that user.
    Takeover(i64),
}

fn grants_of(m: &Model) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for (o, by_role) in &m.acls {
        for (r, acl) in by_role {
            for p in &acl.perms {
                out.insert(Grant::Acl(*o, *r, p.clone()));
            }
        }
    }
    for (r, role) in &m.roles {
        for p in &role.global {
            out.insert(Grant::Global(*r, p.clone()));
        }
        for g in &role.groups {
            out.insert(Grant::Link(*r, *g));
        }
    }
    for (g, members) in &m.groups {
        for u in members {
            out.insert(Grant::Member(*g, *u));
        }
    }
    for (u, x) in &m.users {
        if x.superuser {
            out.insert(Grant::Superuser(*u));
        }
        if x.active {
            out.insert(Grant::Active(*u));
        }
    }
    out
}

/// Every global key a user may hold.
fn global_keys() -> impl Iterator<Item = &'static str> {
    Permission::ALL.iter().map(|p| p.key())
}

/// Whether `u` holds everything `t` holds (globally, and on every object through ACLs): what
/// resetting `t`'s password, or reactivating `t`, needs.
fn holds_user(m: &Model, u: i64, t: i64) -> bool {
    if m.sup(u) {
        return true;
    }
    if m.users.get(&t).is_some_and(|x| x.superuser) {
        return false;
    }
    let roles = m.roles_of(t);
    global_keys().all(|p| {
        !(roles.iter()).any(|r| m.roles.get(r).is_some_and(|x| x.global.contains(p)))
            || m.glob(u, p)
    }) && roles.iter().all(|r| m.holds_role(u, *r))
}

/// Whether the model lets `who` make `grant` directly (docs/access-control.md, "Administrative
/// reach": nobody grants more than they hold), judged on the world before the step.
fn may_grant(m: &Model, who: Who, user: Option<i64>, grant: &Grant) -> bool {
    let Some(u) = user else {
        return true; // the administrator and docmeta itself
    };
    let _ = who;
    match grant {
        Grant::Acl(o, r, p) => {
            m.has(u, ACL_EDIT, *o) && m.seen(u, (K::Role, *r)) && m.has(u, p, *o)
        }
        Grant::Global(_, p) => m.glob(u, ROLE_EDIT) && m.glob(u, p),
        Grant::Member(g, t) => {
            m.glob(u, GROUP_EDIT)
                && m.user_visible(u, *t)
                && (m.roles.iter())
                    .filter(|(_, r)| r.groups.contains(g))
                    .all(|(r, _)| m.holds_role(u, *r))
        }
        Grant::Link(r, _) => {
            m.has(u, ROLE_EDIT, (K::Role, *r)) && m.glob(u, GROUP_VIEW) && m.holds_role(u, *r)
        }
        Grant::Superuser(_) => m.sup(u),
        Grant::Active(t) | Grant::Takeover(t) => {
            *t == u || (m.glob(u, USER_EDIT) && holds_user(m, u, *t))
        }
    }
}

// ----- the world --------------------------------------------------------------------------------

struct Narrow {
    user: i64,
    /// A device of the user's, whose replica the hunt syncs from scratch at each read.
    device: DeviceId,
    role: i64,
    group: i64,
    pair: Pair,
    target: Option<Obj>,
    baseline: bool,
}

/// The fixed principals and objects of every world.
#[derive(Default, Clone)]
struct Fixed {
    root: i64,
    vic: i64,
    sleeper: i64,
    bystander: i64,
    staff: i64,
    keepers: i64,
    spare: i64,
    baseline: i64,
    keeper: i64,
    loose: i64,
}

/// What the model does not hold but the operations need, read with it.
#[derive(Default, Clone)]
struct Extra {
    mt_names: BTreeMap<i64, String>,
    mt_defs: BTreeMap<i64, docmeta_core::MetadataType>,
    /// (document, metadata type) -> value.
    values: BTreeMap<(i64, i64), i64>,
    /// Workflow -> its access actions (role, permission key).
    grant_actions: BTreeMap<i64, BTreeSet<(i64, String)>>,
    /// Workflow -> the metadata its actions write: (what, metadata type).
    value_actions: BTreeMap<i64, BTreeSet<(Write, i64)>>,
    states: BTreeMap<i64, Vec<i64>>,
    /// Value -> its text.
    texts: BTreeMap<i64, String>,
}

/// What happens to a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Write {
    Add,
    Edit,
    Remove,
}

impl Write {
    /// The permission writing this way needs (on the document and on the metadata type).
    fn permission(self) -> &'static str {
        match self {
            Write::Add => access_model::DM_ADD,
            Write::Edit => access_model::DM_EDIT,
            Write::Remove => access_model::DM_REMOVE,
        }
    }
}

/// The state a step is judged against, for one narrow user.
#[derive(Default, Clone)]
struct Reach {
    /// (permission key, object) the user may do.
    perms: BTreeSet<(&'static str, Obj)>,
    globals: BTreeSet<&'static str>,
    /// List name -> ids the list operation returned.
    lists: BTreeMap<String, BTreeSet<i64>>,
}

impl Reach {
    /// What decides what the user can read: its view permissions, as a hash.
    fn view(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (key, o) in &self.perms {
            if key.ends_with("_view") {
                (key, o).hash(&mut h);
            }
        }
        for key in &self.globals {
            if key.ends_with("_view") {
                key.hash(&mut h);
            }
        }
        h.finish()
    }
}

struct World {
    db: Docmeta,
    fixed: Fixed,
    narrow: Vec<Narrow>,
    canaries: Canaries,
    dice: Dice,
    m: Model,
    x: Extra,
    /// Workflow -> everyone who changed its graph (states, transitions, triggers, conditions,
    /// actions, bindings).
    shapers: BTreeMap<i64, BTreeMap<Who, BTreeSet<String>>>,
    reach: Vec<Reach>,
    /// Per view (`Reach::view`): what the documents' lists showed it after the last step.
    class_lists: BTreeMap<u64, BTreeMap<String, BTreeSet<i64>>>,
    /// Per narrow user: the view (`Reach::view`) and newest event of its last read of events.
    event_cursor: Vec<Option<(u64, docmeta_core::EventId)>>,
    /// The readable history: one line per operation.
    steps: Vec<String>,
    /// Metadata types and workflows narrow users changed: the administrator's operations
    /// aim at them more often (so that what was planted runs).
    hot_mts: Vec<i64>,
    hot_wfs: Vec<i64>,
    /// The latest of them.
    last_hot: Option<(K, i64)>,
    serial: u32,
}

/// A violation found after a step.
#[derive(Clone, Debug)]
struct Violation {
    step: usize,
    /// For classes: what kind of thing went wrong and through what.
    class: String,
    text: String,
}

fn fast_config() -> docmeta_core::Config {
    docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

fn kind_of(k: K) -> ObjectKind {
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
    ObjectRef::new(kind_of(o.0), o.1)
}

fn perm(key: &str) -> Permission {
    Permission::from_key(key).unwrap_or_else(|e| panic!("{key}: {e}"))
}

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

/// The keys checked for growth on an object of kind `k`: its pool and its view permission.
fn keys_of(k: K) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = k.pool().to_vec();
    if !keys.contains(&k.view()) {
        keys.push(k.view());
    }
    keys
}

fn objects(m: &Model, k: K) -> Vec<i64> {
    match k {
        K::DocType => m.dts.iter().copied().collect(),
        K::Doc => m.docs.keys().copied().collect(),
        K::MetaType => m.mts.iter().copied().collect(),
        K::Cabinet => m.cabs.keys().copied().collect(),
        K::Role => m.roles.keys().copied().collect(),
        K::Workflow => m.wfs.keys().copied().collect(),
        K::File => m.files.keys().copied().collect(),
        K::Instance => m.insts.keys().copied().collect(),
    }
}

fn pick<T: Copy>(v: &[T], sel: u8) -> Option<T> {
    if v.is_empty() {
        None
    } else {
        Some(v[usize::from(sel) % v.len()])
    }
}

/// A short debug rendering of an answer, for the history.
fn brief<T: Debug>(r: &Result<T>) -> String {
    match r {
        Ok(_) => "Ok".to_owned(),
        Err(e) => {
            let mut s = format!("Err({:?}: {e})", e.kind());
            if s.len() > 160 {
                let mut end = 160;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.truncate(end);
                s.push('…');
            }
            s
        }
    }
}

impl World {
    fn sys(&self) -> Session {
        self.db.system()
    }

    fn session_of(&self, who: Who) -> Session {
        match who {
            Who::Root => self.db.session(UserId(self.fixed.root)),
            Who::System => self.db.system(),
            Who::Narrow(i) => self.db.session(UserId(self.narrow[i].user)),
        }
    }

    fn user_of(&self, who: Who) -> Option<i64> {
        match who {
            Who::Narrow(i) => Some(self.narrow[i].user),
            _ => None,
        }
    }

    fn canary(&mut self) -> String {
        self.canaries.token(&mut self.dice)
    }

    fn describe_narrow(&self, i: usize) -> String {
        let n = &self.narrow[i];
        let scope = match (n.pair.scope, n.target) {
            (Scope::Global, _) => "globally".to_owned(),
            (Scope::Acl(_), Some(o)) => {
                let (app, model) = o.0.names();
                format!("on {app}.{model} {}", o.1)
            }
            (Scope::Acl(k), None) => format!("on no {k:?} (none left)"),
        };
        format!(
            "n{i} (user {}{}): {} {scope}",
            n.user,
            if n.baseline { ", baseline" } else { "" },
            n.pair.perm.key()
        )
    }

    /// Records that `who` changed workflow `wf`'s graph (`what`).
    fn shape(&mut self, wf: i64, who: Who, what: &str) {
        (self.shapers.entry(wf).or_default().entry(who).or_default()).insert(what.to_owned());
    }

    fn shapers_of(&self, wf: i64) -> BTreeSet<Who> {
        self.shapers
            .get(&wf)
            .map(|x| x.keys().copied().collect())
            .unwrap_or_default()
    }

    /// What the unentitled among `makers` did to the workflows of this step (for classes).
    fn shaped_by(&self, refused: &[Who]) -> String {
        let mut what = BTreeSet::new();
        for by in self.shapers.values() {
            for who in refused {
                what.extend(by.get(who).into_iter().flatten().cloned());
            }
        }
        what.into_iter().collect::<Vec<_>>().join(", ")
    }

    fn who_name(&self, who: Who) -> String {
        match who {
            Who::Root => "root".to_owned(),
            Who::System => "system".to_owned(),
            Who::Narrow(i) => format!("n{i}"),
        }
    }

    // ----- building ------------------------------------------------------------------------

    fn build(seed: u64, pairs: &[Pair]) -> Result<World> {
        let db = Docmeta::builder()
            .config(fast_config())
            .worker(false)
            .open()?;
        let mut w = World {
            db,
            fixed: Fixed::default(),
            narrow: Vec::new(),
            canaries: Canaries::default(),
            dice: Dice(seed),
            m: Model::default(),
            x: Extra::default(),
            shapers: BTreeMap::new(),
            reach: Vec::new(),
            event_cursor: Vec::new(),
            class_lists: BTreeMap::new(),
            steps: Vec::new(),
            hot_mts: Vec::new(),
            hot_wfs: Vec::new(),
            last_hot: None,
            serial: 0,
        };
        let s = w.sys();
        let pw = "a long password 1";

        // Principals.
        let user = |w: &mut World, superuser: bool| -> Result<i64> {
            let name = w.canary();
            let id = s.create_user(&name, pw, superuser)?.id.0;
            w.canaries.register(&name, Home::User(id));
            Ok(id)
        };
        w.fixed.root = user(&mut w, true)?;
        w.fixed.vic = user(&mut w, false)?;
        w.fixed.sleeper = user(&mut w, false)?;
        w.fixed.bystander = user(&mut w, false)?;
        // Each fixed user signs a device in, named with a canary of the user's (who may view
        // the user may see their devices and the events that name them).
        for t in [w.fixed.root, w.fixed.vic, w.fixed.bystander] {
            let username = s.user(UserId(t))?.username;
            let name = w.canary();
            w.db.sign_in_device(&username, pw, &name, None)?;
            w.canaries.register(&name, Home::User(t));
        }
        s.update_user(
            UserId(w.fixed.sleeper),
            UserUpdate {
                is_active: Some(false),
                ..Default::default()
            },
        )?;
        let group = |w: &mut World| -> Result<i64> {
            let name = w.canary();
            let id = s.create_group(&name)?.id.0;
            w.canaries.register(&name, Home::Group(id));
            Ok(id)
        };
        let role = |w: &mut World| -> Result<i64> {
            let name = format!("role {}", w.canary());
            let id = s.create_role(&name)?.id.0;
            w.canaries.register(&name[5..], Home::Role(id));
            Ok(id)
        };
        w.fixed.staff = group(&mut w)?;
        w.fixed.keepers = group(&mut w)?;
        w.fixed.spare = group(&mut w)?;
        w.fixed.baseline = role(&mut w)?;
        w.fixed.keeper = role(&mut w)?;
        w.fixed.loose = role(&mut w)?;
        let f = w.fixed.clone();
        s.set_role_group(RoleId(f.baseline), GroupId(f.staff), true)?;
        s.set_role_group(RoleId(f.keeper), GroupId(f.keepers), true)?;
        s.set_role_group(RoleId(f.loose), GroupId(f.spare), true)?;
        s.set_group_member(GroupId(f.keepers), UserId(f.vic), true)?;
        s.set_group_member(GroupId(f.keepers), UserId(f.sleeper), true)?;
        // The keeper role holds (almost) everything globally: vic is the strong non-superuser
        // that a weaker administrator must not reach over.
        for p in Permission::ALL {
            s.grant_global(*p, RoleId(f.keeper))?;
        }

        // Document types, metadata types, associations.
        let dt = |w: &mut World| -> Result<i64> {
            let label = format!("type {}", w.canary());
            let id = s.create_document_type(&label)?.id.0;
            w.canaries.register(&label[5..], Home::DocTypeLabel(id));
            Ok(id)
        };
        let public = dt(&mut w)?;
        let secret = dt(&mut w)?;
        let quiet = dt(&mut w)?;
        let mt = |w: &mut World, input: MetadataTypeInput| -> Result<i64> {
            let label = w.canary();
            let id = s
                .create_metadata_type(MetadataTypeInput {
                    label: label.clone(),
                    ..input
                })?
                .id
                .0;
            w.canaries.register(&label, Home::MetaTypeLabel(id));
            Ok(id)
        };
        let note = mt(&mut w, MetadataTypeInput::new("note", "-"))?;
        let code = mt(
            &mut w,
            MetadataTypeInput::new("code", "-").validation(
                "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
                "pattern: '^[a-z0-9 ]*$'",
            ),
        )?;
        let pick_mt = mt(
            &mut w,
            MetadataTypeInput::new("pick", "-")
                .lookup("none,{% for u in users %}{{ u }},{% endfor %}{% for g in groups %}{{ g }},{% endfor %}")
                .default_value("none"),
        )?;
        let salary = mt(&mut w, MetadataTypeInput::new("salary", "-"))?;
        let stamp = mt(
            &mut w,
            MetadataTypeInput::new("stamp", "-").parser(
                "svc.apps.metadata.metadata_parsers.RegularExpressionParser",
                "{pattern: '#', replacement: ''}",
            ),
        )?;
        for (t, mts) in [
            (public, vec![note, code, pick_mt, salary, stamp]),
            (secret, vec![note, salary, stamp]),
            (quiet, vec![note, salary]),
        ] {
            for m in mts {
                s.associate(DocumentTypeId(t), MetadataTypeId(m), false)?;
            }
        }

        // Workflows, built by the administrator.
        let root = w.db.session(UserId(f.root));
        let label = |w: &mut World, home: fn(i64) -> Home, id: i64| -> String {
            let t = w.canary();
            w.canaries.register(&t, home(id));
            t
        };
        let review_label = w.canary();
        let review = root
            .create_workflow(
                &review_label,
                &[DocumentTypeId(public), DocumentTypeId(secret)],
            )?
            .id;
        w.canaries.register(&review_label, Home::Workflow(review.0));
        let draft =
            root.create_workflow_state(review, &label(&mut w, Home::Workflow, review.0), true)?;
        let published =
            root.create_workflow_state(review, &label(&mut w, Home::Workflow, review.0), false)?;
        let condition = CONDITIONS[w.dice.below(2)];
        root.create_workflow_transition(
            review,
            &label(&mut w, Home::Workflow, review.0),
            draft.id,
            published.id,
            condition,
        )?;
        root.create_workflow_transition(
            review,
            &label(&mut w, Home::Workflow, review.0),
            published.id,
            draft.id,
            "",
        )?;
        root.create_workflow_action(
            review,
            published.id,
            &label(&mut w, Home::Workflow, review.0),
            true,
            false,
            ActionKind::GrantDocumentAccess {
                role_id: RoleId(f.baseline),
                permission: Permission::DocumentView.key().to_owned(),
            },
        )?;
        root.create_workflow_action(
            review,
            published.id,
            &label(&mut w, Home::Workflow, review.0),
            true,
            false,
            ActionKind::EditMetadata {
                metadata_type_id: MetadataTypeId(stamp),
                value: "stamped".into(),
            },
        )?;
        let intake_label = w.canary();
        let intake = root
            .create_workflow(&intake_label, &[DocumentTypeId(quiet)])?
            .id;
        w.canaries.register(&intake_label, Home::Workflow(intake.0));
        let new =
            root.create_workflow_state(intake, &label(&mut w, Home::Workflow, intake.0), true)?;
        let done =
            root.create_workflow_state(intake, &label(&mut w, Home::Workflow, intake.0), false)?;
        let finish = root.create_workflow_transition(
            intake,
            &label(&mut w, Home::Workflow, intake.0),
            new.id,
            done.id,
            "",
        )?;
        root.add_workflow_trigger(intake, finish.id, "document_metadata_edited")?;
        for wf in [review, intake] {
            w.shape(wf.0, Who::Root, "built it");
        }

        // Documents, values, files.
        for (t, n) in [(public, 2), (secret, 2), (quiet, 1)] {
            for _ in 0..n {
                let label = w.canary();
                let salary_value = w.canary();
                let note_value = w.canary();
                let mut values = vec![
                    (MetadataTypeId(salary), salary_value.as_str()),
                    (MetadataTypeId(note), note_value.as_str()),
                ];
                let code_value = w.canary();
                if t == public {
                    values.push((MetadataTypeId(code), code_value.as_str()));
                }
                let d = s
                    .create_document(DocumentTypeId(t), &label, &values)?
                    .document
                    .id
                    .0;
                w.canaries.register(&label, Home::DocLabel(d));
                w.canaries.register(&salary_value, Home::Value(d, salary));
                w.canaries.register(&note_value, Home::Value(d, note));
                w.canaries.register(&code_value, Home::Value(d, code));
                if w.dice.chance(70) {
                    let name = w.canary();
                    let content = format!("content {}", w.canary());
                    let file = s.add_file(
                        DocumentId(d),
                        &format!("{name}.txt"),
                        &mut content.as_bytes(),
                    )?;
                    w.canaries.register(&name, Home::File(file.id.0));
                    w.canaries.register(&content[8..], Home::File(file.id.0));
                }
            }
        }
        w.db.run_pending_tasks()?;

        // Cabinets: a root with a child; documents of every type in both.
        let c1_label = w.canary();
        let c1 = s.create_cabinet(&c1_label, None)?.id;
        w.canaries.register(&c1_label, Home::Cabinet(c1.0));
        let c2_label = w.canary();
        let c2 = s.create_cabinet(&c2_label, Some(c1))?.id;
        w.canaries.register(&c2_label, Home::Cabinet(c2.0));
        for d in s.document_ids(None)? {
            let c = if w.dice.chance(50) { c1 } else { c2 };
            s.set_cabinet_document(c, d, true)?;
        }

        // The baseline: the public type, its documents and the public values.
        let dt_ref = |t: i64| ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t);
        let mt_ref = |t: i64| ObjectRef::new(ObjectKind::METADATA_TYPE, t);
        for p in [
            Permission::DocumentTypeView,
            Permission::DocumentView,
            Permission::DocumentMetadataView,
        ] {
            s.grant(p, RoleId(f.baseline), dt_ref(public))?;
        }
        for t in [note, code, pick_mt, stamp] {
            for p in [
                Permission::MetadataTypeView,
                Permission::DocumentMetadataView,
            ] {
                s.grant(p, RoleId(f.baseline), mt_ref(t))?;
            }
        }
        s.grant(
            Permission::WorkflowTemplateView,
            RoleId(f.baseline),
            ObjectRef::new(ObjectKind::WORKFLOW, review.0),
        )?;
        s.grant(
            Permission::CabinetView,
            RoleId(f.baseline),
            ObjectRef::new(ObjectKind::CABINET, c1.0),
        )?;
        // The loose role (linked to the spare group) sees one secret document.
        let secret_doc = s.document_ids(Some(DocumentTypeId(secret)))?[0];
        s.grant(
            Permission::DocumentView,
            RoleId(f.loose),
            ObjectRef::new(ObjectKind::DOCUMENT, secret_doc.0),
        )?;

        // The narrow users: one role and group each, one permission.
        w.sync()?;
        for pair in pairs {
            let u = user(&mut w, false)?;
            let g = group(&mut w)?;
            let r = role(&mut w)?;
            s.set_group_member(GroupId(g), UserId(u), true)?;
            s.set_role_group(RoleId(r), GroupId(g), true)?;
            let baseline = w.dice.chance(75);
            if baseline {
                s.set_group_member(GroupId(f.staff), UserId(u), true)?;
            }
            let target = match pair.scope {
                Scope::Global => {
                    s.grant_global(pair.perm, RoleId(r))?;
                    None
                }
                Scope::Acl(k) => {
                    let ids = objects(&w.m, k);
                    let o = (k, ids[w.dice.below(ids.len())]);
                    s.grant(pair.perm, RoleId(r), oref(o))?;
                    Some(o)
                }
            };
            let username = s.user(UserId(u))?.username;
            let device = (w.db.sign_in_device(&username, pw, "phone", None)?)
                .expect("a narrow user signs in")
                .device
                .id;
            w.narrow.push(Narrow {
                user: u,
                device,
                role: r,
                group: g,
                pair: *pair,
                target,
                baseline,
            });
        }
        // A reader with the baseline only.
        let u = user(&mut w, false)?;
        s.set_group_member(GroupId(f.staff), UserId(u), true)?;
        let username = s.user(UserId(u))?.username;
        let device = (w.db.sign_in_device(&username, pw, "phone", None)?)
            .expect("the reader signs in")
            .device
            .id;
        w.narrow.push(Narrow {
            user: u,
            device,
            role: f.baseline,
            group: f.staff,
            pair: Pair {
                perm: Permission::DocumentView,
                scope: Scope::Acl(K::DocType),
            },
            target: Some((K::DocType, public)),
            baseline: true,
        });
        w.sync()?;
        w.event_cursor = vec![None; w.narrow.len()];
        w.reach = (0..w.narrow.len())
            .map(|i| w.reach_of(i).map(|(r, _)| r))
            .collect::<Result<_>>()?;
        Ok(w)
    }

    // ----- the world as it is (read as the system) ---------------------------------------------

    fn sync(&mut self) -> Result<()> {
        let s = self.sys();
        let mut m = Model::default();
        let mut x = Extra::default();
        for u in s.users()? {
            m.users.insert(
                u.id.0,
                UserM {
                    name: u.username,
                    superuser: u.is_superuser,
                    active: u.is_active,
                },
            );
        }
        for g in s.groups()? {
            let members = s
                .group_members(g.id, PageRequest::ALL)?
                .items
                .iter()
                .map(|u| u.id.0)
                .collect();
            m.groups.insert(g.id.0, members);
        }
        for r in s.roles()? {
            let role = RoleM {
                groups: s
                    .role_groups(r.id, PageRequest::ALL)?
                    .items
                    .iter()
                    .map(|g| g.id.0)
                    .collect(),
                global: (s.role_permissions(r.id, PageRequest::ALL)?.items.iter())
                    .map(|p| p.key().to_owned())
                    .collect(),
            };
            m.roles.insert(r.id.0, role);
        }
        for t in s.document_types()? {
            m.dts.insert(t.id.0);
            for a in s.associations(t.id, PageRequest::ALL)?.items {
                m.assocs.insert(
                    a.association.id.0,
                    AssocM {
                        dt: t.id.0,
                        mt: a.association.metadata_type_id.0,
                        required: a.association.required,
                    },
                );
            }
        }
        for t in s.metadata_types()? {
            m.mts.insert(t.id.0);
            x.mt_names.insert(t.id.0, t.name.clone());
            x.mt_defs.insert(t.id.0, t);
        }
        for d in s
            .documents(DocumentQuery::default(), PageRequest::new(1, 1000))?
            .items
        {
            m.docs
                .insert(d.document.id.0, d.document.document_type_id.0);
            for v in s
                .document_metadata(d.document.id, PageRequest::ALL)
                .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            {
                m.values.insert(
                    v.id.0,
                    ValM {
                        doc: d.document.id.0,
                        mt: v.metadata_type_id.0,
                    },
                );
                x.values
                    .insert((d.document.id.0, v.metadata_type_id.0), v.id.0);
                x.texts.insert(v.id.0, v.value.clone());
            }
            for f in s.files(d.document.id)? {
                m.files.insert(f.id.0, d.document.id.0);
            }
            for i in s.workflow_instances(d.document.id)? {
                m.insts.insert(
                    i.id.0,
                    InstM {
                        doc: d.document.id.0,
                        wf: i.workflow_id.0,
                        state: i.state_id.map(|s| s.0),
                    },
                );
            }
        }
        for c in s.cabinets()? {
            let docs = s
                .cabinet_documents(c.id, PageRequest::ALL)?
                .items
                .iter()
                .map(|d| d.document.id.0)
                .collect();
            m.cabs.insert(
                c.id.0,
                CabM {
                    parent: c.parent_id.map(|p| p.0),
                    docs,
                },
            );
        }
        for wf in s.workflows()? {
            let mut states = BTreeMap::new();
            let mut acts = BTreeMap::new();
            let mut grants = BTreeSet::new();
            let mut writes = BTreeSet::new();
            for st in s.workflow_states(wf.id)? {
                let actions = s.workflow_actions(wf.id, st.id)?;
                for a in &actions {
                    acts.insert(a.id.0, action_model(&a.action));
                    match &a.action {
                        ActionKind::GrantDocumentAccess {
                            role_id,
                            permission,
                        } => {
                            grants.insert((role_id.0, permission.clone()));
                        }
                        ActionKind::EditMetadata {
                            metadata_type_id, ..
                        } => {
                            writes.insert((Write::Add, metadata_type_id.0));
                            writes.insert((Write::Edit, metadata_type_id.0));
                        }
                        ActionKind::AddMetadata { metadata_type_ids } => {
                            writes.extend(metadata_type_ids.iter().map(|t| (Write::Add, t.0)));
                        }
                        ActionKind::RemoveMetadata { metadata_type_ids } => {
                            writes.extend(metadata_type_ids.iter().map(|t| (Write::Remove, t.0)));
                        }
                        ActionKind::RevokeDocumentAccess { .. } => {}
                    }
                }
                states.insert(st.id.0, actions.iter().map(|a| a.id.0).collect());
            }
            let mut transitions = BTreeMap::new();
            for t in s.workflow_transitions(wf.id)? {
                transitions.insert(
                    t.id.0,
                    TrM {
                        from: t.origin_state_id.0,
                        to: t.destination_state_id.0,
                        triggers: t.triggers.iter().cloned().collect(),
                    },
                );
            }
            x.states.insert(wf.id.0, states.keys().copied().collect());
            x.grant_actions.insert(wf.id.0, grants);
            x.value_actions.insert(wf.id.0, writes);
            m.wfs.insert(
                wf.id.0,
                WfM {
                    dts: wf.document_type_ids.iter().map(|t| t.0).collect(),
                    states,
                    actions: acts,
                    transitions,
                },
            );
        }
        for k in ALL_KINDS {
            for id in objects(&m, k) {
                let acls = s.acls(oref((k, id)), PageRequest::ALL)?.items;
                if acls.is_empty() {
                    continue;
                }
                let by_role = m.acls.entry((k, id)).or_default();
                for a in acls {
                    by_role.insert(
                        a.acl.role_id.0,
                        AclM {
                            id: a.acl.id.0,
                            perms: a
                                .acl
                                .permissions
                                .iter()
                                .map(|p| p.key().to_owned())
                                .collect(),
                        },
                    );
                }
            }
        }
        self.m = m;
        self.x = x;
        Ok(())
    }

    // ----- what a narrow user can reach ----------------------------------------------------

    /// The user's effective permissions (every object, every permission of its kind, and
    /// globally) and what the list operations show it; the answers are kept as text.
    #[allow(unused_must_use)] // Every answer is kept as text by `see!`, errors included.
    fn reach_of(&self, i: usize) -> Result<(Reach, Vec<(String, String)>)> {
        let u = self.narrow[i].user;
        let s = self.db.session(UserId(u));
        let m = &self.m;
        let mut r = Reach::default();
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut read = |channel: String, text: String| texts.push((channel, text));
        macro_rules! see {
            ($channel:expr, $call:expr) => {{
                let got = $call;
                read($channel, format!("{got:?}"));
                got
            }};
        }
        for k in ALL_KINDS {
            let ids = objects(m, k);
            if ids.is_empty() {
                continue;
            }
            let refs: Vec<ObjectRef> = ids.iter().map(|id| oref((k, *id))).collect();
            for key in keys_of(k) {
                for o in self.db.filter(UserId(u), perm(key), &refs) {
                    r.perms.insert((key, (k, o.id)));
                }
            }
        }
        for p in Permission::ALL {
            if s.can_globally(*p) {
                r.globals.insert(p.key());
            }
        }
        let mut list = |name: String, ids: BTreeSet<i64>| {
            r.lists.insert(name, ids);
        };
        if let Ok(x) = see!(
            "documents".into(),
            s.documents(DocumentQuery::default(), PageRequest::new(1, 1000))
        ) {
            list(
                "documents".into(),
                x.items.iter().map(|d| d.document.id.0).collect(),
            );
        }
        if let Ok(x) = see!("document_types".into(), s.document_types()) {
            list("document types".into(), x.iter().map(|t| t.id.0).collect());
        }
        if let Ok(x) = see!("metadata_types".into(), s.metadata_types()) {
            list("metadata types".into(), x.iter().map(|t| t.id.0).collect());
        }
        if let Ok(x) = see!("workflows".into(), s.workflows()) {
            list("workflows".into(), x.iter().map(|w| w.id.0).collect());
        }
        if let Ok(x) = see!("cabinets".into(), s.cabinets()) {
            list("cabinets".into(), x.iter().map(|c| c.id.0).collect());
        }
        if let Ok(x) = see!("users".into(), s.users()) {
            list("users".into(), x.iter().map(|x| x.id.0).collect());
        }
        if let Ok(x) = see!("groups".into(), s.groups()) {
            list("groups".into(), x.iter().map(|x| x.id.0).collect());
        }
        if let Ok(x) = see!("roles".into(), s.roles()) {
            list("roles".into(), x.iter().map(|x| x.id.0).collect());
        }
        Ok((r, texts))
    }

    /// Everything else user `i` can read, one object at a time: every object the model says it
    /// may view, and one it may not of each kind (in turn, by step); events since the last read
    /// when its view is the same as then, else the whole log (its last 1,000 events).
    #[allow(unused_must_use)] // Every answer is kept as text by `see!`, errors included.
    fn reads_of(
        &mut self,
        i: usize,
        step: usize,
        view: u64,
    ) -> Result<(Visible, Vec<(String, String)>)> {
        let u = self.narrow[i].user;
        let s = self.db.session(UserId(u));
        let m = &self.m;
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut read = |channel: String, text: String| texts.push((channel, text));
        macro_rules! see {
            ($channel:expr, $call:expr) => {{
                let got = $call;
                read($channel, format!("{got:?}"));
                got
            }};
        }
        // The objects of a kind to read: those the model lets the user view, and one other.
        let choose = |ids: Vec<i64>, visible: &dyn Fn(i64) -> bool| -> Vec<i64> {
            let (mut shown, hidden): (Vec<i64>, Vec<i64>) =
                ids.into_iter().partition(|id| visible(*id));
            if !hidden.is_empty() {
                shown.push(hidden[step % hidden.len()]);
            }
            shown
        };

        // What a replica of the user's device is sent, from scratch: every document, value,
        // file record and type in it must be one the user may see.
        let device = self.narrow[i].device;
        let mut cursor = None;
        for _ in 0..1000 {
            match see!(
                "sync_changes".to_owned(),
                s.sync_changes(device, cursor.as_ref(), 50)
            ) {
                Ok(batch) if batch.more => cursor = Some(batch.cursor),
                _ => break,
            }
        }

        // What is on each document, listed.
        let mut lists = BTreeMap::new();
        for d in m.docs.keys() {
            let doc = DocumentId(*d);
            if let Ok(x) = see!(
                format!("document_metadata({d})"),
                s.document_metadata(doc, PageRequest::ALL)
            ) {
                lists.insert(
                    format!("values of document {d}"),
                    x.items.iter().map(|v| v.value.id.0).collect(),
                );
            }
            if let Ok(x) = see!(format!("files({d})"), s.files(doc)) {
                lists.insert(
                    format!("files of document {d}"),
                    x.iter().map(|f| f.id.0).collect(),
                );
            }
            if let Ok(x) = see!(
                format!("workflow_instances({d})"),
                s.workflow_instances(doc)
            ) {
                lists.insert(
                    format!("instances of document {d}"),
                    x.iter().map(|i| i.id.0).collect(),
                );
            }
        }
        see!(
            "documents".into(),
            s.documents(DocumentQuery::default(), PageRequest::new(1, 500))
        );
        for d in choose(objects(m, K::Doc), &|d| m.seen(u, (K::Doc, d))) {
            let doc = DocumentId(d);
            see!(format!("document({d})"), s.document(doc));
            // The document's values through time: past values only while the user may view
            // that type's values on it now.
            see!(
                format!("history({d})"),
                s.history(doc, None, PageRequest::new(1, 100))
            );
            see!(
                format!("metadata_at({d})"),
                s.metadata_at(doc, chrono::Utc::now())
            );
            let dt = m.docs[&d];
            for a in m.assocs.values().filter(|a| a.dt == dt) {
                let mt = MetadataTypeId(a.mt);
                see!(
                    format!("history({d}, {})", a.mt),
                    s.history(doc, Some(mt), PageRequest::new(1, 100))
                );
                see!(
                    format!("value_at({d}, {})", a.mt),
                    s.value_at(
                        doc,
                        mt,
                        chrono::Utc::now() - chrono::Duration::milliseconds(step as i64 % 50)
                    )
                );
                see!(
                    format!("document_lookup_choices({d}, {})", a.mt),
                    s.document_lookup_choices(doc, MetadataTypeId(a.mt))
                );
                see!(
                    format!("lookup_choices({}, Some({d}))", a.mt),
                    s.lookup_choices(MetadataTypeId(a.mt), Some(doc))
                );
                if let Some(name) = self.x.mt_names.get(&a.mt) {
                    see!(
                        format!("metadata_value_of({d}, {name})"),
                        s.metadata_value_of(doc, name)
                    );
                }
            }
        }
        for v in choose(m.values.keys().copied().collect(), &|v| {
            m.value_visible(u, v)
        }) {
            let x = &m.values[&v];
            let (doc, id) = (DocumentId(x.doc), DocumentMetadataId(v));
            see!(format!("metadata_value({v})"), s.metadata_value(doc, id));
        }
        for f in choose(objects(m, K::File), &|f| m.seen(u, (K::File, f))) {
            see!(format!("file({f})"), s.file(DocumentFileId(f)));
            let bytes = s.read_file(DocumentFileId(f));
            read(
                format!("read_file({f})"),
                match bytes {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(e) => format!("{e:?}"),
                },
            );
        }
        for inst in choose(objects(m, K::Instance), &|i| m.inst_visible(u, i)) {
            let x = &m.insts[&inst];
            let (doc, id) = (DocumentId(x.doc), WorkflowInstanceId(inst));
            see!(
                format!("workflow_instance({inst})"),
                s.workflow_instance(doc, id)
            );
            see!(format!("workflow_log({inst})"), s.workflow_log(doc, id));
            see!(
                format!("available_transitions({inst})"),
                s.available_transitions(doc, id)
            );
        }
        for t in choose(objects(m, K::DocType), &|t| m.seen(u, (K::DocType, t))) {
            let id = DocumentTypeId(t);
            see!(format!("document_type({t})"), s.document_type(id));
            see!(
                format!("associations({t})"),
                s.associations(id, PageRequest::ALL)
            );
        }
        for t in choose(objects(m, K::MetaType), &|t| m.seen(u, (K::MetaType, t))) {
            let id = MetadataTypeId(t);
            see!(format!("metadata_type({t})"), s.metadata_type(id));
            see!(format!("lookup_choices({t})"), s.lookup_choices(id, None));
        }
        for wf in choose(objects(m, K::Workflow), &|w| m.seen(u, (K::Workflow, w))) {
            let id = WorkflowId(wf);
            see!(format!("workflow({wf})"), s.workflow(id));
            see!(format!("workflow_states({wf})"), s.workflow_states(id));
            see!(
                format!("workflow_transitions({wf})"),
                s.workflow_transitions(id)
            );
            for st in m.wfs[&wf].states.keys() {
                see!(
                    format!("workflow_actions({wf}, {st})"),
                    s.workflow_actions(id, WorkflowStateId(*st))
                );
            }
        }
        for c in choose(objects(m, K::Cabinet), &|c| m.seen(u, (K::Cabinet, c))) {
            let id = CabinetId(c);
            see!(format!("cabinet({c})"), s.cabinet(id));
            see!(
                format!("cabinet_documents({c})"),
                s.cabinet_documents(id, PageRequest::ALL)
            );
        }
        for t in choose(m.users.keys().copied().collect(), &|t| m.user_visible(u, t)) {
            see!(format!("user({t})"), s.user(UserId(t)));
            see!(
                format!("devices({t})"),
                s.devices(Some(UserId(t)), PageRequest::ALL)
            );
        }
        for g in choose(m.groups.keys().copied().collect(), &|_| {
            m.glob(u, GROUP_VIEW)
        }) {
            let id = GroupId(g);
            see!(format!("group({g})"), s.group(id));
            see!(
                format!("group_members({g})"),
                s.group_members(id, PageRequest::ALL)
            );
        }
        for role in choose(objects(m, K::Role), &|r| m.seen(u, (K::Role, r))) {
            let id = RoleId(role);
            see!(format!("role({role})"), s.role(id));
            see!(
                format!("role_groups({role})"),
                s.role_groups(id, PageRequest::ALL)
            );
            see!(
                format!("role_permissions({role})"),
                s.role_permissions(id, PageRequest::ALL)
            );
        }
        // ACLs: of every object the user may view them on, and of one other.
        let all: Vec<Obj> = ALL_KINDS
            .iter()
            .flat_map(|k| objects(m, *k).into_iter().map(move |id| (*k, id)))
            .collect();
        let (mut shown, hidden): (Vec<Obj>, Vec<Obj>) =
            all.into_iter().partition(|o| m.has(u, ACL_VIEW, *o));
        if !hidden.is_empty() {
            shown.push(hidden[step % hidden.len()]);
        }
        for (k, id) in shown {
            let o = oref((k, id));
            see!(format!("acls({k:?} {id})"), s.acls(o, PageRequest::ALL));
            for acl in m.acls.get(&(k, id)).into_iter().flat_map(|x| x.values()) {
                see!(
                    format!("acl({k:?} {id}, {})", acl.id),
                    s.acl(o, AclId(acl.id))
                );
            }
        }
        for k in [K::Doc, K::DocType, K::Workflow] {
            if let Some(id) = objects(m, k).first() {
                see!(
                    format!("explain({k:?} {id})"),
                    s.explain(UserId(u), perm(k.view()), oref((k, *id)))
                );
            }
        }
        see!("tasks".into(), s.tasks());

        // Events: only the new ones while the user's view stays the same (old events show
        // what they showed), else the last 1,000.
        let query = match self.event_cursor[i] {
            Some((same, after)) if same == view => EventQuery {
                after: Some(after),
                oldest_first: true,
                limit: Some(1000),
                ..Default::default()
            },
            _ => EventQuery {
                limit: Some(1000),
                ..Default::default()
            },
        };
        // Each event's changes (the values before and after, shown only to a reader who may
        // view them now) are read on a channel of their own, so that a value leaked there is
        // named as such.
        match s.events(&query) {
            Ok(events) => {
                for e in events {
                    let mut shown = e.clone();
                    shown.event.changes.clear();
                    read("events".into(), format!("{shown:?}"));
                    if !e.event.changes.is_empty() {
                        read(
                            format!("event_changes({} {})", e.event.name, e.event.id),
                            format!("{:?}", e.event.changes),
                        );
                    }
                }
            }
            Err(e) => read("events".into(), format!("{e:?}")),
        }
        let newest = self.db.system().events(&EventQuery {
            limit: Some(1),
            ..Default::default()
        })?;
        self.event_cursor[i] = newest.first().map(|e| (view, e.event.id));
        Ok((lists, texts))
    }

    // ----- the checks after a step ---------------------------------------------------------

    /// Everything wrong after step `step`: canaries a narrow user may not see, searches that
    /// answer differently for hidden canaries, authority that grew without an entitled grant.
    fn check(
        &mut self,
        step: usize,
        (before, before_x): (&Model, &Extra),
        effects: &Effects,
        answers: &[(usize, String, String)],
    ) -> Result<Vec<Violation>> {
        let mut out = Vec::new();

        // Grants added by this step, each with an entitled maker.
        let old = grants_of(before);
        let new = grants_of(&self.m);
        let existed_users: BTreeSet<i64> = before.users.keys().copied().collect();
        let mut added: Vec<Grant> = new.difference(&old).cloned().collect();
        added.extend(effects.takeovers.iter().map(|t| Grant::Takeover(*t)));
        for g in added {
            if let Grant::Active(u) = g
                && !existed_users.contains(&u)
            {
                continue; // a new account starts active
            }
            let makers = self.makers_of(&g, effects);
            let direct = effects.direct.iter().any(|(_, asked)| *asked == g);
            let refused_who: Vec<Who> = makers
                .iter()
                .copied()
                .filter(|who| !may_grant(before, *who, self.user_of(*who), &g))
                .collect();
            let refused: Vec<String> = refused_who.iter().map(|w| self.who_name(*w)).collect();
            let through = if direct {
                effects.source.clone()
            } else {
                format!(
                    "a workflow action, the workflow changed by {} ({}); run by {}",
                    refused.join(", "),
                    self.shaped_by(&refused_who),
                    effects.source
                )
            };
            if makers.is_empty() {
                out.push(Violation {
                    step,
                    class: format!(
                        "grant {} made by nobody entitled (no maker)",
                        grant_kind(&g)
                    ),
                    text: format!(
                        "{} was added, and no operation of this step made it",
                        self.grant_text(&g)
                    ),
                });
            } else if !refused.is_empty() {
                out.push(Violation {
                    step,
                    class: if direct {
                        format!("{} grant by an unentitled user ({through})", grant_kind(&g))
                    } else {
                        format!("{} grant by a workflow an unentitled user changed", grant_kind(&g))
                    },
                    text: format!(
                        "{} was made by {} through {through}, and the model says {} may not make it",
                        self.grant_text(&g),
                        makers
                            .iter()
                            .map(|w| self.who_name(*w))
                            .collect::<Vec<_>>()
                            .join(", "),
                        refused.join(", ")
                    ),
                });
            }
        }

        self.check_writes(step, before, before_x, effects, &mut out);
        for (t, what) in &effects.user_changes {
            let Some(u) = self.user_of(effects.actor) else {
                continue;
            };
            if !(before.glob(u, USER_EDIT) && holds_user(before, u, *t)) {
                out.push(Violation {
                    step,
                    class: format!("administrative reach over a stronger user ({})", effects.source),
                    text: format!(
                        "{} {what} user {t}, who holds what it does not (the model: changing another user's name, password or activity needs holding everything that user holds)",
                        self.who_name(effects.actor)
                    ),
                });
            }
        }

        // The model with this step's grants but the structure before it: what grants explain.
        let mut mid = before.clone();
        mid.users = self.m.users.clone();
        mid.groups = self.m.groups.clone();
        mid.roles = self.m.roles.clone();
        mid.acls = self.m.acls.clone();

        // What answers a narrow user got.
        for (i, channel, text) in answers {
            self.scan(step, *i, channel, text, &mut out);
        }

        // Every user's permissions and lists; the users that may view the same things form a
        // class, one of which (in turn, by step) reads everything else.
        let mut reaches = Vec::new();
        for i in 0..self.narrow.len() {
            let (now, texts) = self.reach_of(i)?;
            for (channel, text) in &texts {
                self.scan(step, i, channel, text, &mut out);
            }
            reaches.push(now);
        }
        let mut classes: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, r) in reaches.iter().enumerate() {
            classes.entry(r.view()).or_default().push(i);
        }
        let mut class_lists = BTreeMap::new();
        for (view, members) in &classes {
            let i = members[step % members.len()];
            let (lists, texts) = self.reads_of(i, step, *view)?;
            for (channel, text) in &texts {
                self.scan(step, i, channel, text, &mut out);
            }
            // Every fourth step: a search first applies the index's pending events, which
            // costs a commit; four steps' events share one.
            if step % 4 == 3 {
                self.search_probes(step, i, &mut out)?;
                if step % 16 == 7 {
                    self.sort_probe(step, i, &mut out)?;
                }
            }
            // What is on each document, against what the same view listed after the last step.
            if let Some(was) = self.class_lists.get(view) {
                for (name, ids) in &lists {
                    if let Some(was) = was.get(name) {
                        self.list_growth(
                            step,
                            i,
                            name,
                            ids,
                            was,
                            (before, &mid),
                            effects,
                            &mut out,
                        );
                    }
                }
            }
            class_lists.insert(*view, lists);
        }
        self.class_lists = class_lists;

        for (i, now) in reaches.into_iter().enumerate() {
            let u = self.narrow[i].user;
            // Monotone authority.
            let prev = &self.reach[i];
            let existed = |o: &Obj| objects(before, o.0).contains(&o.1);
            for (key, o) in now.perms.difference(&prev.perms) {
                if !existed(o)
                    || mid.has(u, key, *o)
                    || self.moved_legitimately(before, effects, u, key, *o)
                {
                    continue;
                }
                out.push(Violation {
                    step,
                    class: format!("authority grew ({})", effects.source),
                    text: format!(
                        "{} gained {key} on {} {} (Docmeta::filter), which no entitled grant explains",
                        self.describe_narrow(i),
                        o.0.names().1,
                        o.1
                    ),
                });
            }
            for key in now.globals.difference(&prev.globals) {
                if !mid.glob(u, key) {
                    out.push(Violation {
                        step,
                        class: format!("authority grew ({})", effects.source),
                        text: format!(
                            "{} gained {key} globally (Session::can_globally), which no entitled grant explains",
                            self.describe_narrow(i)
                        ),
                    });
                }
            }
            for (name, ids) in &now.lists {
                if let Some(was) = prev.lists.get(name) {
                    self.list_growth(step, i, name, ids, was, (before, &mid), effects, &mut out);
                }
            }
            self.reach[i] = now;
        }
        Ok(out)
    }

    /// Fails on every id list `name` shows user `i` now and did not before, unless it is a new
    /// object or the step's grants (`mid`), or an entitled move, explain it.
    #[allow(clippy::too_many_arguments)] // One check, called from two places.
    fn list_growth(
        &self,
        step: usize,
        i: usize,
        name: &str,
        ids: &BTreeSet<i64>,
        was: &BTreeSet<i64>,
        (before, mid): (&Model, &Model),
        effects: &Effects,
        out: &mut Vec<Violation>,
    ) {
        let u = self.narrow[i].user;
        for id in ids.difference(was) {
            let Some((k, ok)) = self.list_member_explained(name, before, mid, effects, u, *id)
            else {
                continue; // a new object
            };
            if !ok {
                out.push(Violation {
                    step,
                    class: format!("visible set grew ({})", effects.source),
                    text: format!(
                        "{} now lists {k} {id} in {name}, which no entitled grant explains",
                        self.describe_narrow(i)
                    ),
                });
            }
        }
    }

    /// Values added, edited or removed by this step that the operation did not write itself
    /// (nor its lifecycle effects: a created, moved or deleted document, a deleted or required
    /// metadata type, the tasks) come from workflow actions: everyone who shaped those workflows
    /// must be entitled to make that write directly.
    fn check_writes(
        &self,
        step: usize,
        before: &Model,
        before_x: &Extra,
        effects: &Effects,
        out: &mut Vec<Violation>,
    ) {
        if effects.tasks {
            return;
        }
        let text =
            |x: &Extra, pair: &(i64, i64)| x.values.get(pair).and_then(|v| x.texts.get(v)).cloned();
        let pairs: BTreeSet<(i64, i64)> = (before_x.values.keys())
            .chain(self.x.values.keys())
            .copied()
            .collect();
        for pair in pairs {
            let (d, mt) = pair;
            let write = match (text(before_x, &pair), text(&self.x, &pair)) {
                (None, Some(_)) => Write::Add,
                (Some(_), None) => Write::Remove,
                (Some(a), Some(b)) if a != b => Write::Edit,
                _ => continue,
            };
            let required = |m: &Model| {
                m.docs.get(&d).is_some_and(|dt| {
                    m.assocs
                        .values()
                        .any(|x| x.dt == *dt && x.mt == mt && x.required)
                })
            };
            let explained = effects.writes.contains(&pair)
                || (effects.rewrites.contains(&d)
                    && (write == Write::Remove || (write == Write::Add && required(&self.m))))
                || (effects.removes_type.contains(&mt) && write == Write::Remove)
                || (effects.backfills.contains(&mt) && write == Write::Add);
            if explained {
                continue;
            }
            let mut makers = BTreeSet::new();
            for x in before
                .insts
                .values()
                .chain(self.m.insts.values())
                .filter(|x| x.doc == d)
            {
                if (self.x.value_actions.get(&x.wf).into_iter())
                    .chain(before_x.value_actions.get(&x.wf))
                    .any(|a| a.contains(&(write, mt)))
                {
                    makers.extend(self.shapers_of(x.wf));
                }
            }
            let key = write.permission();
            let refused_who: Vec<Who> = (makers.iter())
                .copied()
                .filter(|who| {
                    self.user_of(*who).is_some_and(|u| {
                        !(before.has(u, key, (K::Doc, d)) && before.has(u, key, (K::MetaType, mt)))
                    })
                })
                .collect();
            let refused: Vec<String> = refused_who.iter().map(|w| self.who_name(*w)).collect();
            let name = self.x.mt_names.get(&mt).or(before_x.mt_names.get(&mt));
            if makers.is_empty() {
                out.push(Violation {
                    step,
                    class: format!("value {write:?} nobody made ({})", effects.source),
                    text: format!(
                        "the value of metadata type {mt} ({name:?}) on document {d} saw {write:?}, which neither the operation nor a workflow action explains"
                    ),
                });
            } else if !refused.is_empty() {
                out.push(Violation {
                    step,
                    class: format!("value {write:?} by a workflow an unentitled user changed"),
                    text: format!(
                        "a workflow action made {write:?} on the value of metadata type {mt} ({name:?}) on document {d} (run by {}); the workflow was shaped by {} ({}), and the model says {} may not do that directly ({key} on the document and the type)",
                        effects.source,
                        makers.iter().map(|w| self.who_name(*w)).collect::<Vec<_>>().join(", "),
                        self.shaped_by(&refused_who),
                        refused.join(", ")
                    ),
                });
            }
        }
    }

    /// Who made grant `g` in this step: the operation's actor when it asked for exactly this,
    /// or, for an ACL on a document that a workflow's access action grants, everyone who shaped
    /// that workflow's graph (who runs a transition an administrator built acts as the
    /// administrator delegated: the grant is the administrator's).
    fn makers_of(&self, g: &Grant, effects: &Effects) -> BTreeSet<Who> {
        let mut out = BTreeSet::new();
        for (who, asked) in &effects.direct {
            if asked == g {
                out.insert(*who);
            }
        }
        if !out.is_empty() {
            return out;
        }
        if let Grant::Acl((K::Doc, d), r, p) = g {
            for x in self.m.insts.values().filter(|x| x.doc == *d) {
                if (self.x.grant_actions.get(&x.wf)).is_some_and(|a| a.contains(&(*r, p.clone()))) {
                    out.extend(self.shapers_of(x.wf));
                }
            }
        }
        out
    }

    /// Whether `u` gaining `key` on `o` comes from a document moved to another type by someone
    /// the model lets move it (viewing it, `document_change_type` on it, and
    /// `document_create` on the new type).
    fn moved_legitimately(
        &self,
        before: &Model,
        effects: &Effects,
        u: i64,
        key: &str,
        o: Obj,
    ) -> bool {
        let doc = match o.0 {
            K::Doc => Some(o.1),
            K::File => before.files.get(&o.1).copied(),
            K::Instance => before.insts.get(&o.1).map(|i| i.doc),
            _ => None,
        };
        let Some(doc) = doc else { return false };
        effects.moves.iter().any(|(who, d, to)| {
            *d == doc
                && self.m.has(u, key, o)
                && match self.user_of(*who) {
                    None => true,
                    Some(actor) => {
                        before.seen(actor, (K::Doc, doc))
                            && before.has(actor, access_model::DOC_CHANGE_TYPE, (K::Doc, doc))
                            && before.has(actor, access_model::DOC_CREATE, (K::DocType, *to))
                    }
                }
        })
    }

    /// For a list member new to a list: its kind and whether the grants (or an entitled move)
    /// explain it; `None` when it is a new object.
    fn list_member_explained(
        &self,
        list: &str,
        before: &Model,
        mid: &Model,
        effects: &Effects,
        u: i64,
        id: i64,
    ) -> Option<(&'static str, bool)> {
        let (k, label) = match list {
            "documents" => (K::Doc, "document"),
            "document types" => (K::DocType, "document type"),
            "metadata types" => (K::MetaType, "metadata type"),
            "workflows" => (K::Workflow, "workflow"),
            "cabinets" => (K::Cabinet, "cabinet"),
            "roles" => (K::Role, "role"),
            "users" => {
                return before
                    .users
                    .contains_key(&id)
                    .then(|| ("user", mid.user_visible(u, id)));
            }
            "groups" => {
                return before
                    .groups
                    .contains_key(&id)
                    .then(|| ("group", mid.glob(u, GROUP_VIEW)));
            }
            l if l.starts_with("values of") => {
                return before.values.contains_key(&id).then(|| {
                    let ok = mid.value_visible(u, id)
                        || before.values.get(&id).is_some_and(|v| {
                            self.moved_legitimately(
                                before,
                                effects,
                                u,
                                k_view(K::Doc),
                                (K::Doc, v.doc),
                            ) && self.m.value_visible(u, id)
                        });
                    ("value", ok)
                });
            }
            l if l.starts_with("files of") => (K::File, "file"),
            l if l.starts_with("instances of") => {
                return before.insts.contains_key(&id).then(|| {
                    let ok = mid.inst_visible(u, id)
                        || self.moved_legitimately(
                            before,
                            effects,
                            u,
                            k_view(K::Instance),
                            (K::Instance, id),
                        );
                    ("instance", ok)
                });
            }
            _ => return None,
        };
        if !objects(before, k).contains(&id) {
            return None;
        }
        let o = (k, id);
        Some((
            label,
            mid.seen(u, o) || self.moved_legitimately(before, effects, u, k.view(), o),
        ))
    }

    fn grant_text(&self, g: &Grant) -> String {
        match g {
            Grant::Acl(o, r, p) => {
                format!("ACL grant of {p} to role {r} on {} {}", o.0.names().1, o.1)
            }
            Grant::Global(r, p) => format!("global grant of {p} to role {r}"),
            Grant::Member(g, u) => format!("user {u} in group {g}"),
            Grant::Link(r, g) => format!("role {r} linked to group {g}"),
            Grant::Superuser(u) => format!("superuser status of user {u}"),
            Grant::Active(u) => format!("activation of user {u}"),
            Grant::Takeover(u) => {
                format!("a new password for user {u} (its setter now acts as it)")
            }
        }
    }

    /// Fails on every canary in `text` that narrow user `i` may not see.
    fn scan(&self, step: usize, i: usize, channel: &str, text: &str, out: &mut Vec<Violation>) {
        let u = self.narrow[i].user;
        for (at, token) in self.canaries.find(text) {
            let Some(home) = self.canaries.homes.get(&token) else {
                out.push(Violation {
                    step,
                    class: format!("unknown canary in {}", channel_family(channel)),
                    text: format!(
                        "{channel} showed {token}, which no world object holds: {}",
                        excerpt(text, at)
                    ),
                });
                continue;
            };
            if entitled(&self.m, u, *home) {
                continue;
            }
            // The answer to a change that succeeded shows the object changed: documents,
            // document types, cabinets, roles and workflows may be changed with the change
            // permission alone (docs/operations.md, Known limitations), so their holder reads
            // what it wrote.
            if channel.starts_with("answer:")
                && channel.ends_with("-> Ok")
                && edits(&self.m, u, *home)
            {
                continue;
            }
            out.push(Violation {
                step,
                class: format!("{} leaked through {}", home.kind(), channel_family(channel)),
                text: format!(
                    "{} read {token} ({} of {:?}) in {channel}: {}",
                    self.describe_narrow(i),
                    home.kind(),
                    home,
                    excerpt(text, at)
                ),
            });
        }
    }

    /// Documents sorted by a metadata type's values come in the order of the values user `i`
    /// may read (by text; those it may not read, or without a value, last by id): a hidden
    /// value never moves a document.
    fn sort_probe(&mut self, step: usize, i: usize, out: &mut Vec<Violation>) -> Result<()> {
        let types: Vec<(i64, String)> = (self.x.mt_defs.iter())
            .map(|(id, t)| (*id, t.name.clone()))
            .collect();
        let Some((_, name)) = types.get(step / 4 % types.len().max(1)).cloned() else {
            return Ok(());
        };
        let s = self.db.session(UserId(self.narrow[i].user));
        let descending = step / 8 % 2 == 1;
        let order = if descending {
            OrderBy::descending(name.as_str())
        } else {
            OrderBy::ascending(name.as_str())
        };
        let page = s.documents(
            DocumentQuery {
                ordering: Some(order.clone()),
                ..Default::default()
            },
            PageRequest::new(1, 50),
        )?;
        let mut keys = Vec::new();
        for d in &page.items {
            let value = s
                .metadata_value_of(d.document.id, &name)
                .unwrap_or_default()
                .filter(|v| !v.is_empty());
            keys.push((value, d.document.id.0));
        }
        let in_order = keys.windows(2).all(|w| match (&w[0], &w[1]) {
            ((Some(a), x), (Some(b), y)) => {
                let by_value = if descending { b.cmp(a) } else { a.cmp(b) };
                by_value.then(x.cmp(y)).is_le()
            }
            ((Some(_), _), (None, _)) => true,
            ((None, _), (Some(_), _)) => false,
            ((None, x), (None, y)) => x < y,
        });
        self.scan(
            step,
            i,
            &format!("sorted documents ({order})"),
            &format!("{keys:?}"),
            out,
        );
        if !in_order {
            out.push(Violation {
                step,
                class: "documents sorted by a value the user may not read".to_owned(),
                text: format!(
                    "{} listed documents by {order}: {keys:?} (value as the user reads it, id)",
                    self.describe_narrow(i)
                ),
            });
        }
        Ok(())
    }

    /// Both searches, asked for a canary user `i` may not see (one canary per step, in turn;
    /// whole or a partial value, in turn), must answer exactly as for a canary that exists
    /// nowhere.
    fn search_probes(&mut self, step: usize, i: usize, out: &mut Vec<Violation>) -> Result<()> {
        let u = self.narrow[i].user;
        let hidden: Vec<&String> = (self.canaries.homes.iter())
            .filter(|(_, h)| !entitled(&self.m, u, **h))
            .map(|(t, _)| t)
            .collect();
        let Some(token) = hidden.get(step % hidden.len().max(1)).map(|t| (*t).clone()) else {
            return Ok(());
        };
        let s = self.db.session(UserId(u));
        let answer = |q: &str| {
            (
                format!(
                    "{:?}",
                    s.search_documents(q, PageRequest::new(1, 50)).map(|p| (
                        p.count,
                        p.items.iter().map(|d| d.document.id.0).collect::<Vec<_>>()
                    ))
                ),
                format!(
                    "{:?}",
                    s.search_metadata(q, PageRequest::new(1, 50)).map(|p| (
                        p.count,
                        p.items.iter().map(|v| v.value.id.0).collect::<Vec<_>>()
                    ))
                ),
            )
        };
        let nothing = (
            format!("{:?}", Ok::<_, ()>((0, Vec::<i64>::new()))),
            String::new(),
        );
        let nothing = (nothing.0.clone(), nothing.0);
        let absent = format!("{CANARY_PREFIX}{ABSENT_SERIAL}{}", suffix(&mut self.dice));
        let (part, absent_part) = (&token[8..], &absent[8..]);
        // The whole canary and a partial value, in turn by step; a canary value is also asked
        // for bound to its metadata type (`name:value`), in turn.
        let mut probes = vec![
            (token.clone(), absent.clone()),
            (
                format!("metadata_value:{part}"),
                format!("metadata_value:{absent_part}"),
            ),
        ];
        if let Home::Value(_, mt) = self.canaries.homes[&token]
            && let Some(t) = self.x.mt_defs.get(&mt)
        {
            probes.push((
                format!("{}:{part}", t.name),
                format!("{}:{absent_part}", t.name),
            ));
        }
        // Probes run every fourth step: each in turn.
        let turn = step / 4 % probes.len();
        for (q, q_absent) in probes.into_iter().skip(turn).take(1) {
            let got = answer(&q);
            // What the pages hold is read like any answer.
            let pages = format!(
                "{:?} {:?}",
                s.search_documents(&q, PageRequest::new(1, 50)),
                s.search_metadata(&q, PageRequest::new(1, 50))
            );
            self.scan(step, i, &format!("search_pages({q})"), &pages, out);
            // Nothing is the answer for a canary that exists nowhere, unless the partial value
            // happens to occur elsewhere: then ask for one that exists nowhere.
            if got == nothing {
                continue;
            }
            let want = answer(&q_absent);
            if got != want {
                out.push(Violation {
                    step,
                    class: format!(
                        "search answers for a hidden {}",
                        self.canaries.homes[&token].kind()
                    ),
                    text: format!(
                        "{} searched `{q}` for {token} ({:?}, hidden): documents {} / metadata {}, but `{q_absent}` (nowhere): {} / {}",
                        self.describe_narrow(i),
                        self.canaries.homes[&token],
                        got.0,
                        got.1,
                        want.0,
                        want.1
                    ),
                });
            }
        }
        Ok(())
    }
}

fn k_view(k: K) -> &'static str {
    k.view()
}

fn grant_kind(g: &Grant) -> &'static str {
    match g {
        Grant::Acl(..) => "ACL",
        Grant::Global(..) => "global",
        Grant::Member(..) => "membership",
        Grant::Link(..) => "role link",
        Grant::Superuser(_) => "superuser",
        Grant::Active(_) => "activation",
        Grant::Takeover(_) => "account takeover",
    }
}

/// A channel without its ids: `document_metadata(3)` -> `document_metadata`.
fn channel_family(channel: &str) -> String {
    let (prefix, rest) = match channel.strip_prefix("answer:") {
        Some(rest) => ("the answer to ", rest),
        None => ("", channel),
    };
    format!("{prefix}{}", rest.split(['(', ' ']).next().unwrap_or(rest))
}

// ----- running operations -----------------------------------------------------------------------

/// What a step did that the authority check needs.
#[derive(Default)]
struct Effects {
    /// Who ran the step.
    actor: Who,
    /// What kind of operation, for classes.
    source: String,
    /// Grants the operation asked for, by whom.
    direct: Vec<(Who, Grant)>,
    /// Documents moved to another type: (who, document, new type).
    moves: Vec<(Who, i64, i64)>,
    /// Accounts whose password someone else set.
    takeovers: Vec<i64>,
    /// Values the operation wrote itself: (document, metadata type).
    writes: Vec<(i64, i64)>,
    /// Documents whose values the operation may change wholesale (created, moved, deleted),
    /// and metadata types whose values it may remove (deleted).
    rewrites: BTreeSet<i64>,
    removes_type: BTreeSet<i64>,
    /// The lifecycle tasks ran: their additions and removals are theirs.
    tasks: bool,
    /// Changes to other users than the actor (name, activity): (user, what).
    user_changes: Vec<(i64, String)>,
    /// Metadata types made required here: the values the backfill adds are its.
    backfills: BTreeSet<i64>,
}

impl World {
    /// Runs one operation; returns what it did and the answers narrow users got.
    fn run(&mut self, op: &Op) -> Result<(Effects, Vec<Answer>)> {
        self.serial += 1;
        match *op {
            Op::Tasks => {
                let r = self.db.run_pending_tasks();
                self.steps
                    .push(format!("tasks: run_pending_tasks() -> {r:?}"));
                Ok((
                    Effects {
                        actor: Who::System,
                        source: "tasks".into(),
                        tasks: true,
                        ..Default::default()
                    },
                    Vec::new(),
                ))
            }
            Op::Admin {
                system,
                act,
                a,
                b,
                c,
            } => {
                let who = if system { Who::System } else { Who::Root };
                let (line, effects) = self.admin(who, act, a, b, c)?;
                self.steps.push(format!("{}: {line}", self.who_name(who)));
                Ok((effects, Vec::new()))
            }
            Op::Narrow { n, act, a, b, c } => {
                // Half the time, one of the users whose permission suggests something to try.
                let keen: Vec<usize> = (0..self.narrow.len())
                    .filter(|i| !std::ptr::eq(acts_for(self.narrow[*i].pair.perm), NARROW_ACTS))
                    .collect();
                let i = match pick(&keen, n / 2) {
                    Some(i) if n % 2 == 0 => i,
                    _ => usize::from(n) % self.narrow.len(),
                };
                let acts = if act % 8 != 0 {
                    acts_for(self.narrow[i].pair.perm)
                } else {
                    NARROW_ACTS
                };
                let chosen = acts[usize::from(act / 8) % acts.len()];
                let (line, answer, effects) = self.narrow_act(i, chosen, a, b, c)?;
                self.steps.push(format!("n{i}: {line}"));
                Ok((effects, vec![(i, format!("answer:{line}"), answer)]))
            }
        }
    }

    fn own_text(&self, i: usize) -> String {
        format!("n{i} text {}", self.serial)
    }

    /// The narrow user's target if it is of kind `k` (two times in three), else any object of
    /// that kind.
    fn target(&self, i: usize, k: K, sel: u8) -> Option<i64> {
        if !sel.is_multiple_of(3)
            && let Some((tk, id)) = self.narrow[i].target
            && tk == k
            && objects(&self.m, k).contains(&id)
        {
            return Some(id);
        }
        pick(&objects(&self.m, k), sel / 3)
    }

    /// A document: the target, one of the target type's, or any.
    fn target_doc(&self, i: usize, sel: u8) -> Option<i64> {
        if !sel.is_multiple_of(3)
            && let Some((K::DocType, t)) = self.narrow[i].target
        {
            let docs: Vec<i64> = (self.m.docs.iter())
                .filter(|(_, dt)| **dt == t)
                .map(|(d, _)| *d)
                .collect();
            if let Some(d) = pick(&docs, sel / 3) {
                return Some(d);
            }
        }
        self.target(i, K::Doc, sel)
    }

    fn metadata_input(&self, mt: i64, label: String) -> Option<MetadataTypeInput> {
        let t = self.x.mt_defs.get(&mt)?;
        Some(MetadataTypeInput {
            name: t.name.clone(),
            label,
            default: t.default.clone(),
            lookup: t.lookup.clone(),
            validation: t.validation.clone(),
            validation_arguments: t.validation_arguments.clone(),
            parser: t.parser.clone(),
            parser_arguments: t.parser_arguments.clone(),
            value_type: t.value_type,
        })
    }

    /// A user a narrow user aims at: the strong ones first.
    fn victim(&self, i: usize, sel: u8) -> i64 {
        let f = &self.fixed;
        let other = self.narrow[(i + 1) % self.narrow.len()].user;
        [
            f.vic,
            f.sleeper,
            f.root,
            f.bystander,
            other,
            self.narrow[i].user,
        ][usize::from(sel) % 6]
    }

    fn narrow_act(
        &mut self,
        i: usize,
        act: Act,
        a: u8,
        b: u8,
        c: u8,
    ) -> Result<(String, String, Effects)> {
        let who = Who::Narrow(i);
        let s = self.session_of(who);
        let me = self.narrow[i].user;
        let mut e = Effects {
            actor: who,
            source: format!("{act:?}"),
            ..Default::default()
        };
        let text = self.own_text(i);
        let f = self.fixed.clone();
        macro_rules! done {
            ($line:expr, $r:expr) => {{
                let r = $r;
                let line = format!("{} -> {}", $line, brief(&r));
                let answer = format!("{r:?}");
                return Ok((line, answer, e));
            }};
        }
        match act {
            Act::SetDefault | Act::SetLookup => {
                let Some(mt) = self.target(i, K::MetaType, a) else {
                    done!("no metadata type", Ok(()))
                };
                let tpl = template(b);
                let Some(mut input) = self.metadata_input(mt, text.clone()) else {
                    done!("no metadata type", Ok(()))
                };
                if act == Act::SetDefault {
                    input.default = tpl.to_owned();
                } else {
                    input.lookup = tpl.to_owned();
                }
                let field = if act == Act::SetDefault {
                    "default"
                } else {
                    "lookup"
                };
                let r = s.update_metadata_type(MetadataTypeId(mt), input);
                if r.is_ok() {
                    self.hot_mts.push(mt);
                    self.last_hot = Some((K::MetaType, mt));
                }
                done!(format!("update_metadata_type({mt}, {field} = {tpl:?})"), r)
            }
            Act::SetValidation => {
                let Some(mt) = self.target(i, K::MetaType, a) else {
                    done!("no metadata type", Ok(()))
                };
                let (v, va, p, pa) = VALIDATIONS[usize::from(b) % VALIDATIONS.len()];
                let Some(mut input) = self.metadata_input(mt, text.clone()) else {
                    done!("no metadata type", Ok(()))
                };
                input.validation = v.into();
                input.validation_arguments = va.into();
                input.parser = p.into();
                input.parser_arguments = pa.into();
                done!(
                    format!(
                        "update_metadata_type({mt}, validation {v:?} {va:?}, parser {p:?} {pa:?})"
                    ),
                    s.update_metadata_type(MetadataTypeId(mt), input)
                )
            }
            Act::CreateMetadataType => {
                let tpl = template(b);
                let mut input =
                    MetadataTypeInput::new(format!("n{i}_{}", self.serial), text.clone());
                if c.is_multiple_of(2) {
                    input.default = tpl.into();
                } else {
                    input.lookup = tpl.into();
                }
                let r = s.create_metadata_type(input);
                if let Ok(t) = &r {
                    self.hot_mts.push(t.id.0);
                    self.last_hot = Some((K::MetaType, t.id.0));
                }
                done!(
                    format!("create_metadata_type(default or lookup {tpl:?})"),
                    r
                )
            }
            Act::Associate => {
                let (Some(dt), Some(mt)) = (
                    self.target(i, K::DocType, a),
                    self.target(i, K::MetaType, b),
                ) else {
                    done!("nothing to associate", Ok(()))
                };
                let required = c.is_multiple_of(2);
                e.backfills.insert(mt);
                let existing = (self.m.assocs.iter())
                    .find(|(_, x)| x.dt == dt && x.mt == mt)
                    .map(|(id, _)| *id);
                match existing {
                    Some(id) => done!(
                        format!("update_association({dt}, {id} [mt {mt}], required {required})"),
                        s.update_association(
                            DocumentTypeId(dt),
                            docmeta_core::AssociationId(id),
                            required
                        )
                    ),
                    None => done!(
                        format!("associate({dt}, {mt}, required {required})"),
                        s.associate(DocumentTypeId(dt), MetadataTypeId(mt), required)
                    ),
                }
            }
            Act::SetCondition | Act::AddTrigger => {
                let Some(wf) = self.target(i, K::Workflow, a) else {
                    done!("no workflow", Ok(()))
                };
                let trs: Vec<i64> = self.m.wfs[&wf].transitions.keys().copied().collect();
                let Some(tr) = pick(&trs, b) else {
                    done!(format!("workflow {wf} has no transition"), Ok(()))
                };
                // Setting the condition a transition already has changes nothing: its maker
                // shapes nothing (docmeta asks no rights of it).
                let before = (self
                    .db
                    .system()
                    .workflow_transitions(WorkflowId(wf))?
                    .into_iter())
                .find(|t| t.id.0 == tr)
                .map(|t| t.condition);
                let mut changed = true;
                let r = if act == Act::SetCondition {
                    let cond = CONDITIONS[usize::from(c) % CONDITIONS.len()];
                    changed = before.as_deref() != Some(cond.trim());
                    let r = s.update_workflow_transition(
                        WorkflowId(wf),
                        WorkflowTransitionId(tr),
                        TransitionUpdate {
                            condition: Some(cond.to_owned()),
                            ..Default::default()
                        },
                    );
                    (
                        format!("update_workflow_transition({wf}, {tr}, condition {cond:?})"),
                        r,
                    )
                } else {
                    let ev = TRIGGERS[usize::from(c) % TRIGGERS.len()];
                    (
                        format!("add_workflow_trigger({wf}, {tr}, {ev})"),
                        s.add_workflow_trigger(WorkflowId(wf), WorkflowTransitionId(tr), ev),
                    )
                };
                if r.1.is_ok() && changed {
                    self.shape(wf, who, &format!("{act:?}"));
                    self.hot_wfs.push(wf);
                    self.last_hot = Some((K::Workflow, wf));
                }
                done!(r.0, r.1)
            }
            Act::AddAction => {
                let Some(wf) = self.target(i, K::Workflow, a) else {
                    done!("no workflow", Ok(()))
                };
                let states = self.x.states.get(&wf).cloned().unwrap_or_default();
                let Some(st) = pick(&states, b) else {
                    done!(format!("workflow {wf} has no state"), Ok(()))
                };
                let mts: Vec<i64> = self.m.mts.iter().copied().collect();
                let mt = pick(&mts, c / 8).unwrap_or(0);
                let salary = (self.x.mt_names.iter())
                    .find(|(_, n)| *n == "salary")
                    .map_or(0, |(id, _)| *id);
                let action = match c % 6 {
                    0 | 1 => ActionKind::EditMetadata {
                        metadata_type_id: MetadataTypeId(mt),
                        value: ACTION_TEMPLATES[usize::from(c / 2) % ACTION_TEMPLATES.len()].into(),
                    },
                    2 => ActionKind::RemoveMetadata {
                        metadata_type_ids: vec![MetadataTypeId(if c % 12 < 6 {
                            salary
                        } else {
                            mt
                        })],
                    },
                    3 => ActionKind::AddMetadata {
                        metadata_type_ids: vec![MetadataTypeId(mt)],
                    },
                    4 => ActionKind::GrantDocumentAccess {
                        role_id: RoleId(self.narrow[i].role),
                        permission: [Permission::DocumentView, Permission::DocumentMetadataView]
                            [usize::from(c / 6) % 2]
                            .key()
                            .to_owned(),
                    },
                    _ => ActionKind::RevokeDocumentAccess {
                        role_id: RoleId(f.baseline),
                        permission: Permission::DocumentView.key().to_owned(),
                    },
                };
                let line = format!("create_workflow_action({wf}, state {st}, {action:?})");
                let r = s.create_workflow_action(
                    WorkflowId(wf),
                    WorkflowStateId(st),
                    &text,
                    c.is_multiple_of(2),
                    false,
                    action,
                );
                if r.is_ok() {
                    self.shape(wf, who, &format!("{act:?}"));
                    self.hot_wfs.push(wf);
                    self.last_hot = Some((K::Workflow, wf));
                }
                done!(line, r)
            }
            Act::AddStateOrTransition => {
                let Some(wf) = self.target(i, K::Workflow, a) else {
                    done!("no workflow", Ok(()))
                };
                let states = self.x.states.get(&wf).cloned().unwrap_or_default();
                let (line, r) = if b.is_multiple_of(2) || states.is_empty() {
                    let initial = c.is_multiple_of(3);
                    (
                        format!("create_workflow_state({wf}, initial {initial})"),
                        s.create_workflow_state(WorkflowId(wf), &text, initial)
                            .map(drop),
                    )
                } else {
                    let (from, to) = (
                        pick(&states, b / 2).unwrap_or(0),
                        pick(&states, c).unwrap_or(0),
                    );
                    let cond = CONDITIONS[usize::from(c) % CONDITIONS.len()];
                    (
                        format!("create_workflow_transition({wf}, {from} -> {to}, {cond:?})"),
                        s.create_workflow_transition(
                            WorkflowId(wf),
                            &text,
                            WorkflowStateId(from),
                            WorkflowStateId(to),
                            cond,
                        )
                        .map(drop),
                    )
                };
                if r.is_ok() {
                    self.shape(wf, who, &format!("{act:?}"));
                    self.hot_wfs.push(wf);
                    self.last_hot = Some((K::Workflow, wf));
                }
                done!(line, r)
            }
            Act::BindWorkflow | Act::CreateWorkflow => {
                let dts: Vec<i64> = self.m.dts.iter().copied().collect();
                let types: Vec<DocumentTypeId> = (dts.iter().enumerate())
                    .filter(|(k, _)| (b >> k) & 1 == 1)
                    .map(|(_, t)| DocumentTypeId(*t))
                    .collect();
                if act == Act::BindWorkflow {
                    let Some(wf) = self.target(i, K::Workflow, a) else {
                        done!("no workflow", Ok(()))
                    };
                    let r = s.update_workflow(WorkflowId(wf), None, Some(types.as_slice()));
                    if r.is_ok() {
                        self.shape(wf, who, &format!("{act:?}"));
                        self.hot_wfs.push(wf);
                        self.last_hot = Some((K::Workflow, wf));
                    }
                    done!(format!("update_workflow({wf}, types {types:?})"), r)
                }
                let r = s.create_workflow(&text, &types).and_then(|wf| {
                    s.create_workflow_state(wf.id, &format!("{text} start"), true)?;
                    Ok(wf)
                });
                if let Ok(wf) = &r {
                    self.shape(wf.id.0, who, &format!("{act:?}"));
                    self.hot_wfs.push(wf.id.0);
                    self.last_hot = Some((K::Workflow, wf.id.0));
                }
                done!(
                    format!("create_workflow(types {types:?}) and an initial state"),
                    r
                )
            }
            Act::ChangeType => {
                let (Some(d), Some(dt)) = (self.target_doc(i, a), self.target(i, K::DocType, b))
                else {
                    done!("nothing to move", Ok(()))
                };
                e.moves.push((who, d, dt));
                e.rewrites.insert(d);
                done!(
                    format!("change_document_type({d}, {dt})"),
                    s.change_document_type(DocumentId(d), DocumentTypeId(dt))
                )
            }
            Act::SetPassword => {
                let t = self.victim(i, b);
                let r = s.set_password(UserId(t), "a new long password 2");
                if r.is_ok() && t != me {
                    e.direct.push((who, Grant::Takeover(t)));
                    e.takeovers.push(t);
                }
                done!(format!("set_password(user {t})"), r)
            }
            Act::UpdateUser => {
                let t = self.victim(i, b);
                let mut update = UserUpdate::default();
                match c % 5 {
                    0 => update.username = Some(format!("n{i}u{}", self.serial)),
                    1 => update.is_active = Some(true),
                    2 => update.is_superuser = Some(true),
                    3 => update.password = Some("a new long password 3".into()),
                    _ => update.is_active = Some(false),
                }
                let change = if update.username.is_some() {
                    Some("renamed")
                } else if update.is_active == Some(false) {
                    Some("deactivated")
                } else {
                    None
                };
                if update.is_superuser == Some(true) {
                    e.direct.push((who, Grant::Superuser(t)));
                }
                if update.is_active == Some(true) {
                    e.direct.push((who, Grant::Active(t)));
                }
                let takeover = update.password.is_some();
                let line = format!("update_user(user {t}, {update:?})");
                let r = s.update_user(UserId(t), update);
                if r.is_ok() && takeover && t != me {
                    e.direct.push((who, Grant::Takeover(t)));
                    e.takeovers.push(t);
                }
                if let (Ok(_), Some(what), true) = (&r, change, t != me) {
                    e.user_changes.push((t, what.to_owned()));
                }
                done!(line, r)
            }
            Act::AddMember => {
                let other = self.narrow[(i + 1) % self.narrow.len()].group;
                let g =
                    [f.keepers, f.staff, f.spare, self.narrow[i].group, other][usize::from(a) % 5];
                let t = if !b.is_multiple_of(3) {
                    me
                } else {
                    self.victim(i, b / 3)
                };
                e.direct.push((who, Grant::Member(g, t)));
                done!(
                    format!("set_group_member(group {g}, user {t}, true)"),
                    s.set_group_member(GroupId(g), UserId(t), true)
                )
            }
            Act::LinkRole => {
                let other = self.narrow[(i + 1) % self.narrow.len()].role;
                let r =
                    [f.keeper, f.loose, f.baseline, self.narrow[i].role, other][usize::from(a) % 5];
                let g = [self.narrow[i].group, f.staff, f.spare, f.keepers][usize::from(b) % 4];
                e.direct.push((who, Grant::Link(r, g)));
                done!(
                    format!("set_role_group(role {r}, group {g}, true)"),
                    s.set_role_group(RoleId(r), GroupId(g), true)
                )
            }
            Act::GrantGlobal => {
                let r = if b.is_multiple_of(2) {
                    self.narrow[i].role
                } else {
                    f.baseline
                };
                let keys = [
                    self.narrow[i].pair.perm,
                    Permission::DocumentView,
                    Permission::DocumentMetadataView,
                    Permission::UserEdit,
                    Permission::RoleEdit,
                    Permission::AclEdit,
                ];
                let p = keys[usize::from(c) % keys.len()];
                e.direct.push((who, Grant::Global(r, p.key().to_owned())));
                done!(
                    format!("grant_global({}, role {r})", p.key()),
                    s.grant_global(p, RoleId(r))
                )
            }
            Act::AclGrant => {
                let k = match self.narrow[i].target {
                    Some((k, _)) if !a.is_multiple_of(3) => k,
                    _ => ACL_KINDS[usize::from(a) % ACL_KINDS.len()],
                };
                let Some(id) = self.target(i, k, a) else {
                    done!("no object", Ok(()))
                };
                let o = (k, id);
                let r = if b.is_multiple_of(2) {
                    self.narrow[i].role
                } else {
                    f.baseline
                };
                let pool = k.pool();
                let p = pool[usize::from(c) % pool.len()];
                e.direct.push((who, Grant::Acl(o, r, p.to_owned())));
                if b % 4 < 2 {
                    done!(
                        format!("grant({p}, role {r}, {k:?} {id})"),
                        s.grant(perm(p), RoleId(r), oref(o))
                    )
                }
                let existing = self
                    .m
                    .acls
                    .get(&o)
                    .and_then(|x| x.get(&r))
                    .map(|acl| acl.id);
                let r2 = match existing {
                    Some(acl) => s.acl_add_permission(oref(o), AclId(acl), perm(p)),
                    None => s
                        .create_acl(oref(o), RoleId(r))
                        .and_then(|acl| s.acl_add_permission(oref(o), acl.acl.id, perm(p))),
                };
                done!(
                    format!("create_acl/acl_add_permission({p}, role {r}, {k:?} {id})"),
                    r2
                )
            }
            Act::SaveValue | Act::RemoveValue => {
                let Some(d) = self.target_doc(i, a) else {
                    done!("no document", Ok(()))
                };
                let dt = self.m.docs[&d];
                let mts: Vec<i64> = (self.m.assocs.values())
                    .filter(|x| x.dt == dt)
                    .map(|x| x.mt)
                    .collect();
                let mt = match self.narrow[i].target {
                    Some((K::MetaType, t)) if !b.is_multiple_of(3) && mts.contains(&t) => t,
                    _ => pick(&mts, b).unwrap_or(0),
                };
                let existing = self.x.values.get(&(d, mt)).copied();
                e.writes.push((d, mt));
                if act == Act::RemoveValue {
                    let Some(v) = existing else {
                        done!(format!("document {d} has no value of {mt}"), Ok(()))
                    };
                    done!(
                        format!("remove_document_metadata({d}, value {v} [mt {mt}])"),
                        s.remove_document_metadata(DocumentId(d), DocumentMetadataId(v))
                    )
                }
                let value = if c.is_multiple_of(2) {
                    String::new()
                } else {
                    format!("n{i}v{}", self.serial)
                };
                match existing {
                    Some(v) => done!(
                        format!("edit_document_metadata({d}, value {v} [mt {mt}], {value:?})"),
                        s.edit_document_metadata(
                            DocumentId(d),
                            DocumentMetadataId(v),
                            &value,
                            None
                        )
                    ),
                    None => done!(
                        format!("add_document_metadata({d}, {mt}, {value:?})"),
                        s.add_document_metadata(DocumentId(d), MetadataTypeId(mt), &value)
                    ),
                }
            }
            Act::Transition => {
                let Some(d) = self.target_doc(i, a) else {
                    done!("no document", Ok(()))
                };
                let insts: Vec<(i64, i64)> = (self.m.insts.iter())
                    .filter(|(_, x)| x.doc == d)
                    .map(|(id, x)| (*id, x.wf))
                    .collect();
                let Some((inst, wf)) = pick(&insts, b) else {
                    done!(format!("document {d} has no workflow instance"), Ok(()))
                };
                let trs: Vec<i64> = self.m.wfs[&wf].transitions.keys().copied().collect();
                let Some(tr) = pick(&trs, c) else {
                    done!("no transition", Ok(()))
                };
                if a.is_multiple_of(3) {
                    // As a replica pushes a transition taken offline, from the state the model
                    // holds: the same checks, and its answer (the outcome, the document as the
                    // user sees it) checked the same way.
                    let write = docmeta_core::PushedWrite {
                        key: format!("transition-{a}-{b}-{c}"),
                        document: DocumentId(d),
                        change: docmeta_core::PushedChange::Transition {
                            instance: WorkflowInstanceId(inst),
                            transition: WorkflowTransitionId(tr),
                            comment: text.clone(),
                            base: self.m.insts[&inst].state.map(docmeta_core::WorkflowStateId),
                        },
                    };
                    done!(
                        format!("sync_push(transition {tr} on instance {inst} of {d})"),
                        s.sync_push(self.narrow[i].device, &[write])
                    )
                }
                done!(
                    format!("transition_workflow({d}, instance {inst}, transition {tr})"),
                    s.transition_workflow(
                        DocumentId(d),
                        WorkflowInstanceId(inst),
                        WorkflowTransitionId(tr),
                        &text
                    )
                )
            }
            Act::CreateDocument => {
                let Some(dt) = self.target(i, K::DocType, a) else {
                    done!("no document type", Ok(()))
                };
                if c.is_multiple_of(3) {
                    // As a replica pushes a document created offline: the same rules, and
                    // its answer (the outcome, the document as the user sees it) checked the
                    // same way. A key used before answers the document made then.
                    let before = self.db.system().document_ids(None)?;
                    let key = format!("create-{a}-{b}");
                    let write = docmeta_core::PushedWrite {
                        key: key.clone(),
                        document: DocumentId(docmeta_core::LOCAL_IDS),
                        change: docmeta_core::PushedChange::Create {
                            document_type: DocumentTypeId(dt),
                            label: text.clone(),
                            values: Vec::new(),
                        },
                    };
                    let r = s.sync_push(self.narrow[i].device, &[write]);
                    for d in self.db.system().document_ids(None)? {
                        if !before.contains(&d) {
                            e.rewrites.insert(d.0);
                        }
                    }
                    done!(format!("sync_push(create {dt}, key {key})"), r)
                }
                let r = s.create_document(DocumentTypeId(dt), &text, &[]);
                if let Ok(d) = &r {
                    e.rewrites.insert(d.document.id.0);
                }
                done!(format!("create_document({dt})"), r)
            }
            Act::Cabinet => {
                if c.is_multiple_of(2) {
                    let (Some(cab), Some(d)) =
                        (self.target(i, K::Cabinet, a), self.target_doc(i, b))
                    else {
                        done!("nothing", Ok(()))
                    };
                    done!(
                        format!("set_cabinet_document({cab}, {d}, true)"),
                        s.set_cabinet_document(CabinetId(cab), DocumentId(d), true)
                    )
                }
                let parent = if b.is_multiple_of(2) {
                    None
                } else {
                    self.target(i, K::Cabinet, a).map(CabinetId)
                };
                done!(
                    format!("create_cabinet(parent {parent:?})"),
                    s.create_cabinet(&text, parent)
                )
            }
            Act::Rename => {
                let kinds = [K::Doc, K::DocType, K::Cabinet, K::Role, K::Workflow];
                let k = match self.narrow[i].target {
                    Some((k, _)) if !a.is_multiple_of(3) && kinds.contains(&k) => k,
                    _ => {
                        if a % 7 == 6 {
                            let g = pick(&self.m.groups.keys().copied().collect::<Vec<_>>(), b)
                                .unwrap_or(0);
                            done!(
                                format!("rename_group({g})"),
                                s.rename_group(GroupId(g), &text)
                            )
                        }
                        kinds[usize::from(a) % kinds.len()]
                    }
                };
                let Some(id) = self.target(i, k, b) else {
                    done!("nothing to rename", Ok(()))
                };
                let line = format!("rename {k:?} {id}");
                match k {
                    K::Doc => done!(line, s.update_document(DocumentId(id), &text)),
                    K::DocType => done!(line, s.update_document_type(DocumentTypeId(id), &text)),
                    K::Cabinet => done!(line, s.rename_cabinet(CabinetId(id), &text)),
                    K::Role => done!(line, s.rename_role(RoleId(id), &text)),
                    _ => done!(line, s.update_workflow(WorkflowId(id), Some(&text), None)),
                }
            }
            Act::UploadFile => {
                let Some(d) = self.target_doc(i, a) else {
                    done!("no document", Ok(()))
                };
                if b.is_multiple_of(3) {
                    // As a replica pushes a file added offline (its permission checked before
                    // the bytes), its answer checked as every answer.
                    done!(
                        format!("sync_push_file({d})"),
                        s.sync_push_file(
                            self.narrow[i].device,
                            &format!("file-{a}-{b}-{c}"),
                            DocumentId(d),
                            &format!("n{i}.txt"),
                            &mut text.as_bytes()
                        )
                    )
                }
                done!(
                    format!("add_file({d})"),
                    s.add_file(DocumentId(d), &format!("n{i}.txt"), &mut text.as_bytes())
                )
            }
            Act::Delete => {
                let kind = delete_kind(self.narrow[i].pair.perm)
                    .filter(|_| !a.is_multiple_of(3))
                    .unwrap_or(a % 10);
                let line;
                let r: Result<()> = match kind {
                    0 => {
                        let Some(file) = self.target(i, K::File, b) else {
                            done!("no file", Ok(()))
                        };
                        line = format!("delete_file({file})");
                        s.delete_file(DocumentFileId(file))
                    }
                    1 => {
                        let Some(d) = self.target_doc(i, b) else {
                            done!("no document", Ok(()))
                        };
                        line = format!("delete_document({d})");
                        e.rewrites.insert(d);
                        s.delete_document(DocumentId(d))
                    }
                    2 => {
                        let Some(cab) = self.target(i, K::Cabinet, b) else {
                            done!("no cabinet", Ok(()))
                        };
                        line = format!("delete_cabinet({cab})");
                        s.delete_cabinet(CabinetId(cab))
                    }
                    3 => {
                        let Some(wf) = self.target(i, K::Workflow, b) else {
                            done!("no workflow", Ok(()))
                        };
                        line = format!("delete_workflow({wf})");
                        s.delete_workflow(WorkflowId(wf))
                    }
                    4 => {
                        let Some(mt) = self.target(i, K::MetaType, b) else {
                            done!("no metadata type", Ok(()))
                        };
                        line = format!("delete_metadata_type({mt})");
                        e.removes_type.insert(mt);
                        s.delete_metadata_type(MetadataTypeId(mt))
                    }
                    5 => {
                        let Some(r) = self.target(i, K::Role, b) else {
                            done!("no role", Ok(()))
                        };
                        line = format!("delete_role({r})");
                        s.delete_role(RoleId(r))
                    }
                    6 => {
                        let g = pick(&self.m.groups.keys().copied().collect::<Vec<_>>(), b)
                            .unwrap_or(0);
                        line = format!("delete_group({g})");
                        s.delete_group(GroupId(g))
                    }
                    7 => {
                        let t = self.victim(i, b);
                        if t == me || t == f.root {
                            done!("nothing to delete", Ok(()))
                        }
                        line = format!("delete_user({t})");
                        s.delete_user(UserId(t))
                    }
                    8 => {
                        let acls: Vec<(Obj, i64)> = (self.m.acls.iter())
                            .flat_map(|(o, x)| x.values().map(move |a| (*o, a.id)))
                            .collect();
                        let Some((o, acl)) = pick(&acls, b) else {
                            done!("no ACL", Ok(()))
                        };
                        line = format!("delete_acl({o:?}, {acl})");
                        s.delete_acl(oref(o), AclId(acl))
                    }
                    _ => {
                        let Some(dt) = self.target(i, K::DocType, b) else {
                            done!("no document type", Ok(()))
                        };
                        line = format!("delete_document_type({dt})");
                        s.delete_document_type(DocumentTypeId(dt))
                    }
                };
                done!(line, r)
            }
            Act::CreatePrincipal => match c % 3 {
                0 => {
                    let superuser = b.is_multiple_of(4);
                    let r = s.create_user(
                        &format!("n{i}u{}", self.serial),
                        "a long password 4",
                        superuser,
                    );
                    if let (Ok(u), true) = (&r, superuser) {
                        e.direct.push((who, Grant::Superuser(u.id.0)));
                    }
                    done!(format!("create_user(superuser {superuser})"), r)
                }
                1 => done!(
                    "create_group",
                    s.create_group(&format!("n{i}g{}", self.serial))
                ),
                _ => done!("create_role", s.create_role(&text)),
            },
        }
    }

    fn admin(&mut self, who: Who, act: u8, a: u8, b: u8, c: u8) -> Result<(String, Effects)> {
        let s = self.session_of(who);
        let mut e = Effects {
            actor: who,
            source: "administrator".into(),
            ..Default::default()
        };
        let docs: Vec<i64> = self.m.docs.keys().copied().collect();
        let dts: Vec<i64> = self.m.dts.iter().copied().collect();
        let doc_mt = |w: &World, sel: u8| -> Option<(i64, i64)> {
            let d = pick(&docs, a)?;
            let dt = w.m.docs[&d];
            let mts: Vec<i64> = (w.m.assocs.values())
                .filter(|x| x.dt == dt)
                .map(|x| x.mt)
                .collect();
            Some((d, pick(&mts, sel)?))
        };
        macro_rules! done {
            ($line:expr, $r:expr) => {{
                let r = $r;
                return Ok((format!("{} -> {}", $line, brief(&r)), e));
            }};
        }
        // A planted metadata type (two times in three, when there is one) and a document its
        // value may go on (of the public type first).
        // The planted type: the latest one half the time, else any.
        let hot_mt = |w: &World| -> Option<i64> {
            match c % 6 {
                0 | 3 => None,
                1 | 4 => w.hot_mts.last().copied(),
                _ => pick(&w.hot_mts, c / 6),
            }
        };
        let hot_doc_mt = |w: &World| -> Option<(i64, i64)> {
            let mt = hot_mt(w)?;
            let public = w.m.dts.iter().next().copied();
            let mut docs: Vec<i64> = (w.m.docs.iter())
                .filter(|(_, dt)| w.m.assocs.values().any(|x| x.dt == **dt && x.mt == mt))
                .map(|(d, _)| *d)
                .collect();
            docs.sort_by_key(|d| w.m.docs.get(d) != public.as_ref());
            Some((
                pick(&docs, a / 2)
                    .filter(|_| a.is_multiple_of(2))
                    .or(docs.first().copied())?,
                mt,
            ))
        };
        // A document with an instance of a workflow a narrow user changed.
        let hot_doc = |w: &World| -> Option<i64> {
            let wf = pick(&w.hot_wfs, c).filter(|_| !c.is_multiple_of(3))?;
            let docs: Vec<i64> = (w.m.insts.values())
                .filter(|x| x.wf == wf)
                .map(|x| x.doc)
                .collect();
            pick(&docs, a)
        };
        // Mostly what makes stored code run: empty values, required associations, transitions,
        // edits that fire triggers.
        // A quarter of the time, what the latest narrow change planted is run at once.
        const WEIGHTS: [u8; 20] = [
            0, 0, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12, 12, 12, 12, 0,
        ];
        let act = match (WEIGHTS[usize::from(act % 20)], self.last_hot) {
            (12, None) => 0,
            (act, _) => act,
        };
        match act {
            12 => {
                let Some((kind, id)) = self.last_hot else {
                    done!("nothing", Ok(()))
                };
                if kind == K::MetaType {
                    // Its default renders: an empty value on a document (of the public type
                    // first), or the backfill of a required association.
                    let public = dts.first().copied().unwrap_or(0);
                    let mut docs: Vec<i64> = (self.m.docs.iter())
                        .filter(|(_, dt)| {
                            self.m.assocs.values().any(|x| x.dt == **dt && x.mt == id)
                        })
                        .map(|(d, _)| *d)
                        .collect();
                    docs.sort_by_key(|d| self.m.docs.get(d) != Some(&public));
                    let assoc = (self.m.assocs.iter())
                        .find(|(_, x)| x.dt == public && x.mt == id)
                        .map(|(a, _)| *a);
                    match (docs.first().copied(), c % 3) {
                        (Some(d), 0 | 1) => {
                            e.writes.push((d, id));
                            match self.x.values.get(&(d, id)) {
                                Some(v) => done!(
                                    format!(
                                        "edit_document_metadata({d}, value {v} [mt {id}], \"\")"
                                    ),
                                    s.edit_document_metadata(
                                        DocumentId(d),
                                        DocumentMetadataId(*v),
                                        "",
                                        None
                                    )
                                ),
                                None => done!(
                                    format!("add_document_metadata({d}, {id}, \"\")"),
                                    s.add_document_metadata(DocumentId(d), MetadataTypeId(id), "")
                                ),
                            }
                        }
                        _ => {
                            e.backfills.insert(id);
                            match assoc {
                                Some(a) => done!(
                                    format!(
                                        "update_association({public}, {a} [mt {id}], required)"
                                    ),
                                    s.update_association(
                                        DocumentTypeId(public),
                                        docmeta_core::AssociationId(a),
                                        true
                                    )
                                ),
                                None => done!(
                                    format!("associate({public}, {id}, required)"),
                                    s.associate(DocumentTypeId(public), MetadataTypeId(id), true)
                                ),
                            }
                        }
                    }
                }
                // A workflow: a value edited on a document it runs on (triggers fire), or a
                // transition taken there.
                let insts: Vec<(i64, InstM)> = (self.m.insts.iter())
                    .filter(|(_, x)| x.wf == id)
                    .map(|(i, x)| (*i, x.clone()))
                    .collect();
                let Some((inst, x)) = insts.get(usize::from(a) % insts.len().max(1)).cloned()
                else {
                    done!(format!("workflow {id} runs nowhere"), Ok(()))
                };
                if c.is_multiple_of(2) {
                    let dt = self.m.docs[&x.doc];
                    let mts: Vec<i64> = (self.m.assocs.values())
                        .filter(|y| y.dt == dt)
                        .map(|y| y.mt)
                        .collect();
                    let Some(mt) = pick(&mts, b) else {
                        done!("nothing", Ok(()))
                    };
                    let value = self.canary();
                    self.canaries.register(&value, Home::Value(x.doc, mt));
                    e.writes.push((x.doc, mt));
                    match self.x.values.get(&(x.doc, mt)) {
                        Some(v) => done!(
                            format!(
                                "edit_document_metadata({}, value {v} [mt {mt}], {value})",
                                x.doc
                            ),
                            s.edit_document_metadata(
                                DocumentId(x.doc),
                                DocumentMetadataId(*v),
                                &value,
                                None
                            )
                        ),
                        None => done!(
                            format!("add_document_metadata({}, {mt}, {value})", x.doc),
                            s.add_document_metadata(DocumentId(x.doc), MetadataTypeId(mt), &value)
                        ),
                    }
                }
                let trs: Vec<i64> = (self.m.wfs[&id].transitions.iter())
                    .filter(|(_, t)| Some(t.from) == x.state)
                    .map(|(t, _)| *t)
                    .collect();
                let Some(tr) = pick(&trs, b) else {
                    done!(
                        format!("no transition out of instance {inst}'s state"),
                        Ok(())
                    )
                };
                let comment = self.canary();
                self.canaries.register(&comment, Home::Comment(inst));
                done!(
                    format!(
                        "transition_workflow({}, instance {inst}, transition {tr})",
                        x.doc
                    ),
                    s.transition_workflow(
                        DocumentId(x.doc),
                        WorkflowInstanceId(inst),
                        WorkflowTransitionId(tr),
                        &comment
                    )
                )
            }
            0 | 1 => {
                // Save an empty value: the default renders. A planted type not associated with
                // any type is associated (required) with the public type: the backfill renders.
                if let (Some(mt), None) = (hot_mt(self), hot_doc_mt(self))
                    && let Some(dt) = dts.first().copied()
                {
                    e.backfills.insert(mt);
                    done!(
                        format!("associate({dt}, {mt}, required)"),
                        s.associate(DocumentTypeId(dt), MetadataTypeId(mt), true)
                    )
                }
                let Some((d, mt)) = hot_doc_mt(self).or_else(|| doc_mt(self, b)) else {
                    done!("nothing", Ok(()))
                };
                e.writes.push((d, mt));
                match self.x.values.get(&(d, mt)) {
                    Some(v) => done!(
                        format!("edit_document_metadata({d}, value {v} [mt {mt}], \"\")"),
                        s.edit_document_metadata(DocumentId(d), DocumentMetadataId(*v), "", None)
                    ),
                    None => done!(
                        format!("add_document_metadata({d}, {mt}, \"\")"),
                        s.add_document_metadata(DocumentId(d), MetadataTypeId(mt), "")
                    ),
                }
            }
            2 => {
                // Make an association required: the backfill task renders.
                let mts: Vec<i64> = self.m.mts.iter().copied().collect();
                let mt = hot_mt(self).or_else(|| pick(&mts, b));
                let (Some(dt), Some(mt)) = (pick(&dts, a), mt) else {
                    done!("nothing", Ok(()))
                };
                e.backfills.insert(mt);
                let existing = (self.m.assocs.iter())
                    .find(|(_, x)| x.dt == dt && x.mt == mt)
                    .map(|(id, _)| *id);
                match existing {
                    Some(id) => done!(
                        format!("update_association({dt}, {id} [mt {mt}], required)"),
                        s.update_association(
                            DocumentTypeId(dt),
                            docmeta_core::AssociationId(id),
                            true
                        )
                    ),
                    None => done!(
                        format!("associate({dt}, {mt}, required)"),
                        s.associate(DocumentTypeId(dt), MetadataTypeId(mt), true)
                    ),
                }
            }
            3 => {
                let hot = hot_doc(self);
                let insts: Vec<(i64, InstM)> = (self.m.insts.iter())
                    .filter(|(_, x)| hot.is_none_or(|d| x.doc == d))
                    .map(|(i, x)| (*i, x.clone()))
                    .collect();
                let Some((inst, x)) = insts.get(usize::from(a) % insts.len().max(1)).cloned()
                else {
                    done!("no instance", Ok(()))
                };
                let trs: Vec<i64> = (self.m.wfs[&x.wf].transitions.iter())
                    .filter(|(_, t)| Some(t.from) == x.state)
                    .map(|(id, _)| *id)
                    .collect();
                let Some(tr) = pick(&trs, b) else {
                    done!(
                        format!("no transition out of instance {inst}'s state"),
                        Ok(())
                    )
                };
                let comment = self.canary();
                self.canaries.register(&comment, Home::Comment(inst));
                done!(
                    format!(
                        "transition_workflow({}, instance {inst}, transition {tr})",
                        x.doc
                    ),
                    s.transition_workflow(
                        DocumentId(x.doc),
                        WorkflowInstanceId(inst),
                        WorkflowTransitionId(tr),
                        &comment
                    )
                )
            }
            4 => {
                // Edit a value: triggers fire.
                let target = match hot_doc(self) {
                    Some(d) => {
                        let dt = self.m.docs[&d];
                        let mts: Vec<i64> = (self.m.assocs.values())
                            .filter(|x| x.dt == dt)
                            .map(|x| x.mt)
                            .collect();
                        pick(&mts, b).map(|mt| (d, mt))
                    }
                    None => doc_mt(self, b),
                };
                let Some((d, mt)) = target else {
                    done!("nothing", Ok(()))
                };
                let value = self.canary();
                self.canaries.register(&value, Home::Value(d, mt));
                e.writes.push((d, mt));
                match self.x.values.get(&(d, mt)) {
                    Some(v) => done!(
                        format!("edit_document_metadata({d}, value {v} [mt {mt}], {value})"),
                        s.edit_document_metadata(
                            DocumentId(d),
                            DocumentMetadataId(*v),
                            &value,
                            None
                        )
                    ),
                    None => done!(
                        format!("add_document_metadata({d}, {mt}, {value})"),
                        s.add_document_metadata(DocumentId(d), MetadataTypeId(mt), &value)
                    ),
                }
            }
            5 => {
                let Some(dt) = pick(&dts, a) else {
                    done!("no document type", Ok(()))
                };
                let label = self.canary();
                let salary = (self.x.mt_names.iter())
                    .find(|(_, n)| *n == "salary")
                    .map(|(id, _)| *id)
                    .filter(|mt| self.m.assocs.values().any(|x| x.dt == dt && x.mt == *mt));
                let value = self.canary();
                let values: Vec<(MetadataTypeId, &str)> = salary
                    .map(|mt| (MetadataTypeId(mt), value.as_str()))
                    .into_iter()
                    .collect();
                let r = s.create_document(DocumentTypeId(dt), &label, &values);
                if let Ok(d) = &r {
                    self.canaries
                        .register(&label, Home::DocLabel(d.document.id.0));
                    e.rewrites.insert(d.document.id.0);
                    if let Some(mt) = salary {
                        self.canaries
                            .register(&value, Home::Value(d.document.id.0, mt));
                        e.writes.push((d.document.id.0, mt));
                    }
                }
                done!(format!("create_document({dt}, {label})"), r)
            }
            6 => {
                let (Some(d), Some(dt)) = (pick(&docs, a), pick(&dts, b)) else {
                    done!("nothing", Ok(()))
                };
                e.moves.push((who, d, dt));
                e.rewrites.insert(d);
                done!(
                    format!("change_document_type({d}, {dt})"),
                    s.change_document_type(DocumentId(d), DocumentTypeId(dt))
                )
            }
            7 => {
                let label = self.canary();
                let (line, r, home): (String, Result<()>, Option<Home>) = match b % 6 {
                    0 => {
                        let Some(d) = pick(&docs, a) else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("update_document({d}, {label})"),
                            s.update_document(DocumentId(d), &label).map(drop),
                            Some(Home::DocLabel(d)),
                        )
                    }
                    1 => {
                        let Some(t) = pick(&dts, a) else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("update_document_type({t}, {label})"),
                            s.update_document_type(DocumentTypeId(t), &label).map(drop),
                            Some(Home::DocTypeLabel(t)),
                        )
                    }
                    2 => {
                        let Some(r) = pick(&self.m.roles.keys().copied().collect::<Vec<_>>(), a)
                        else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("rename_role({r}, {label})"),
                            s.rename_role(RoleId(r), &label).map(drop),
                            Some(Home::Role(r)),
                        )
                    }
                    3 => {
                        let Some(g) = pick(&self.m.groups.keys().copied().collect::<Vec<_>>(), a)
                        else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("rename_group({g}, {label})"),
                            s.rename_group(GroupId(g), &label).map(drop),
                            Some(Home::Group(g)),
                        )
                    }
                    4 => {
                        let Some(wf) = pick(&self.m.wfs.keys().copied().collect::<Vec<_>>(), a)
                        else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("update_workflow({wf}, {label})"),
                            s.update_workflow(WorkflowId(wf), Some(&label), None)
                                .map(drop),
                            Some(Home::Workflow(wf)),
                        )
                    }
                    _ => {
                        let Some(mt) = pick(&self.m.mts.iter().copied().collect::<Vec<_>>(), a)
                        else {
                            done!("nothing", Ok(()))
                        };
                        let Some(input) = self.metadata_input(mt, label.clone()) else {
                            done!("nothing", Ok(()))
                        };
                        (
                            format!("update_metadata_type({mt}, label {label})"),
                            s.update_metadata_type(MetadataTypeId(mt), input).map(drop),
                            Some(Home::MetaTypeLabel(mt)),
                        )
                    }
                };
                if let (Ok(()), Some(h)) = (&r, home) {
                    self.canaries.register(&label, h);
                }
                done!(line, r)
            }
            8 => {
                let Some(d) = pick(&docs, a) else {
                    done!("nothing", Ok(()))
                };
                let name = self.canary();
                let content = self.canary();
                let r = s.add_file(
                    DocumentId(d),
                    &format!("{name}.txt"),
                    &mut content.as_bytes(),
                );
                if let Ok(file) = &r {
                    self.canaries.register(&name, Home::File(file.id.0));
                    self.canaries.register(&content, Home::File(file.id.0));
                }
                done!(format!("add_file({d}, {name})"), r)
            }
            9 => {
                // A grant an administrator is entitled to: a narrow user's own permission on
                // another object of the same kind, or the baseline group.
                let i = usize::from(a) % self.narrow.len();
                let n = &self.narrow[i];
                if let (Scope::Acl(k), false) = (n.pair.scope, b.is_multiple_of(3)) {
                    let Some(id) = pick(&objects(&self.m, k), c) else {
                        done!("nothing", Ok(()))
                    };
                    let (p, r) = (n.pair.perm, n.role);
                    e.direct
                        .push((who, Grant::Acl((k, id), r, p.key().to_owned())));
                    done!(
                        format!("grant({}, role {r} of n{i}, {k:?} {id})", p.key()),
                        s.grant(p, RoleId(r), oref((k, id)))
                    )
                }
                let (g, u) = (self.fixed.staff, n.user);
                e.direct.push((who, Grant::Member(g, u)));
                done!(
                    format!("set_group_member(staff {g}, n{i}, true)"),
                    s.set_group_member(GroupId(g), UserId(u), true)
                )
            }
            10 => {
                // Reads that render: lookups and conditions, with the administrator's view.
                let Some((d, mt)) = doc_mt(self, b) else {
                    done!("nothing", Ok(()))
                };
                let r1 = s.document_lookup_choices(DocumentId(d), MetadataTypeId(mt));
                let insts: Vec<i64> = (self.m.insts.iter())
                    .filter(|(_, x)| x.doc == d)
                    .map(|(i, _)| *i)
                    .collect();
                for inst in insts {
                    let _ = s.available_transitions(DocumentId(d), WorkflowInstanceId(inst));
                }
                done!(
                    format!("document_lookup_choices({d}, {mt}) and available_transitions"),
                    r1
                )
            }
            _ => {
                let Some((d, mt)) = doc_mt(self, b) else {
                    done!("nothing", Ok(()))
                };
                let Some(v) = self.x.values.get(&(d, mt)).copied() else {
                    done!("no value", Ok(()))
                };
                e.writes.push((d, mt));
                done!(
                    format!("remove_document_metadata({d}, value {v} [mt {mt}])"),
                    s.remove_document_metadata(DocumentId(d), DocumentMetadataId(v))
                )
            }
        }
    }
}

// ----- one case ---------------------------------------------------------------------------------

/// Runs `case` with the narrow users of `pairs`, checking after every operation, until a step
/// finds a violation that `stop` accepts; returns the world and every violation found.
fn run_case(
    case: &Case,
    pairs: &[Pair],
    stop: &dyn Fn(&Violation) -> bool,
) -> Result<(World, Vec<Violation>)> {
    let mut w = World::build(case.seed, pairs)?;
    if std::env::var("DOCMETA_CANARY_TRACE").is_ok_and(|v| v == "1") {
        for i in 0..w.narrow.len() {
            eprintln!("{}", w.describe_narrow(i));
        }
    }
    let mut found = Vec::new();
    for (step, op) in case.ops.iter().enumerate() {
        let (before, before_x) = (w.m.clone(), w.x.clone());
        let (effects, answers) = w.run(op)?;
        w.sync()?;
        if std::env::var("DOCMETA_CANARY_TRACE").is_ok_and(|v| v == "1") {
            eprintln!("  #{step} {}", w.steps.last().map_or("", String::as_str));
        }
        let v = w.check(step, (&before, &before_x), &effects, &answers)?;
        let done = v.iter().any(stop);
        found.extend(v);
        if done {
            break;
        }
    }
    Ok((w, found))
}

/// The shortest subsequence of `case` found that still shows a violation of `class`: cut after
/// the step that shows it, then remove runs of operations (halves, quarters, ... single ones,
/// as delta debugging does) while it still shows.
fn shrink(class: &str, case: &Case, pairs: &[Pair]) -> Case {
    let of_class = |v: &Violation| v.class == class;
    let shows = |c: &Case| -> Option<usize> {
        let (_, found) = run_case(c, pairs, &of_class).ok()?;
        found.iter().find(|v| of_class(v)).map(|v| v.step)
    };
    let Some(at) = shows(case) else {
        return case.clone();
    };
    let mut best = Case {
        seed: case.seed,
        ops: case.ops[..=at].to_vec(),
    };
    let mut parts = 2;
    while best.ops.len() > 1 {
        let len = best.ops.len();
        let size = len.div_ceil(parts);
        let mut smaller = None;
        for start in (0..len).step_by(size) {
            let mut trial = best.clone();
            trial.ops.drain(start..(start + size).min(len));
            if let Some(at) = shows(&trial) {
                trial.ops.truncate(at + 1);
                smaller = Some(trial);
                break;
            }
        }
        match smaller {
            Some(trial) => {
                best = trial;
                parts = (parts - 1).max(2);
            }
            None if size == 1 => break,
            None => parts = (parts * 2).min(len),
        }
    }
    best
}

/// The reproduction: the roster, the operations up to the failing one, what went wrong.
fn report(w: &World, case: &Case, violations: &[Violation]) -> String {
    let mut out = String::new();
    let last = violations.iter().map(|v| v.step).max().unwrap_or(0);
    let _ = writeln!(out, "world seed {:#x}; narrow users:", case.seed);
    for i in 0..w.narrow.len() {
        let _ = writeln!(out, "  {}", w.describe_narrow(i));
    }
    let f = &w.fixed;
    let _ = writeln!(
        out,
        "fixed: root (superuser) {}, vic (holds every permission) {}, sleeper (the same, inactive) {}; groups staff {} keepers {} spare {}; roles baseline {} keeper {} loose {}",
        f.root, f.vic, f.sleeper, f.staff, f.keepers, f.spare, f.baseline, f.keeper, f.loose
    );
    let _ = writeln!(out, "operations:");
    for (k, line) in w.steps.iter().enumerate().take(last + 1) {
        let _ = writeln!(out, "  #{k} {line}");
    }
    let _ = writeln!(
        out,
        "replay (a line for tests/proptest-regressions/canary_hunt.cases):\n  {}",
        case_line(
            &w.narrow
                .iter()
                .take(w.narrow.len() - 1)
                .map(|n| n.pair)
                .collect::<Vec<_>>(),
            &Case {
                seed: case.seed,
                ops: case.ops[..(last + 1).min(case.ops.len())].to_vec()
            }
        )
    );
    let _ = writeln!(out, "found after #{last}:");
    let mut seen = BTreeSet::new();
    for v in violations.iter().filter(|v| v.step == last) {
        if seen.insert(v.text.clone()) && seen.len() <= 12 {
            let _ = writeln!(out, "  - [{}] {}", v.class, v.text);
        }
    }
    if seen.len() > 12 {
        let _ = writeln!(out, "  … and {} more", seen.len() - 12);
    }
    out
}

/// The shortest reproduction of the first violation of `case`, as text.
fn shortest_report(case: &Case, pairs: &[Pair], first: &Violation) -> String {
    let shortest = shrink(&first.class, case, pairs);
    let class = first.class.clone();
    let text = match run_case(&shortest, pairs, &|v: &Violation| v.class == class) {
        Ok((w, found)) => format!(
            "{} operations:\n{}",
            shortest.ops.len(),
            report(&w, &shortest, &found)
        ),
        Err(e) => format!("the shortened case failed to run: {e}"),
    };
    keep_failure(&class, &text);
    text
}

/// Appends a found case to `<target>/tmp/canary_hunt-failures.txt` as well: the seeds are random,
/// so a failure whose output scrolled away (a long CI log) would otherwise be lost.
fn keep_failure(class: &str, text: &str) {
    use std::io::Write as _;
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("canary_hunt-failures.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = writeln!(f, "==== {class}: {text}");
        eprintln!("(also kept in {})", path.display());
    }
}

// ----- known cases -----------------------------------------------------------------------------

/// The file of known cases, replayed before the random ones: one per line, `<narrow users> |
/// <world seed> | <operations>`, where narrow users are `key@scope` (`global`, or the model name
/// of the ACL's kind: `documenttype`, `document`, `metadatatype`, `cabinet`, `role`,
/// `workflow`) separated by commas, and operations `n<user>.<act>.<a>.<b>.<c>` (a narrow user),
/// `r<act>.<a>.<b>.<c>` (the superuser's session), `s<act>.<a>.<b>.<c>` (the system), `t` (the
/// tasks), separated by spaces; `#` starts a comment. A failure prints its line.
const KNOWN_CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/proptest-regressions/canary_hunt.cases"
);

fn case_line(pairs: &[Pair], case: &Case) -> String {
    let users: Vec<String> = (pairs.iter())
        .map(|p| {
            let scope = match p.scope {
                Scope::Global => "global",
                Scope::Acl(k) => k.names().1,
            };
            format!("{}@{scope}", p.perm.key())
        })
        .collect();
    let ops: Vec<String> = (case.ops.iter())
        .map(|op| match op {
            Op::Narrow { n, act, a, b, c } => format!("n{n}.{act}.{a}.{b}.{c}"),
            Op::Admin {
                system,
                act,
                a,
                b,
                c,
            } => format!("{}{act}.{a}.{b}.{c}", if *system { 's' } else { 'r' }),
            Op::Tasks => "t".to_owned(),
        })
        .collect();
    format!("{} | {:#x} | {}", users.join(","), case.seed, ops.join(" "))
}

fn parse_case_line(line: &str) -> Option<(Vec<Pair>, Case)> {
    let line = line.split('#').next()?.trim();
    let mut parts = line.split('|').map(str::trim);
    let (users, seed, ops) = (parts.next()?, parts.next()?, parts.next()?);
    let mut pairs = Vec::new();
    for u in users.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let (key, scope) = u.split_once('@')?;
        let scope = match scope {
            "global" => Scope::Global,
            model => Scope::Acl(*ACL_KINDS.iter().find(|k| k.names().1 == model)?),
        };
        pairs.push(Pair {
            perm: Permission::from_key(key).ok()?,
            scope,
        });
    }
    let seed = u64::from_str_radix(seed.trim_start_matches("0x"), 16).ok()?;
    let mut out = Vec::new();
    for op in ops.split_whitespace() {
        let (head, rest) = op.split_at(1);
        let n: Vec<u8> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('.')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?
        };
        out.push(match (head, n.as_slice()) {
            ("n", [n, act, a, b, c]) => Op::Narrow {
                n: *n,
                act: *act,
                a: *a,
                b: *b,
                c: *c,
            },
            ("r" | "s", [act, a, b, c]) => Op::Admin {
                system: head == "s",
                act: *act,
                a: *a,
                b: *b,
                c: *c,
            },
            ("t", []) => Op::Tasks,
            _ => return None,
        });
    }
    Some((pairs, Case { seed, ops: out }))
}

/// Every known case, each run to its first violation: the reports of those that find one.
fn replay_known_cases() -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(KNOWN_CASES) else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.split('#').next().is_none_or(|l| l.trim().is_empty()) {
            continue;
        }
        let Some((pairs, case)) = parse_case_line(line) else {
            failures.push(format!("{KNOWN_CASES}:{}: cannot read `{line}`", k + 1));
            continue;
        };
        match run_case(&case, &pairs, &|_| true) {
            Ok((w, found)) if !found.is_empty() => failures.push(format!(
                "known case {KNOWN_CASES}:{}:\n{}",
                k + 1,
                report(&w, &case, &found)
            )),
            Ok(_) => {}
            Err(e) => failures.push(format!("{KNOWN_CASES}:{}: {e}", k + 1)),
        }
    }
    failures
}

// ----- the runs ---------------------------------------------------------------------------------

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// How a run is cut into cases: every chunk of the roster gets `cases` worlds, each with a
/// sequence of operations whose length is in `ops` (so that the sum is at least the total asked).
#[derive(Clone)]
struct Plan {
    cases: usize,
    ops: std::ops::RangeInclusive<usize>,
}

fn plan(total: usize, chunks: usize) -> Plan {
    // Cases of 60 to 90 operations, or as many as one case per chunk needs.
    let cases = (total / (chunks * 60)).max(1);
    let low = total.div_ceil(chunks * cases).max(20);
    Plan {
        cases,
        ops: low..=low + low / 2,
    }
}

fn case_strategy(ops: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Case> {
    (any::<u64>(), proptest::collection::vec(op_strategy(), ops))
        .prop_map(|(seed, ops)| Case { seed, ops })
}

/// Runs `work` on every chunk (its index and narrow users), on up to four threads.
fn on_chunks(chunks: &[(usize, Vec<Pair>)], work: impl Fn(usize, &[Pair]) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((index, pairs)) = chunks.get(k) else {
                        break;
                    };
                    work(*index, pairs);
                }
            });
        }
    });
}

#[test]
fn no_narrow_user_reads_a_canary_or_gains_authority_it_was_not_granted() {
    let total = env_number("DOCMETA_CANARY_OPS", 6_000);
    let survey = std::env::var("DOCMETA_CANARY_SURVEY").is_ok_and(|v| v == "1");
    let all = chunks();
    let plan = plan(total, all.len());
    let only = std::env::var("DOCMETA_CANARY_CHUNK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let chosen: Vec<(usize, Vec<Pair>)> = (all.into_iter().enumerate())
        .filter(|(k, _)| only.is_none_or(|o| o == *k))
        .collect();
    let started = std::time::Instant::now();
    if survey {
        survey_run(&chosen, &plan);
        return;
    }
    let ops = std::sync::atomic::AtomicUsize::new(0);
    let worlds = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(if only.is_none() {
        replay_known_cases()
    } else {
        Vec::new()
    });
    on_chunks(&chosen, |k, pairs| {
        if failures.lock().is_ok_and(|f| !f.is_empty()) {
            return; // one failure is enough to stop
        }
        let mut runner = TestRunner::new(RunnerConfig {
            cases: u32::try_from(plan.cases).unwrap_or(u32::MAX),
            failure_persistence: None,
            // A failing case is shortened by `shrink`, which knows that nothing after the
            // failing step matters and keeps the class of the failure.
            max_shrink_iters: 0,
            ..RunnerConfig::default()
        });
        let result = runner.run(&case_strategy(plan.ops.clone()), |case| {
            ops.fetch_add(case.ops.len(), std::sync::atomic::Ordering::Relaxed);
            worlds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (_, found) = run_case(&case, pairs, &|_| true)
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            match found.first() {
                None => Ok(()),
                Some(first) => Err(TestCaseError::fail(shortest_report(&case, pairs, first))),
            }
        });
        let failure = match result {
            Ok(()) => return,
            Err(TestError::Fail(why, case)) => format!(
                "canary hunt, roster chunk {k} (a case of {} operations), shortened to {why}",
                case.ops.len()
            ),
            Err(e) => format!("canary hunt, roster chunk {k}: {e}"),
        };
        if let Ok(mut f) = failures.lock() {
            f.push(failure);
        }
    });
    let failures = failures.into_inner().unwrap_or_default();
    eprintln!(
        "canary hunt: {} operations in {} worlds ({} narrow users each), {:?}",
        ops.load(std::sync::atomic::Ordering::Relaxed),
        worlds.load(std::sync::atomic::Ordering::Relaxed),
        CHUNK + 1,
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every case to the end; what was found sorted into classes, each shrunk to its shortest
/// sequence of operations.
fn survey_run(chunks: &[(usize, Vec<Pair>)], plan: &Plan) {
    // class -> (case, pairs, steps up to the first sighting)
    let classes = std::sync::Mutex::new(BTreeMap::<String, (Case, Vec<Pair>, usize)>::new());
    on_chunks(chunks, |k, pairs| {
        let mut runner = TestRunner::new_with_rng(
            RunnerConfig::default(),
            proptest::test_runner::TestRng::deterministic_rng(
                proptest::test_runner::RngAlgorithm::ChaCha,
            ),
        );
        // Each chunk its own deterministic sequence of cases.
        for _ in 0..k * plan.cases {
            let _ = case_strategy(plan.ops.clone()).new_tree(&mut runner);
        }
        for _ in 0..plan.cases {
            let Ok(tree) = case_strategy(plan.ops.clone()).new_tree(&mut runner) else {
                continue;
            };
            let case = tree.current();
            let started = std::time::Instant::now();
            let found = match run_case(&case, pairs, &|_| false) {
                Ok((_, found)) => found,
                Err(e) => {
                    eprintln!("chunk {k}: a case failed to run: {e}");
                    continue;
                }
            };
            eprintln!(
                "chunk {k}: {} operations, {} violations, {:?}",
                case.ops.len(),
                found.len(),
                started.elapsed()
            );
            let Ok(mut classes) = classes.lock() else {
                return;
            };
            for v in found {
                let e = classes
                    .entry(v.class.clone())
                    .or_insert_with(|| (case.clone(), pairs.to_vec(), v.step + 1));
                if v.step + 1 < e.2 {
                    *e = (case.clone(), pairs.to_vec(), v.step + 1);
                }
            }
        }
    });
    let classes = classes.into_inner().unwrap_or_default();
    eprintln!("canary survey: {} classes", classes.len());
    let mut failures = Vec::new();
    for (class, (case, pairs, len)) in classes {
        let case = Case {
            seed: case.seed,
            ops: case.ops[..len].to_vec(),
        };
        let first = Violation {
            step: 0,
            class: class.clone(),
            text: String::new(),
        };
        eprintln!("==== {class}: {}", shortest_report(&case, &pairs, &first));
        failures.push(class);
    }
    assert!(failures.is_empty(), "classes found: {failures:#?}");
}

/// What a stored action does, as far as access goes (the reference model's view of it).
fn action_model(action: &ActionKind) -> ActM {
    match action {
        ActionKind::GrantDocumentAccess { permission, .. }
        | ActionKind::RevokeDocumentAccess { permission, .. } => ActM::Access(permission.clone()),
        ActionKind::AddMetadata { metadata_type_ids } => ActM::Metadata(
            "add_metadata".into(),
            metadata_type_ids.iter().map(|t| t.0).collect(),
        ),
        ActionKind::EditMetadata {
            metadata_type_id, ..
        } => ActM::Metadata("edit_metadata".into(), vec![metadata_type_id.0]),
        ActionKind::RemoveMetadata { metadata_type_ids } => ActM::Metadata(
            "remove_metadata".into(),
            metadata_type_ids.iter().map(|t| t.0).collect(),
        ),
    }
}
