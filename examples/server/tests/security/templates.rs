//! Stored templates over HTTP: workflow editors cannot hand out access they do not
//! hold; a default template does not read values its user may not view; templates cannot
//! exhaust memory, and a slow one does not stall other writers.
//!
//! The data (users, roles, grants, types) is set up through the library before the server
//! starts; every attack is an HTTP request to the running server.

use std::path::Path;
use std::time::{Duration, Instant};

use docmeta_core::{
    Docmeta, DocumentId, DocumentTypeId, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef,
    Permission, RoleId, Session, UserId,
};
use serde_json::json;

use super::support::{Server, prepare};

const PASSWORD: &str = "a long password 1";

/// A user with their own group and role.
fn user(admin: &Session, name: &str) -> (UserId, RoleId) {
    let u = admin.create_user(name, PASSWORD, false).expect("user").id;
    let g = admin.create_group(name).expect("group").id;
    admin.set_group_member(g, u, true).expect("member");
    let r = admin.create_role(name).expect("role").id;
    admin.set_role_group(r, g, true).expect("role group");
    (u, r)
}

fn dt_ref(t: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)
}
fn mt_ref(t: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, t.0)
}

struct Data {
    invoice: DocumentTypeId,
    note: MetadataTypeId,
    slow: MetadataTypeId,
    huge: MetadataTypeId,
    doc: DocumentId,
    other: DocumentId,
    other_note: i64,
    editor_role: RoleId,
}

/// An invoice type with a `secret` value only the admin views, a `note` the clerk edits whose
/// default reads the secret, a `slow` and a `huge` default; an editor of workflows without
/// ACL rights.
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
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice").expect("type").id;
    let mt = |input: MetadataTypeInput| {
        let t = admin.create_metadata_type(input).expect("metadata type").id;
        admin.associate(invoice, t, false).expect("associate");
        t
    };
    let secret = mt(MetadataTypeInput::new("secret", "Secret"));
    let note = mt(MetadataTypeInput::new("note", "Note").default_value(
        "{{ document.metadata_value_of.secret or 'hidden' }}|{% for m in document.metadata.all %}{{ m.value }};{% endfor %}",
    ));
    let slow = mt(MetadataTypeInput::new("slow", "Slow").default_value(
        "{% for i in range(100000) %}{% if (range(50000)|list|sort|length) > 0 %}{% endif %}{% endfor %}",
    ));
    // `{% set b = a ~ a ~ ... %}`: 16 bytes * 4^15 = 16 GiB if nothing stopped it.
    let huge = mt(
        MetadataTypeInput::new("huge", "Huge").default_value(format!(
            "{{% set a = 'xxxxxxxxxxxxxxxx' %}}{}{{{{ a|length }}}}",
            "{% set a = a ~ a ~ a ~ a %}".repeat(15)
        )),
    );
    let (_, clerk_role) = user(&admin, "clerk");
    for p in [
        Permission::DocumentView,
        Permission::DocumentTypeView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        admin.grant(p, clerk_role, dt_ref(invoice)).expect("grant");
    }
    for t in [note, slow, huge] {
        for p in [
            Permission::MetadataTypeView,
            Permission::DocumentMetadataView,
            Permission::DocumentMetadataAdd,
            Permission::DocumentMetadataEdit,
        ] {
            admin.grant(p, clerk_role, mt_ref(t)).expect("grant");
        }
    }
    let (_, editor_role) = user(&admin, "editor");
    for p in [
        Permission::WorkflowTemplateCreate,
        Permission::WorkflowTemplateEdit,
        Permission::WorkflowTemplateView,
        Permission::DocumentTypeView,
        Permission::RoleView,
    ] {
        admin.grant_global(p, editor_role).expect("grant");
    }
    let doc = admin
        .create_document(invoice, "INV-1", &[(secret, "s3cr3t")])
        .expect("document")
        .document
        .id;
    let other = admin
        .create_document(invoice, "INV-2", &[])
        .expect("document")
        .document
        .id;
    let other_note = admin
        .add_document_metadata(other, note, "first")
        .expect("note")
        .value
        .id
        .0;
    Data {
        invoice,
        note,
        slow,
        huge,
        doc,
        other,
        other_note,
        editor_role,
    }
}

#[test]
fn templates_over_http() {
    let dir = tempfile::tempdir().expect("dir");
    let d = set_up(dir.path());
    let server = Server::start(dir.path());
    let clerk = Some(("clerk", PASSWORD));
    let editor = Some(("editor", PASSWORD));

    // Defaults: the clerk may edit `note`, whose default reads `secret`: nothing of it.
    let (status, body) = server.call(
        "POST",
        &format!("/api/v4/documents/{}/metadata/", d.doc.0),
        clerk,
        Some(&json!({"metadata_type_id": d.note.0, "value": ""})),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["value"], "hidden|",
        "the default read a hidden value: {body}"
    );

    // Memory: a 16 GiB concatenation is refused at once, as a validation error on `value`.
    let started = Instant::now();
    let (status, body) = server.call(
        "POST",
        &format!("/api/v4/documents/{}/metadata/", d.doc.0),
        clerk,
        Some(&json!({"metadata_type_id": d.huge.0, "value": ""})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.get("value").is_some(), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The server's peak memory (Linux): far from the gigabytes the attack asked for.
    if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())) {
        let peak_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        assert!(peak_kib < 512 * 1024, "the server peaked at {peak_kib} KiB");
    }

    // Time: while a slow template renders (up to its 2 s budget), a PATCH on another
    // document answers within 1 s.
    let base = server.base.clone();
    let slow = d.slow.0;
    let doc = d.doc.0;
    let rendering = std::thread::spawn(move || {
        super::support::request(
            &super::support::agent(),
            &base,
            "POST",
            &format!("/api/v4/documents/{doc}/metadata/"),
            Some(("clerk", PASSWORD)),
            Some(&json!({"metadata_type_id": slow, "value": ""})),
        )
        .expect("slow request")
    });
    std::thread::sleep(Duration::from_millis(400));
    let started = Instant::now();
    let (status, body) = server.call(
        "PATCH",
        &format!("/api/v4/documents/{}/metadata/{}/", d.other.0, d.other_note),
        clerk,
        Some(&json!({"value": "second"})),
    );
    let waited = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert!(
        waited < Duration::from_secs(1),
        "the PATCH waited {waited:?}"
    );
    let (status, body) = rendering.join().expect("thread");
    assert_eq!(status, 400, "the slow template ran out of time: {body}");

    // Handing out access: an editor of workflows without acls.acl_edit on the bound type cannot add
    // a grant action; nothing is stored.
    let (status, w) = server.call(
        "POST",
        "/api/v4/workflow-templates/",
        editor,
        Some(&json!({"label": "grants", "document_type_ids": [d.invoice.0]})),
    );
    assert_eq!(status, 201, "{w}");
    let w = w["id"].as_i64().expect("id");
    let (status, state) = server.call(
        "POST",
        &format!("/api/v4/workflow-templates/{w}/states/"),
        editor,
        Some(&json!({"label": "start", "initial": true})),
    );
    assert_eq!(status, 201, "{state}");
    let actions = format!(
        "/api/v4/workflow-templates/{w}/states/{}/actions/",
        state["id"].as_i64().expect("id")
    );
    let grant = |permission: &str| {
        json!({"label": "grant", "action": {
            "type": "grant_document_access", "role_id": d.editor_role.0, "permission": permission,
        }})
    };
    let (status, body) = server.call(
        "POST",
        &actions,
        editor,
        Some(&grant("documents.document_view")),
    );
    assert_eq!(status, 403, "{body}");
    let (status, listed) = server.call("GET", &actions, editor, None);
    assert_eq!(
        (status, listed["count"].as_u64()),
        (200, Some(0)),
        "nothing stored"
    );
    drop(server);

    // With acl_edit on the type, granting a permission the editor does not hold is refused;
    // one they hold is allowed.
    {
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .open()
            .expect("open");
        let admin = db.system();
        admin
            .grant(Permission::AclEdit, d.editor_role, dt_ref(d.invoice))
            .expect("grant");
        admin
            .grant(Permission::DocumentView, d.editor_role, dt_ref(d.invoice))
            .expect("grant");
    }
    let server = Server::start(dir.path());
    let (status, body) = server.call(
        "POST",
        &actions,
        editor,
        Some(&grant("documents.document_delete")),
    );
    assert_eq!(status, 403, "{body}");
    let (status, body) = server.call(
        "POST",
        &actions,
        editor,
        Some(&grant("documents.document_view")),
    );
    assert_eq!(status, 201, "a legitimate editor: {body}");
}
