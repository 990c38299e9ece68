//! Authority borrowed through stored artifacts, over HTTP. A narrow user
//! plants a default or lookup, rewrites a condition, adds a trigger or a metadata action; an
//! administrator (a superuser account) and the worker then act on the same objects. Nothing the
//! narrow user may not view or do must come of it.
//!
//! The data (users, roles, grants, types, the administrator's workflows) is set up through the
//! library before the server starts; every attack and every administrator's act is an HTTP
//! request to the running server.

use std::path::Path;
use std::time::{Duration, Instant};

use docmeta_core::ActionKind;
use docmeta_core::{
    Docmeta, DocumentId, DocumentTypeId, MetadataTypeId, ObjectKind, ObjectRef, Permission as P,
    Session, WorkflowId, WorkflowStateId, WorkflowTransitionId,
};
use serde_json::{Value, json};

use super::support::{Server, prepare};

const PASSWORD: &str = "a long password 1";
const SALARY: &str = "73519";
const ROOT: Option<(&str, &str)> = Some(("root", PASSWORD));
const EVE: Option<(&str, &str)> = Some(("eve", PASSWORD));

fn dt_ref(t: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)
}
fn mt_ref(t: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, t.0)
}
fn wf_ref(w: WorkflowId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW, w.0)
}

/// A workflow bound to `types`: `draft` (initial) → `done` by `go`, with `condition`.
struct Gate {
    id: WorkflowId,
    draft: WorkflowStateId,
    done: WorkflowStateId,
    go: WorkflowTransitionId,
}

fn gate(s: &Session, label: &str, types: &[DocumentTypeId], condition: &str) -> Gate {
    let id = s.create_workflow(label, types).expect("workflow").id;
    let draft = s
        .create_workflow_state(id, "draft", true)
        .expect("state")
        .id;
    let done = s
        .create_workflow_state(id, "done", false)
        .expect("state")
        .id;
    let go = s
        .create_workflow_transition(id, "go", draft, done, condition)
        .expect("transition")
        .id;
    Gate {
        id,
        draft,
        done,
        go,
    }
}

struct Data {
    employee: DocumentTypeId,
    note: MetadataTypeId,
    /// An employee whose salary is [`SALARY`], with a note.
    doc: DocumentId,
    /// A document of a type Eve sees nothing of.
    secret: DocumentId,
    /// Bound to `Employee`, no action: Eve may edit it.
    probe: Gate,
    /// Bound to the secret type, granting Eve's role `document_view` on entering `done`: Eve
    /// may edit it (`workflow_template_edit` on it), nothing more.
    publish: Gate,
}

/// `Employee` with a `salary` only the administrator views and a `note` Eve may view and
/// redefine; a secret type; the administrator's workflows; Eve holding one narrow permission
/// on each object she attacks.
fn set_up(dir: &Path) -> Data {
    prepare(dir, false, "");
    let db = Docmeta::builder()
        .data_dir(dir)
        .config(docmeta_core::Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..docmeta_core::Config::default()
        })
        .open()
        .expect("open");
    let system = db.system();
    let root = db.session(system.create_user("root", PASSWORD, true).expect("root").id);
    let employee = root.create_document_type("Employee").expect("type").id;
    let secret_type = root.create_document_type("Secret").expect("type").id;
    let mt = |name: &str| {
        root.create_metadata_type(docmeta_core::MetadataTypeInput::new(name, name))
            .expect("metadata type")
            .id
    };
    let (salary, note) = (mt("salary"), mt("note"));
    for t in [salary, note] {
        root.associate(employee, t, false).expect("associate");
    }
    root.associate(secret_type, note, false).expect("associate");
    let eve = system.create_user("eve", PASSWORD, false).expect("eve").id;
    let group = system.create_group("eve").expect("group").id;
    system.set_group_member(group, eve, true).expect("member");
    let eve_role = system.create_role("eve").expect("role").id;
    system.set_role_group(eve_role, group, true).expect("role");
    for p in [
        P::DocumentView,
        P::DocumentTypeView,
        P::DocumentMetadataView,
    ] {
        system.grant(p, eve_role, dt_ref(employee)).expect("grant");
    }
    for p in [
        P::MetadataTypeView,
        P::MetadataTypeEdit,
        P::DocumentMetadataView,
    ] {
        system.grant(p, eve_role, mt_ref(note)).expect("grant");
    }
    for p in [
        P::WorkflowTemplateCreate,
        P::WorkflowTemplateView,
        P::WorkflowTemplateEdit,
    ] {
        system.grant_global(p, eve_role).expect("grant");
    }
    let probe = gate(
        &root,
        "probe",
        &[employee],
        "{% if workflow_instance.document.metadata_value_of.note == 'ready' %}True{% endif %}",
    );
    root.add_workflow_trigger(probe.id, probe.go, "document_metadata_edited")
        .expect("trigger");
    let publish = gate(&root, "publish", &[secret_type], "");
    root.create_workflow_action(
        publish.id,
        publish.done,
        "let Eve's role see it",
        true,
        false,
        ActionKind::GrantDocumentAccess {
            role_id: eve_role,
            permission: P::DocumentView.key().to_owned(),
        },
    )
    .expect("grant action");
    for w in [probe.id, publish.id] {
        system
            .grant(P::WorkflowTemplateEdit, eve_role, wf_ref(w))
            .expect("grant");
    }
    let doc = root
        .create_document(employee, "E-1", &[(salary, SALARY), (note, "draft")])
        .expect("document")
        .document
        .id;
    let secret = root
        .create_document(secret_type, "S-1", &[(note, "draft")])
        .expect("document")
        .document
        .id;
    Data {
        employee,
        note,
        doc,
        secret,
        probe,
        publish,
    }
}

/// The value of `note` on `doc` as `user` reads it, and its id.
fn note_of(server: &Server, doc: DocumentId, user: Option<(&str, &str)>) -> Option<(i64, String)> {
    let (status, values) = server.call(
        "GET",
        &format!("/api/v4/documents/{}/metadata/", doc.0),
        user,
        None,
    );
    assert_eq!(status, 200, "{values}");
    values["results"].as_array().and_then(|vs| {
        vs.iter()
            .find(|v| v["metadata_type"]["name"] == "note")
            .map(|v| {
                (
                    v["id"].as_i64().expect("id"),
                    v["value"].as_str().unwrap_or_default().to_owned(),
                )
            })
    })
}

/// The URL of a gate's `go` transition.
fn transition(g: &Gate) -> String {
    format!(
        "/api/v4/workflow-templates/{}/transitions/{}/",
        g.id.0, g.go.0
    )
}

fn assert_no_salary(body: &Value) {
    assert!(
        !body.to_string().contains(SALARY),
        "the salary leaked: {body}"
    );
}

/// A default Eve planted, rendered by the administrator's save and by the backfill.
#[test]
fn a_planted_default_reads_nothing_its_planter_may_not_view() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    let patch_note_type = |body: Value| {
        server.call(
            "PATCH",
            &format!("/api/v4/metadata/metadata-types/{}/", d.note.0),
            EVE,
            Some(&body),
        )
    };

    // Eve plants a default reading the salary; the administrator saves an empty value.
    let (status, body) =
        patch_note_type(json!({"default": "{{ document.metadata_value_of.salary }}"}));
    assert_eq!(status, 200, "{body}");
    let (id, _) = note_of(&server, d.doc, ROOT).expect("note");
    let (status, body) = server.call(
        "PATCH",
        &format!("/api/v4/documents/{}/metadata/{id}/", d.doc.0),
        ROOT,
        Some(&json!({"value": ""})),
    );
    assert_eq!(status, 200, "{body}");
    assert_no_salary(&body);
    let (_, read) = note_of(&server, d.doc, EVE).expect("note");
    assert!(!read.contains(SALARY), "Eve read {read}");
    // The administrator makes the type required: the worker's backfill renders it for a new
    // employee lacking it.
    let other = {
        let (status, body) = server.call(
            "POST",
            "/api/v4/documents/",
            ROOT,
            Some(&json!({"document_type_id": d.employee.0, "label": "E-2"})),
        );
        assert_eq!(status, 201, "{body}");
        DocumentId(body["id"].as_i64().expect("id"))
    };
    let (status, salary_id) = server.get("/api/v4/metadata/metadata-types/", ("root", PASSWORD));
    assert_eq!(status, 200);
    let salary_id = salary_id["results"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"] == "salary"))
        .expect("salary")["id"]
        .clone();
    let (status, body) = server.call(
        "POST",
        &format!("/api/v4/documents/{}/metadata/", other.0),
        ROOT,
        Some(&json!({"metadata_type_id": salary_id, "value": SALARY})),
    );
    assert_eq!(status, 201, "{body}");
    let (status, associations) = server.get(
        &format!("/api/v4/documents/types/{}/metadata-types/", d.employee.0),
        ("root", PASSWORD),
    );
    assert_eq!(status, 200, "{associations}");
    let association = associations["results"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["metadata_type"]["id"] == d.note.0))
        .expect("the note's association")["id"]
        .clone();
    let (status, body) = server.call(
        "PATCH",
        &format!(
            "/api/v4/documents/types/{}/metadata-types/{association}/",
            d.employee.0
        ),
        ROOT,
        Some(&json!({"required": true})),
    );
    assert_eq!(status, 200, "{body}");
    let started = Instant::now();
    let backfilled = loop {
        if let Some((_, value)) = note_of(&server, other, EVE) {
            break value;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no backfill");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !backfilled.contains(SALARY),
        "the backfill leaked {backfilled}"
    );
}

/// A lookup Eve planted, rendered for the administrator's drop-down and save.
#[test]
fn a_planted_lookup_reads_nothing_its_planter_may_not_view() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    let patch_note_type = |body: Value| {
        server.call(
            "PATCH",
            &format!("/api/v4/metadata/metadata-types/{}/", d.note.0),
            EVE,
            Some(&body),
        )
    };

    // The administrator's drop-down and save see no more than Eve may.
    let (status, body) = patch_note_type(
        json!({"lookup": "{{ document.metadata_value_of.salary or 'hidden' }},low"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.get(
        &format!(
            "/api/v4/documents/{}/metadata/{}/lookup/",
            d.doc.0, d.note.0
        ),
        ("root", PASSWORD),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"], json!(["hidden", "low"]));
    let (id, _) = note_of(&server, d.doc, ROOT).expect("note");
    let (status, body) = server.call(
        "PATCH",
        &format!("/api/v4/documents/{}/metadata/{id}/", d.doc.0),
        ROOT,
        Some(&json!({"value": SALARY})),
    );
    assert_eq!(status, 400, "the salary was a choice: {body}");
}

/// A condition Eve rewrote, on a workflow without actions and on one that grants.
#[test]
fn a_rewritten_condition_renders_with_its_rewriters_view() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    // Eve rewrites the condition of a workflow without actions into a probe of the
    // salary: accepted, but it renders with her view. The administrator's edit fires the
    // trigger; the instance does not move.
    let probe = format!(
        "{{% if workflow_instance.document.metadata_value_of.salary == '{SALARY}' %}}True{{% endif %}}"
    );
    let (status, body) = server.call(
        "PATCH",
        &transition(&d.probe),
        EVE,
        Some(&json!({"condition": probe})),
    );
    assert_eq!(status, 200, "{body}");
    let (id, _) = note_of(&server, d.doc, ROOT).expect("note");
    let (status, body) = server.call(
        "PATCH",
        &format!("/api/v4/documents/{}/metadata/{id}/", d.doc.0),
        ROOT,
        Some(&json!({"value": "low"})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, instances) = server.get(
        &format!("/api/v4/documents/{}/workflows/", d.doc.0),
        ("root", PASSWORD),
    );
    assert_eq!(status, 200, "{instances}");
    let instance = instances["results"]
        .as_array()
        .and_then(|i| i.iter().find(|i| i["workflow_id"] == d.probe.id.0))
        .expect("the probe's instance")
        .clone();
    assert_eq!(
        instance["current_state_id"].as_i64(),
        Some(d.probe.draft.0),
        "the probe saw the salary: {instance}"
    );
    // Rewriting a condition of a workflow that grants access needs what it grants: refused.
    let (status, body) = server.call(
        "PATCH",
        &transition(&d.publish),
        EVE,
        Some(&json!({"condition": "True"})),
    );
    assert_eq!(status, 403, "{body}");
}

/// A trigger (or any rewiring) Eve adds to the administrator's granting workflow.
#[test]
fn a_trigger_cannot_make_an_administrators_grant_run_for_its_adder() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    let secret = format!("/api/v4/documents/{}/", d.secret.0);
    assert_eq!(server.call("GET", &secret, EVE, None).0, 404);
    // Eve adds a trigger to the administrator's `go` of `publish`, and tries every other way
    // of making its grant run on someone else's edit ...
    let attempts = [
        (
            "POST",
            format!("{}triggers/", transition(&d.publish)),
            json!({"event_type": "document_metadata_edited"}),
        ),
        (
            "POST",
            format!("/api/v4/workflow-templates/{}/transitions/", d.publish.id.0),
            json!({"label": "mine", "origin_state_id": d.publish.draft.0,
                   "destination_state_id": d.publish.done.0}),
        ),
        (
            "PATCH",
            format!(
                "/api/v4/workflow-templates/{}/states/{}/",
                d.publish.id.0, d.publish.done.0
            ),
            json!({"initial": true}),
        ),
        (
            "PATCH",
            format!("/api/v4/workflow-templates/{}/", d.publish.id.0),
            json!({"document_type_ids": [d.employee.0]}),
        ),
    ];
    let answers: Vec<(u16, Value)> = attempts
        .iter()
        .map(|(method, path, body)| server.call(method, path, EVE, Some(body)))
        .collect();
    // ... then the administrator edits a value of the secret document: it stays hidden from her.
    let (id, _) = note_of(&server, d.secret, ROOT).expect("note");
    let (status, body) = server.call(
        "PATCH",
        &format!("/api/v4/documents/{}/metadata/{id}/", d.secret.0),
        ROOT,
        Some(&json!({"value": "published"})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        server.call("GET", &secret, EVE, None).0,
        404,
        "what Eve stored granted her the secret document"
    );
    for ((method, path, _), (status, answer)) in attempts.iter().zip(&answers) {
        assert_eq!(*status, 403, "{method} {path}: {answer}");
    }
}

/// Metadata actions of a workflow editor without metadata rights.
#[test]
fn metadata_actions_need_their_authors_metadata_rights() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    // A workflow editor without metadata rights adds metadata actions: refused.
    let (status, w) = server.call(
        "POST",
        "/api/v4/workflow-templates/",
        EVE,
        Some(&json!({"label": "overwrite", "document_type_ids": [d.employee.0]})),
    );
    assert_eq!(status, 201, "{w}");
    let (status, state) = server.call(
        "POST",
        &format!("/api/v4/workflow-templates/{}/states/", w["id"]),
        EVE,
        Some(&json!({"label": "start", "initial": true})),
    );
    assert_eq!(status, 201, "{state}");
    let actions = format!(
        "/api/v4/workflow-templates/{}/states/{}/actions/",
        w["id"], state["id"]
    );
    for action in [
        json!({"type": "edit_metadata", "metadata_type_id": d.note.0, "value": "overwritten"}),
        json!({"type": "remove_metadata", "metadata_type_ids": [d.note.0]}),
    ] {
        let (status, body) = server.call(
            "POST",
            &actions,
            EVE,
            Some(&json!({"label": "act", "action": action})),
        );
        assert_eq!(status, 403, "{action}: {body}");
    }
    let (status, listed) = server.call("GET", &actions, EVE, None);
    assert_eq!(
        (status, listed["count"].as_u64()),
        (200, Some(0)),
        "nothing stored"
    );
}
