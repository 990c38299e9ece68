//! Spec 5.2-5.4 and section 7: who may see and do what, through sessions.

use docmeta_core::{
    Docmeta, DocumentQuery, Error, EventQuery, Grant, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission as P, PermissionSet, Result, RoleId, Session, UserId, UserUpdate,
};

struct World {
    db: Docmeta,
    admin: Session,
    user: UserId,
    role: RoleId,
    other_role: RoleId,
}

fn world() -> Result<World> {
    let db = Docmeta::builder().config(fast_hashing()).open()?;
    let admin = db.system();
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("Clerks")?.id;
    let role = admin.create_role("Clerk")?.id;
    let other_role = admin.create_role("Auditor")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    admin.set_role_group(other_role, group, true)?;
    Ok(World {
        db,
        admin,
        user,
        role,
        other_role,
    })
}

fn doc_ref(id: docmeta_core::DocumentId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT, id.0)
}
fn dt_ref(id: docmeta_core::DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, id.0)
}
fn mt_ref(id: docmeta_core::MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, id.0)
}

fn is_not_found<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::NotFound(_)))
}
fn is_denied<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::PermissionDenied(_)))
}

#[test]
fn nothing_granted_means_refused_and_unseen() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w.admin.create_document(dt.id, "secret", &[])?.document;
    let s = w.db.session(w.user);
    assert!(
        is_not_found(s.document(d.id)),
        "an invisible object is not found"
    );
    assert!(
        s.documents(DocumentQuery::default(), PageRequest::new(1, 100))?
            .items
            .is_empty()
    );
    assert!(s.document_types()?.is_empty());
    assert!(
        is_denied(s.create_document_type("X")),
        "a missing global create permission is a refusal"
    );
    assert!(is_denied(
        s.create_metadata_type(MetadataTypeInput::new("x", "X"))
    ));
    assert!(is_denied(s.create_role("R")));
    assert!(is_denied(s.create_group("G")));
    assert!(is_denied(s.create_user("bob", "a long password", false)));
    assert!(is_denied(s.create_cabinet("C", None)));
    Ok(())
}

#[test]
fn a_global_permission_applies_to_every_object() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    w.admin.grant_global(P::DocumentView, w.role)?;
    let s = w.db.session(w.user);
    assert_eq!(s.document(d.id)?.document.label, "d");
    assert!(
        is_denied(s.update_document(d.id, "x")),
        "visible but not editable: denied"
    );
    w.admin.grant_global(P::DocumentTypeCreate, w.role)?;
    assert!(s.create_document_type("Mine").is_ok());
    w.admin.revoke_global(P::DocumentView, w.role)?;
    assert!(
        is_not_found(s.document(d.id)),
        "revocation takes effect immediately"
    );
    Ok(())
}

#[test]
fn a_document_type_acl_protects_its_documents_and_their_children() -> Result<()> {
    let w = world()?;
    let invoice = w.admin.create_document_type("Invoice")?;
    let contract = w.admin.create_document_type("Contract")?;
    let inv = w.admin.create_document(invoice.id, "inv", &[])?.document;
    let con = w.admin.create_document(contract.id, "con", &[])?.document;
    w.admin.grant(P::DocumentView, w.role, dt_ref(invoice.id))?;
    let s = w.db.session(w.user);
    assert!(s.document(inv.id).is_ok());
    assert!(is_not_found(s.document(con.id)));
    let listed: Vec<_> = s
        .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
        .items
        .into_iter()
        .map(|d| d.document.id)
        .collect();
    assert_eq!(listed, [inv.id]);
    // Grand-children: a file of the document, a comment of the document.
    let file = ObjectRef::new(ObjectKind::DOCUMENT_FILE, 77);
    w.db.set_object_parents(file, &[doc_ref(inv.id)])?;
    w.admin
        .grant(P::DocumentFileSignatureView, w.role, dt_ref(invoice.id))?;
    assert!(
        w.db.check(w.user, P::DocumentFileSignatureView, file),
        "document type → document → file"
    );
    let explanation = w.db.explain(w.user, P::DocumentFileSignatureView, file);
    match explanation.grant {
        Some(Grant::Acl {
            role, object, path, ..
        }) => {
            assert_eq!(role, w.role);
            assert_eq!(object, dt_ref(invoice.id));
            assert_eq!(path, [file, doc_ref(inv.id), dt_ref(invoice.id)]);
        }
        other => panic!("expected an ACL grant, got {other:?}"),
    }
    Ok(())
}

#[test]
fn an_object_acl_protects_only_that_object() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let a = w.admin.create_document(dt.id, "a", &[])?.document;
    let b = w.admin.create_document(dt.id, "b", &[])?.document;
    w.admin.grant(P::DocumentView, w.role, doc_ref(a.id))?;
    let s = w.db.session(w.user);
    assert!(s.document(a.id).is_ok());
    assert!(is_not_found(s.document(b.id)));
    assert!(
        is_not_found(s.document_type(dt.id)),
        "an ACL on a child grants nothing on the parent"
    );
    Ok(())
}

#[test]
fn every_inheritance_row_of_spec_5_3() -> Result<()> {
    let w = world()?;
    // ACLs only go on objects that exist: workflow 1 is docmeta's own record.
    assert_eq!(w.admin.create_workflow("Approval", &[])?.id.0, 1);
    let link = |child: ObjectKind, cid: i64, parent: ObjectKind, pid: i64| {
        w.db.set_object_parents(ObjectRef::new(child, cid), &[ObjectRef::new(parent, pid)])
    };
    // Workflow → instance → log entry.
    link(ObjectKind::WORKFLOW_INSTANCE, 10, ObjectKind::WORKFLOW, 1)?;
    link(
        ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY,
        100,
        ObjectKind::WORKFLOW_INSTANCE,
        10,
    )?;
    // Index template → node → instance node.
    link(
        ObjectKind::INDEX_TEMPLATE_NODE,
        20,
        ObjectKind::INDEX_TEMPLATE,
        2,
    )?;
    link(
        ObjectKind::INDEX_INSTANCE_NODE,
        200,
        ObjectKind::INDEX_TEMPLATE_NODE,
        20,
    )?;
    // Metadata type → document metadata.
    link(
        ObjectKind::DOCUMENT_METADATA,
        30,
        ObjectKind::METADATA_TYPE,
        3,
    )?;
    // Document → version, comment, checkout, question.
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    for kind in [
        ObjectKind::DOCUMENT_VERSION,
        ObjectKind::DOCUMENT_COMMENT,
        ObjectKind::DOCUMENT_CHECKOUT,
        ObjectKind::DOCUMENT_QA_ENTRY,
    ] {
        link(kind, 40, ObjectKind::DOCUMENT, d.id.0)?;
    }
    let wf = ObjectRef::new(ObjectKind::WORKFLOW, 1);
    let log = ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY, 100);
    assert!(!w.db.check(w.user, P::WorkflowInstanceTransition, log));
    w.admin.grant(P::WorkflowInstanceTransition, w.role, wf)?;
    assert!(w.db.check(
        w.user,
        P::WorkflowInstanceTransition,
        ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, 10)
    ));
    assert!(
        w.db.check(w.user, P::WorkflowInstanceTransition, log),
        "grand-parent"
    );
    w.admin.grant(
        P::AclView,
        w.role,
        ObjectRef::new(ObjectKind::INDEX_TEMPLATE, 2),
    )?;
    assert!(w.db.check(
        w.user,
        P::AclView,
        ObjectRef::new(ObjectKind::INDEX_INSTANCE_NODE, 200)
    ));
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    assert_eq!(mt.id.0, 1);
    w.admin
        .grant(
            P::DocumentMetadataView,
            w.role,
            ObjectRef::new(ObjectKind::METADATA_TYPE, 3),
        )
        .ok();
    w.admin.grant(P::DocumentQaView, w.role, dt_ref(dt.id))?;
    assert!(w.db.check(
        w.user,
        P::DocumentQaView,
        ObjectRef::new(ObjectKind::DOCUMENT_QA_ENTRY, 40)
    ));
    w.admin
        .grant(P::DocumentCommentView, w.role, doc_ref(d.id))?;
    assert!(w.db.check(
        w.user,
        P::DocumentCommentView,
        ObjectRef::new(ObjectKind::DOCUMENT_COMMENT, 40)
    ));
    assert!(
        !w.db.check(
            w.user,
            P::DocumentCommentView,
            ObjectRef::new(ObjectKind::DOCUMENT_COMMENT, 41)
        ),
        "unlinked"
    );
    Ok(())
}

#[test]
fn an_acl_on_a_root_cabinet_covers_its_tree_a_sub_cabinet_acl_only_itself() -> Result<()> {
    let w = world()?;
    let root = w.admin.create_cabinet("Root", None)?;
    let child = w.admin.create_cabinet("Child", Some(root.id))?;
    let grandchild = w.admin.create_cabinet("Grandchild", Some(child.id))?;
    let other_root = w.admin.create_cabinet("Other", None)?;
    let cab = |id: docmeta_core::CabinetId| ObjectRef::new(ObjectKind::CABINET, id.0);
    w.admin.grant(P::CabinetView, w.role, cab(root.id))?;
    let s = w.db.session(w.user);
    for c in [root.id, child.id, grandchild.id] {
        assert!(s.cabinet(c).is_ok(), "cabinet {c}");
    }
    assert!(is_not_found(s.cabinet(other_root.id)));
    w.admin.grant(P::CabinetEdit, w.role, cab(child.id))?;
    assert!(s.rename_cabinet(child.id, "Renamed").is_ok());
    assert!(
        is_denied(s.rename_cabinet(grandchild.id, "x")),
        "a sub-cabinet ACL covers only that cabinet"
    );
    // Deleting a cabinet keeps its documents.
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    w.admin.set_cabinet_document(grandchild.id, d.id, true)?;
    assert_eq!(
        w.admin
            .cabinet_documents(grandchild.id, PageRequest::ALL)?
            .items
            .iter()
            .map(|v| v.document.id)
            .collect::<Vec<_>>(),
        [d.id]
    );
    w.admin.delete_cabinet(child.id)?;
    assert!(w.admin.document(d.id).is_ok());
    assert!(is_not_found(w.admin.cabinet(grandchild.id)));
    Ok(())
}

#[test]
fn no_explicit_deny_any_grant_wins() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    w.admin.grant(P::DocumentView, w.role, doc_ref(d.id))?;
    w.admin
        .grant(P::DocumentView, w.other_role, dt_ref(dt.id))?;
    w.admin.revoke(P::DocumentView, w.role, doc_ref(d.id))?;
    assert!(
        w.db.check(w.user, P::DocumentView, doc_ref(d.id)),
        "the other role's grant still applies"
    );
    w.admin
        .revoke(P::DocumentView, w.other_role, dt_ref(dt.id))?;
    assert!(!w.db.check(w.user, P::DocumentView, doc_ref(d.id)));
    Ok(())
}

#[test]
fn superusers_bypass_and_inactive_users_are_refused() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    let boss = w.admin.create_user("boss", "a long password", true)?;
    assert!(w.db.session(boss.id).document(d.id).is_ok());
    assert_eq!(
        w.db.explain(boss.id, P::DocumentDelete, doc_ref(d.id))
            .grant,
        Some(Grant::Superuser)
    );
    w.admin.grant_global(P::DocumentView, w.role)?;
    assert!(w.db.check(w.user, P::DocumentView, doc_ref(d.id)));
    w.admin.update_user(
        w.user,
        UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    assert!(!w.db.check(w.user, P::DocumentView, doc_ref(d.id)));
    assert!(
        w.db.authenticate("ann", "a long password")?.is_none(),
        "inactive users cannot log in"
    );
    assert!(w.db.authenticate("boss", "a long password")?.is_some());
    assert!(w.db.authenticate("boss", "wrong password")?.is_none());
    assert!(w.db.authenticate("nobody", "a long password")?.is_none());
    // Only a superuser may make a superuser.
    w.admin.grant_global(P::UserCreate, w.role)?;
    w.admin.update_user(
        w.user,
        UserUpdate {
            is_active: Some(true),
            ..Default::default()
        },
    )?;
    assert!(is_denied(w.db.session(w.user).create_user(
        "x",
        "a long password",
        true
    )));
    Ok(())
}

#[test]
fn an_acl_left_empty_is_deleted_and_acl_changes_emit_events() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let obj = dt_ref(dt.id);
    let acl = w.admin.grant(P::DocumentView, w.role, obj)?.acl;
    assert_eq!(acl.permissions, PermissionSet::of(&[P::DocumentView]));
    w.admin.grant(P::DocumentEdit, w.role, obj)?;
    assert!(w.admin.revoke(P::DocumentView, w.role, obj)?.is_some());
    assert!(
        w.admin.revoke(P::DocumentEdit, w.role, obj)?.is_none(),
        "last permission: ACL deleted"
    );
    assert!(w.admin.acls(obj, PageRequest::ALL)?.items.is_empty());
    let created = w.admin.create_acl(obj, w.role)?.acl;
    assert!(created.permissions.is_empty());
    assert!(
        matches!(w.admin.create_acl(obj, w.role), Err(Error::Conflict { .. })),
        "one ACL per role and object"
    );
    w.admin.delete_acl(obj, created.id)?;
    let log: Vec<String> =
        w.db.events(&EventQuery {
            object: Some(("documents.documenttype".into(), dt.id.0)),
            oldest_first: true,
            ..Default::default()
        })?
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        log,
        [
            docmeta_core::Event::DOCUMENT_TYPE_CREATED,
            docmeta_core::Event::ACL_CREATED,
            docmeta_core::Event::ACL_EDITED,
            docmeta_core::Event::ACL_EDITED,
            docmeta_core::Event::ACL_EDITED,
            docmeta_core::Event::ACL_EDITED,
            docmeta_core::Event::ACL_DELETED,
            docmeta_core::Event::ACL_CREATED,
            docmeta_core::Event::ACL_DELETED
        ]
    );
    Ok(())
}

#[test]
fn only_permissions_of_the_kind_or_its_children_can_be_granted() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    assert!(
        w.admin
            .grant(P::DocumentMetadataView, w.role, dt_ref(dt.id))
            .is_ok(),
        "a child kind's permission"
    );
    let refused = w.admin.grant(P::MetadataTypeCreate, w.role, doc_ref(d.id));
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "permission"));
    assert!(
        w.admin
            .grant(P::MetadataTypeEdit, w.role, doc_ref(d.id))
            .is_err()
    );
    assert!(
        w.admin
            .grant(P::DocumentMetadataEdit, w.role, mt_ref(mt.id))
            .is_ok()
    );
    assert!(P::from_key("documents.nope").is_err());
    let missing = w.admin.grant(
        P::DocumentView,
        w.role,
        doc_ref(docmeta_core::DocumentId(999)),
    );
    assert!(is_not_found(missing));
    Ok(())
}

#[test]
fn document_metadata_needs_the_permission_on_the_document_and_on_the_metadata_type() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let public = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("public", "Public"))?;
    let salary = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?;
    w.admin.associate(dt.id, public.id, false)?;
    w.admin.associate(dt.id, salary.id, false)?;
    let d = w
        .admin
        .create_document(dt.id, "d", &[(public.id, "p"), (salary.id, "100")])?
        .document;
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    w.admin
        .grant(P::DocumentMetadataView, w.role, dt_ref(dt.id))?;
    w.admin
        .grant(P::DocumentMetadataView, w.role, mt_ref(public.id))?;
    let s = w.db.session(w.user);
    let seen: Vec<_> = s
        .document_metadata(d.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .map(|m| m.value)
        .collect();
    assert_eq!(
        seen,
        ["p"],
        "the value of a type the user may not view is hidden"
    );
    assert_eq!(s.metadata_value_of(d.id, "salary")?, None);
    w.admin
        .grant(P::DocumentMetadataView, w.role, mt_ref(salary.id))?;
    assert_eq!(
        s.document_metadata(d.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .len(),
        2
    );
    // Editing needs edit on both sides.
    let v = s
        .document_metadata(d.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == public.id)
        .expect("value");
    assert!(is_denied(s.edit_document_metadata(d.id, v.id, "q", None)));
    w.admin
        .grant(P::DocumentMetadataEdit, w.role, doc_ref(d.id))?;
    assert!(
        is_not_found(s.edit_document_metadata(d.id, v.id, "q", None))
            || is_denied(s.edit_document_metadata(d.id, v.id, "q", None))
    );
    w.admin
        .grant(P::DocumentMetadataEdit, w.role, mt_ref(public.id))?;
    assert_eq!(
        s.edit_document_metadata(d.id, v.id, "q", None)?.value.value,
        "q"
    );
    Ok(())
}

#[test]
fn explain_names_the_global_grant_or_what_was_checked() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    let refused = w.db.explain(w.user, P::DocumentView, doc_ref(d.id));
    assert_eq!(refused.grant, None);
    assert_eq!(refused.checked, [doc_ref(d.id), dt_ref(dt.id)]);
    // Asked by the user themselves, without acl_view, about a document they may not view: not
    // found, as one that does not exist (the answer would name its type and the grants that
    // apply), whatever the permission asked about, even one the user holds globally.
    w.admin.grant_global(P::MetadataTypeCreate, w.role)?;
    let own = w.db.session(w.user);
    for p in [P::DocumentView, P::MetadataTypeCreate] {
        assert!(is_not_found(own.explain(w.user, p, doc_ref(d.id))));
        assert!(is_not_found(own.explain(
            w.user,
            p,
            doc_ref(docmeta_core::DocumentId(999_999))
        )));
    }
    w.admin.grant_global(P::DocumentView, w.other_role)?;
    match w.db.explain(w.user, P::DocumentView, doc_ref(d.id)).grant {
        Some(Grant::Global { role, .. }) => assert_eq!(role, w.other_role),
        other => panic!("expected a global grant, got {other:?}"),
    }
    // A user may ask about themselves about what they may view; others need acl_view on it.
    assert!(
        w.db.session(w.user)
            .explain(w.user, P::DocumentView, doc_ref(d.id))
            .is_ok()
    );
    Ok(())
}

#[test]
fn application_kinds_join_the_same_engine() -> Result<()> {
    let w = world()?;
    let note = w.db.register_kind(
        "notes",
        "note",
        &[ObjectKind::DOCUMENT],
        &[P::DocumentCommentView],
    )?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    let n = ObjectRef::new(note, 5);
    w.db.set_object_parents(n, &[doc_ref(d.id)])?;
    assert!(
        w.db.kinds()
            .grantable(ObjectKind::DOCUMENT)
            .contains(P::DocumentCommentView)
    );
    w.admin
        .grant(P::DocumentCommentView, w.role, dt_ref(dt.id))?;
    assert!(w.db.check(w.user, P::DocumentCommentView, n));
    Ok(())
}

#[test]
fn an_acl_on_an_object_that_does_not_exist_is_not_found_for_every_stored_kind() -> Result<()> {
    let w = world()?;
    for kind in docmeta_core::STORED_KINDS {
        let missing = ObjectRef::new(kind, 9_999);
        assert!(
            matches!(w.admin.create_acl(missing, w.role), Err(Error::NotFound(_))),
            "{}",
            w.db.kinds().name(kind)
        );
        assert!(
            matches!(
                w.admin.grant(P::AclView, w.role, missing),
                Err(Error::NotFound(_))
            ),
            "{}",
            w.db.kinds().name(kind)
        );
    }
    Ok(())
}

#[test]
fn an_application_object_exists_once_declared_with_its_parents() -> Result<()> {
    let w = world()?;
    let tag = ObjectRef::new(ObjectKind::TAG, 7);
    assert!(matches!(
        w.admin.create_acl(tag, w.role),
        Err(Error::NotFound(_))
    ));
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    w.db.set_object_parents(tag, &[doc_ref(d.id)])?;
    assert_eq!(w.admin.create_acl(tag, w.role)?.acl.object, tag);
    Ok(())
}

#[test]
fn an_application_kind_existence_check_decides_which_objects_exist() -> Result<()> {
    let w = world()?;
    let note =
        w.db.register_kind("notes", "note", &[], &[P::DocumentCommentView])?;
    w.db.set_kind_existence(note, |id| id % 2 == 0)?;
    assert!(w.admin.create_acl(ObjectRef::new(note, 4), w.role).is_ok());
    assert!(matches!(
        w.admin.create_acl(ObjectRef::new(note, 5), w.role),
        Err(Error::NotFound(_))
    ));
    // Registering the kind again keeps its check.
    w.db.register_kind("notes", "note", &[], &[P::DocumentCommentView])?;
    assert!(matches!(
        w.admin.create_acl(ObjectRef::new(note, 7), w.role),
        Err(Error::NotFound(_))
    ));
    assert!(
        w.db.set_kind_existence(ObjectKind::DOCUMENT, |_| true)
            .is_err(),
        "docmeta's own kinds are checked against the store"
    );
    Ok(())
}

#[test]
fn the_incremental_snapshot_equals_a_full_reload() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let docs: Vec<_> = (0..5)
        .map(|i| w.admin.create_document(dt.id, &format!("d{i}"), &[]))
        .collect::<Result<_>>()?;
    w.admin
        .grant(P::DocumentView, w.role, doc_ref(docs[1].document.id))?;
    w.admin
        .grant(P::DocumentEdit, w.other_role, dt_ref(dt.id))?;
    let answers = |db: &Docmeta| -> Vec<bool> {
        docs.iter()
            .flat_map(|d| {
                [P::DocumentView, P::DocumentEdit]
                    .map(|p| db.check(w.user, p, doc_ref(d.document.id)))
            })
            .collect()
    };
    let before = answers(&w.db);
    w.db.reload_access()?;
    assert_eq!(answers(&w.db), before);
    Ok(())
}

/// Cheap password hashing: these tests are about access rules, not Argon2 cost.
fn fast_hashing() -> docmeta_core::Config {
    docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

#[test]
fn a_document_metadata_value_inherits_from_its_stored_metadata_type() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    w.admin.associate(dt.id, mt.id, false)?;
    let d = w
        .admin
        .create_document(dt.id, "d", &[(mt.id, "v")])?
        .document;
    let value = w
        .admin
        .document_metadata(d.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .remove(0);
    let obj = ObjectRef::new(ObjectKind::DOCUMENT_METADATA, value.id.0);
    assert!(!w.db.check(w.user, P::DocumentMetadataView, obj));
    w.admin
        .grant(P::DocumentMetadataView, w.role, mt_ref(mt.id))?;
    assert!(
        w.db.check(w.user, P::DocumentMetadataView, mt_ref(mt.id)),
        "on the type"
    );
    assert!(
        w.db.check(w.user, P::DocumentMetadataView, obj),
        "no link recorded by hand"
    );
    assert_eq!(w.db.filter(w.user, P::DocumentMetadataView, &[obj]), [obj]);
    match w.db.explain(w.user, P::DocumentMetadataView, obj).grant {
        Some(Grant::Acl { path, .. }) => assert_eq!(path, [obj, mt_ref(mt.id)]),
        other => panic!("expected an ACL grant, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_roles_groups_are_listed_only_to_who_may_see_groups() -> Result<()> {
    let w = world()?;
    let s = w.db.session(w.user);
    w.admin.grant_global(P::RoleView, w.role)?;
    assert!(
        s.role_groups(w.role, PageRequest::ALL)?.items.is_empty(),
        "role_view alone names no group"
    );
    w.admin.grant_global(P::GroupView, w.role)?;
    assert_eq!(s.role_groups(w.role, PageRequest::ALL)?.items.len(), 1);
    Ok(())
}

// ----- one evaluator: sessions follow the stored links of spec 5.3 ------------------------------
//
// Before there was one evaluator, `Session::can` answered from the access snapshot alone, so an
// operation on a document file (or a workflow instance, or a metadata value) by its generic object
// reference did not see the ACLs of its document (workflow, metadata type), while `Docmeta::check`
// did. Both now call the one evaluator of `access::policy`; these cases show where they disagreed,
// with the answer spec 5.3 gives ("an ACL on a DocumentType therefore protects its documents
// and their files").

fn file_ref(id: docmeta_core::DocumentFileId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_FILE, id.0)
}

/// A document with one file, whose document grants `permissions` to the user's role.
fn document_with_file(w: &World, permissions: &[P]) -> Result<ObjectRef> {
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w.admin.create_document(dt.id, "scan", &[])?.document;
    let f = w.admin.add_file(d.id, "scan.pdf", &mut &b"%PDF"[..])?;
    for p in permissions {
        w.admin.grant(*p, w.role, doc_ref(d.id))?;
    }
    Ok(file_ref(f.id))
}

#[test]
fn session_can_on_a_file_inherits_from_its_document() -> Result<()> {
    let w = world()?;
    let file = document_with_file(&w, &[P::DocumentView, P::AclView])?;
    let s = w.db.session(w.user);
    assert!(
        s.can(P::AclView, file),
        "the document's ACL covers its file"
    );
    assert_eq!(
        s.can(P::AclView, file),
        w.db.check(w.user, P::AclView, file),
        "the session and the handle give one answer"
    );
    assert!(!s.can(P::AclEdit, file));
    Ok(())
}

#[test]
fn a_files_acls_are_listed_for_acl_view_on_its_document() -> Result<()> {
    let w = world()?;
    let file = document_with_file(&w, &[P::DocumentView, P::AclView])?;
    let s = w.db.session(w.user);
    assert!(
        s.acls(file, PageRequest::ALL)?.items.is_empty(),
        "visible, with no ACL of its own (it was NotFound before there was one evaluator)"
    );
    Ok(())
}

#[test]
fn a_permission_held_on_the_document_may_be_shared_on_its_file() -> Result<()> {
    let w = world()?;
    let file = document_with_file(
        &w,
        &[P::DocumentView, P::AclEdit, P::DocumentFileContentView],
    )?;
    let other_role = ObjectRef::new(ObjectKind::ROLE, w.other_role.0);
    w.admin.grant(P::RoleView, w.role, other_role)?;
    let s = w.db.session(w.user);
    let acl = s.grant(P::DocumentFileContentView, w.other_role, file)?.acl;
    assert_eq!(acl.object, file);
    assert!(
        matches!(
            s.grant(P::DocumentFileParse, w.other_role, file),
            Err(Error::PermissionDenied(_))
        ),
        "what the user does not hold on the document stays ungrantable"
    );
    Ok(())
}

#[test]
fn a_file_of_an_invisible_document_keeps_its_acls_hidden() -> Result<()> {
    let w = world()?;
    let file = document_with_file(&w, &[])?;
    let s = w.db.session(w.user);
    assert!(is_not_found(s.acls(file, PageRequest::ALL)));
    assert!(is_not_found(s.grant(P::DocumentFileParse, w.role, file)));
    Ok(())
}

#[test]
fn acl_edit_without_any_view_adds_a_key_through_an_acl_id() -> Result<()> {
    // Found by the session access matrix: `acl_add_permission` looked the ACL up
    // as a reader, so a holder of `acls.acl_edit` who may neither view the object nor its
    // ACLs got NotFound, though `grant` and `create_acl` let them act (api.md: acl_edit on the
    // object decides, 403/404).
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let acl = w
        .admin
        .grant(P::DocumentView, w.other_role, dt_ref(dt.id))?
        .acl;
    w.admin.grant(P::AclEdit, w.role, dt_ref(dt.id))?;
    w.admin.grant(P::DocumentEdit, w.role, dt_ref(dt.id))?;
    w.admin.grant(
        P::RoleView,
        w.role,
        ObjectRef::new(ObjectKind::ROLE, w.other_role.0),
    )?;
    let s = w.db.session(w.user);
    assert!(!s.can(P::DocumentTypeView, dt_ref(dt.id)) && !s.can(P::AclView, dt_ref(dt.id)));
    let row = s
        .acl_add_permission(dt_ref(dt.id), acl.id, P::DocumentEdit)?
        .acl;
    assert!(row.permissions.contains(P::DocumentEdit));
    Ok(())
}

#[test]
fn acl_ids_of_an_invisible_object_stay_not_found_without_acl_edit() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let acl = w
        .admin
        .grant(P::DocumentView, w.other_role, dt_ref(dt.id))?
        .acl;
    let s = w.db.session(w.user);
    assert!(is_not_found(s.acl_add_permission(
        dt_ref(dt.id),
        acl.id,
        P::DocumentEdit
    )));
    assert!(is_not_found(s.acl_add_permission(
        dt_ref(dt.id),
        docmeta_core::AclId(acl.id.0 + 1000),
        P::DocumentEdit
    )));
    Ok(())
}

#[test]
fn group_members_lists_only_the_users_the_caller_may_view() -> Result<()> {
    // Found by the session access matrix: the HTTP route dropped the members its
    // caller may not view, but `Session::group_members` (and so Python) returned them all.
    let w = world()?;
    let role = w.admin.create_role("Group viewer")?.id;
    w.admin.grant_global(P::GroupView, role)?;
    let viewers = w.admin.create_group("Viewers")?.id;
    w.admin.set_group_member(viewers, w.user, true)?;
    w.admin.set_role_group(role, viewers, true)?;
    let group = w.admin.create_group("Others")?.id;
    let bob = w.admin.create_user("bob", "a long password", false)?.id;
    w.admin.set_group_member(group, bob, true)?;
    w.admin.set_group_member(group, w.user, true)?;
    let s = w.db.session(w.user);
    assert_eq!(
        s.group_members(group, PageRequest::ALL)?
            .items
            .iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        vec![w.user],
        "itself, not bob"
    );
    w.admin.grant_global(P::UserView, role)?;
    let mut all = s
        .group_members(group, PageRequest::ALL)?
        .items
        .iter()
        .map(|u| u.id)
        .collect::<Vec<_>>();
    all.sort();
    let mut want = vec![bob, w.user];
    want.sort();
    assert_eq!(all, want, "with user_view, every member");
    Ok(())
}

#[test]
fn a_stored_workflow_log_entry_inherits_through_its_instance_from_the_workflow() -> Result<()> {
    // The evaluator reads the stored links itself: log entry -> instance ->
    // workflow, none of them set by the application.
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let wf = w.admin.create_workflow("Approval", &[dt.id])?;
    let start = w.admin.create_workflow_state(wf.id, "start", true)?;
    let done = w.admin.create_workflow_state(wf.id, "done", false)?;
    let t = w
        .admin
        .create_workflow_transition(wf.id, "finish", start.id, done.id, "")?;
    let d = w.admin.create_document(dt.id, "scan", &[])?.document;
    w.db.run_pending_tasks()?;
    let instance = w.admin.workflow_instances(d.id)?.remove(0);
    let entry = w.admin.transition_workflow(d.id, instance.id, t.id, "ok")?;
    let log = ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY, entry.id.0);
    let wf_ref = ObjectRef::new(ObjectKind::WORKFLOW, wf.id.0);
    assert!(!w.db.check(w.user, P::WorkflowTemplateView, log));
    w.admin.grant(P::WorkflowTemplateView, w.role, wf_ref)?;
    assert!(w.db.check(w.user, P::WorkflowTemplateView, log));
    assert!(w.db.session(w.user).can(P::WorkflowTemplateView, log));
    let Some(Grant::Acl { object, path, .. }) =
        w.db.explain(w.user, P::WorkflowTemplateView, log).grant
    else {
        panic!("granted by the workflow's ACL");
    };
    assert_eq!(object, wf_ref);
    assert_eq!(
        path,
        vec![
            log,
            ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, instance.id.0),
            wf_ref
        ]
    );
    Ok(())
}

#[test]
fn an_instance_with_application_links_inherits_from_them_not_from_its_workflow() -> Result<()> {
    // Where the evaluators disagreed before they were one: `Docmeta::check` used an application's
    // own links of a workflow instance instead of the stored workflow link, while the session's
    // hand-written instance check always added the workflow. Both now follow the documented
    // rule of `Docmeta::set_object_parents`: the application's links replace the stored ones.
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let wf = w.admin.create_workflow("Approval", &[dt.id])?;
    w.admin.create_workflow_state(wf.id, "start", true)?;
    let d = w.admin.create_document(dt.id, "scan", &[])?.document;
    w.db.run_pending_tasks()?;
    let instance = w.admin.workflow_instances(d.id)?.remove(0);
    let inst_ref = ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, instance.id.0);
    let other = w.admin.create_workflow("Elsewhere", &[])?;
    let other_ref = ObjectRef::new(ObjectKind::WORKFLOW, other.id.0);
    w.db.set_object_parents(inst_ref, &[other_ref])?;
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    w.admin.grant(
        P::WorkflowTemplateView,
        w.role,
        ObjectRef::new(ObjectKind::WORKFLOW, wf.id.0),
    )?;
    let s = w.db.session(w.user);
    assert!(!w.db.check(w.user, P::WorkflowTemplateView, inst_ref));
    assert!(
        is_not_found(s.workflow_instance(d.id, instance.id)),
        "the session answers as the handle does"
    );
    w.admin.grant(P::WorkflowTemplateView, w.role, other_ref)?;
    assert!(s.workflow_instance(d.id, instance.id).is_ok());
    Ok(())
}

fn invalid_field<T: std::fmt::Debug>(r: Result<T>) -> Option<String> {
    match r {
        Err(Error::Validation { field, .. }) => Some(field),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn a_missing_document_type_in_a_create_body_is_invalid_document_type_id() -> Result<()> {
    let w = world()?;
    let missing = docmeta_core::DocumentTypeId(999);
    assert_eq!(
        invalid_field(w.admin.create_document(missing, "d", &[])),
        Some("document_type_id".into())
    );
    Ok(())
}

#[test]
fn an_invisible_metadata_type_in_an_association_body_is_invalid_metadata_type_id() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    w.admin.grant(P::DocumentTypeEdit, w.role, dt_ref(dt.id))?;
    let ann = w.db.session(w.user);
    assert_eq!(
        invalid_field(ann.associate(dt.id, mt.id, false)),
        Some("metadata_type_id".into())
    );
    Ok(())
}

#[test]
fn an_unknown_metadata_type_added_to_a_document_is_invalid_metadata_type_id() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    assert_eq!(
        invalid_field(
            w.admin
                .add_document_metadata(d.id, docmeta_core::MetadataTypeId(999), "x")
        ),
        Some("metadata_type_id".into())
    );
    Ok(())
}

#[test]
fn an_invisible_new_type_of_a_type_change_is_invalid_document_type_id() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("T")?;
    let hidden = w.admin.create_document_type("Hidden")?;
    let d = w.admin.create_document(dt.id, "d", &[])?.document;
    w.admin
        .grant(P::DocumentChangeType, w.role, doc_ref(d.id))?;
    w.admin.grant(P::DocumentView, w.role, doc_ref(d.id))?;
    let ann = w.db.session(w.user);
    assert_eq!(
        invalid_field(ann.change_document_type(d.id, hidden.id)),
        Some("document_type_id".into())
    );
    Ok(())
}

#[test]
fn a_missing_parent_cabinet_is_invalid_parent_id() -> Result<()> {
    let w = world()?;
    assert_eq!(
        invalid_field(
            w.admin
                .create_cabinet("Sub", Some(docmeta_core::CabinetId(999)))
        ),
        Some("parent_id".into())
    );
    Ok(())
}

#[test]
fn a_missing_document_added_to_a_cabinet_is_invalid_document_id() -> Result<()> {
    let w = world()?;
    let c = w.admin.create_cabinet("Root", None)?;
    assert_eq!(
        invalid_field(
            w.admin
                .set_cabinet_document(c.id, docmeta_core::DocumentId(999), true)
        ),
        Some("document_id".into())
    );
    // The cabinet is the operation's target: a missing one stays not found.
    assert!(matches!(
        w.admin.set_cabinet_document(
            docmeta_core::CabinetId(999),
            docmeta_core::DocumentId(1),
            true
        ),
        Err(Error::NotFound(_))
    ));
    Ok(())
}

#[test]
fn who_may_fill_in_a_documents_type_sees_its_associations_but_not_its_label() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Secret type label")?;
    let shown = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("shown", "Shown"))?;
    let hidden = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("hidden", "Hidden"))?;
    let a = w.admin.associate(dt.id, shown.id, true)?.association;
    let b = w.admin.associate(dt.id, hidden.id, false)?.association;
    let s = w.db.session(w.user);
    // Nothing yet: the type is not the user's to know.
    assert!(is_not_found(s.associations(dt.id, PageRequest::ALL)));
    assert!(is_not_found(s.association(dt.id, a.id)));
    // Adding values to its documents: the associations of the metadata types the user may view,
    // which are required, the type by id only.
    w.admin
        .grant(P::DocumentMetadataAdd, w.role, dt_ref(dt.id))?;
    w.admin
        .grant(P::MetadataTypeView, w.role, mt_ref(shown.id))?;
    let listed = s.associations(dt.id, PageRequest::ALL)?;
    assert_eq!(listed.count, 1);
    let only = &listed.items[0];
    assert_eq!(
        (only.association.id, only.association.required),
        (a.id, true)
    );
    assert_eq!(
        (only.document_type.id, only.document_type.label.as_str()),
        (dt.id, "")
    );
    assert_eq!(s.association(dt.id, a.id)?.document_type.label, "");
    assert!(is_not_found(s.association(dt.id, b.id)));
    // Viewing the type shows its label as before.
    w.admin.grant(P::DocumentTypeView, w.role, dt_ref(dt.id))?;
    assert_eq!(
        s.associations(dt.id, PageRequest::ALL)?.items[0]
            .document_type
            .label,
        "Secret type label"
    );
    Ok(())
}
