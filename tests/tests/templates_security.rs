//! Stored templates at the library level: workflow editors cannot hand out access
//! they do not hold; templates (defaults, lookups, workflow values and conditions, lifecycle
//! tasks) see only what their acting user or author may view; a slow template does not hold
//! the write lock.

use std::time::{Duration, Instant};

use docmeta_core::ActionKind;
use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentTypeId, Error, MetadataTypeId, MetadataTypeInput,
    ObjectKind, ObjectRef, Permission, Result, RoleId, Session, UserId,
};

fn db() -> Result<Docmeta> {
    Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .open()
}

/// A user with their own group and role (so grants go to them alone).
fn user(admin: &Session, name: &str) -> Result<(UserId, RoleId)> {
    let u = admin.create_user(name, "a long password 1", false)?.id;
    let g = admin.create_group(name)?.id;
    admin.set_group_member(g, u, true)?;
    let r = admin.create_role(name)?.id;
    admin.set_role_group(r, g, true)?;
    Ok((u, r))
}

fn dt_ref(t: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)
}
fn mt_ref(t: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, t.0)
}

struct Fixture {
    db: Docmeta,
    admin: Session,
    invoice: DocumentTypeId,
    secret: MetadataTypeId,
    note: MetadataTypeId,
    clerk: UserId,
    clerk_role: RoleId,
    doc: DocumentId,
}

/// An invoice type with a `secret` value the clerk may not view and a `note` they may add,
/// edit and view; one document whose secret is "s3cr3t".
fn fixture(note: MetadataTypeInput) -> Result<Fixture> {
    let db = db()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?.id;
    let secret = admin
        .create_metadata_type(MetadataTypeInput::new("secret", "Secret"))?
        .id;
    let note = admin.create_metadata_type(note)?.id;
    admin.associate(invoice, secret, false)?;
    admin.associate(invoice, note, false)?;
    let (clerk, clerk_role) = user(&admin, "clerk")?;
    for p in [
        Permission::DocumentView,
        Permission::DocumentCreate,
        Permission::DocumentTypeView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        admin.grant(p, clerk_role, dt_ref(invoice))?;
    }
    for p in [
        Permission::MetadataTypeView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        admin.grant(p, clerk_role, mt_ref(note))?;
    }
    let doc = admin
        .create_document(invoice, "INV-1", &[(secret, "s3cr3t")])?
        .document
        .id;
    Ok(Fixture {
        db,
        admin,
        invoice,
        secret,
        note,
        clerk,
        clerk_role,
        doc,
    })
}

const READS_SECRET: &str = "{{ document.metadata_value_of.secret or 'hidden' }}|{% for m in document.metadata.all %}{{ m.metadata_type.name }}={{ m.value }};{% endfor %}";

#[test]
fn a_default_template_sees_only_what_the_acting_user_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note").default_value(READS_SECRET))?;
    let clerk = f.db.session(f.clerk);
    let m = clerk.add_document_metadata(f.doc, f.note, "")?.value;
    assert_eq!(
        m.value, "hidden|",
        "the clerk's default read a hidden value"
    );
    // The same default rendered for someone who may view the secret sees it.
    let other = f
        .admin
        .create_document(f.invoice, "INV-2", &[(f.secret, "v")])?;
    let m = f
        .admin
        .add_document_metadata(other.document.id, f.note, "")?
        .value;
    assert_eq!(m.value, "v|secret=v;");
    Ok(())
}

/// The label of a document's type is shown to a template as a document's answer shows it: to
/// whoever may view the document or the type. A creator who holds `document_create` alone sees
/// neither, so its default renders without it, and the error of a default that then fails
/// names nothing the creator may not view.
#[test]
fn a_default_sees_the_document_type_label_only_where_its_runner_may() -> Result<()> {
    let f = fixture(
        MetadataTypeInput::new("note", "Note")
            .default_value("[{{ document.document_type.label }}]")
            .lookup("[Invoice]"),
    )?;
    let association = f
        .admin
        .associations(f.invoice, docmeta_core::PageRequest::ALL)?
        .items
        .into_iter()
        .find(|a| a.metadata_type.id == f.note)
        .expect("note is associated")
        .association
        .id;
    f.admin.update_association(f.invoice, association, true)?;
    let (maker, maker_role) = user(&f.admin, "maker")?;
    f.admin
        .grant(Permission::DocumentCreate, maker_role, dt_ref(f.invoice))?;
    let maker = f.db.session(maker);
    let err = maker
        .create_document(f.invoice, "INV-9", &[])
        .expect_err("the default renders '[]', not a choice");
    let text = format!("{err:?}");
    assert!(text.contains("'[]'"), "{text}");
    assert!(!text.contains("Invoice"), "the type label leaked: {text}");
    // The clerk may view the type (and its documents): the same default sees the label.
    let clerk = f.db.session(f.clerk);
    let made = clerk.create_document(f.invoice, "INV-10", &[])?;
    let values = clerk.document_metadata(made.document.id, docmeta_core::PageRequest::ALL)?;
    assert!(
        values.items.iter().any(|v| v.value.value == "[Invoice]"),
        "{values:?}"
    );
    Ok(())
}

#[test]
fn a_lookup_sees_only_the_values_users_and_groups_the_acting_user_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note").lookup(
        "{{ document.metadata_value_of.secret or 'hidden' }},{% for u in users %}{{ u.username }},{% endfor %}{% for g in groups %}g:{{ g }},{% endfor %}",
    ))?;
    user(&f.admin, "someone")?;
    let clerk = f.db.session(f.clerk);
    let choices = clerk
        .lookup_choices(f.note, Some(f.doc))?
        .unwrap_or_default();
    assert_eq!(choices, ["hidden", "clerk"], "{choices:?}");
    // A value outside the clerk's choices is refused, even one the admin could pick.
    let err = clerk
        .add_document_metadata(f.doc, f.note, "s3cr3t")
        .expect_err("not a choice for the clerk");
    assert!(matches!(err, Error::Validation { ref field, .. } if field == "value"));
    // With user_view and group_view, the clerk sees users and groups (not the secret).
    f.admin.grant_global(Permission::UserView, f.clerk_role)?;
    f.admin.grant_global(Permission::GroupView, f.clerk_role)?;
    let choices = clerk
        .lookup_choices(f.note, Some(f.doc))?
        .unwrap_or_default();
    assert!(choices.contains(&"someone".to_owned()) && choices.contains(&"g:someone".to_owned()));
    assert!(!choices.contains(&"s3cr3t".to_owned()));
    Ok(())
}

#[test]
fn a_required_default_added_by_the_lifecycle_task_sees_what_its_cause_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    let summary = f
        .admin
        .create_metadata_type(
            MetadataTypeInput::new("summary", "Summary").default_value(READS_SECRET),
        )?
        .id;
    f.admin.grant(
        Permission::DocumentTypeEdit,
        f.clerk_role,
        dt_ref(f.invoice),
    )?;
    f.admin
        .grant(Permission::MetadataTypeView, f.clerk_role, mt_ref(summary))?;
    // The clerk makes `summary` required: the task adds it to INV-1 for them.
    f.db.session(f.clerk).associate(f.invoice, summary, true)?;
    f.db.run_pending_tasks()?;
    assert_eq!(
        f.admin.metadata_value_of(f.doc, "summary")?.as_deref(),
        Some("hidden|")
    );
    Ok(())
}

/// A workflow bound to the invoice type whose initial state copies the secret into `note`,
/// created by `author`.
fn copying_workflow(f: &Fixture, author: &Session) -> Result<()> {
    let w = author.create_workflow("copy", &[f.invoice])?.id;
    let start = author.create_workflow_state(w, "start", true)?.id;
    author.create_workflow_action(
        w,
        start,
        "copy the secret",
        true,
        false,
        ActionKind::EditMetadata {
            metadata_type_id: f.note,
            value: "{{ workflow_instance.document.metadata_value_of.secret or 'hidden' }}".into(),
        },
    )?;
    Ok(())
}

#[test]
fn a_workflow_action_template_sees_what_its_author_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    let (editor, editor_role) = user(&f.admin, "editor")?;
    for p in [
        Permission::WorkflowTemplateCreate,
        Permission::WorkflowTemplateEdit,
        Permission::WorkflowTemplateView,
        Permission::DocumentTypeView,
        // A grant action names a role: the editor must see it (an invisible role answers
        // like an unknown one).
        Permission::RoleView,
    ] {
        f.admin.grant_global(p, editor_role)?;
    }
    // The action names the metadata type it edits: its author must see that type (not the
    // secret one its template tries to read), and may edit its values (an action does only
    // what its author could do directly).
    for p in [
        Permission::DocumentView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        f.admin.grant(p, editor_role, dt_ref(f.invoice))?;
    }
    for p in [
        Permission::MetadataTypeView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        f.admin.grant(p, editor_role, mt_ref(f.note))?;
    }
    copying_workflow(&f, &f.db.session(editor))?;
    // The document is created by docmeta itself (which sees everything): the action still
    // renders with its author's view.
    let doc = f
        .admin
        .create_document(f.invoice, "INV-2", &[(f.secret, "s3cr3t")])?;
    assert_eq!(
        f.admin
            .metadata_value_of(doc.document.id, "note")?
            .as_deref(),
        Some("hidden")
    );
    // An action created by a superuser keeps the full view.
    let root = f.admin.create_user("root", "a long password 1", true)?.id;
    let f2 = &f;
    let other_type = f2.admin.create_document_type("Other")?.id;
    f2.admin.associate(other_type, f2.secret, false)?;
    f2.admin.associate(other_type, f2.note, false)?;
    let root_session = f2.db.session(root);
    let w = root_session
        .create_workflow("copy as root", &[other_type])?
        .id;
    let start = root_session.create_workflow_state(w, "start", true)?.id;
    root_session.create_workflow_action(
        w,
        start,
        "copy",
        true,
        false,
        ActionKind::EditMetadata {
            metadata_type_id: f2.note,
            value: "{{ workflow_instance.document.metadata_value_of.secret or 'hidden' }}".into(),
        },
    )?;
    let doc = f2
        .admin
        .create_document(other_type, "O-1", &[(f2.secret, "s3cr3t")])?
        .document;
    assert_eq!(
        f2.admin.metadata_value_of(doc.id, "note")?.as_deref(),
        Some("s3cr3t")
    );
    Ok(())
}

#[test]
fn a_transition_condition_sees_what_the_acting_user_and_its_author_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    let w = f.admin.create_workflow("gate", &[f.invoice])?.id;
    let a = f.admin.create_workflow_state(w, "a", true)?.id;
    let b = f.admin.create_workflow_state(w, "b", false)?.id;
    let t = f.admin.create_workflow_transition(
        w,
        "go",
        a,
        b,
        "{% if workflow_instance.document.metadata_value_of.secret %}True{% endif %}",
    )?;
    f.admin
        .grant_global(Permission::WorkflowTemplateView, f.clerk_role)?;
    f.admin
        .grant_global(Permission::WorkflowInstanceTransition, f.clerk_role)?;
    let doc = f
        .admin
        .create_document(f.invoice, "INV-2", &[(f.secret, "set")])?
        .document
        .id;
    let clerk = f.db.session(f.clerk);
    let instance = clerk.workflow_instances(doc)?.remove(0);
    // The admin sees the secret: the transition is available to them, not to the clerk.
    assert_eq!(f.admin.available_transitions(doc, instance.id)?.len(), 1);
    assert!(clerk.available_transitions(doc, instance.id)?.is_empty());
    assert!(
        clerk
            .transition_workflow(doc, instance.id, t.id, "")
            .is_err()
    );
    Ok(())
}

#[test]
fn a_workflow_editor_cannot_grant_what_they_do_not_hold() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    let (editor, editor_role) = user(&f.admin, "editor")?;
    for p in [
        Permission::WorkflowTemplateCreate,
        Permission::WorkflowTemplateEdit,
        Permission::WorkflowTemplateView,
        Permission::DocumentTypeView,
        // A grant action names a role: the editor must see it (an invisible role answers
        // like an unknown one).
        Permission::RoleView,
    ] {
        f.admin.grant_global(p, editor_role)?;
    }
    let s = f.db.session(editor);
    let w = s.create_workflow("grants", &[f.invoice])?.id;
    let start = s.create_workflow_state(w, "start", true)?.id;
    let grant = |p: Permission| ActionKind::GrantDocumentAccess {
        role_id: editor_role,
        permission: p.key().to_owned(),
    };
    let add = |action| s.create_workflow_action(w, start, "grant", true, false, action);
    // Without acls.acl_edit on the bound type.
    let err = add(grant(Permission::DocumentView)).expect_err("no acl_edit");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err}");
    let revoke = ActionKind::RevokeDocumentAccess {
        role_id: f.clerk_role,
        permission: Permission::DocumentView.key().to_owned(),
    };
    assert!(matches!(add(revoke), Err(Error::PermissionDenied(_))));
    // With acl_edit, but not holding the permission granted.
    f.admin
        .grant(Permission::AclEdit, editor_role, dt_ref(f.invoice))?;
    let err = add(grant(Permission::DocumentDelete)).expect_err("not held");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err}");
    assert!(s.workflow_actions(w, start)?.is_empty(), "nothing stored");
    // Holding it on the type: allowed, and it runs on new documents.
    f.admin
        .grant(Permission::DocumentView, editor_role, dt_ref(f.invoice))?;
    add(grant(Permission::DocumentView))?;
    // Binding the workflow to a type where the editor holds nothing is refused.
    let other = f.admin.create_document_type("Other")?.id;
    f.admin
        .grant(Permission::DocumentTypeView, editor_role, dt_ref(other))?;
    let err = s
        .update_workflow(w, None, Some(&[f.invoice, other]))
        .expect_err("grants on the new type");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err}");
    assert_eq!(s.workflow(w)?.document_type_ids, [f.invoice]);
    Ok(())
}

#[test]
fn a_slow_template_does_not_hold_the_write_lock() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    let slow = f
        .admin
        .create_metadata_type(MetadataTypeInput::new("slow", "Slow").default_value(
            "{% for i in range(100000) %}{% if (range(50000)|list|sort|length) > 0 %}{% endif %}{% endfor %}",
        ))?
        .id;
    f.admin.associate(f.invoice, slow, false)?;
    let other = f
        .admin
        .create_document(f.invoice, "INV-2", &[])?
        .document
        .id;
    let admin = f.admin.clone();
    let doc = f.doc;
    let started = Instant::now();
    let render = std::thread::spawn(move || admin.add_document_metadata(doc, slow, ""));
    std::thread::sleep(Duration::from_millis(300));
    let write = Instant::now();
    f.admin.add_document_metadata(other, f.note, "quick")?;
    let waited = write.elapsed();
    let outcome = render.join().expect("render thread");
    assert!(
        waited < Duration::from_secs(1),
        "an unrelated write waited {waited:?} behind a template"
    );
    let err = outcome.expect_err("the slow template runs out of time");
    assert!(
        matches!(err, Error::Validation { ref field, .. } if field == "value"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    Ok(())
}

/// A preview renders unsaved templates with the caller as their only shaper: it reads no more
/// than the caller may view (the secret stays hidden from the clerk), and whoever may view it
/// sees it; nothing is stored.
#[test]
fn a_preview_sees_only_what_its_caller_may_view() -> Result<()> {
    let f = fixture(MetadataTypeInput::new("note", "Note"))?;
    f.admin
        .grant_global(Permission::MetadataTypeCreate, f.clerk_role)?;
    let clerk = f.db.session(f.clerk);
    let lookup = "{{ document.metadata_value_of.secret or 'hidden' }},{% for u in users %}{{ u.username }},{% endfor %}";
    let p = clerk.preview_templates(READS_SECRET, lookup, Some(f.doc), None)?;
    assert_eq!(p.default.as_deref(), Some("hidden|"), "{p:?}");
    let choices = p.lookup_choices.expect("choices");
    assert!(!choices.iter().any(|c| c == "s3cr3t"), "{choices:?}");
    assert!(choices.iter().any(|c| c == "clerk"), "{choices:?}");
    let p = f
        .admin
        .preview_templates(READS_SECRET, "", Some(f.doc), None)?;
    assert!(
        p.default
            .as_deref()
            .is_some_and(|d| d.starts_with("s3cr3t|")),
        "{p:?}"
    );
    // Without metadata_type_create, or edit on the type named, no preview.
    let (other, _) = user(&f.admin, "other")?;
    let other = f.db.session(other);
    assert!(matches!(
        other.preview_templates("{{ 1 }}", "", None, None),
        Err(docmeta_core::Error::PermissionDenied(_))
    ));
    assert!(
        other
            .preview_templates("{{ 1 }}", "", None, Some(f.note))
            .is_err()
    );
    // A hidden document is not found, as everywhere.
    let hidden = f.admin.create_document_type("Hidden")?.id;
    let hidden = f.admin.create_document(hidden, "H", &[])?.document.id;
    assert!(matches!(
        clerk.preview_templates("{{ 1 }}", "", Some(hidden), None),
        Err(docmeta_core::Error::NotFound(_))
    ));
    Ok(())
}
