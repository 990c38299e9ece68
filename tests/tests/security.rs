//! Security regression tests through sessions: escalation paths (a permission used to gain a wider
//! one), leaks through the event log, existence probes, atomic user updates and NUL characters.
//! Each test reproduces one attack and checks that it is refused and changed nothing.

use docmeta_core::{
    CabinetId, Docmeta, Error, EventQuery, GroupId, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission as P, PermissionSet, Result, RoleId, Session, UserId, UserUpdate,
};

/// A superuser `root`, and `mallory`, a member of group `Staff` holding role `Staff`, to which
/// each test grants the narrow permission it attacks with.
struct World {
    db: Docmeta,
    admin: Session,
    root: UserId,
    mallory: UserId,
    staff_group: GroupId,
    staff: RoleId,
}

fn world() -> Result<World> {
    let db = Docmeta::builder()
        .config(docmeta_core::Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Default::default()
        })
        .open()?;
    let admin = db.system();
    let root = admin.create_user("root", "root password", true)?.id;
    let mallory = admin.create_user("mallory", "mallory password", false)?.id;
    let staff_group = admin.create_group("Staff")?.id;
    let staff = admin.create_role("Staff")?.id;
    admin.set_group_member(staff_group, mallory, true)?;
    admin.set_role_group(staff, staff_group, true)?;
    Ok(World {
        db,
        admin,
        root,
        mallory,
        staff_group,
        staff,
    })
}

impl World {
    fn mallory(&self) -> Session {
        self.db.session(self.mallory)
    }
}

fn role_ref(id: RoleId) -> ObjectRef {
    ObjectRef::new(ObjectKind::ROLE, id.0)
}

fn is_denied<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::PermissionDenied(_)))
}

fn validation_field<T: std::fmt::Debug>(r: Result<T>) -> Option<String> {
    match r {
        Err(Error::Validation { field, .. }) => Some(field),
        _ => None,
    }
}

// ----- users: superusers and atomic updates ---------------------------------------------------

#[test]
fn user_edit_cannot_change_a_superusers_password() -> Result<()> {
    let w = world()?;
    w.admin.grant_global(P::UserView, w.staff)?;
    w.admin.grant_global(P::UserEdit, w.staff)?;
    assert!(is_denied(w.mallory().set_password(w.root, "taken over")));
    assert!(w.db.authenticate("root", "root password")?.is_some());
    assert!(w.db.authenticate("root", "taken over")?.is_none());
    Ok(())
}

#[test]
fn user_edit_cannot_deactivate_or_rename_a_superuser() -> Result<()> {
    let w = world()?;
    w.admin.grant_global(P::UserView, w.staff)?;
    w.admin.grant_global(P::UserEdit, w.staff)?;
    let deactivate = UserUpdate {
        is_active: Some(false),
        ..Default::default()
    };
    assert!(is_denied(w.mallory().update_user(w.root, deactivate)));
    let rename = UserUpdate {
        username: Some("someone".into()),
        ..Default::default()
    };
    assert!(is_denied(w.mallory().update_user(w.root, rename)));
    let root = w.admin.user(w.root)?;
    assert!(root.is_active);
    assert_eq!(root.username, "root");
    Ok(())
}

#[test]
fn user_edit_still_changes_an_ordinary_users_password() -> Result<()> {
    let w = world()?;
    let clerk = w.admin.create_user("clerk", "clerk password", false)?.id;
    w.admin.grant_global(P::UserView, w.staff)?;
    w.admin.grant_global(P::UserEdit, w.staff)?;
    w.mallory().set_password(clerk, "reset by helpdesk")?;
    assert!(w.db.authenticate("clerk", "reset by helpdesk")?.is_some());
    Ok(())
}

#[test]
fn a_user_sets_their_own_password_without_any_permission() -> Result<()> {
    let w = world()?;
    w.mallory().set_password(w.mallory, "my new password")?;
    assert!(w.db.authenticate("mallory", "my new password")?.is_some());
    Ok(())
}

#[test]
fn a_user_cannot_rename_themselves_without_user_edit() -> Result<()> {
    let w = world()?;
    let rename = UserUpdate {
        username: Some("root2".into()),
        ..Default::default()
    };
    assert!(is_denied(w.mallory().update_user(w.mallory, rename)));
    Ok(())
}

#[test]
fn a_refused_user_update_changes_nothing() -> Result<()> {
    let w = world()?;
    w.admin.grant_global(P::UserView, w.staff)?;
    w.admin.grant_global(P::UserEdit, w.staff)?;
    let clerk = w.admin.create_user("clerk", "clerk password", false)?.id;
    let update = UserUpdate {
        password: Some("changed".into()),
        is_superuser: Some(true),
        ..Default::default()
    };
    assert!(is_denied(w.mallory().update_user(clerk, update)));
    assert!(
        w.db.authenticate("clerk", "clerk password")?.is_some(),
        "the password must not change when another field of the update is refused"
    );
    assert!(!w.admin.user(clerk)?.is_superuser);
    Ok(())
}

#[test]
fn user_update_debug_output_hides_the_password() {
    let update = UserUpdate {
        password: Some("hunter2".into()),
        ..Default::default()
    };
    assert!(!format!("{update:?}").contains("hunter2"));
}

// ----- roles, groups and ACLs: granting only what one holds ----------------------------------

#[test]
fn role_edit_through_an_acl_cannot_grant_global_permissions() -> Result<()> {
    let w = world()?;
    let victim_role = w.admin.create_role("Editors")?.id;
    w.admin.grant(P::RoleEdit, w.staff, role_ref(victim_role))?;
    w.admin.grant(P::RoleView, w.staff, role_ref(victim_role))?;
    assert!(is_denied(
        w.mallory().grant_global(P::DocumentDelete, victim_role)
    ));
    assert!(
        w.admin
            .role_permissions(victim_role, PageRequest::ALL)?
            .items
            .is_empty()
    );
    Ok(())
}

#[test]
fn global_role_edit_cannot_grant_a_permission_it_does_not_hold() -> Result<()> {
    let w = world()?;
    w.admin.grant_global(P::RoleView, w.staff)?;
    w.admin.grant_global(P::RoleEdit, w.staff)?;
    assert!(is_denied(w.mallory().grant_global(P::UserEdit, w.staff)));
    assert!(!w.db.session(w.mallory).can_globally(P::UserEdit));
    Ok(())
}

#[test]
fn global_role_edit_grants_a_permission_it_holds() -> Result<()> {
    let w = world()?;
    let other = w.admin.create_role("Readers")?.id;
    w.admin.grant_global(P::RoleView, w.staff)?;
    w.admin.grant_global(P::RoleEdit, w.staff)?;
    w.admin.grant_global(P::DocumentView, w.staff)?;
    w.mallory().grant_global(P::DocumentView, other)?;
    assert_eq!(
        w.admin.role_permissions(other, PageRequest::ALL)?.items,
        vec![P::DocumentView]
    );
    Ok(())
}

#[test]
fn role_edit_cannot_link_a_role_to_a_group_it_cannot_see() -> Result<()> {
    let w = world()?;
    let hidden = w.admin.create_group("Hidden")?.id;
    w.admin.grant_global(P::RoleView, w.staff)?;
    w.admin.grant_global(P::RoleEdit, w.staff)?;
    let invisible = w.mallory().set_role_group(w.staff, hidden, true);
    let unknown = w.mallory().set_role_group(w.staff, GroupId(999), true);
    assert_eq!(validation_field(invisible).as_deref(), Some("group_id"));
    assert_eq!(validation_field(unknown).as_deref(), Some("group_id"));
    assert!(
        w.admin
            .role_groups(w.staff, PageRequest::ALL)?
            .items
            .iter()
            .all(|g| g.id != hidden)
    );
    Ok(())
}

#[test]
fn role_edit_cannot_attach_a_stronger_role_to_its_own_group() -> Result<()> {
    let w = world()?;
    let admins = w.admin.create_role("Admins")?.id;
    w.admin.grant_global(P::UserEdit, admins)?;
    w.admin.grant_global(P::RoleView, w.staff)?;
    w.admin.grant(P::RoleEdit, w.staff, role_ref(admins))?;
    w.admin.grant_global(P::GroupView, w.staff)?;
    assert!(is_denied(w.mallory().set_role_group(
        admins,
        w.staff_group,
        true
    )));
    assert!(!w.db.session(w.mallory).can_globally(P::UserEdit));
    Ok(())
}

#[test]
fn group_edit_cannot_join_a_group_holding_a_stronger_role() -> Result<()> {
    let w = world()?;
    let admins_group = w.admin.create_group("Admins")?.id;
    let admins = w.admin.create_role("Admins")?.id;
    w.admin.grant_global(P::UserEdit, admins)?;
    w.admin.set_role_group(admins, admins_group, true)?;
    w.admin.grant_global(P::GroupView, w.staff)?;
    w.admin.grant_global(P::GroupEdit, w.staff)?;
    w.admin.grant_global(P::UserView, w.staff)?;
    assert!(is_denied(w.mallory().set_group_member(
        admins_group,
        w.mallory,
        true
    )));
    assert!(!w.db.session(w.mallory).can_globally(P::UserEdit));
    Ok(())
}

#[test]
fn acl_edit_cannot_grant_a_permission_not_held_on_the_object() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    w.admin.grant(P::DocumentTypeView, w.staff, dt_ref)?;
    w.admin.grant(P::AclEdit, w.staff, dt_ref)?;
    w.admin.grant_global(P::RoleView, w.staff)?;
    assert!(is_denied(w.mallory().grant(
        P::DocumentDelete,
        w.staff,
        dt_ref
    )));
    assert!(!w.mallory().can(P::DocumentDelete, dt_ref));
    Ok(())
}

#[test]
fn acl_edit_grants_a_permission_held_on_the_object() -> Result<()> {
    let w = world()?;
    let readers = w.admin.create_role("Readers")?.id;
    let dt = w.admin.create_document_type("Invoice")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    w.admin.grant(P::DocumentTypeView, w.staff, dt_ref)?;
    w.admin.grant(P::DocumentView, w.staff, dt_ref)?;
    w.admin.grant(P::AclEdit, w.staff, dt_ref)?;
    w.admin.grant_global(P::RoleView, w.staff)?;
    let acl = w.mallory().grant(P::DocumentView, readers, dt_ref)?.acl;
    assert_eq!(acl.permissions, PermissionSet::of(&[P::DocumentView]));
    Ok(())
}

// ----- existence probes -----------------------------------------------------------------------

#[test]
fn an_acl_for_an_invisible_role_is_refused_like_an_unknown_role() -> Result<()> {
    let w = world()?;
    let hidden = w.admin.create_role("Hidden")?.id;
    let dt = w.admin.create_document_type("Invoice")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    w.admin.grant(P::DocumentTypeView, w.staff, dt_ref)?;
    w.admin.grant(P::AclEdit, w.staff, dt_ref)?;
    let invisible = w.mallory().create_acl(dt_ref, hidden);
    let unknown = w.mallory().create_acl(dt_ref, RoleId(999));
    let message = |r: Result<docmeta_core::AclView>, id: i64| match r {
        Err(Error::Validation { field, message }) => {
            Some((field, message.replace(&id.to_string(), "N")))
        }
        _ => None,
    };
    let invisible = message(invisible, hidden.0);
    assert!(invisible.is_some());
    assert_eq!(invisible, message(unknown, 999));
    Ok(())
}

#[test]
fn adding_an_invisible_user_to_a_group_is_refused_like_an_unknown_user() -> Result<()> {
    let w = world()?;
    let other = w.admin.create_user("other", "other password", false)?.id;
    w.admin.grant_global(P::GroupView, w.staff)?;
    w.admin.grant_global(P::GroupEdit, w.staff)?;
    let invisible = w.mallory().set_group_member(w.staff_group, other, true);
    let unknown = w
        .mallory()
        .set_group_member(w.staff_group, UserId(999), true);
    assert_eq!(validation_field(invisible).as_deref(), Some("user_id"));
    assert_eq!(validation_field(unknown).as_deref(), Some("user_id"));
    Ok(())
}

// ----- the event log --------------------------------------------------------------------------

#[test]
fn an_event_hides_a_second_object_the_reader_may_not_view() -> Result<()> {
    let w = world()?;
    let cabinet = w.admin.create_cabinet("Shared", None)?;
    let dt = w.admin.create_document_type("Secret")?;
    let doc = w.admin.create_document(dt.id, "merger plan", &[])?.document;
    w.admin.set_cabinet_document(cabinet.id, doc.id, true)?;
    w.admin.grant(
        P::CabinetView,
        w.staff,
        ObjectRef::new(ObjectKind::CABINET, cabinet.id.0),
    )?;
    let events = w.mallory().events(&EventQuery::default())?;
    let cabinet_events: Vec<_> = events
        .iter()
        .filter(|e| e.event.target.kind == "cabinets.cabinet" && e.event.target.id == cabinet.id.0)
        .collect();
    assert!(
        !cabinet_events.is_empty(),
        "the cabinet's events are listed"
    );
    for e in cabinet_events {
        assert!(
            e.event
                .action_object
                .as_ref()
                .is_none_or(|o| o.id != doc.id.0 || o.kind != "documents.document"),
            "the hidden document must not be named: {e:?}"
        );
    }
    Ok(())
}

#[test]
fn an_event_keeps_a_second_object_the_reader_may_view() -> Result<()> {
    let w = world()?;
    let cabinet: CabinetId = w.admin.create_cabinet("Shared", None)?.id;
    let dt = w.admin.create_document_type("Open")?;
    let doc = w.admin.create_document(dt.id, "menu", &[])?.document;
    w.admin.set_cabinet_document(cabinet, doc.id, true)?;
    w.admin.grant(
        P::CabinetView,
        w.staff,
        ObjectRef::new(ObjectKind::CABINET, cabinet.0),
    )?;
    w.admin.grant_global(P::DocumentView, w.staff)?;
    let events = w.mallory().events(&EventQuery::default())?;
    assert!(events.iter().any(|e| {
        e.event.target.kind == "cabinets.cabinet"
            && e.event
                .action_object
                .as_ref()
                .is_some_and(|o| o.id == doc.id.0)
    }));
    Ok(())
}

#[test]
fn an_acl_event_hides_a_role_the_reader_may_not_view() -> Result<()> {
    let w = world()?;
    let hidden = w.admin.create_role("Hidden")?.id;
    let dt = w.admin.create_document_type("Invoice")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    w.admin.grant(P::DocumentTypeView, w.staff, dt_ref)?;
    w.admin.grant(P::DocumentView, hidden, dt_ref)?;
    let events = w.mallory().events(&EventQuery::default())?;
    let acl_events: Vec<_> = events
        .iter()
        .filter(|e| {
            e.event.name == docmeta_core::Event::ACL_EDITED
                || e.event.name == docmeta_core::Event::ACL_CREATED
        })
        .filter(|e| e.event.target.id == dt.id.0)
        .collect();
    assert!(!acl_events.is_empty());
    assert!(
        acl_events.iter().all(|e| e
            .event
            .action_object
            .as_ref()
            .is_none_or(|o| o.id != hidden.0)),
        "{acl_events:?}"
    );
    Ok(())
}

// ----- NUL characters -------------------------------------------------------------------------

#[test]
fn a_nul_in_a_label_is_a_validation_error_naming_the_field() -> Result<()> {
    let w = world()?;
    let r = w.admin.create_document_type("Inv\0oice");
    assert_eq!(validation_field(r).as_deref(), Some("label"));
    Ok(())
}

#[test]
fn a_nul_in_a_metadata_value_is_a_validation_error_naming_value() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    w.admin.associate(dt.id, mt.id, false)?;
    let doc = w.admin.create_document(dt.id, "one", &[])?.document;
    let r = w.admin.add_document_metadata(doc.id, mt.id, "12\u{0}3");
    assert_eq!(validation_field(r).as_deref(), Some("value"));
    Ok(())
}

#[test]
fn a_nul_produced_by_a_parser_is_refused() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Invoice")?;
    let mt = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("code", "Code").parser(
            "svc.apps.metadata.metadata_parsers.RegularExpressionParser",
            "pattern: 'x'\nreplacement: \"\\0\"",
        ))?;
    w.admin.associate(dt.id, mt.id, false)?;
    let doc = w.admin.create_document(dt.id, "one", &[])?.document;
    let r = w.admin.add_document_metadata(doc.id, mt.id, "axb");
    assert_eq!(validation_field(r).as_deref(), Some("value"));
    Ok(())
}

#[test]
fn a_nul_in_a_username_is_a_validation_error_and_never_logs_in() -> Result<()> {
    let w = world()?;
    let r = w.admin.create_user("ro\0ot", "a password", false);
    assert_eq!(validation_field(r).as_deref(), Some("username"));
    assert!(w.db.authenticate("ro\0ot", "a password")?.is_none());
    Ok(())
}

// ----- the login cache ------------------------------------------------------------------------

#[test]
fn the_credentials_epoch_moves_when_a_password_changes() -> Result<()> {
    let w = world()?;
    let before = w.db.credentials_epoch();
    w.mallory().set_password(w.mallory, "another password")?;
    assert_ne!(w.db.credentials_epoch(), before);
    Ok(())
}

#[test]
fn the_credentials_epoch_stays_when_only_grants_change() -> Result<()> {
    let w = world()?;
    let before = w.db.credentials_epoch();
    w.admin.grant_global(P::DocumentView, w.staff)?;
    assert_eq!(w.db.credentials_epoch(), before);
    Ok(())
}

#[test]
fn a_workflow_action_naming_an_invisible_role_answers_like_an_unknown_role() -> Result<()> {
    let w = world()?;
    let hidden = w.admin.create_role("Hidden")?.id;
    let invoice = w.admin.create_document_type("Invoice")?;
    for p in [
        P::WorkflowTemplateCreate,
        P::WorkflowTemplateEdit,
        P::WorkflowTemplateView,
        P::DocumentTypeView,
        P::AclEdit,
        P::DocumentView,
    ] {
        w.admin.grant_global(p, w.staff)?;
    }
    let s = w.mallory();
    let flow = s.create_workflow("grants", &[invoice.id])?.id;
    let start = s.create_workflow_state(flow, "start", true)?.id;
    let grant_to = |role: RoleId| docmeta_core::ActionKind::GrantDocumentAccess {
        role_id: role,
        permission: "documents.document_view".into(),
    };
    let message = |r: Result<docmeta_core::WorkflowAction>, id: i64| match r {
        Err(Error::Validation { field, message }) => {
            Some((field, message.replace(&id.to_string(), "N")))
        }
        _ => None,
    };
    let invisible = s.create_workflow_action(flow, start, "a", true, false, grant_to(hidden));
    let unknown = s.create_workflow_action(flow, start, "b", true, false, grant_to(RoleId(999)));
    let invisible = message(invisible, hidden.0);
    assert!(invisible.is_some());
    assert_eq!(invisible, message(unknown, 999));
    Ok(())
}
