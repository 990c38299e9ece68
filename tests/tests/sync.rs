//! Sync. The server's half (`Session::sync_changes`): random server-side changes (grants and
//! revokes, membership, documents and values created, edited, retyped and deleted) between syncs
//! of a replica kept as a map; after each sync, the replica holds exactly what the server shows
//! its user (documents, their labels and types, their values), and no batch ever removed a
//! document the device was not sent. The replica (`Replica`): the same histories, and its
//! session answers offline what the server shows (documents, values, searches, types); a sync
//! cut off goes on; a refused device leaves nothing readable.

use std::collections::{BTreeMap, BTreeSet};

use docmeta_core::{
    Config, DeviceId, Docmeta, DocumentId, DocumentQuery, DocumentTypeId, ErrorKind,
    InProcessServer, MAX_PUSH_WRITES, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission as P, Pulled, PushOutcome, PushResult, PushedChange, PushedWrite,
    REPLICA_DEVICE_NAME, Replica, Result, RoleId, Session, SignedIn, SyncCursor, SyncServer,
    UserId,
};
use proptest::prelude::*;

/// A replica: per document, its label, type and values (by metadata type).
type Held = BTreeMap<i64, (String, i64, BTreeMap<i64, String>)>;

struct World {
    db: Docmeta,
    admin: Session,
    user: UserId,
    role: RoleId,
    group: docmeta_core::GroupId,
    device: DeviceId,
    types: [DocumentTypeId; 2],
    metadata: [MetadataTypeId; 2],
}

fn world() -> Result<World> {
    let db = Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .worker(false)
        .open()?;
    let admin = db.system();
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("ann's")?.id;
    let role = admin.create_role("ann's role")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    let types = [
        admin.create_document_type("Open")?.id,
        admin.create_document_type("Closed")?.id,
    ];
    let metadata = [
        admin
            .create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?
            .id,
        admin
            .create_metadata_type(MetadataTypeInput::new("secret", "Secret"))?
            .id,
    ];
    for t in types {
        for m in metadata {
            admin.associate(t, m, false)?;
        }
    }
    // Ann sees the first type's documents and the first metadata type's values to start with.
    admin.grant(P::DocumentView, role, dt(types[0]))?;
    admin.grant(P::DocumentTypeView, role, dt(types[0]))?;
    admin.grant(P::DocumentMetadataView, role, dt(types[0]))?;
    admin.grant(P::DocumentMetadataView, role, dt(types[1]))?;
    admin.grant(P::DocumentMetadataView, role, mt(metadata[0]))?;
    admin.grant(P::MetadataTypeView, role, mt(metadata[0]))?;
    let device = db
        .sign_in_device("ann", "a long password", "phone", None)?
        .expect("ann signs in")
        .device
        .id;
    Ok(World {
        db,
        admin,
        user,
        role,
        group,
        device,
        types,
        metadata,
    })
}

fn dt(t: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)
}

fn mt(m: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, m.0)
}

/// What the server shows ann now.
fn truth(w: &World) -> Result<Held> {
    view(&w.db.session(w.user))
}

/// What a session shows: on the server, or on a replica.
fn view(s: &Session) -> Result<Held> {
    let mut held = Held::new();
    for d in s
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items
    {
        let values = s
            .document_metadata(d.document.id, PageRequest::ALL)?
            .items
            .into_iter()
            .map(|v| (v.value.metadata_type_id.0, v.value.value))
            .collect();
        held.insert(
            d.document.id.0,
            (d.document.label, d.document.document_type_id.0, values),
        );
    }
    Ok(held)
}

/// Syncs the replica to the end; fails on a removal of a document never sent.
fn sync(
    w: &World,
    held: &mut Held,
    sent: &mut BTreeSet<i64>,
    cursor: &mut Option<SyncCursor>,
) -> std::result::Result<(), TestCaseError> {
    let s = w.db.session(w.user);
    for _ in 0..10_000 {
        let batch = s
            .sync_changes(w.device, cursor.as_ref(), 3)
            .map_err(|e| TestCaseError::fail(format!("sync: {e}")))?;
        for d in batch.documents {
            let values = d
                .values
                .into_iter()
                .map(|v| (v.value.metadata_type_id.0, v.value.value))
                .collect();
            let doc = d.document.document;
            sent.insert(doc.id.0);
            held.insert(doc.id.0, (doc.label, doc.document_type_id.0, values));
        }
        for id in batch.removed {
            prop_assert!(sent.contains(&id.0), "removed {id}, never sent");
            held.remove(&id.0);
        }
        // A cursor survives its text form.
        let token = batch.cursor.token();
        prop_assert_eq!(SyncCursor::parse(&token).ok(), Some(batch.cursor));
        *cursor = Some(batch.cursor);
        if !batch.more {
            return Ok(());
        }
    }
    Err(TestCaseError::fail("sync never ended"))
}

#[derive(Debug, Clone)]
enum Op {
    Create(usize, bool),
    Delete(usize),
    Rename(usize),
    SetValue(usize, usize),
    RemoveValue(usize, usize),
    Retype(usize),
    Grant(usize, bool),
    GrantValues(usize, bool),
    Membership(bool),
    Sync,
    /// On the replica, offline: set (`true`) or remove the value of a metadata type on one of
    /// the documents it holds.
    Offline(usize, usize, bool),
    /// On the replica, offline: create a document of a type (with a value or not).
    OfflineCreate(usize, bool),
    /// A cabinet, a root (`None`) or under one of the cabinets.
    Cabinet(Option<usize>),
    /// A document filed in (`true`) or taken out of a cabinet.
    File(usize, usize, bool),
    RenameCabinet(usize),
    DeleteCabinet(usize),
    /// Ann may (`true`) or may not view a cabinet (an ACL on it: a sub-cabinet's parent may
    /// stay hidden).
    GrantCabinet(usize, bool),
    /// On the server: a transition of the review workflow taken on a document's instance.
    Transition(usize, usize),
    /// On the replica, offline: a transition taken on a document it holds.
    OfflineTransition(usize, usize),
    /// Ann may (`true`) or may not view the review workflow and take its transitions.
    GrantWorkflow(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, any::<bool>()).prop_map(|(t, v)| Op::Create(t, v)),
        1 => (0..64usize).prop_map(Op::Delete),
        2 => (0..64usize).prop_map(Op::Rename),
        3 => (0..64usize, 0..2usize).prop_map(|(d, m)| Op::SetValue(d, m)),
        1 => (0..64usize, 0..2usize).prop_map(|(d, m)| Op::RemoveValue(d, m)),
        2 => (0..64usize).prop_map(Op::Retype),
        1 => (0..2usize, any::<bool>()).prop_map(|(t, g)| Op::Grant(t, g)),
        1 => (0..2usize, any::<bool>()).prop_map(|(m, g)| Op::GrantValues(m, g)),
        1 => any::<bool>().prop_map(Op::Membership),
        3 => Just(Op::Sync),
    ]
}

/// The operations on cabinets (sent to replicas only).
fn cabinet_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => proptest::option::of(0..8usize).prop_map(Op::Cabinet),
        3 => (0..64usize, 0..8usize, any::<bool>()).prop_map(|(d, c, m)| Op::File(d, c, m)),
        1 => (0..8usize).prop_map(Op::RenameCabinet),
        1 => (0..8usize).prop_map(Op::DeleteCabinet),
        2 => (0..8usize, any::<bool>()).prop_map(|(c, g)| Op::GrantCabinet(c, g)),
    ]
}

/// The server's operations and writes made offline on a replica.
fn replica_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => op(),
        2 => cabinet_op(),
        2 => (0..64usize, 0..2usize, any::<bool>()).prop_map(|(d, m, set)| Op::Offline(d, m, set)),
        1 => (0..2usize, any::<bool>()).prop_map(|(t, v)| Op::OfflineCreate(t, v)),
        2 => (0..64usize, 0..4usize).prop_map(|(d, t)| Op::Transition(d, t)),
        2 => (0..64usize, 0..4usize).prop_map(|(d, t)| Op::OfflineTransition(d, t)),
        1 => any::<bool>().prop_map(Op::GrantWorkflow),
    ]
}

/// The review workflow of the replica's histories, on the first type: draft -> sent -> done
/// (a condition that reads a value, fired by its trigger when a value is edited; an entry
/// action that writes a value) -> draft, and back from sent.
fn review(
    w: &World,
) -> Result<(
    docmeta_core::WorkflowId,
    Vec<docmeta_core::WorkflowTransitionId>,
)> {
    let a = &w.admin;
    let flow = a.create_workflow("Review", &[w.types[0]])?.id;
    let draft = a.create_workflow_state(flow, "draft", true)?.id;
    let sent = a.create_workflow_state(flow, "sent", false)?.id;
    let done = a.create_workflow_state(flow, "done", false)?.id;
    let submit = a
        .create_workflow_transition(flow, "submit", draft, sent, "")?
        .id;
    let back = a
        .create_workflow_transition(flow, "back", sent, draft, "")?
        .id;
    let approve = a
        .create_workflow_transition(
            flow,
            "approve",
            sent,
            done,
            "{% if workflow_instance.document.metadata_value_of.amount %}True{% endif %}",
        )?
        .id;
    a.add_workflow_trigger(flow, approve, "document_metadata_edited")?;
    let reopen = a
        .create_workflow_transition(flow, "reopen", done, draft, "")?
        .id;
    a.create_workflow_action(
        flow,
        done,
        "stamp",
        true,
        false,
        docmeta_core::ActionKind::EditMetadata {
            metadata_type_id: w.metadata[1],
            value: "approved".into(),
        },
    )?;
    Ok((flow, vec![submit, back, approve, reopen]))
}

/// A transition taken on one of `session`'s documents (through `take`); a refusal (a transition
/// that does not leave the state, a condition, a permission) is what the user would see.
fn transition(
    session: &Session,
    i: usize,
    take: impl Fn(DocumentId, docmeta_core::WorkflowInstanceId) -> Result<()>,
) -> Result<()> {
    let held = session
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items;
    if held.is_empty() {
        return Ok(());
    }
    let d = held[i % held.len()].document.id;
    let Some(instance) = session.workflow_instances(d)?.first().map(|x| x.id) else {
        return Ok(());
    };
    match take(d, instance) {
        Ok(())
        | Err(
            docmeta_core::Error::Conflict { .. }
            | docmeta_core::Error::Validation { .. }
            | docmeta_core::Error::PermissionDenied(_),
        ) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Every workflow instance of every document `s` shows.
fn all_instances(s: &Session) -> Result<BTreeMap<i64, Instances>> {
    let mut out = BTreeMap::new();
    for d in s
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items
    {
        let id = d.document.id;
        out.insert(id.0, workflow_view(s, id)?);
    }
    Ok(out)
}

/// A write made offline on one of the documents the replica holds; a refusal there (a value
/// the pipeline refuses, a value to remove that is not there) is what the user would see.
fn offline(
    w: &World,
    replica: &Replica,
    i: usize,
    m: usize,
    set: bool,
    serial: usize,
) -> Result<()> {
    let held = replica
        .session()
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items;
    if held.is_empty() {
        return Ok(());
    }
    let d = held[i % held.len()].document.id;
    let written = if set {
        replica
            .set_value(d, w.metadata[m], &format!("{serial}"))
            .map(drop)
    } else {
        replica.remove_value(d, w.metadata[m])
    };
    match written {
        Ok(()) | Err(docmeta_core::Error::NotFound(_) | docmeta_core::Error::Validation { .. }) => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// A document created offline; a refusal there (a type the replica does not hold) is what
/// the user would see.
fn offline_create(
    w: &World,
    replica: &Replica,
    t: usize,
    with_value: bool,
    serial: usize,
) -> Result<()> {
    let values = if with_value {
        vec![(w.metadata[0], "12")]
    } else {
        Vec::new()
    };
    match replica.create_document(w.types[t], &format!("made offline {serial}"), &values) {
        Ok(made) => {
            assert!(made.document.id.0 >= docmeta_core::LOCAL_IDS, "a local id");
            Ok(())
        }
        Err(docmeta_core::Error::NotFound(_) | docmeta_core::Error::Validation { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

fn pick_cabinet(w: &World, i: usize) -> Result<Option<docmeta_core::CabinetId>> {
    let all = w.admin.cabinets()?;
    Ok((!all.is_empty()).then(|| all[i % all.len()].id))
}

/// What a session shows of cabinets: each one it may view (label, parent) with the documents
/// in it it may view.
type Cabinets = BTreeMap<i64, (String, Option<i64>, Vec<i64>)>;

fn cabinets(s: &Session) -> Result<Cabinets> {
    let mut out = Cabinets::new();
    for c in s.cabinets()? {
        let documents = s
            .cabinet_documents(c.id, PageRequest::ALL)?
            .items
            .iter()
            .map(|d| d.document.id.0)
            .collect();
        out.insert(c.id.0, (c.label, c.parent_id.map(|p| p.0), documents));
    }
    Ok(out)
}

fn pick(w: &World, i: usize) -> Result<Option<DocumentId>> {
    let all = w
        .admin
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items;
    Ok((!all.is_empty()).then(|| all[i % all.len()].document.id))
}

fn apply(w: &World, op: &Op, serial: usize) -> Result<()> {
    let a = &w.admin;
    match *op {
        Op::Create(t, with_value) => {
            let values = if with_value {
                vec![(w.metadata[0], "12")]
            } else {
                Vec::new()
            };
            a.create_document(w.types[t], &format!("doc {serial}"), &values)?;
        }
        Op::Delete(i) => {
            if let Some(d) = pick(w, i)? {
                a.delete_document(d)?;
            }
        }
        Op::Rename(i) => {
            if let Some(d) = pick(w, i)? {
                a.update_document(d, &format!("renamed {serial}"))?;
            }
        }
        Op::SetValue(i, m) => {
            if let Some(d) = pick(w, i)? {
                let values = a.document_metadata(d, PageRequest::ALL)?.items;
                let value = format!("{serial}");
                match values
                    .iter()
                    .find(|v| v.value.metadata_type_id == w.metadata[m])
                {
                    Some(v) => {
                        a.edit_document_metadata(d, v.value.id, &value, None)?;
                    }
                    None => {
                        a.add_document_metadata(d, w.metadata[m], &value)?;
                    }
                }
            }
        }
        Op::RemoveValue(i, m) => {
            if let Some(d) = pick(w, i)? {
                let values = a.document_metadata(d, PageRequest::ALL)?.items;
                if let Some(v) = values
                    .iter()
                    .find(|v| v.value.metadata_type_id == w.metadata[m])
                {
                    a.remove_document_metadata(d, v.value.id)?;
                }
            }
        }
        Op::Retype(i) => {
            if let Some(d) = pick(w, i)? {
                let now = a.document(d)?.document.document_type_id;
                let other = if now == w.types[0] {
                    w.types[1]
                } else {
                    w.types[0]
                };
                a.change_document_type(d, other)?;
            }
        }
        Op::Grant(t, grant) => {
            if grant {
                a.grant(P::DocumentView, w.role, dt(w.types[t]))?;
            } else {
                a.revoke(P::DocumentView, w.role, dt(w.types[t]))?;
            }
        }
        Op::GrantValues(m, grant) => {
            if grant {
                a.grant(P::DocumentMetadataView, w.role, mt(w.metadata[m]))?;
            } else {
                a.revoke(P::DocumentMetadataView, w.role, mt(w.metadata[m]))?;
            }
        }
        Op::Membership(member) => {
            a.set_group_member(w.group, w.user, member)?;
        }
        Op::Cabinet(parent) => {
            let parent = match parent {
                Some(i) => pick_cabinet(w, i)?,
                None => None,
            };
            a.create_cabinet(&format!("cabinet {serial}"), parent)?;
        }
        Op::File(d, c, member) => {
            if let (Some(d), Some(c)) = (pick(w, d)?, pick_cabinet(w, c)?) {
                a.set_cabinet_document(c, d, member)?;
            }
        }
        Op::RenameCabinet(c) => {
            if let Some(c) = pick_cabinet(w, c)? {
                a.rename_cabinet(c, &format!("renamed {serial}"))?;
            }
        }
        Op::DeleteCabinet(c) => {
            if let Some(c) = pick_cabinet(w, c)? {
                a.delete_cabinet(c)?;
            }
        }
        Op::GrantCabinet(c, grant) => {
            if let Some(c) = pick_cabinet(w, c)? {
                let on = ObjectRef::new(ObjectKind::CABINET, c.0);
                if grant {
                    a.grant(P::CabinetView, w.role, on)?;
                } else {
                    a.revoke(P::CabinetView, w.role, on)?;
                }
            }
        }
        Op::Sync
        | Op::Offline(..)
        | Op::OfflineCreate(..)
        | Op::Transition(..)
        | Op::OfflineTransition(..)
        | Op::GrantWorkflow(..) => {}
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("DOCMETA_SYNC_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_replica_holds_exactly_what_the_server_shows_its_user(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let w = world().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut held = Held::new();
        let mut sent = BTreeSet::new();
        let mut cursor = None;
        for (serial, op) in ops.iter().enumerate() {
            apply(&w, op, serial).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
            if matches!(op, Op::Sync) {
                sync(&w, &mut held, &mut sent, &mut cursor)?;
                let truth = truth(&w).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&held, &truth, "after {:?}", ops);
            }
        }
        sync(&w, &mut held, &mut sent, &mut cursor)?;
        let truth = truth(&w).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&held, &truth, "at the end of {:?}", ops);
    }
}

#[test]
fn another_users_device_is_not_found_and_a_bad_limit_is_named() -> Result<()> {
    let w = world()?;
    let bob = w.admin.create_user("bob", "a long password", false)?.id;
    let s = w.db.session(bob);
    assert!(matches!(
        s.sync_changes(w.device, None, 10),
        Err(docmeta_core::Error::NotFound(_))
    ));
    let ann = w.db.session(w.user);
    assert!(matches!(
        ann.sync_changes(w.device, None, 0),
        Err(docmeta_core::Error::Validation { field, .. }) if field == "limit"
    ));
    assert!(SyncCursor::parse("s1.x.c.-.1").is_err());
    assert!(SyncCursor::parse("garbage").is_err());
    Ok(())
}

// ----- the replica ------------------------------------------------------------------------------

/// What a session finds for each of a few searches (words of labels and values): document ids.
fn found(s: &Session) -> Result<Vec<BTreeSet<i64>>> {
    ["doc", "renamed", "12", "Open", "Closed"]
        .iter()
        .map(|q| {
            Ok(s.search_documents(q, PageRequest::new(1, 500))?
                .items
                .iter()
                .map(|d| d.document.id.0)
                .collect())
        })
        .collect()
}

/// The document types and metadata types a session may view, by label.
fn types(s: &Session) -> Result<(Vec<String>, Vec<String>)> {
    Ok((
        s.document_types()?.into_iter().map(|t| t.label).collect(),
        s.metadata_types()?.into_iter().map(|t| t.label).collect(),
    ))
}

fn replica_of(w: &World, dir: &std::path::Path) -> Result<Replica> {
    Replica::open_with(
        dir,
        InProcessServer::new(w.db.clone()),
        "ann",
        "a long password",
    )
}

fn replica_cases() -> u32 {
    std::env::var("DOCMETA_REPLICA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: replica_cases(), ..ProptestConfig::default() })]

    /// A replica, synced at random points of a random history, answers offline (documents,
    /// values, searches, types) exactly what the server shows its user.
    #[test]
    fn a_replica_answers_offline_what_the_server_shows_its_user(
        ops in proptest::collection::vec(replica_op(), 1..30)
    ) {
        let fail = |e: docmeta_core::Error| TestCaseError::fail(e.to_string());
        let w = world().map_err(fail)?;
        writer(&w).map_err(fail)?;
        let dir = tempfile::tempdir().expect("a directory");
        let replica = replica_of(&w, dir.path()).map_err(fail)?;
        let server = w.db.session(w.user);
        let (flow, transitions) = review(&w).map_err(fail)?;
        for (serial, op) in ops.iter().enumerate() {
            let failed = |e: docmeta_core::Error| TestCaseError::fail(format!("{op:?}: {e}"));
            match *op {
                Op::Transition(i, t) => {
                    transition(&w.admin, i, |d, instance| {
                        w.admin.transition_workflow(d, instance, transitions[t], "server").map(drop)
                    }).map_err(failed)?;
                    continue;
                }
                Op::OfflineTransition(i, t) => {
                    transition(&replica.session(), i, |d, instance| {
                        replica.transition_workflow(d, instance, transitions[t], "offline").map(drop)
                    }).map_err(failed)?;
                    continue;
                }
                Op::GrantWorkflow(on) => {
                    let o = ObjectRef::new(ObjectKind::WORKFLOW, flow.0);
                    for p in [P::WorkflowTemplateView, P::WorkflowInstanceTransition] {
                        if on {
                            w.admin.grant(p, w.role, o).map_err(failed)?;
                        } else {
                            w.admin.revoke(p, w.role, o).map_err(failed)?;
                        }
                    }
                    continue;
                }
                Op::Offline(i, m, set) => {
                    offline(&w, &replica, i, m, set, serial).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
                    continue;
                }
                Op::OfflineCreate(t, v) => {
                    offline_create(&w, &replica, t, v, serial).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?;
                    continue;
                }
                _ => apply(&w, op, serial).map_err(|e| TestCaseError::fail(format!("{op:?}: {e}")))?,
            }
            if matches!(op, Op::Sync) {
                replica.sync().map_err(fail)?;
                prop_assert!(replica.pending().map_err(fail)?.is_empty(), "every write pushed");
                let local = replica.session();
                prop_assert_eq!(view(&local).map_err(fail)?, truth(&w).map_err(fail)?, "after {:?}", ops);
                prop_assert_eq!(found(&local).map_err(fail)?, found(&server).map_err(fail)?, "searches after {:?}", ops);
                prop_assert_eq!(cabinets(&local).map_err(fail)?, cabinets(&server).map_err(fail)?, "cabinets after {:?}", ops);
                prop_assert_eq!(all_instances(&local).map_err(fail)?, all_instances(&server).map_err(fail)?, "workflows after {:?}", ops);
            }
        }
        replica.sync().map_err(fail)?;
        let local = replica.session();
        prop_assert_eq!(view(&local).map_err(fail)?, truth(&w).map_err(fail)?, "at the end of {:?}", ops);
        prop_assert_eq!(found(&local).map_err(fail)?, found(&server).map_err(fail)?, "searches at the end of {:?}", ops);
        prop_assert_eq!(types(&local).map_err(fail)?, types(&server).map_err(fail)?);
        prop_assert_eq!(cabinets(&local).map_err(fail)?, cabinets(&server).map_err(fail)?, "cabinets at the end of {:?}", ops);
        prop_assert_eq!(all_instances(&local).map_err(fail)?, all_instances(&server).map_err(fail)?, "workflows at the end of {:?}", ops);
    }
}

/// A server that fails every `n`th pull (a dropped connection), and may answer a batch without
/// the replica storing it twice.
struct Flaky {
    inner: InProcessServer,
    pulls: std::sync::atomic::AtomicUsize,
    every: usize,
}

impl SyncServer for Flaky {
    fn address(&self) -> String {
        self.inner.address()
    }

    fn sign_in(&self, username: &str, password: &str, name: &str) -> Result<Option<SignedIn>> {
        self.inner.sign_in(username, password, name)
    }

    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled> {
        let n = self.pulls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if n.is_multiple_of(self.every) {
            return Err(docmeta_core::Error::Timeout(
                "the connection dropped".into(),
            ));
        }
        self.inner.pull(device, cursor, limit)
    }

    fn download(
        &self,
        device: &SignedIn,
        file: &docmeta_core::DocumentFile,
    ) -> Result<Option<Vec<u8>>> {
        self.inner.download(device, file)
    }

    /// Every `n`th push is applied and its answer lost.
    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>> {
        let n = self.pulls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let answer = self.inner.push(device, writes)?;
        if n.is_multiple_of(self.every) {
            return Err(docmeta_core::Error::Timeout("the answer was lost".into()));
        }
        Ok(answer)
    }

    /// Every `n`th file is added and its answer lost.
    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        content: &mut dyn std::io::Read,
    ) -> Result<Option<PushOutcome>> {
        let n = self.pulls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let answer = self.inner.push_file(device, write, content)?;
        if n.is_multiple_of(self.every) {
            return Err(docmeta_core::Error::Timeout("the answer was lost".into()));
        }
        Ok(answer)
    }
}

#[test]
fn a_sync_cut_off_goes_on_where_it_stopped() -> Result<()> {
    let w = world()?;
    for i in 0..250 {
        w.admin
            .create_document(w.types[0], &format!("doc {i}"), &[(w.metadata[0], "12")])?;
    }
    let dir = tempfile::tempdir().expect("a directory");
    let flaky = Flaky {
        inner: InProcessServer::new(w.db.clone()),
        pulls: 0.into(),
        every: 2,
    };
    let replica = Replica::open_with(dir.path(), flaky, "ann", "a long password")?;
    let mut seen = Vec::new();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match replica.sync_with_progress(|p| seen.push(*p)) {
            Ok(done) => {
                assert!(!done.more);
                break;
            }
            Err(docmeta_core::Error::Timeout(_)) if attempts < 20 => {}
            Err(e) => return Err(e),
        }
    }
    assert!(attempts > 2, "the connection dropped on the way");
    assert!(
        seen.iter().all(|p| p.batches >= 1),
        "progress after each batch"
    );
    assert_eq!(view(&replica.session())?, truth(&w)?);
    Ok(())
}

#[test]
fn a_refused_device_leaves_nothing_readable_and_the_password_signs_in_again() -> Result<()> {
    let w = world()?;
    let (_, file) = w.admin.create_document_with_file(
        w.types[0],
        "doc secret plans",
        &[(w.metadata[0], "12")],
        "plans.txt",
        &mut &b"the secret plans"[..],
    )?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    assert_eq!(replica.read_file(file.id)?, b"the secret plans");
    assert_eq!(
        replica
            .session()
            .documents(DocumentQuery::default(), PageRequest::ALL)?
            .count,
        1
    );
    // No password in the replica's directory, only the device's token.
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !bytes.windows(15).any(|w| w == b"a long password"),
            "{} holds the password",
            entry.display()
        );
    }
    // Ann's devices: the replica's is listed by its name.
    let device = replica.device()?.expect("signed in");
    let listed = w.db.session(w.user).devices(None, PageRequest::ALL)?.items;
    assert!(
        listed
            .iter()
            .any(|d| d.id == device && d.name == REPLICA_DEVICE_NAME)
    );
    w.db.session(w.user).revoke_device(device)?;
    match replica.sync() {
        Err(docmeta_core::Error::PermissionDenied(_)) => {}
        other => panic!("a revoked device syncs: {other:?}"),
    }
    let local = replica.session();
    assert_eq!(
        local
            .documents(DocumentQuery::default(), PageRequest::ALL)?
            .count,
        0
    );
    assert_eq!(
        local
            .search_documents("secret", PageRequest::new(1, 10))?
            .count,
        0
    );
    assert!(replica.device()?.is_none());
    let left = walk(&dir.path().join("document_file_storage"));
    assert!(left.is_empty(), "no file's bytes stay: {left:?}");
    drop(replica);
    // The wrong password does not sign in; the right one does, and the documents come back.
    assert!(matches!(
        Replica::open_with(
            dir.path(),
            InProcessServer::new(w.db.clone()),
            "ann",
            "wrong"
        ),
        Err(docmeta_core::Error::PermissionDenied(_))
    ));
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    assert_eq!(view(&replica.session())?, truth(&w)?);
    // A directory is the replica of one user only.
    drop(replica);
    w.admin.create_user("bob", "a long password", false)?;
    assert!(matches!(
        Replica::open_with(dir.path(), InProcessServer::new(w.db.clone()), "bob", "a long password"),
        Err(docmeta_core::Error::Validation { field, .. }) if field == "username"
    ));
    Ok(())
}

#[test]
fn a_deactivated_user_s_replica_is_emptied() -> Result<()> {
    let w = world()?;
    w.admin.create_document(w.types[0], "doc", &[])?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    assert_eq!(view(&replica.session())?.len(), 1);
    w.admin.update_user(
        w.user,
        docmeta_core::UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    assert!(matches!(
        replica.sync(),
        Err(docmeta_core::Error::PermissionDenied(_))
    ));
    assert!(view(&replica.session())?.is_empty());
    Ok(())
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_watching_replica_wakes_when_the_server_changes() -> Result<()> {
    let w = world()?;
    let doc = w
        .admin
        .create_document(w.types[0], "doc watched", &[(w.metadata[0], "12")])?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let value = w
        .admin
        .document_metadata(doc.document.id, PageRequest::ALL)?
        .items[0]
        .value
        .clone();
    let long = std::time::Duration::from_secs(30);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let started = std::time::Instant::now();
            let done = replica.sync_when_changed(long);
            (done, started.elapsed())
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        w.admin
            .edit_document_metadata(doc.document.id, value.id, "13", None)
            .expect("an edit");
        let (done, took) = watcher.join().expect("the watcher");
        let done = done.expect("a sync");
        assert_eq!(done.received, 1);
        // Woken by the change, well before the wait's end (never a number of milliseconds).
        assert!(took < long / 2, "woke after {took:?}");
    });
    assert_eq!(view(&replica.session())?, truth(&w)?);
    Ok(())
}

// ----- pushing writes made offline -------------------------------------------------------------

fn set(
    key: &str,
    d: DocumentId,
    m: MetadataTypeId,
    value: &str,
    base: Option<&str>,
) -> PushedWrite {
    PushedWrite {
        key: key.into(),
        document: d,
        change: PushedChange::Set {
            metadata_type: m,
            value: value.into(),
            base: base.map(Into::into),
        },
    }
}

fn remove(key: &str, d: DocumentId, m: MetadataTypeId, base: Option<&str>) -> PushedWrite {
    PushedWrite {
        key: key.into(),
        document: d,
        change: PushedChange::Remove {
            metadata_type: m,
            base: base.map(Into::into),
        },
    }
}

/// Ann may create documents of the first type, and edit values of the first metadata type on
/// its documents.
fn writer(w: &World) -> Result<()> {
    w.admin.grant(P::DocumentCreate, w.role, dt(w.types[0]))?;
    for p in [
        P::DocumentMetadataAdd,
        P::DocumentMetadataEdit,
        P::DocumentMetadataRemove,
    ] {
        w.admin.grant(p, w.role, dt(w.types[0]))?;
        w.admin.grant(p, w.role, mt(w.metadata[0]))?;
    }
    Ok(())
}

fn value_of(w: &World, d: DocumentId, m: MetadataTypeId) -> Result<Option<String>> {
    Ok(w.admin
        .document_metadata(d, PageRequest::ALL)?
        .items
        .into_iter()
        .find(|v| v.value.metadata_type_id == m)
        .map(|v| v.value.value))
}

#[test]
fn a_push_applies_what_is_based_on_the_server_s_value_and_keeps_the_server_s_in_a_conflict()
-> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    let ann = w.db.session(w.user);
    let result = |o: &[PushOutcome]| o.iter().map(|o| o.result.clone()).collect::<Vec<_>>();

    // Based on the value held: applied.
    let out = ann.sync_push(w.device, &[set("a", d, m, "13", Some("12"))])?;
    assert_eq!(out[0].key, "a");
    assert_eq!(result(&out), [PushResult::Applied]);
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("13"));
    // The same push again (its answer was lost): applied once, no second event.
    let events = w.db.events(&Default::default())?.len();
    assert_eq!(
        result(&ann.sync_push(w.device, &[set("a", d, m, "13", Some("12"))])?),
        [PushResult::Applied]
    );
    assert_eq!(w.db.events(&Default::default())?.len(), events);
    // Based on a value the server no longer holds: a conflict, the server's value stands.
    let out = ann.sync_push(w.device, &[set("b", d, m, "14", Some("12"))])?;
    assert_eq!(
        result(&out),
        [PushResult::Conflict {
            server: Some("13".into())
        }]
    );
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("13"));
    // A removal: of a value changed since, a conflict; of the value held, applied; of a value
    // already gone, applied.
    assert_eq!(
        result(&ann.sync_push(w.device, &[remove("c", d, m, Some("12"))])?),
        [PushResult::Conflict {
            server: Some("13".into())
        }]
    );
    assert_eq!(
        result(&ann.sync_push(w.device, &[remove("d", d, m, Some("13"))])?),
        [PushResult::Applied]
    );
    assert_eq!(value_of(&w, d, m)?, None);
    assert_eq!(
        result(&ann.sync_push(w.device, &[remove("e", d, m, Some("13"))])?),
        [PushResult::Applied]
    );
    // An addition based on no value: applied; another addition based on none: a conflict.
    assert_eq!(
        result(&ann.sync_push(w.device, &[set("f", d, m, "15", None)])?),
        [PushResult::Applied]
    );
    assert_eq!(
        result(&ann.sync_push(w.device, &[set("g", d, m, "16", None)])?),
        [PushResult::Conflict {
            server: Some("15".into())
        }]
    );
    Ok(())
}

#[test]
fn a_push_is_refused_as_online_and_never_reveals_a_hidden_value() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let (m, secret) = (w.metadata[0], w.metadata[1]);
    let open = w
        .admin
        .create_document(w.types[0], "open", &[(m, "1"), (secret, "canary")])?
        .document
        .id;
    let closed = w
        .admin
        .create_document(w.types[1], "closed", &[(m, "2")])?
        .document
        .id;
    let ann = w.db.session(w.user);
    let out = ann.sync_push(
        w.device,
        &[
            // A type ann may not edit (nor view): refused, its value never shown.
            set("secret", open, secret, "x", Some("guess")),
            // A document ann may not see: refused as not found, even with a stale base.
            set("closed", closed, m, "x", Some("guess")),
            remove("closed-remove", closed, m, Some("guess")),
        ],
    )?;
    for o in &out {
        match &o.result {
            PushResult::Refused { kind, message, .. } => {
                assert!(
                    matches!(kind, ErrorKind::PermissionDenied | ErrorKind::NotFound),
                    "{o:?}"
                );
                assert!(!message.contains("canary"), "{o:?}");
            }
            other => panic!("{}: {other:?}", o.key),
        }
    }
    assert_eq!(value_of(&w, open, secret)?.as_deref(), Some("canary"));
    assert_eq!(value_of(&w, closed, m)?.as_deref(), Some("2"));
    // Another user's device, and too many writes.
    let bob = w.admin.create_user("bob", "a long password", false)?.id;
    assert!(matches!(
        w.db.session(bob)
            .sync_push(w.device, &[set("a", open, m, "3", Some("1"))]),
        Err(docmeta_core::Error::NotFound(_))
    ));
    let many: Vec<_> = (0..=MAX_PUSH_WRITES)
        .map(|i| set(&i.to_string(), open, m, "3", None))
        .collect();
    assert!(matches!(
        ann.sync_push(w.device, &many),
        Err(docmeta_core::Error::Validation { field, .. }) if field == "writes"
    ));
    assert!(matches!(
        ann.sync_push(w.device, &[set("", open, m, "3", None)]),
        Err(docmeta_core::Error::Validation { field, .. }) if field == "key"
    ));
    Ok(())
}

/// A world where ann may write the first metadata type's values, a document holding "12" of
/// it, and the type then given a date validator (so "12" stays, and "twelve" is refused).
fn dated() -> Result<(World, MetadataTypeId, DocumentId)> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    w.admin.update_metadata_type(
        m,
        MetadataTypeInput {
            validation: "svc.apps.metadata.metadata_validators.DateValidator".into(),
            ..MetadataTypeInput::new("amount", "Amount")
        },
    )?;
    Ok((w, m, d))
}

#[test]
fn a_pushed_value_runs_through_the_pipeline() -> Result<()> {
    let (w, m, d) = dated()?;
    let out =
        w.db.session(w.user)
            .sync_push(w.device, &[set("a", d, m, "twelve", Some("12"))])?;
    match &out[0].result {
        PushResult::Refused {
            kind: ErrorKind::Validation,
            field,
            ..
        } => {
            assert_eq!(field.as_deref(), Some("value"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("12"));
    Ok(())
}

#[test]
fn a_write_made_offline_is_pushed_and_a_conflict_is_kept_to_retry_or_discard() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;

    // Offline: the replica's pipeline answers as the server's would; the write is stored.
    let shown = replica.set_value(d, m, "13")?;
    assert_eq!(shown.value.value, "13");
    assert_eq!(replica.pending()?.len(), 1);
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("13"));
    assert!(replica.pending()?.is_empty());
    assert_eq!(view(&replica.session())?, truth(&w)?);

    // A conflict: edited on the server meanwhile. The server's value stands, on both sides.
    replica.set_value(d, m, "mine")?;
    let on_server = w.admin.document_metadata(d, PageRequest::ALL)?.items[0]
        .value
        .clone();
    w.admin
        .edit_document_metadata(d, on_server.id, "theirs", None)?;
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (0, 1));
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("theirs"));
    assert_eq!(view(&replica.session())?, truth(&w)?);
    let rejected = replica.rejected()?;
    assert_eq!(rejected.len(), 1);
    assert_eq!(
        rejected[0].result,
        PushResult::Conflict {
            server: Some("theirs".into())
        }
    );
    assert!(
        matches!(&rejected[0].write.change, PushedChange::Set { value, base, .. }
        if value == "mine" && base.as_deref() == Some("13"))
    );
    // Retried: mine over theirs, now based on theirs.
    replica.retry(&rejected[0].write.key)?;
    assert!(replica.rejected()?.is_empty());
    replica.sync()?;
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("mine"));

    // Refused (ann may no longer edit these values): kept, the server's truth shown; discarded.
    w.admin.revoke(P::DocumentMetadataEdit, w.role, mt(m))?;
    replica.set_value(d, m, "refused")?;
    let done = replica.sync()?;
    assert_eq!(done.rejected, 1);
    assert_eq!(view(&replica.session())?, truth(&w)?);
    let rejected = replica.rejected()?;
    assert!(
        matches!(rejected[0].result, PushResult::Refused { .. }),
        "{rejected:?}"
    );
    replica.discard(&rejected[0].write.key)?;
    assert!(replica.rejected()?.is_empty());
    assert!(matches!(
        replica.discard("no such key"),
        Err(docmeta_core::Error::NotFound(_))
    ));

    // Removed offline, pushed.
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("mine"));
    replica.remove_value(d, m)?;
    replica.sync()?;
    assert_eq!(value_of(&w, d, m)?, None);
    assert!(matches!(
        replica.remove_value(d, m),
        Err(docmeta_core::Error::NotFound(_))
    ));
    Ok(())
}

#[test]
fn a_push_whose_answer_was_lost_applies_once() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    let dir = tempfile::tempdir().expect("a directory");
    let flaky = Flaky {
        inner: InProcessServer::new(w.db.clone()),
        pulls: 0.into(),
        every: 1_000_000,
    };
    let replica = Replica::open_with(dir.path(), flaky, "ann", "a long password")?;
    replica.sync()?;
    replica.set_value(d, m, "13")?;
    // The next push is applied and its answer lost.
    let replica = {
        drop(replica);
        let lossy = Flaky {
            inner: InProcessServer::new(w.db.clone()),
            pulls: 0.into(),
            every: 1,
        };
        Replica::open_with(dir.path(), lossy, "ann", "")?
    };
    assert!(matches!(
        replica.sync(),
        Err(docmeta_core::Error::Timeout(_))
    ));
    assert_eq!(
        value_of(&w, d, m)?.as_deref(),
        Some("13"),
        "applied on the server"
    );
    assert_eq!(replica.pending()?.len(), 1, "not lost on the replica");
    let edits = |w: &World| -> Result<usize> {
        Ok(w.db
            .events(&Default::default())?
            .iter()
            .filter(|e| e.name == docmeta_core::Event::DOCUMENT_METADATA_EDITED)
            .count())
    };
    let before = edits(&w)?;
    drop(replica);
    let replica = replica_of(&w, dir.path())?;
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0), "applied once");
    assert_eq!(edits(&w)?, before, "no second edit");
    assert_eq!(view(&replica.session())?, truth(&w)?);
    Ok(())
}

#[test]
fn a_value_the_pipeline_refuses_is_refused_offline_as_online() -> Result<()> {
    let (w, m, d) = dated()?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let online = w.db.session(w.user).add_document_metadata(d, m, "twelve");
    let offline = replica.set_value(d, m, "twelve");
    match (online, offline) {
        (
            Err(docmeta_core::Error::Validation {
                field: a,
                message: x,
            }),
            Err(docmeta_core::Error::Validation {
                field: b,
                message: y,
            }),
        ) => {
            assert_eq!((a, x), (b.clone(), y));
            assert_eq!(b, "value");
        }
        other => panic!("{other:?}"),
    }
    assert!(replica.pending()?.is_empty(), "nothing queued");
    Ok(())
}

#[test]
fn an_encrypted_replica_keeps_every_fetched_byte_encrypted_and_needs_its_password() -> Result<()> {
    let w = world()?;
    let content = b"plaintext canary 7f3a9c of a scanned letter";
    let (doc, file) = w.admin.create_document_with_file(
        w.types[0],
        "sealed",
        &[],
        "letter.txt",
        &mut &content[..],
    )?;
    let dir = tempfile::tempdir().expect("a directory");
    let open = |password: Option<&str>| {
        let builder = Replica::builder(dir.path());
        let builder = match password {
            Some(p) => builder.storage_password(p),
            None => builder,
        };
        builder.open_with(InProcessServer::new(w.db.clone()), "ann", "a long password")
    };
    let replica = open(Some("the device's secret"))?;
    replica.sync()?;
    assert_eq!(replica.read_file(file.id)?, content);
    assert_eq!(replica.session().read_file(file.id)?, content);
    assert_eq!(replica.fetch_files(|_, _| {})?, 0, "fetched already");
    let holds = |needle: &[u8]| {
        walk(dir.path()).into_iter().any(|p| {
            std::fs::read(&p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
        })
    };
    assert!(
        !holds(b"plaintext canary 7f3a9c"),
        "no file of the replica holds the bytes"
    );
    drop(replica);
    // Without its password, or with another: refused, nothing read.
    match open(None) {
        Err(docmeta_core::Error::Validation { field, .. }) => assert_eq!(field, "storage_password"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        open(Some("not the secret")),
        Err(docmeta_core::Error::Decryption(_))
    ));
    // With it: read offline, and the document's other records as before.
    let replica = open(Some("the device's secret"))?;
    assert_eq!(replica.session().read_file(file.id)?, content);
    assert_eq!(replica.session().files(doc.document.id)?, [file]);
    Ok(())
}

#[test]
fn a_file_s_bytes_are_fetched_once_checked_and_dropped_with_the_file() -> Result<()> {
    let w = world()?;
    let (doc, file) = w.admin.create_document_with_file(
        w.types[0],
        "doc with a file",
        &[],
        "note.txt",
        &mut &b"the file's content"[..],
    )?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let held = replica.session().files(doc.document.id)?;
    assert_eq!(
        held,
        std::slice::from_ref(&file),
        "the record, as the server has it"
    );
    assert_eq!(replica.read_file(file.id)?, b"the file's content");
    // Fetched once: now read from the replica's own storage, also through its session.
    assert_eq!(replica.session().read_file(file.id)?, b"the file's content");
    let stored: Vec<_> = walk(&dir.path().join("document_file_storage"))
        .into_iter()
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    // The file goes on the server: at the next sync its record and its bytes go here too.
    w.admin.delete_file(file.id)?;
    replica.sync()?;
    assert!(replica.session().files(doc.document.id)?.is_empty());
    assert!(matches!(
        replica.read_file(file.id),
        Err(docmeta_core::Error::NotFound(_))
    ));
    let left = walk(&dir.path().join("document_file_storage"));
    assert!(left.is_empty(), "the bytes are gone: {left:?}");
    Ok(())
}

#[test]
fn a_document_created_offline_is_created_on_the_server_and_replaced_by_it() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;

    // Offline: the local pipeline answers as the server's would, under a local id.
    let made = replica.create_document(w.types[0], "made offline", &[(m, "12")])?;
    let local = made.document.id;
    assert!(local.0 >= docmeta_core::LOCAL_IDS);
    assert_eq!(made.document_type.id, w.types[0]);
    assert!(
        replica
            .session()
            .search_documents("offline", PageRequest::new(1, 20))?
            .count
            == 1,
        "searchable offline"
    );
    // A value set on it goes with its creation: one pending write.
    replica.set_value(local, m, "13")?;
    let pending = replica.pending()?;
    assert_eq!(pending.len(), 1);
    assert!(
        matches!(&pending[0].change, PushedChange::Create { label, values, .. }
        if label == "made offline" && values == &[(m, "13".to_owned())])
    );
    // Refused offline as online: nothing queued.
    assert!(matches!(
        replica.create_document(w.types[0], "", &[]),
        Err(docmeta_core::Error::Validation { ref field, .. }) if field == "label"
    ));
    assert_eq!(replica.pending()?.len(), 1);

    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    assert!(replica.pending()?.is_empty());
    let held = view(&replica.session())?;
    assert_eq!(held, truth(&w)?);
    assert_eq!(held.len(), 1);
    let (id, (label, _, values)) = held.iter().next().expect("one document");
    assert!(
        *id < docmeta_core::LOCAL_IDS,
        "the server's id replaced the local one"
    );
    assert_eq!(label, "made offline");
    assert_eq!(values.get(&m.0).map(String::as_str), Some("13"));
    Ok(())
}

#[test]
fn a_create_whose_answer_was_lost_creates_one_document() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    replica.create_document(w.types[0], "once", &[])?;
    drop(replica);
    let lossy = Flaky {
        inner: InProcessServer::new(w.db.clone()),
        pulls: 0.into(),
        every: 1,
    };
    let replica = Replica::open_with(dir.path(), lossy, "ann", "")?;
    assert!(matches!(
        replica.sync(),
        Err(docmeta_core::Error::Timeout(_))
    ));
    assert_eq!(truth(&w)?.len(), 1, "created on the server");
    assert_eq!(replica.pending()?.len(), 1, "not lost on the replica");
    drop(replica);
    let replica = replica_of(&w, dir.path())?;
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    assert_eq!(truth(&w)?.len(), 1, "created once");
    assert_eq!(view(&replica.session())?, truth(&w)?);
    Ok(())
}

#[test]
fn a_create_the_server_refuses_leaves_the_replica_and_can_be_retried() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    replica.create_document(w.types[0], "refused", &[(w.metadata[0], "12")])?;
    // Meanwhile, ann lost the right to create documents of the type.
    w.admin.revoke(P::DocumentCreate, w.role, dt(w.types[0]))?;
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (0, 1));
    assert!(
        view(&replica.session())?.is_empty(),
        "the refused document left the replica"
    );
    assert!(truth(&w)?.is_empty());
    let rejected = replica.rejected()?;
    assert!(matches!(
        &rejected[0].result,
        PushResult::Refused {
            kind: ErrorKind::PermissionDenied,
            ..
        }
    ));
    // Granted again, the rejected create is made again (a new local id) and pushed.
    w.admin.grant(P::DocumentCreate, w.role, dt(w.types[0]))?;
    replica.retry(&rejected[0].write.key)?;
    assert!(replica.rejected()?.is_empty());
    assert_eq!(view(&replica.session())?.len(), 1);
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    assert_eq!(view(&replica.session())?, truth(&w)?);
    assert_eq!(truth(&w)?.len(), 1);
    Ok(())
}

#[test]
fn a_replica_holds_the_cabinets_its_user_sees_and_nothing_of_a_hidden_parent() -> Result<()> {
    let w = world()?;
    let a = &w.admin;
    let d = a.create_document(w.types[0], "filed", &[])?.document.id;
    let root = a.create_cabinet("Secret root", None)?.id;
    let child = a.create_cabinet("Shared", Some(root))?.id;
    let other = a.create_cabinet("Other", None)?.id;
    a.set_cabinet_document(child, d, true)?;
    a.set_cabinet_document(other, d, true)?;
    a.grant(
        P::CabinetView,
        w.role,
        ObjectRef::new(ObjectKind::CABINET, child.0),
    )?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let local = replica.session();
    let held = cabinets(&local)?;
    assert_eq!(held, cabinets(&w.db.session(w.user))?);
    assert_eq!(
        held.get(&child.0),
        Some(&("Shared".to_owned(), Some(root.0), vec![d.0]))
    );
    assert_eq!(
        held.len(),
        1,
        "neither the hidden parent nor the other cabinet"
    );
    assert!(local.cabinet(root).is_err());
    // Nothing of the hidden parent's label is in the replica's database.
    for file in walk(dir.path()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(11).any(|b| b == b"Secret root"),
            "{file:?} holds the hidden cabinet's label"
        );
    }
    // Filed elsewhere, renamed, taken out, deleted: the replica follows.
    let more = a.create_cabinet("More", Some(root))?.id;
    a.set_cabinet_document(child, d, false)?;
    a.rename_cabinet(child, "Shared, renamed")?;
    replica.sync()?;
    assert_eq!(cabinets(&local)?, cabinets(&w.db.session(w.user))?);
    a.grant(
        P::CabinetView,
        w.role,
        ObjectRef::new(ObjectKind::CABINET, root.0),
    )?;
    a.set_cabinet_document(more, d, true)?;
    replica.sync()?;
    assert_eq!(cabinets(&local)?, cabinets(&w.db.session(w.user))?);
    assert_eq!(cabinets(&local)?.len(), 3);
    a.delete_cabinet(root)?;
    replica.sync()?;
    assert_eq!(cabinets(&local)?, cabinets(&w.db.session(w.user))?);
    assert!(cabinets(&local)?.is_empty());
    Ok(())
}

#[test]
fn every_file_is_fetched_on_request_and_then_reads_without_the_server() -> Result<()> {
    let w = world()?;
    let mut files = Vec::new();
    for i in 0..3 {
        let (_, file) = w.admin.create_document_with_file(
            w.types[0],
            &format!("doc {i}"),
            &[],
            "note.txt",
            &mut format!("content {i}").as_bytes(),
        )?;
        files.push(file);
    }
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    replica.read_file(files[0].id)?;
    let mut seen = Vec::new();
    let fetched = replica.fetch_files(|done, total| seen.push((done, total)))?;
    assert_eq!(fetched, 2, "the two not fetched yet");
    assert_eq!(seen, [(1, 2), (2, 2)]);
    assert_eq!(replica.fetch_files(|_, _| {})?, 0, "nothing left to fetch");
    // Without the server (a replica over a server that answers nothing), every file reads.
    drop(replica);
    let offline = Flaky {
        inner: InProcessServer::new(w.db.clone()),
        pulls: 0.into(),
        every: 1,
    };
    let replica = Replica::open_with(dir.path(), offline, "ann", "")?;
    for (i, f) in files.iter().enumerate() {
        assert_eq!(
            replica.session().read_file(f.id)?,
            format!("content {i}").as_bytes()
        );
    }
    Ok(())
}

/// A replica altered outside docmeta (its queue of writes unreadable) or whose database is not
/// one (a half-written file): a clear error at each call that needs it, never a panic, nothing
/// pushed, and the writes made offline are still there once the queue reads again.
#[test]
fn a_corrupt_replica_is_a_clear_error_and_keeps_its_pending_writes() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    let dir = tempfile::tempdir().expect("a directory");
    {
        let replica = replica_of(&w, dir.path())?;
        replica.sync()?;
        replica.set_value(d, m, "13")?;
    }
    let db = dir.path().join("db.sqlite3");
    let connect = || rusqlite::Connection::open(&db).expect("the replica's database");
    let set_pending = |text: &str| {
        connect()
            .execute(
                "UPDATE settings SET value = ?1 WHERE key = 'replica.pending'",
                [text],
            )
            .expect("altered");
    };
    let kept: String = connect()
        .query_row(
            "SELECT value FROM settings WHERE key = 'replica.pending'",
            [],
            |r| r.get(0),
        )
        .expect("the queue");
    set_pending("[{\"key\": 1}");
    let replica = replica_of(&w, dir.path())?;
    for e in [
        replica.pending().map(drop).expect_err("unreadable"),
        replica.sync().map(drop).expect_err("unreadable"),
        replica
            .set_value(d, m, "14")
            .map(drop)
            .expect_err("unreadable"),
    ] {
        assert!(
            matches!(&e, docmeta_core::Error::InvalidInput(text) if text.contains("pending writes")),
            "{e:?}"
        );
    }
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("12"), "nothing pushed");
    drop(replica);
    set_pending(&kept);
    let replica = replica_of(&w, dir.path())?;
    assert_eq!(
        replica.pending()?.len(),
        1,
        "the write made offline is still there"
    );
    assert_eq!(replica.sync()?.pushed, 1);
    assert_eq!(value_of(&w, d, m)?.as_deref(), Some("13"));
    drop(replica);
    // A database file that is not one.
    for f in ["db.sqlite3-wal", "db.sqlite3-shm"] {
        let _ = std::fs::remove_file(dir.path().join(f));
    }
    std::fs::write(&db, b"half written, not a database").expect("written");
    let e = replica_of(&w, dir.path())
        .map(drop)
        .expect_err("not a database");
    assert!(
        matches!(
            e,
            docmeta_core::Error::Storage { .. } | docmeta_core::Error::InvalidInput(_)
        ),
        "{e:?}"
    );
    Ok(())
}

/// A server that fails the `at`th call of a sync (counting pulls and pushes): a push fails
/// after it was applied when `lose_answer` (its answer lost), before otherwise.
struct FailAt {
    inner: InProcessServer,
    calls: std::sync::atomic::AtomicUsize,
    at: usize,
    lose_answer: bool,
}

impl FailAt {
    fn fails_now(&self) -> bool {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == self.at
    }
}

impl SyncServer for FailAt {
    fn address(&self) -> String {
        self.inner.address()
    }

    fn sign_in(&self, username: &str, password: &str, name: &str) -> Result<Option<SignedIn>> {
        self.inner.sign_in(username, password, name)
    }

    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled> {
        if self.fails_now() {
            return Err(docmeta_core::Error::Timeout("cut off".into()));
        }
        self.inner.pull(device, cursor, limit)
    }

    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>> {
        if !self.fails_now() {
            return self.inner.push(device, writes);
        }
        if self.lose_answer {
            self.inner.push(device, writes)?;
        }
        Err(docmeta_core::Error::Timeout("cut off".into()))
    }

    fn download(
        &self,
        device: &SignedIn,
        file: &docmeta_core::DocumentFile,
    ) -> Result<Option<Vec<u8>>> {
        self.inner.download(device, file)
    }
}

/// A sync cut off at any one of its steps (each pull, the push before or after the server
/// applied it), with writes made offline and changes on the server waiting, then run again to
/// the end: the replica equals the server's view, nothing is left to push, and every write
/// made offline was applied exactly once.
#[test]
fn a_sync_interrupted_at_any_step_converges() -> Result<()> {
    let mut cut_off = 0;
    for at in 1..=8 {
        for lose_answer in [false, true] {
            let w = world()?;
            writer(&w)?;
            let m = w.metadata[0];
            for i in 0..120 {
                w.admin
                    .create_document(w.types[0], &format!("doc {i}"), &[(m, "12")])?;
            }
            let d = w.admin.document_ids(Some(w.types[0]))?[0];
            let dir = tempfile::tempdir().expect("a directory");
            replica_of(&w, dir.path())?.sync()?;
            {
                let replica = replica_of(&w, dir.path())?;
                replica.set_value(d, m, "13")?;
                replica.create_document(w.types[0], "made offline", &[(m, "7")])?;
            }
            for i in 0..130 {
                w.admin
                    .create_document(w.types[0], &format!("more {i}"), &[])?;
            }
            let cut = FailAt {
                inner: InProcessServer::new(w.db.clone()),
                calls: 0.into(),
                at,
                lose_answer,
            };
            let replica = Replica::open_with(dir.path(), cut, "ann", "")?;
            let first = replica.sync();
            match first {
                Ok(_) => {}
                Err(docmeta_core::Error::Timeout(_)) => cut_off += 1,
                Err(e) => return Err(e),
            }
            drop(replica);
            let replica = replica_of(&w, dir.path())?;
            replica.sync()?;
            let case = format!("cut at call {at}, answer lost: {lose_answer}");
            assert_eq!(view(&replica.session())?, truth(&w)?, "{case}");
            assert!(replica.pending()?.is_empty(), "{case}");
            assert!(replica.rejected()?.is_empty(), "{case}");
            assert_eq!(value_of(&w, d, m)?.as_deref(), Some("13"), "{case}");
            let made = truth(&w)?
                .values()
                .filter(|(label, _, _)| label == "made offline")
                .count();
            assert_eq!(made, 1, "{case}");
        }
    }
    // The push and each of the (at least two) pulls of the sync were cut, once with the
    // push's answer lost and once without.
    assert!(cut_off >= 6, "{cut_off} syncs were cut off");
    Ok(())
}

#[test]
fn a_device_is_listed_with_when_its_replica_was_last_brought_up_to_date() -> Result<()> {
    let w = world()?;
    let listed = |w: &World| -> Result<Vec<docmeta_core::Device>> {
        Ok(w.db.session(w.user).devices(None, PageRequest::ALL)?.items)
    };
    assert!(listed(&w)?.iter().all(|d| d.last_sync.is_none()));
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    let before = chrono::Utc::now();
    replica.sync()?;
    let device = replica.device()?.expect("signed in");
    let synced = listed(&w)?
        .into_iter()
        .find(|d| d.id == device)
        .and_then(|d| d.last_sync)
        .expect("recorded");
    assert!(synced >= before - chrono::TimeDelta::seconds(1));
    // The other device (never synced) has none.
    assert!(
        listed(&w)?
            .iter()
            .any(|d| d.id == w.device && d.last_sync.is_none())
    );
    Ok(())
}

/// A user who may create documents of a type without viewing it as a type: the replica holds
/// the type's associations (to the metadata types the user may view) to check its writes as
/// the server does, and neither lists the type nor holds its label.
#[test]
fn a_type_written_to_but_not_viewed_is_checked_offline_and_not_listed() -> Result<()> {
    let w = world()?;
    let (closed, m) = (w.types[1], w.metadata[0]);
    for p in [P::DocumentCreate, P::DocumentMetadataAdd] {
        w.admin.grant(p, w.role, dt(closed))?;
    }
    w.admin.grant(P::DocumentMetadataAdd, w.role, mt(m))?;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let listed: Vec<DocumentTypeId> = replica
        .session()
        .document_types()?
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, [w.types[0]], "the type written to is not listed");
    for file in walk(dir.path()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(6).any(|b| b == b"Closed"),
            "{file:?} holds the label of a type ann may not view"
        );
    }
    // Offline as online: a value of an associated type is taken, the other type (whose values
    // ann may not see) is not associated as far as she can tell.
    replica.create_document(closed, "closed offline", &[(m, "5")])?;
    let online =
        w.db.session(w.user)
            .create_document(closed, "x", &[(w.metadata[1], "5")]);
    let offline = replica.create_document(closed, "x", &[(w.metadata[1], "5")]);
    assert_eq!(
        format!("{:?}", offline.map(drop)),
        format!("{:?}", online.map(drop))
    );
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    // Created; ann may not view documents of the type, so it left her replica.
    assert_eq!(w.admin.document_ids(Some(closed))?.len(), 1);
    assert_eq!(view(&replica.session())?, truth(&w)?);
    Ok(())
}

/// Per instance: its id, its state, the labels of its available transitions, and its log
/// (transition, comment).
type Instances = Vec<(i64, Option<i64>, Vec<String>, Vec<(Option<i64>, String)>)>;

/// A document's workflow instances as a session shows them.
fn workflow_view(s: &Session, d: DocumentId) -> Result<Instances> {
    let mut out = Vec::new();
    for i in s.workflow_instances(d)? {
        let available = s
            .available_transitions(d, i.id)?
            .into_iter()
            .map(|t| t.label)
            .collect();
        let log = s
            .workflow_log(d, i.id)?
            .into_iter()
            .map(|e| (e.transition_id.map(|t| t.0), e.comment))
            .collect();
        out.push((i.id.0, i.state_id.map(|s| s.0), available, log));
    }
    Ok(out)
}

#[test]
fn a_replica_shows_workflow_states_and_takes_transitions_offline() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let a = &w.admin;
    let review = a.create_workflow("Review", &[w.types[0]])?;
    let draft = a.create_workflow_state(review.id, "draft", true)?;
    let sent = a.create_workflow_state(review.id, "sent", false)?;
    let done = a.create_workflow_state(review.id, "done", false)?;
    let submit = a.create_workflow_transition(review.id, "submit", draft.id, sent.id, "")?;
    let back = a.create_workflow_transition(review.id, "back", sent.id, draft.id, "")?;
    let approve = a.create_workflow_transition(
        review.id,
        "approve",
        sent.id,
        done.id,
        "{% if workflow_instance.document.metadata_value_of.amount == '12' %}True{% endif %}",
    )?;
    let d = a
        .create_document(w.types[0], "doc", &[(m, "12")])?
        .document
        .id;
    let instance = a.workflow_instances(d)?[0].id;
    let ann = w.db.session(w.user);
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;

    // Not a workflow ann may view: nothing of it on the replica.
    replica.sync()?;
    assert!(replica.session().workflows()?.is_empty());
    assert!(replica.session().workflow_instances(d)?.is_empty());

    // Granted: the workflow, the instance's state, its log and its available transitions, as
    // the server shows them to ann.
    let wf = ObjectRef::new(ObjectKind::WORKFLOW, review.id.0);
    a.grant(P::WorkflowTemplateView, w.role, wf)?;
    replica.sync()?;
    let local = replica.session();
    assert_eq!(local.workflows()?, ann.workflows()?);
    assert_eq!(
        local.workflow_states(review.id)?,
        ann.workflow_states(review.id)?
    );
    assert_eq!(
        local.workflow_transitions(review.id)?,
        ann.workflow_transitions(review.id)?
    );
    assert_eq!(workflow_view(&local, d)?, workflow_view(&ann, d)?);
    assert_eq!(workflow_view(&local, d)?[0].2, vec!["submit".to_owned()]);

    // Offline: taken at once, with the condition evaluated on the replica; refused where the
    // server would refuse it.
    replica.transition_workflow(d, instance, submit.id, "sent from the train")?;
    let moved = workflow_view(&replica.session(), d)?;
    assert_eq!(moved[0].1, Some(sent.id.0));
    assert_eq!(moved[0].2, vec!["back".to_owned(), "approve".to_owned()]);
    let refused = replica.transition_workflow(d, instance, submit.id, "");
    assert!(
        matches!(refused, Err(docmeta_core::Error::Conflict { .. })),
        "{refused:?}"
    );
    assert!(matches!(
        replica.pending()?[0].change,
        PushedChange::Transition { base: Some(b), .. } if b == draft.id
    ));

    // Ann may not take transitions: refused as online, and the replica shows the server's state.
    let done_sync = replica.sync()?;
    assert_eq!(done_sync.rejected, 1);
    assert_eq!(
        workflow_view(&replica.session(), d)?,
        workflow_view(&ann, d)?
    );
    let rejected = replica.rejected()?;
    assert!(
        matches!(
            rejected[0].result,
            PushResult::Refused {
                kind: ErrorKind::PermissionDenied,
                ..
            }
        ),
        "{rejected:?}"
    );

    // Allowed now: retried, taken on the server through ann's session, logged with her comment.
    a.grant(P::WorkflowInstanceTransition, w.role, wf)?;
    replica.retry(&rejected[0].write.key)?;
    assert_eq!(replica.sync()?.pushed, 1);
    assert_eq!(a.workflow_instance(d, instance)?.state_id, Some(sent.id));
    let log = a.workflow_log(d, instance)?;
    assert_eq!(
        log.last().map(|e| e.comment.as_str()),
        Some("sent from the train")
    );
    assert_eq!(log.last().and_then(|e| e.user_id), Some(w.user));
    assert_eq!(
        workflow_view(&replica.session(), d)?,
        workflow_view(&ann, d)?
    );

    // A condition that does not allow it offline is refused offline, as online.
    let edited = replica.set_value(d, m, "13")?;
    assert_eq!(edited.value.value, "13");
    let no = replica.transition_workflow(d, instance, approve.id, "");
    assert!(
        matches!(&no, Err(docmeta_core::Error::Validation { field, .. }) if field == "transition_id"),
        "{no:?}"
    );
    replica.set_value(d, m, "12")?;

    // A conflict: the instance moved on the server meanwhile; the server's state stands.
    replica.transition_workflow(d, instance, approve.id, "mine")?;
    a.transition_workflow(d, instance, back.id, "theirs")?;
    let done_sync = replica.sync()?;
    assert_eq!((done_sync.pushed, done_sync.rejected), (1, 1));
    let rejected = replica.rejected()?;
    assert_eq!(
        rejected[0].result,
        PushResult::Conflict {
            server: Some(draft.id.0.to_string())
        }
    );
    assert_eq!(a.workflow_instance(d, instance)?.state_id, Some(draft.id));
    assert_eq!(
        workflow_view(&replica.session(), d)?,
        workflow_view(&ann, d)?
    );
    // Retried from where the instance is now: approve does not leave draft.
    let again = replica.retry(&rejected[0].write.key);
    assert!(
        matches!(again, Err(docmeta_core::Error::Conflict { .. })),
        "{again:?}"
    );
    replica.discard(&rejected[0].write.key)?;

    // Pushed twice (an answer lost): taken once.
    let write = PushedWrite {
        key: "t-1".into(),
        document: d,
        change: PushedChange::Transition {
            instance,
            transition: submit.id,
            comment: "once".into(),
            base: Some(draft.id),
        },
    };
    for _ in 0..2 {
        let outcome = ann.sync_push(w.device, std::slice::from_ref(&write))?;
        assert_eq!(outcome[0].result, PushResult::Applied);
    }
    let once = a.workflow_log(d, instance)?;
    assert_eq!(once.iter().filter(|e| e.comment == "once").count(), 1);

    // A document made offline takes transitions once synced (its instance started locally).
    let made = replica.create_document(w.types[0], "offline", &[(m, "1")])?;
    let local_instance = replica.session().workflow_instances(made.document.id)?;
    assert_eq!(local_instance.len(), 1);
    assert_eq!(local_instance[0].state_id, Some(draft.id));
    let early = replica.transition_workflow(made.document.id, local_instance[0].id, submit.id, "");
    assert!(
        matches!(&early, Err(docmeta_core::Error::Validation { field, .. }) if field == "document"),
        "{early:?}"
    );
    replica.sync()?;
    let created = ann
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items
        .into_iter()
        .find(|v| v.document.label == "offline")
        .expect("created on the server")
        .document
        .id;
    assert_eq!(
        workflow_view(&replica.session(), created)?,
        workflow_view(&ann, created)?
    );

    // Revoked: nothing of the workflow stays on the replica.
    a.revoke(P::WorkflowTemplateView, w.role, wf)?;
    replica.sync()?;
    assert!(replica.session().workflows()?.is_empty());
    assert!(replica.session().workflow_instances(d)?.is_empty());
    let held = replica.local().system().workflows()?;
    assert!(held.is_empty(), "{held:?}");
    Ok(())
}

#[test]
fn a_file_added_offline_is_pushed_with_its_bytes_once_and_kept_when_refused() -> Result<()> {
    let w = world()?;
    writer(&w)?;
    let m = w.metadata[0];
    let d = w
        .admin
        .create_document(w.types[0], "doc", &[(m, "1")])?
        .document
        .id;
    let dir = tempfile::tempdir().expect("a directory");
    let replica = replica_of(&w, dir.path())?;
    replica.sync()?;
    let stored = |dir: &std::path::Path| walk(&dir.join("document_file_storage")).len();

    // Added offline: readable at once, under a local id; queued.
    let added = replica.add_file(d, "scan.pdf", &mut &b"%PDF scanned offline"[..])?;
    assert!(added.id.0 >= docmeta_core::LOCAL_IDS, "{added:?}");
    assert_eq!(
        (added.size, added.mimetype.as_str()),
        (20, "application/pdf")
    );
    assert_eq!(
        replica.session().read_file(added.id)?,
        b"%PDF scanned offline"
    );
    assert!(matches!(
        &replica.pending()?[0].change,
        PushedChange::AddFile { filename, .. } if filename == "scan.pdf"
    ));
    assert!(matches!(
        replica.add_file(DocumentId(999_999), "x", &mut &b"x"[..]),
        Err(docmeta_core::Error::NotFound(_))
    ));

    // Ann may not add files: refused as online; the replica shows the server's document, the
    // bytes are kept for a retry.
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (0, 1));
    assert!(replica.session().files(d)?.is_empty());
    let rejected = replica.rejected()?;
    assert!(
        matches!(
            rejected[0].result,
            PushResult::Refused {
                kind: ErrorKind::PermissionDenied,
                ..
            }
        ),
        "{rejected:?}"
    );
    assert_eq!(stored(dir.path()), 1, "the bytes wait for a retry");

    // Allowed: retried, added on the server with its bytes; the replica keeps them as the
    // server's file's (nothing to fetch).
    w.admin.grant(P::DocumentFileNew, w.role, dt(w.types[0]))?;
    replica.retry(&rejected[0].write.key)?;
    assert_eq!(replica.sync()?.pushed, 1);
    let on_server = w.admin.files(d)?;
    assert_eq!(on_server.len(), 1);
    assert_eq!(w.admin.read_file(on_server[0].id)?, b"%PDF scanned offline");
    assert_eq!(replica.session().files(d)?, on_server);
    assert_eq!(
        replica.fetch_files(|_, _| {})?,
        0,
        "the bytes sent are the file's"
    );
    assert_eq!(
        replica.session().read_file(on_server[0].id)?,
        b"%PDF scanned offline"
    );
    assert_eq!(stored(dir.path()), 1);

    // A file on a document made offline: sent once the document is created.
    let made = replica.create_document(w.types[0], "made offline", &[(m, "2")])?;
    replica.add_file(made.document.id, "photo.jpg", &mut &b"JPEG bytes"[..])?;
    assert_eq!(replica.sync()?.pushed, 2);
    let created = w
        .admin
        .documents(DocumentQuery::default(), PageRequest::ALL)?
        .items
        .into_iter()
        .find(|v| v.document.label == "made offline")
        .expect("created")
        .document
        .id;
    let files = w.admin.files(created)?;
    assert_eq!(files.len(), 1);
    assert_eq!(w.admin.read_file(files[0].id)?, b"JPEG bytes");
    assert_eq!(view(&replica.session())?, truth(&w)?);

    // A refused file discarded: its bytes go.
    w.admin.revoke(P::DocumentFileNew, w.role, dt(w.types[0]))?;
    replica.add_file(d, "late.txt", &mut &b"too late"[..])?;
    replica.sync()?;
    let before = stored(dir.path());
    let key = replica.rejected()?[0].write.key.clone();
    replica.discard(&key)?;
    assert_eq!(stored(dir.path()), before - 1);
    assert!(replica.pending()?.is_empty() && replica.rejected()?.is_empty());
    Ok(())
}

/// A server that adds the first file pushed to it and loses the answer.
struct LosesFirstFileAnswer {
    inner: InProcessServer,
    lost: std::sync::atomic::AtomicBool,
}

impl SyncServer for LosesFirstFileAnswer {
    fn address(&self) -> String {
        self.inner.address()
    }

    fn sign_in(&self, username: &str, password: &str, name: &str) -> Result<Option<SignedIn>> {
        self.inner.sign_in(username, password, name)
    }

    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled> {
        self.inner.pull(device, cursor, limit)
    }

    fn download(
        &self,
        device: &SignedIn,
        file: &docmeta_core::DocumentFile,
    ) -> Result<Option<Vec<u8>>> {
        self.inner.download(device, file)
    }

    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>> {
        self.inner.push(device, writes)
    }

    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        content: &mut dyn std::io::Read,
    ) -> Result<Option<PushOutcome>> {
        let answer = self.inner.push_file(device, write, content)?;
        if !self.lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(docmeta_core::Error::Timeout("the answer was lost".into()));
        }
        Ok(answer)
    }
}

#[test]
fn a_file_whose_answer_was_lost_is_added_once() -> Result<()> {
    let w = world()?;
    w.admin.grant(P::DocumentFileNew, w.role, dt(w.types[0]))?;
    let d = w.admin.create_document(w.types[0], "doc", &[])?.document.id;
    let dir = tempfile::tempdir().expect("a directory");
    let server = LosesFirstFileAnswer {
        inner: InProcessServer::new(w.db.clone()),
        lost: std::sync::atomic::AtomicBool::new(false),
    };
    let replica = Replica::open_with(dir.path(), server, "ann", "a long password")?;
    replica.sync()?;
    replica.add_file(d, "a.txt", &mut &b"once"[..])?;
    assert!(matches!(
        replica.sync(),
        Err(docmeta_core::Error::Timeout(_))
    ));
    assert_eq!(w.admin.files(d)?.len(), 1, "added, its answer lost");
    assert_eq!(replica.pending()?.len(), 1, "still queued");
    let done = replica.sync()?;
    assert_eq!((done.pushed, done.rejected), (1, 0));
    let files = w.admin.files(d)?;
    assert_eq!(files.len(), 1, "added once");
    assert_eq!(replica.session().files(d)?, files);
    assert_eq!(replica.session().read_file(files[0].id)?, b"once");
    Ok(())
}

#[test]
fn a_server_s_encrypted_files_are_kept_only_in_an_encrypted_replica() -> Result<()> {
    let db = Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            documents_file_storage_backend: docmeta_core::StorageBackend::Encrypted,
            storage_kdf_memory_kib: 64,
            storage_kdf_iterations: 1,
            ..Config::default()
        })
        .storage_password("the server's secret")
        .worker(false)
        .open()?;
    let admin = db.system();
    admin.create_user("ann", "a long password", true)?;
    let memo = admin.create_document_type("Memo")?;
    let (_, file) = admin.create_document_with_file(
        memo.id,
        "sealed",
        &[],
        "a.txt",
        &mut &b"sealed bytes"[..],
    )?;
    let plain = tempfile::tempdir().expect("a directory");
    let replica = Replica::open_with(
        plain.path(),
        InProcessServer::new(db.clone()),
        "ann",
        "a long password",
    )?;
    replica.sync()?;
    match replica.read_file(file.id) {
        Err(docmeta_core::Error::Validation { field, .. }) => assert_eq!(field, "storage_password"),
        other => panic!("{other:?}"),
    }
    assert!(
        walk(&plain.path().join("document_file_storage")).is_empty(),
        "nothing fetched"
    );
    let sealed = tempfile::tempdir().expect("a directory");
    let replica = Replica::builder(sealed.path())
        .storage_password("the phone's secret")
        .open_with(InProcessServer::new(db), "ann", "a long password")?;
    replica.sync()?;
    assert_eq!(replica.read_file(file.id)?, b"sealed bytes");
    Ok(())
}
