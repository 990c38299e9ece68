//! The view records and pages of `Session` (what every face shows): the rules of what
//! accompanies a record, checked in core rather than only over HTTP.

use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentQuery, DocumentTypeId, EventQuery, GroupId,
    MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef, PageRequest, Permission as P,
    PermissionSet, Result, RoleId, Session, TaskState, UserId,
};

struct World {
    db: Docmeta,
    admin: Session,
    user: UserId,
    group: GroupId,
    role: RoleId,
}

/// Cheap password hashing: these tests are about views, not Argon2 cost.
fn fast_hashing() -> Config {
    Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

/// `ann` is the only member of `Clerks`, which holds the role `Clerk` (no permission yet).
fn world() -> Result<World> {
    let db = Docmeta::builder().config(fast_hashing()).open()?;
    let admin = db.system();
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("Clerks")?.id;
    let role = admin.create_role("Clerk")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    Ok(World {
        db,
        admin,
        user,
        group,
        role,
    })
}

impl World {
    fn ann(&self) -> Session {
        self.db.session(self.user)
    }
}

fn dt_ref(id: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, id.0)
}

fn role_ref(id: RoleId) -> ObjectRef {
    ObjectRef::new(ObjectKind::ROLE, id.0)
}

// ----- pages ---------------------------------------------------------------------------------

#[test]
fn a_page_request_past_the_end_is_empty_and_says_so() {
    let page = PageRequest::new(3, 10);
    assert_eq!(page.range(25), 20..25);
    assert!(!page.is_past_end(25));
    assert!(PageRequest::new(4, 10).is_past_end(25));
    assert!(
        !PageRequest::new(1, 10).is_past_end(0),
        "an empty list has an empty first page"
    );
}

#[test]
fn a_documents_page_counts_every_visible_document_and_holds_one_slice() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let docs: Vec<_> = (0..5)
        .map(|i| w.admin.create_document(dt.id, &format!("d{i}"), &[]))
        .collect::<Result<_>>()?;
    let page = w
        .admin
        .documents(DocumentQuery::default(), PageRequest::new(2, 2))?;
    assert_eq!(page.count, 5);
    let ids: Vec<_> = page.items.iter().map(|v| v.document.id).collect();
    assert_eq!(ids, [docs[2].document.id, docs[3].document.id]);
    Ok(())
}

#[test]
fn a_documents_page_newest_first_starts_with_the_highest_id() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let first = w.admin.create_document(dt.id, "first", &[])?.document;
    let last = w.admin.create_document(dt.id, "last", &[])?.document;
    let page = w.admin.documents(
        DocumentQuery {
            newest_first: true,
            ..Default::default()
        },
        PageRequest::new(1, 10),
    )?;
    let ids: Vec<_> = page.items.iter().map(|v| v.document.id).collect();
    assert_eq!(ids, [last.id, first.id]);
    Ok(())
}

#[test]
fn a_documents_page_leaves_out_documents_the_caller_may_not_view() -> Result<()> {
    let w = world()?;
    let shown = w.admin.create_document_type("Shown")?;
    let hidden = w.admin.create_document_type("Hidden")?;
    let visible = w.admin.create_document(shown.id, "visible", &[])?.document;
    w.admin.create_document(hidden.id, "secret", &[])?;
    w.admin.grant(P::DocumentView, w.role, dt_ref(shown.id))?;
    let page = w
        .ann()
        .documents(DocumentQuery::default(), PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].document.id, visible.id);
    Ok(())
}

/// Every page of `ann`'s document list of `size` items, concatenated, and each page's count.
fn all_pages(
    s: &Session,
    of_type: Option<DocumentTypeId>,
    newest_first: bool,
    size: usize,
) -> Result<(Vec<DocumentId>, Vec<usize>)> {
    let (mut ids, mut counts) = (Vec::new(), Vec::new());
    for number in 1.. {
        let page = s.documents(
            DocumentQuery {
                document_type: of_type,
                newest_first,
                ..Default::default()
            },
            PageRequest::new(number, size),
        )?;
        counts.push(page.count);
        if page.items.is_empty() {
            break;
        }
        ids.extend(page.items.iter().map(|v| v.document.id));
    }
    Ok((ids, counts))
}

/// Ann sees the `Shown` type, and two single documents of the `Hidden` type through ACLs of
/// their own; the documents of the two types are interleaved, and a `Third` type's document
/// is shown through its own ACL too.
fn mixed_visibility(w: &World) -> Result<(DocumentTypeId, DocumentTypeId, DocumentTypeId)> {
    let shown = w.admin.create_document_type("Shown")?.id;
    let hidden = w.admin.create_document_type("Hidden")?.id;
    let third = w.admin.create_document_type("Third")?.id;
    w.admin.grant(P::DocumentView, w.role, dt_ref(shown))?;
    for i in 0..12 {
        let t = if i % 3 == 0 { shown } else { hidden };
        let d = w.admin.create_document(t, &format!("d{i}"), &[])?.document;
        if i == 4 || i == 7 {
            w.admin.grant(
                P::DocumentView,
                w.role,
                ObjectRef::new(ObjectKind::DOCUMENT, d.id.0),
            )?;
        }
    }
    let t = w.admin.create_document(third, "third", &[])?.document;
    w.admin.grant(
        P::DocumentView,
        w.role,
        ObjectRef::new(ObjectKind::DOCUMENT, t.id.0),
    )?;
    Ok((shown, hidden, third))
}

#[test]
fn a_filtered_documents_page_holds_exactly_the_visible_documents_across_pages() -> Result<()> {
    let w = world()?;
    mixed_visibility(&w)?;
    let ann = w.ann();
    // The evaluator's answer, one document at a time.
    let expected = ann.document_ids(None)?;
    assert_eq!(expected.len(), 4 + 2 + 1);
    for size in 1..=8 {
        let (ids, counts) = all_pages(&ann, None, false, size)?;
        assert_eq!(ids, expected, "pages of {size}");
        assert!(
            counts.iter().all(|c| *c == expected.len()),
            "pages of {size}"
        );
    }
    Ok(())
}

#[test]
fn a_filtered_documents_page_newest_first_is_the_reverse_order() -> Result<()> {
    let w = world()?;
    mixed_visibility(&w)?;
    let ann = w.ann();
    let mut expected = ann.document_ids(None)?;
    expected.reverse();
    for size in 1..=8 {
        assert_eq!(
            all_pages(&ann, None, true, size)?.0,
            expected,
            "pages of {size}"
        );
    }
    Ok(())
}

#[test]
fn a_filtered_documents_page_of_one_type_holds_that_types_visible_documents() -> Result<()> {
    let w = world()?;
    let types = mixed_visibility(&w)?;
    let ann = w.ann();
    for t in [types.0, types.1, types.2] {
        let expected = ann.document_ids(Some(t))?;
        for size in [1, 2, 5] {
            let (ids, counts) = all_pages(&ann, Some(t), false, size)?;
            assert_eq!(ids, expected, "type {t}, pages of {size}");
            assert!(counts.iter().all(|c| *c == expected.len()));
        }
    }
    Ok(())
}

#[test]
fn a_documents_page_of_more_single_documents_than_a_statement_names_is_exact() -> Result<()> {
    let w = world()?;
    let shown = w.admin.create_document_type("Shown")?.id;
    let hidden = w.admin.create_document_type("Hidden")?.id;
    w.admin.grant(P::DocumentView, w.role, dt_ref(shown))?;
    let new: Vec<docmeta_core::NewDocument<'_>> = (0..1012)
        .map(|i| docmeta_core::NewDocument {
            document_type: if i % 101 == 0 { shown } else { hidden },
            label: "many",
            values: &[],
        })
        .collect();
    let mut created = w.admin.create_documents(&new[..1000])?;
    created.extend(w.admin.create_documents(&new[1000..])?);
    // More hidden documents with an ACL of their own than a page's statement names.
    for d in created
        .iter()
        .filter(|d| d.document.document_type_id == hidden)
        .take(1001)
    {
        w.admin.grant(
            P::DocumentView,
            w.role,
            ObjectRef::new(ObjectKind::DOCUMENT, d.document.id.0),
        )?;
    }
    let ann = w.ann();
    let expected = ann.document_ids(None)?;
    assert_eq!(expected.len(), 11 + 1001);
    for (size, newest_first) in [(100, false), (250, true)] {
        let (mut ids, counts) = all_pages(&ann, None, newest_first, size)?;
        if newest_first {
            ids.reverse();
        }
        assert_eq!(ids, expected, "pages of {size}");
        assert!(counts.iter().all(|c| *c == expected.len()));
    }
    let of_hidden = ann.documents(
        DocumentQuery {
            document_type: Some(hidden),
            ..Default::default()
        },
        PageRequest::new(2, 500),
    )?;
    assert_eq!(of_hidden.count, 1001);
    assert_eq!(of_hidden.items.len(), 500);
    Ok(())
}

#[test]
fn a_documents_page_count_follows_deletions_and_type_changes() -> Result<()> {
    let w = world()?;
    let (shown, hidden, _) = mixed_visibility(&w)?;
    let ann = w.ann();
    let before = ann.documents(DocumentQuery::default(), PageRequest::new(1, 2))?;
    assert_eq!(before.count, 7);
    // One shown document deleted, one moved to the hidden type, one hidden moved to shown.
    let of_shown = ann.document_ids(Some(shown))?;
    w.admin.delete_document(of_shown[0])?;
    w.admin.change_document_type(of_shown[1], hidden)?;
    let a_hidden = w.admin.document_ids(Some(hidden))?[0];
    w.admin.change_document_type(a_hidden, shown)?;
    let after = ann.documents(DocumentQuery::default(), PageRequest::new(1, 2))?;
    assert_eq!(after.count, ann.document_ids(None)?.len());
    assert_eq!(after.count, 6);
    Ok(())
}

#[test]
fn a_superuser_documents_page_counts_every_document() -> Result<()> {
    let w = world()?;
    mixed_visibility(&w)?;
    let page = w
        .admin
        .documents(DocumentQuery::default(), PageRequest::new(3, 5))?;
    assert_eq!(page.count, 13);
    assert_eq!(page.items.len(), 3);
    Ok(())
}

// ----- documents -----------------------------------------------------------------------------

#[test]
fn a_document_viewer_without_type_view_sees_the_type_label() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w.admin.create_document(dt.id, "March", &[])?.document;
    // documents.document_view on the type reaches its documents, not the type itself.
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    let ann = w.ann();
    assert!(
        ann.document_type(dt.id).is_err(),
        "the type itself is hidden"
    );
    let view = ann.document(d.id)?;
    assert_eq!(view.document.label, "March");
    assert_eq!(view.document_type.label, "Invoice");
    Ok(())
}

#[test]
fn a_cabinet_documents_page_shows_each_document_with_its_type() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w.admin.create_document(dt.id, "March", &[])?.document;
    let cabinet = w.admin.create_cabinet("Drawer", None)?;
    w.admin.set_cabinet_document(cabinet.id, d.id, true)?;
    let page = w
        .admin
        .cabinet_documents(cabinet.id, PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].document_type.label, "Invoice");
    Ok(())
}

#[test]
fn a_search_documents_page_shows_a_viewer_without_type_view_the_type_label() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let d = w
        .admin
        .create_document(dt.id, "March invoice", &[])?
        .document;
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    let ann = w.ann();
    assert!(
        ann.document_type(dt.id).is_err(),
        "the type itself is hidden"
    );
    let page = ann.search_documents("march", PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].document.id, d.id);
    assert_eq!(page.items[0].document_type.label, "Invoice");
    Ok(())
}

#[test]
fn a_search_metadata_page_shows_each_value_with_its_document_and_type() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    w.admin.associate(dt.id, mt.id, false)?;
    let d = w
        .admin
        .create_document(dt.id, "March", &[(mt.id, "INV-42")])?
        .document;
    let page = w.admin.search_metadata("INV-42", PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].value.value, "INV-42");
    assert_eq!(page.items[0].document.id, d.id);
    assert_eq!(
        page.items[0]
            .metadata_type
            .as_ref()
            .map(|t| t.name.as_str()),
        Some("number")
    );
    Ok(())
}

// ----- metadata ------------------------------------------------------------------------------

#[test]
fn a_value_adder_without_value_view_is_answered_with_the_stored_value() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    w.admin.associate(dt.id, mt.id, false)?;
    let d = w.admin.create_document(dt.id, "March", &[])?.document;
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    w.admin
        .grant(P::DocumentMetadataAdd, w.role, dt_ref(dt.id))?;
    w.admin.grant(
        P::DocumentMetadataAdd,
        w.role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, mt.id.0),
    )?;
    let ann = w.ann();
    let view = ann.add_document_metadata(d.id, mt.id, "INV-1")?;
    assert_eq!(view.value.value, "INV-1");
    assert_eq!(view.value.metadata_type_id, mt.id);
    // The type is not shown to a writer who may not view it: its label and templates are
    // the type's, not the writer's.
    assert_eq!(view.metadata_type, None);
    assert!(
        ann.metadata_value(d.id, view.value.id).is_err(),
        "reading it back is still refused"
    );
    Ok(())
}

#[test]
fn a_value_adder_who_may_view_the_type_is_answered_with_it() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    let other = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("po", "Purchase order"))?;
    w.admin.associate(dt.id, mt.id, false)?;
    w.admin.associate(dt.id, other.id, false)?;
    let d = w.admin.create_document(dt.id, "March", &[])?.document;
    w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?;
    w.admin
        .grant(P::DocumentMetadataAdd, w.role, dt_ref(dt.id))?;
    let mt_ref = |id: MetadataTypeId| ObjectRef::new(ObjectKind::METADATA_TYPE, id.0);
    // By the type's own view permission ...
    w.admin
        .grant(P::DocumentMetadataAdd, w.role, mt_ref(mt.id))?;
    w.admin.grant(P::MetadataTypeView, w.role, mt_ref(mt.id))?;
    // ... or by viewing its values on the document.
    w.admin
        .grant(P::DocumentMetadataAdd, w.role, mt_ref(other.id))?;
    w.admin
        .grant(P::DocumentMetadataView, w.role, mt_ref(other.id))?;
    w.admin
        .grant(P::DocumentMetadataView, w.role, dt_ref(dt.id))?;
    let ann = w.ann();
    let view = ann.add_document_metadata(d.id, mt.id, "INV-1")?;
    assert_eq!(view.metadata_type.map(|t| t.label), Some("Number".into()));
    let view = ann.add_document_metadata(d.id, other.id, "PO-7")?;
    assert_eq!(
        view.metadata_type.map(|t| t.label),
        Some("Purchase order".into())
    );
    Ok(())
}

#[test]
fn an_association_creator_without_type_view_is_answered_with_both_types() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    w.admin.grant(P::DocumentTypeEdit, w.role, dt_ref(dt.id))?;
    w.admin.grant(
        P::MetadataTypeView,
        w.role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, mt.id.0),
    )?;
    let view = w.ann().associate(dt.id, mt.id, false)?;
    assert_eq!(view.document_type.label, "Invoice");
    assert_eq!(view.metadata_type.label, "Number");
    Ok(())
}

// ----- ACLs ----------------------------------------------------------------------------------

#[test]
fn an_acl_viewer_without_role_view_sees_the_role_label() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let auditors = w.admin.create_role("Auditors")?.id;
    w.admin.grant(P::DocumentView, auditors, dt_ref(dt.id))?;
    w.admin.grant(P::AclView, w.role, dt_ref(dt.id))?;
    w.admin.grant(P::DocumentTypeView, w.role, dt_ref(dt.id))?;
    let ann = w.ann();
    assert!(ann.role(auditors).is_err(), "the role itself is hidden");
    let page = ann.acls(dt_ref(dt.id), PageRequest::new(1, 10))?;
    let auditors_acl = page
        .items
        .iter()
        .find(|v| v.acl.role_id == auditors)
        .expect("the auditors' ACL is listed");
    assert_eq!(auditors_acl.role.label, "Auditors");
    assert_eq!(
        auditors_acl.acl.permissions,
        PermissionSet::of(&[P::DocumentView])
    );
    Ok(())
}

#[test]
fn removing_the_last_permission_of_an_acl_answers_none() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let acl = w.admin.grant(P::DocumentView, w.role, dt_ref(dt.id))?.acl;
    let left = w
        .admin
        .acl_remove_permission(dt_ref(dt.id), acl.id, P::DocumentView)?;
    assert!(left.is_none());
    Ok(())
}

// ----- groups and roles ----------------------------------------------------------------------

#[test]
fn a_member_who_leaves_a_group_is_answered_with_the_group() -> Result<()> {
    let w = world()?;
    // Ann sees and edits groups only through her membership of Clerks.
    w.admin.grant_global(P::GroupView, w.role)?;
    w.admin.grant_global(P::GroupEdit, w.role)?;
    let ann = w.ann();
    let group = ann.set_group_member(w.group, w.user, false)?;
    assert_eq!(group.name, "Clerks");
    assert!(ann.group(w.group).is_err(), "she no longer sees it");
    Ok(())
}

#[test]
fn a_role_editor_without_role_view_is_answered_with_the_renamed_role() -> Result<()> {
    let w = world()?;
    let auditors = w.admin.create_role("Auditors")?.id;
    w.admin.grant(P::RoleEdit, w.role, role_ref(auditors))?;
    let ann = w.ann();
    assert!(ann.role(auditors).is_err(), "the role itself is hidden");
    let role = ann.rename_role(auditors, "Inspectors")?;
    assert_eq!(role.label, "Inspectors");
    Ok(())
}

#[test]
fn a_role_permission_change_is_answered_with_the_roles_global_permissions() -> Result<()> {
    let w = world()?;
    let auditors = w.admin.create_role("Auditors")?.id;
    w.admin.grant_global(P::RoleEdit, w.role)?;
    w.admin.grant_global(P::DocumentView, w.role)?;
    let permissions = w
        .ann()
        .set_role_permission(auditors, P::DocumentView, true)?;
    assert_eq!(permissions, [P::DocumentView]);
    Ok(())
}

#[test]
fn a_role_groups_page_names_each_group() -> Result<()> {
    let w = world()?;
    let page = w.admin.role_groups(w.role, PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].name, "Clerks");
    Ok(())
}

#[test]
fn a_group_users_page_lists_only_members_the_caller_may_view() -> Result<()> {
    let w = world()?;
    let bob = w.admin.create_user("bob", "a long password", false)?;
    w.admin.set_group_member(w.group, bob.id, true)?;
    w.admin.grant_global(P::GroupView, w.role)?;
    // Without user_view, ann sees only herself.
    let page = w.ann().group_members(w.group, PageRequest::new(1, 10))?;
    assert_eq!(page.count, 1);
    assert_eq!(page.items[0].username, "ann");
    Ok(())
}

// ----- events and tasks ----------------------------------------------------------------------

#[test]
fn an_event_view_names_its_actor() -> Result<()> {
    let w = world()?;
    w.admin.grant_global(P::DocumentTypeCreate, w.role)?;
    w.admin.grant_global(P::DocumentTypeView, w.role)?;
    w.ann().create_document_type("Invoice")?;
    let events = w.admin.events(&EventQuery::default())?;
    let by_ann = events
        .iter()
        .find(|e| e.event.actor == Some(w.user))
        .expect("ann's event is listed");
    assert_eq!(
        by_ann.actor.as_ref().map(|a| a.username.as_str()),
        Some("ann")
    );
    Ok(())
}

#[test]
fn an_open_task_has_a_typed_state() -> Result<()> {
    let db = Docmeta::builder()
        .config(fast_hashing())
        .worker(false)
        .open()?;
    let admin = db.system();
    let dt = admin.create_document_type("Invoice")?;
    let mt = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    admin.associate(dt.id, mt.id, true)?;
    let tasks = admin.tasks()?;
    assert!(!tasks.is_empty());
    assert!(tasks.iter().all(|t| t.state == TaskState::Pending));
    Ok(())
}

// ----- tokens --------------------------------------------------------------------------------

#[test]
fn a_token_signs_its_fields_joined_by_nul_bytes() -> Result<()> {
    let db = Docmeta::in_memory()?;
    assert_eq!(
        db.sign_token(&[b"ann", b"pw"]),
        db.sign_token(&[b"ann\0pw"])
    );
    assert_ne!(
        db.sign_token(&[b"ann", b"pw"]),
        db.sign_token(&[b"an", b"npw"])
    );
    Ok(())
}

#[test]
fn a_token_verifies_only_for_its_own_fields() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let token = db.sign_token(&[b"ann", b"pw"]);
    assert!(db.verify_token(&[b"ann", b"pw"], &token));
    assert!(!db.verify_token(&[b"ann", b"other"], &token));
    Ok(())
}

#[test]
fn tokens_of_two_installations_differ() -> Result<()> {
    let a = Docmeta::in_memory()?;
    let b = Docmeta::in_memory()?;
    assert_ne!(a.sign_token(&[b"ann"]), b.sign_token(&[b"ann"]));
    Ok(())
}

#[test]
fn a_creator_without_the_view_permission_is_answered_with_what_it_created() -> Result<()> {
    let w = world()?;
    for p in [
        P::GroupCreate,
        P::RoleCreate,
        P::UserCreate,
        P::MetadataTypeCreate,
        P::DocumentTypeCreate,
        P::CabinetCreate,
        P::WorkflowTemplateCreate,
    ] {
        w.admin.grant_global(p, w.role)?;
    }
    let ann = w.ann();
    assert_eq!(ann.create_group("Auditors")?.name, "Auditors");
    assert_eq!(ann.create_role("Auditor")?.label, "Auditor");
    assert_eq!(
        ann.create_user("bob", "a long password", false)?.username,
        "bob"
    );
    assert_eq!(
        ann.create_metadata_type(MetadataTypeInput::new("due", "Due"))?
            .name,
        "due"
    );
    assert_eq!(ann.create_document_type("Memo")?.label, "Memo");
    assert_eq!(ann.create_cabinet("Archive", None)?.label, "Archive");
    assert_eq!(ann.create_workflow("Review", &[])?.label, "Review");
    Ok(())
}

/// A record a create returns is the record read back later, to the microsecond: the time is taken
/// at the precision both stores keep, not finer.
#[test]
fn a_created_document_and_file_equal_what_is_read_back() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Docmeta::open(dir.path())?;
    let admin = db.system();
    let t = admin.create_document_type("Memo")?;
    let created = admin.create_document(t.id, "first", &[])?;
    assert_eq!(admin.document(created.document.id)?, created);
    let (view, file) =
        admin.create_document_with_file(t.id, "second", &[], "a.txt", &mut &b"hello"[..])?;
    assert_eq!(admin.document(view.document.id)?, view);
    let (read, _) = admin.open_file(file.id)?;
    assert_eq!(read, file);
    Ok(())
}
