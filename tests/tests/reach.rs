//! Administrative reach through sessions: administrative permissions that reached over
//! stronger principals, a type change that widened access, event actors named to readers who
//! may not view them, and usernames that look alike. Each test reproduces one attack and checks
//! that it is refused and changed nothing (or that the rule still lets the legitimate case
//! through).

use docmeta_core::WorkflowInstance;
use docmeta_core::{
    Docmeta, DocumentId, Error, EventQuery, GroupId, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission as P, Result, RoleId, Session, UserId, UserUpdate,
};

/// A superuser `root`; `mallory`, a member of group `Staff` holding role `Staff` (to which each
/// test grants the narrow permissions it attacks with); and `boss`, an ordinary user (no
/// superuser) in group `Bosses` holding role `Bosses`, which holds every global permission.
struct World {
    db: Docmeta,
    admin: Session,
    mallory: UserId,
    staff: RoleId,
    boss: UserId,
    bosses_group: GroupId,
    bosses: RoleId,
}

fn db() -> Result<Docmeta> {
    Docmeta::builder()
        .config(docmeta_core::Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Default::default()
        })
        .open()
}

fn world() -> Result<World> {
    let db = db()?;
    let admin = db.system();
    admin.create_user("root", "root password", true)?;
    let mallory = admin.create_user("mallory", "mallory password", false)?.id;
    let staff_group = admin.create_group("Staff")?.id;
    let staff = admin.create_role("Staff")?.id;
    admin.set_group_member(staff_group, mallory, true)?;
    admin.set_role_group(staff, staff_group, true)?;
    let boss = admin.create_user("boss", "boss password", false)?.id;
    let bosses_group = admin.create_group("Bosses")?.id;
    let bosses = admin.create_role("Bosses")?.id;
    for p in P::ALL.iter().copied() {
        admin.grant_global(p, bosses)?;
    }
    admin.set_group_member(bosses_group, boss, true)?;
    admin.set_role_group(bosses, bosses_group, true)?;
    Ok(World {
        db,
        admin,
        mallory,
        staff,
        boss,
        bosses_group,
        bosses,
    })
}

impl World {
    fn mallory(&self) -> Session {
        self.db.session(self.mallory)
    }

    /// Gives Staff `permissions` globally.
    fn staff_holds(&self, permissions: &[P]) -> Result<()> {
        for p in permissions {
            self.admin.grant_global(*p, self.staff)?;
        }
        Ok(())
    }
}

fn is_denied<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::PermissionDenied(_)))
}

fn role_ref(id: RoleId) -> ObjectRef {
    ObjectRef::new(ObjectKind::ROLE, id.0)
}

// ----- user_edit and user_delete on a stronger user -------------------------------------------

#[test]
fn user_edit_cannot_reset_the_password_of_a_user_holding_more() -> Result<()> {
    // The reported attack: reset the password of a non-superuser holding every permission, log
    // in as them, grant oneself more.
    let w = world()?;
    w.staff_holds(&[P::UserView, P::UserEdit])?;
    assert!(is_denied(w.mallory().set_password(w.boss, "taken over")));
    assert!(w.db.authenticate("boss", "boss password")?.is_some());
    assert!(w.db.authenticate("boss", "taken over")?.is_none());
    Ok(())
}

#[test]
fn user_edit_cannot_rename_or_deactivate_a_user_holding_more() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::UserView, P::UserEdit])?;
    for update in [
        UserUpdate {
            username: Some("demoted".into()),
            ..Default::default()
        },
        UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    ] {
        assert!(is_denied(w.mallory().update_user(w.boss, update)));
    }
    let boss = w.admin.user(w.boss)?;
    assert_eq!((boss.username.as_str(), boss.is_active), ("boss", true));
    Ok(())
}

#[test]
fn user_delete_cannot_delete_a_user_holding_more() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::UserView, P::UserDelete])?;
    assert!(is_denied(w.mallory().delete_user(w.boss)));
    assert!(w.admin.user(w.boss).is_ok());
    Ok(())
}

#[test]
fn user_edit_cannot_take_over_a_user_holding_an_acl_permission_it_lacks() -> Result<()> {
    // Holding more than the editor through one ACL is enough.
    let w = world()?;
    w.staff_holds(&[P::UserView, P::UserEdit])?;
    let clerk = w.admin.create_user("clerk", "clerk password", false)?.id;
    let clerks_group = w.admin.create_group("Clerks")?.id;
    let clerks = w.admin.create_role("Clerks")?.id;
    w.admin.set_group_member(clerks_group, clerk, true)?;
    w.admin.set_role_group(clerks, clerks_group, true)?;
    let payroll = w.admin.create_document_type("Payroll")?;
    w.admin.grant(
        P::DocumentView,
        clerks,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, payroll.id.0),
    )?;
    assert!(is_denied(w.mallory().set_password(clerk, "taken over")));
    // Once the editor holds it too, the reset is theirs to make.
    w.admin.grant(
        P::DocumentView,
        w.staff,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, payroll.id.0),
    )?;
    w.mallory().set_password(clerk, "reset by helpdesk")?;
    assert!(w.db.authenticate("clerk", "reset by helpdesk")?.is_some());
    Ok(())
}

#[test]
fn a_deactivated_user_holding_more_still_cannot_be_reactivated() -> Result<()> {
    // Reactivating gives back everything their roles grant: what they hold counts whether or
    // not they are active.
    let w = world()?;
    w.admin.update_user(
        w.boss,
        UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    w.staff_holds(&[P::UserView, P::UserEdit])?;
    let reactivate = UserUpdate {
        is_active: Some(true),
        ..Default::default()
    };
    assert!(is_denied(w.mallory().update_user(w.boss, reactivate)));
    assert!(!w.admin.user(w.boss)?.is_active);
    Ok(())
}

#[test]
fn user_edit_still_changes_a_user_holding_no_more_than_the_editor() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::UserView, P::UserEdit, P::UserDelete])?;
    let peer = w.admin.create_user("peer", "peer password", false)?.id;
    let staff_group = w.admin.groups()?.into_iter().find(|g| g.name == "Staff");
    w.admin
        .set_group_member(staff_group.expect("Staff").id, peer, true)?;
    w.mallory().update_user(
        peer,
        UserUpdate {
            username: Some("peer2".into()),
            password: Some("new peer password".into()),
            ..Default::default()
        },
    )?;
    assert!(w.db.authenticate("peer2", "new peer password")?.is_some());
    w.mallory().delete_user(peer)?;
    Ok(())
}

#[test]
fn a_user_without_any_permission_still_sets_their_own_password() -> Result<()> {
    let w = world()?;
    w.mallory().set_password(w.mallory, "my new password")?;
    assert!(w.db.authenticate("mallory", "my new password")?.is_some());
    Ok(())
}

// ----- groups and roles stronger than the editor ----------------------------------------------

#[test]
fn group_edit_cannot_remove_a_member_from_a_group_holding_more() -> Result<()> {
    // Removing used to need only group_edit: its holder could strip every member of a
    // stronger group of what the group grants (a documented decision, since changed).
    let w = world()?;
    w.staff_holds(&[P::GroupView, P::GroupEdit, P::UserView])?;
    assert!(is_denied(w.mallory().set_group_member(
        w.bosses_group,
        w.boss,
        false
    )));
    assert_eq!(
        w.admin
            .group_members(w.bosses_group, PageRequest::ALL)?
            .items
            .iter()
            .map(|u| u.id)
            .collect::<Vec<_>>(),
        vec![w.boss]
    );
    Ok(())
}

#[test]
fn group_edit_still_removes_a_member_from_a_group_it_holds_everything_of() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::GroupView, P::GroupEdit, P::UserView])?;
    let helpers = w.admin.create_group("Helpers")?.id;
    let clerk = w.admin.create_user("clerk", "clerk password", false)?.id;
    w.admin.set_group_member(helpers, clerk, true)?;
    w.mallory().set_group_member(helpers, clerk, false)?;
    assert!(
        w.admin
            .group_members(helpers, PageRequest::ALL)?
            .items
            .is_empty()
    );
    Ok(())
}

#[test]
fn group_edit_and_group_delete_cannot_rename_or_delete_a_group_holding_more() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::GroupView, P::GroupEdit, P::GroupDelete])?;
    assert!(is_denied(
        w.mallory().rename_group(w.bosses_group, "Interns")
    ));
    assert!(is_denied(w.mallory().delete_group(w.bosses_group)));
    assert_eq!(w.admin.group(w.bosses_group)?.name, "Bosses");
    assert!(w.db.check(w.boss, P::UserEdit, role_ref(w.bosses)));
    Ok(())
}

#[test]
fn role_edit_and_role_delete_cannot_act_on_a_role_granting_more() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::RoleView, P::RoleEdit, P::RoleDelete, P::GroupView])?;
    let m = w.mallory();
    assert!(is_denied(m.rename_role(w.bosses, "Interns")));
    assert!(is_denied(m.set_role_group(w.bosses, w.bosses_group, false)));
    assert!(is_denied(m.delete_role(w.bosses)));
    assert_eq!(w.admin.role(w.bosses)?.label, "Bosses");
    assert_eq!(
        w.admin
            .role_groups(w.bosses, PageRequest::ALL)?
            .items
            .iter()
            .map(|g| g.id)
            .collect::<Vec<_>>(),
        vec![w.bosses_group]
    );
    Ok(())
}

#[test]
fn role_edit_still_renames_and_unlinks_a_role_it_holds_everything_of() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::RoleView, P::RoleEdit, P::RoleDelete, P::GroupView])?;
    let readers = w.admin.create_role("Readers")?.id;
    w.admin.grant_global(P::RoleView, readers)?;
    w.admin.set_role_group(readers, w.bosses_group, true)?;
    let m = w.mallory();
    m.rename_role(readers, "Viewers")?;
    m.set_role_group(readers, w.bosses_group, false)?;
    m.delete_role(readers)?;
    Ok(())
}

#[test]
fn acl_edit_cannot_revoke_or_delete_what_its_holder_does_not_hold_there() -> Result<()> {
    let w = world()?;
    let dt = w.admin.create_document_type("Contracts")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    for p in [P::DocumentTypeView, P::AclView, P::AclEdit] {
        w.admin.grant(p, w.staff, dt_ref)?;
    }
    w.admin.grant_global(P::RoleView, w.staff)?;
    let acl = w.admin.grant(P::DocumentDelete, w.bosses, dt_ref)?.acl;
    w.admin.grant(P::DocumentTypeView, w.bosses, dt_ref)?;
    let m = w.mallory();
    assert!(is_denied(m.revoke(P::DocumentDelete, w.bosses, dt_ref)));
    assert!(is_denied(m.delete_acl(dt_ref, acl.id)));
    // What Mallory holds there she may take away.
    m.revoke(P::DocumentTypeView, w.bosses, dt_ref)?;
    let left = w.admin.acl(dt_ref, acl.id)?.acl;
    assert_eq!(
        left.permissions.iter().collect::<Vec<_>>(),
        [P::DocumentDelete]
    );
    Ok(())
}

// ----- changing a document's type -------------------------------------------------------------

/// A secret type with one document holding a salary; a public type whose ACLs Mallory enjoys.
struct Types {
    secret_doc: DocumentId,
    public: docmeta_core::DocumentTypeId,
}

fn types(w: &World) -> Result<Types> {
    let a = &w.admin;
    let secret = a.create_document_type("Secret")?;
    let public = a.create_document_type("Public")?;
    let salary = a
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?
        .id;
    a.associate(secret.id, salary, false)?;
    let secret_doc = a
        .create_document(secret.id, "payroll", &[(salary, "73519")])?
        .document
        .id;
    let public_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, public.id.0);
    for p in [
        P::DocumentTypeView,
        P::DocumentView,
        P::DocumentMetadataView,
    ] {
        a.grant(p, w.staff, public_ref)?;
    }
    Ok(Types {
        secret_doc,
        public: public.id,
    })
}

#[test]
fn change_type_cannot_move_a_document_its_holder_cannot_view() -> Result<()> {
    // The reported attack: document_change_type on a document Mallory cannot view moved it into
    // a type whose ACLs she enjoys.
    let w = world()?;
    let t = types(&w)?;
    w.admin.grant(
        P::DocumentChangeType,
        w.staff,
        ObjectRef::new(ObjectKind::DOCUMENT, t.secret_doc.0),
    )?;
    w.admin.grant(
        P::DocumentCreate,
        w.staff,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.public.0),
    )?;
    let r = w.mallory().change_document_type(t.secret_doc, t.public);
    assert!(matches!(r, Err(Error::NotFound(_))), "{r:?}");
    assert!(w.mallory().document(t.secret_doc).is_err());
    assert_ne!(
        w.admin.document(t.secret_doc)?.document.document_type_id,
        t.public,
        "the document did not move"
    );
    Ok(())
}

#[test]
fn change_type_needs_creating_documents_of_the_new_type() -> Result<()> {
    let w = world()?;
    let t = types(&w)?;
    let doc = ObjectRef::new(ObjectKind::DOCUMENT, t.secret_doc.0);
    w.admin.grant(P::DocumentView, w.staff, doc)?;
    w.admin.grant(P::DocumentChangeType, w.staff, doc)?;
    assert!(is_denied(
        w.mallory().change_document_type(t.secret_doc, t.public)
    ));
    w.admin.grant(
        P::DocumentCreate,
        w.staff,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.public.0),
    )?;
    let moved = w
        .mallory()
        .change_document_type(t.secret_doc, t.public)?
        .document;
    assert_eq!(moved.document_type_id, t.public);
    Ok(())
}

#[test]
fn change_type_removes_the_values_the_new_type_lacks_with_their_events_and_triggers() -> Result<()>
{
    // Spec 2.4 rule 4 as api.md fixes it, and what the removals fire.
    let w = world()?;
    let a = &w.admin;
    let t = types(&w)?;
    let old_type = a.document(t.secret_doc)?.document.document_type_id;
    let flow = a.create_workflow("Payroll review", &[old_type])?.id;
    let open = a.create_workflow_state(flow, "open", true)?.id;
    let closed = a.create_workflow_state(flow, "closed", false)?.id;
    let close = a
        .create_workflow_transition(flow, "close", open, closed, "")?
        .id;
    a.add_workflow_trigger(flow, close, "document_metadata_removed")?;
    let code = a
        .create_metadata_type(MetadataTypeInput::new("code", "Code").default_value("NEW"))?
        .id;
    a.associate(t.public, code, true)?;
    // The new type's workflow, started by the change, sees the same events when the change
    // commits.
    let intake = a.create_workflow("Intake", &[t.public])?.id;
    let new = a.create_workflow_state(intake, "new", true)?.id;
    let sorted = a.create_workflow_state(intake, "sorted", false)?.id;
    let sort = a
        .create_workflow_transition(intake, "sort", new, sorted, "")?
        .id;
    a.add_workflow_trigger(intake, sort, "document_metadata_removed")?;
    // A document created now, so that the workflow runs on it.
    let salary = a.metadata_types()?.into_iter().find(|m| m.name == "salary");
    let doc = a
        .create_document(
            old_type,
            "payroll 2",
            &[(salary.expect("salary").id, "80000")],
        )?
        .document
        .id;
    let instance = |s: &Session, flow| -> Result<WorkflowInstance> {
        let mut found = s.workflow_instances(doc)?.into_iter();
        Ok(found.find(|i| i.workflow_id == flow).expect("an instance"))
    };
    assert_eq!(instance(a, flow)?.state_id, Some(open));
    let before = a
        .events(&EventQuery::default())?
        .first()
        .map(|e| e.event.id);
    a.change_document_type(doc, t.public)?;
    let values = a
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    assert_eq!(
        values.len(),
        1,
        "the salary is gone, the required code added"
    );
    assert_eq!(values[0].value, "NEW");
    let events = a.events(&EventQuery {
        after: before,
        oldest_first: true,
        ..Default::default()
    })?;
    let named: Vec<&str> = events.iter().map(|e| e.event.name.as_str()).collect();
    assert_eq!(
        named,
        [
            docmeta_core::Event::DOCUMENT_METADATA_REMOVED,
            docmeta_core::Event::DOCUMENT_METADATA_ADDED,
            docmeta_core::Event::DOCUMENT_TYPE_CHANGED,
            docmeta_core::Event::WORKFLOW_INSTANCE_TRANSITIONED,
            docmeta_core::Event::WORKFLOW_INSTANCE_TRANSITIONED,
        ],
        "{events:?}"
    );
    assert_eq!(
        instance(a, flow)?.state_id,
        Some(closed),
        "the removal fired the trigger of the old type's workflow"
    );
    assert_eq!(
        instance(a, intake)?.state_id,
        Some(sorted),
        "and of the new type's, started by the change"
    );
    Ok(())
}

// ----- event actors ---------------------------------------------------------------------------

#[test]
fn an_event_hides_an_actor_the_reader_may_not_view() -> Result<()> {
    let w = world()?;
    let dt = w.db.session(w.boss).create_document_type("Memos")?;
    w.admin.grant(
        P::DocumentTypeView,
        w.staff,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0),
    )?;
    let mine = |s: &Session| -> Result<Vec<docmeta_core::EventView>> {
        Ok(s.events(&EventQuery::default())?
            .into_iter()
            .filter(|v| v.event.name == docmeta_core::Event::DOCUMENT_TYPE_CREATED)
            .collect())
    };
    let seen = mine(&w.mallory())?;
    assert_eq!(seen.len(), 1, "the event itself is shown");
    assert_eq!(seen[0].event.actor, None, "{seen:?}");
    assert_eq!(seen[0].actor, None, "{seen:?}");
    // With user_view the actor is shown, as `Session::user` would show them.
    w.admin.grant_global(P::UserView, w.staff)?;
    let seen = mine(&w.mallory())?;
    assert_eq!(seen[0].event.actor, Some(w.boss));
    assert_eq!(
        seen[0].actor.as_ref().map(|a| a.username.as_str()),
        Some("boss")
    );
    Ok(())
}

#[test]
fn a_workflow_log_entry_hides_a_user_the_reader_may_not_view() -> Result<()> {
    let w = world()?;
    let a = &w.admin;
    let dt = a.create_document_type("Requests")?;
    let flow = a.create_workflow("Approval", &[dt.id])?.id;
    let open = a.create_workflow_state(flow, "open", true)?.id;
    let done = a.create_workflow_state(flow, "done", false)?.id;
    let finish = a
        .create_workflow_transition(flow, "finish", open, done, "")?
        .id;
    let doc = a.create_document(dt.id, "request", &[])?.document.id;
    let instance = a.workflow_instances(doc)?.remove(0).id;
    w.db.session(w.boss)
        .transition_workflow(doc, instance, finish, "approved")?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.id.0);
    a.grant(P::DocumentView, w.staff, dt_ref)?;
    a.grant(
        P::WorkflowTemplateView,
        w.staff,
        ObjectRef::new(ObjectKind::WORKFLOW, flow.0),
    )?;
    let by = |s: &Session| -> Result<Vec<Option<UserId>>> {
        Ok(s.workflow_log(doc, instance)?
            .into_iter()
            .filter(|e| e.transition_id == Some(finish))
            .map(|e| e.user_id)
            .collect())
    };
    assert_eq!(by(a)?, [Some(w.boss)]);
    assert_eq!(
        by(&w.mallory())?,
        [None],
        "boss is a user Mallory may not view"
    );
    w.admin.grant_global(P::UserView, w.staff)?;
    assert_eq!(by(&w.mallory())?, [Some(w.boss)]);
    Ok(())
}

#[test]
fn a_reader_sees_themselves_as_the_actor_of_their_own_events() -> Result<()> {
    let w = world()?;
    w.staff_holds(&[P::DocumentTypeCreate, P::DocumentTypeView])?;
    w.mallory().create_document_type("Notes")?;
    let seen = w.mallory().events(&EventQuery::default())?;
    let created = seen
        .iter()
        .find(|v| v.event.name == docmeta_core::Event::DOCUMENT_TYPE_CREATED)
        .expect("her event");
    assert_eq!(created.event.actor, Some(w.mallory));
    Ok(())
}

// ----- usernames that look alike --------------------------------------------------------------

fn conflict_field<T: std::fmt::Debug>(r: Result<T>) -> Option<String> {
    match r {
        Err(Error::Conflict { field, .. }) => Some(field),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn usernames_that_look_like_an_existing_one_are_refused() -> Result<()> {
    let db = db()?;
    let a = db.system();
    a.create_user("admin", "the password", false)?;
    for alike in ["\u{0430}dmin", "ADMIN", "adm\u{0131}n", "Admin"] {
        assert_eq!(
            conflict_field(a.create_user(alike, "another password", false)).as_deref(),
            Some("username"),
            "{alike}"
        );
    }
    assert_eq!(a.users()?.len(), 1);
    Ok(())
}

#[test]
fn renaming_to_a_name_that_looks_like_another_users_is_refused() -> Result<()> {
    let db = db()?;
    let a = db.system();
    a.create_user("admin", "the password", false)?;
    let eve = a.create_user("eve", "eve password", false)?.id;
    let rename = |name: &str| UserUpdate {
        username: Some(name.into()),
        ..Default::default()
    };
    assert_eq!(
        conflict_field(a.update_user(eve, rename("\u{0430}dmin"))).as_deref(),
        Some("username")
    );
    assert_eq!(a.user(eve)?.username, "eve");
    // A user may change the case of their own name: it only looks like their own.
    a.update_user(eve, rename("Eve"))?;
    assert_eq!(a.user(eve)?.username, "Eve");
    Ok(())
}

#[test]
fn logging_in_still_compares_the_exact_username() -> Result<()> {
    let db = db()?;
    db.system().create_user("admin", "the password", false)?;
    assert!(db.authenticate("admin", "the password")?.is_some());
    assert!(db.authenticate("ADMIN", "the password")?.is_none());
    assert!(db.authenticate("\u{0430}dmin", "the password")?.is_none());
    Ok(())
}

/// Turns the database at `path` (SQLite) back into one from before migration 8, with users
/// whose names collide added the old way.
fn downgrade_sqlite_with_colliding_users(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).expect("db");
    conn.execute_batch(
        "DROP INDEX users_by_username_key; ALTER TABLE users DROP COLUMN username_key; \
         DROP INDEX events_followed; ALTER TABLE events DROP COLUMN follow; \
         ALTER TABLE metadata_types DROP COLUMN value_type; DROP TABLE audit_checkpoints; DROP INDEX events_history; DROP INDEX events_unsealed; ALTER TABLE events DROP COLUMN hash; ALTER TABLE events DROP COLUMN seq; DROP TABLE device_creates; DROP INDEX cabinet_documents_by_document; DROP TABLE device_documents; DROP TABLE devices; DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhooks; \
         ALTER TABLE events DROP COLUMN changes; \
         DELETE FROM schema_version WHERE version >= 8;",
    )
    .expect("downgrade");
    copy_first_user_as(&conn, &["Admin", "\u{0430}dmin"]);
}

/// Inserts users named `names` with the first user's password hash (as an older docmeta
/// would have accepted them).
fn copy_first_user_as(conn: &rusqlite::Connection, names: &[&str]) {
    for name in names {
        conn.execute(
            "INSERT INTO users (username, password_hash, is_superuser, is_active, created) \
             SELECT ?1, password_hash, 0, 1, created FROM users ORDER BY id LIMIT 1",
            [name],
        )
        .expect("insert an old user");
    }
}

/// What must hold after migration 8 ran on a database with colliding users `admin`, `Admin`
/// and `аdmin` (all with the password "the password").
fn colliding_users_keep_working(db: &Docmeta) -> Result<()> {
    let a = db.system();
    for name in ["admin", "Admin", "\u{0430}dmin"] {
        let user = db.authenticate(name, "the password")?;
        assert!(user.is_some(), "{name} still logs in");
        // And may still change their password (their name is unchanged).
        let id = user.map(|u| u.id).expect("user");
        db.session(id).set_password(id, "a new password")?;
        assert!(db.authenticate(name, "a new password")?.is_some());
    }
    assert_eq!(
        conflict_field(a.create_user("ADMIN", "another password", false)).as_deref(),
        Some("username"),
        "a new collision is refused"
    );
    let admin2 = a.users()?.into_iter().find(|u| u.username == "Admin");
    let rename = UserUpdate {
        username: Some("ADMIN".into()),
        ..Default::default()
    };
    assert_eq!(
        conflict_field(a.update_user(admin2.expect("Admin").id, rename)).as_deref(),
        Some("username"),
        "renaming into another collision is refused"
    );
    Ok(())
}

#[test]
fn migration_8_fills_the_keys_and_existing_collisions_keep_working_on_sqlite() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let open = || {
        Docmeta::builder()
            .data_dir(dir.path())
            .config(docmeta_core::Config {
                password_hash_memory_kib: 64,
                password_hash_iterations: 1,
                ..Default::default()
            })
            .open()
    };
    let db = open()?;
    db.system().create_user("admin", "the password", false)?;
    drop(db);
    downgrade_sqlite_with_colliding_users(&dir.path().join("db.sqlite3"));
    let db = open()?;
    assert_eq!(
        db.store().schema_version()?.0,
        docmeta_core::store::SCHEMA_VERSION
    );
    colliding_users_keep_working(&db)
}

#[test]
fn migration_8_fills_the_keys_and_existing_collisions_keep_working_on_postgres() -> Result<()> {
    let Some(base) = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    };
    let name = format!("docmeta_reach_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .expect("drop the database");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create the database");
    let url = format!("{}/{name}", &base[..base.rfind('/').expect("a database")]);
    let open = || {
        Docmeta::builder()
            .postgres(&url)
            .config(docmeta_core::Config {
                password_hash_memory_kib: 64,
                password_hash_iterations: 1,
                ..Default::default()
            })
            .open()
    };
    let db = open()?;
    db.system().create_user("admin", "the password", false)?;
    drop(db);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(
            "DROP INDEX users_by_username_key; ALTER TABLE users DROP COLUMN username_key; \
             DROP INDEX events_followed; ALTER TABLE events DROP COLUMN follow; \
             ALTER TABLE metadata_types DROP COLUMN value_type; DROP TABLE audit_checkpoints; DROP INDEX events_history; DROP INDEX events_unsealed; ALTER TABLE events DROP COLUMN hash; ALTER TABLE events DROP COLUMN seq; DROP TABLE device_creates; DROP INDEX cabinet_documents_by_document; DROP TABLE device_documents; DROP TABLE devices; DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhooks; \
             ALTER TABLE events DROP COLUMN changes; \
             DELETE FROM schema_version WHERE version >= 8;",
        )
        .expect("downgrade");
    for old in ["Admin", "\u{0430}dmin"] {
        client
            .execute(
                "INSERT INTO users (username, password_hash, is_superuser, is_active, created) \
                 SELECT $1, password_hash, 0, 1, created FROM users ORDER BY id LIMIT 1",
                &[&old],
            )
            .expect("insert an old user");
    }
    drop(client);
    let db = open()?;
    colliding_users_keep_working(&db)?;
    drop(db);
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("drop");
    Ok(())
}
