//! What each event says it changed (`Event::changes`): every family of event carries the fields
//! it changed with their values before and after; a reader sees those values only when it may
//! view them now, by the rule that shows them when read; a password never appears in any event;
//! events written before changes were recorded read as changing nothing; backups carry them.

use docmeta_core::{
    Config, Docmeta, DocumentId, Event, EventChange, EventQuery, EventView, MetadataTypeInput,
    ObjectKind, ObjectRef, PageRequest, Permission as P, Result, RoleId, Session, UserId,
    UserUpdate,
};

#[path = "upgrade/event_changes.rs"]
mod upgrade;

/// Cheap password hashing: these tests are about events, not Argon2 cost.
fn fast_hashing() -> Config {
    Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

/// An instance in memory whose tasks run only when told.
fn open() -> Result<Docmeta> {
    Docmeta::builder()
        .config(fast_hashing())
        .worker(false)
        .open()
}

/// An instance in the data directory `dir`, whose tasks run only when told.
fn open_in(dir: &std::path::Path) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .config(fast_hashing())
        .worker(false)
        .open()
}

fn change(field: &str, before: Option<&str>, after: Option<&str>) -> EventChange {
    EventChange::new(field, before.map(str::to_owned), after.map(str::to_owned))
}

/// What `f` answered, and the events it appended (oldest first), as docmeta itself sees them.
fn during<T>(db: &Docmeta, f: impl FnOnce() -> Result<T>) -> Result<(T, Vec<Event>)> {
    let last = db
        .events(&EventQuery {
            limit: Some(1),
            ..Default::default()
        })?
        .first()
        .map(|e| e.id);
    let out = f()?;
    let events = db.events(&EventQuery {
        after: last,
        oldest_first: true,
        limit: Some(1000),
        ..Default::default()
    })?;
    Ok((out, events))
}

/// Each event's name and changes.
fn summary(events: &[Event]) -> Vec<(&str, Vec<EventChange>)> {
    events
        .iter()
        .map(|e| (e.name.as_str(), e.changes.clone()))
        .collect()
}

/// The changes of the one event `f` appended.
fn only<T>(db: &Docmeta, name: &str, f: impl FnOnce() -> Result<T>) -> Result<Vec<EventChange>> {
    let (_, events) = during(db, f)?;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].name, name);
    Ok(events[0].changes.clone())
}

fn doc_ref(id: DocumentId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT, id.0)
}

// ----- every family of event -------------------------------------------------------------------

#[test]
fn metadata_value_events_carry_the_value_before_and_after() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?.id;
    let number = s
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?
        .id;
    let due = s
        .create_metadata_type(MetadataTypeInput::new("due", "Due").default_value("soon"))?
        .id;
    s.associate(dt, number, false)?;

    let (doc, events) = during(&db, || s.create_document(dt, "INV-1", &[(number, "A-1")]))?;
    let doc = doc.document.id;
    assert_eq!(
        summary(&events),
        [
            (
                Event::DOCUMENT_CREATED,
                vec![
                    change("label", None, Some("INV-1")),
                    change("document_type", None, Some(&dt.to_string())),
                ]
            ),
            (
                Event::DOCUMENT_METADATA_ADDED,
                vec![change("value", None, Some("A-1"))]
            ),
        ]
    );
    let value = s.document_metadata_details(doc)?.1[0].0.id;
    assert_eq!(
        only(&db, Event::DOCUMENT_METADATA_EDITED, || {
            s.edit_document_metadata(doc, value, "A-2", None)
        })?,
        [change("value", Some("A-1"), Some("A-2"))]
    );
    let (_, none) = during(&db, || s.edit_document_metadata(doc, value, "A-2", None))?;
    assert!(none.is_empty(), "the same value is no edit: {none:#?}");
    assert_eq!(
        only(&db, Event::DOCUMENT_METADATA_REMOVED, || {
            s.remove_document_metadata(doc, value)
        })?,
        [change("value", Some("A-2"), None)]
    );

    // A required association's backfill adds the default; removing the association removes it.
    let (a, _) = during(&db, || s.associate(dt, due, true))?;
    let (_, events) = during(&db, || db.run_pending_tasks())?;
    assert_eq!(
        summary(&events),
        [(
            Event::DOCUMENT_METADATA_ADDED,
            vec![change("value", None, Some("soon"))]
        )]
    );
    s.delete_association(dt, a.association.id)?;
    let (_, events) = during(&db, || db.run_pending_tasks())?;
    assert_eq!(
        summary(&events),
        [(
            Event::DOCUMENT_METADATA_REMOVED,
            vec![change("value", Some("soon"), None)]
        )]
    );

    // Values removed with their metadata type, and by a change of document type.
    s.add_document_metadata(doc, number, "B-1")?;
    let other = s.create_document_type("Receipt")?.id;
    let (_, events) = during(&db, || s.change_document_type(doc, other))?;
    assert_eq!(
        summary(&events),
        [
            (
                Event::DOCUMENT_METADATA_REMOVED,
                vec![change("value", Some("B-1"), None)]
            ),
            (
                Event::DOCUMENT_TYPE_CHANGED,
                vec![change(
                    "document_type",
                    Some(&dt.to_string()),
                    Some(&other.to_string())
                )]
            ),
        ]
    );
    s.associate(other, number, false)?;
    s.add_document_metadata(doc, number, "C-1")?;
    let (_, events) = during(&db, || s.delete_metadata_type(number))?;
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
            Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
            Event::DOCUMENT_METADATA_REMOVED,
            Event::METADATA_TYPE_DELETED,
        ]
    );
    assert_eq!(events[0].changes, [change("required", Some("false"), None)]);
    assert_eq!(events[2].changes, [change("value", Some("C-1"), None)]);
    Ok(())
}

#[test]
fn metadata_type_events_carry_every_field_that_changed() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let (t, events) = during(&db, || {
        s.create_metadata_type(MetadataTypeInput::new("due", "Due date").default_value("soon"))
    })?;
    let created = [
        ("name", "due"),
        ("label", "Due date"),
        ("default", "soon"),
        ("lookup", ""),
        ("validation", ""),
        ("validation_arguments", ""),
        ("parser", ""),
        ("parser_arguments", ""),
        ("value_type", "text"),
    ];
    assert_eq!(
        summary(&events),
        [(
            Event::METADATA_TYPE_CREATED,
            created
                .iter()
                .map(|(f, v)| change(f, None, Some(v)))
                .collect()
        )]
    );
    let mut input = MetadataTypeInput::from(&t);
    input.label = "Due".into();
    input.lookup = "soon,later".into();
    assert_eq!(
        only(&db, Event::METADATA_TYPE_EDITED, || {
            s.update_metadata_type(t.id, input.clone())
        })?,
        [
            change("label", Some("Due date"), Some("Due")),
            change("lookup", Some(""), Some("soon,later")),
        ]
    );
    let deleted = only(&db, Event::METADATA_TYPE_DELETED, || {
        s.delete_metadata_type(t.id)
    })?;
    assert_eq!(deleted.len(), 9);
    assert_eq!(deleted[1], change("label", Some("Due"), None));
    assert_eq!(deleted[3], change("lookup", Some("soon,later"), None));
    assert_eq!(deleted[8], change("value_type", Some("text"), None));
    Ok(())
}

#[test]
fn document_type_association_and_document_events_carry_their_fields() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let (dt, events) = during(&db, || s.create_document_type("Invoice"))?;
    assert_eq!(
        summary(&events),
        [(
            Event::DOCUMENT_TYPE_CREATED,
            vec![change("label", None, Some("Invoice"))]
        )]
    );
    assert_eq!(
        only(&db, Event::DOCUMENT_TYPE_EDITED, || {
            s.update_document_type(dt.id, "Bill")
        })?,
        [change("label", Some("Invoice"), Some("Bill"))]
    );
    let mt = s
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?
        .id;
    let (a, events) = during(&db, || s.associate(dt.id, mt, false))?;
    assert_eq!(
        summary(&events),
        [(
            Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
            vec![change("required", None, Some("false"))]
        )]
    );
    let a = a.association.id;
    assert_eq!(
        only(&db, Event::METADATA_TYPE_RELATIONSHIP_UPDATED, || {
            s.update_association(dt.id, a, true)
        })?,
        [change("required", Some("false"), Some("true"))]
    );
    assert_eq!(
        only(&db, Event::METADATA_TYPE_RELATIONSHIP_UPDATED, || {
            s.delete_association(dt.id, a)
        })?,
        [change("required", Some("true"), None)]
    );
    db.run_pending_tasks()?;

    let doc = s.create_document(dt.id, "INV-1", &[])?.document.id;
    assert_eq!(
        only(&db, Event::DOCUMENT_EDITED, || s
            .update_document(doc, "INV-2"))?,
        [change("label", Some("INV-1"), Some("INV-2"))]
    );
    let (_, events) = during(&db, || s.delete_document(doc))?;
    assert_eq!(
        summary(&events),
        [(
            Event::DOCUMENT_DELETED,
            vec![
                change("label", Some("INV-2"), None),
                change("document_type", Some(&dt.id.to_string()), None),
            ]
        )]
    );
    assert_eq!(
        only(&db, Event::DOCUMENT_TYPE_DELETED, || {
            s.delete_document_type(dt.id)
        })?,
        [change("label", Some("Bill"), None)]
    );
    Ok(())
}

#[test]
fn user_group_role_and_membership_events_carry_their_fields() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let (ann, events) = during(&db, || s.create_user("ann", "a long password 1", false))?;
    assert_eq!(
        summary(&events),
        [(
            Event::USER_EDITED,
            vec![
                change("username", None, Some("ann")),
                change("is_superuser", None, Some("false")),
                change("is_active", None, Some("true")),
            ]
        )]
    );
    assert_eq!(
        only(&db, Event::USER_EDITED, || {
            s.update_user(
                ann.id,
                UserUpdate {
                    username: Some("anne".into()),
                    is_active: Some(false),
                    is_superuser: Some(false),
                    ..Default::default()
                },
            )
        })?,
        [
            change("username", Some("ann"), Some("anne")),
            change("is_active", Some("true"), Some("false")),
        ]
    );

    let (g, events) = during(&db, || s.create_group("Clerks"))?;
    assert_eq!(
        summary(&events),
        [(
            Event::GROUP_EDITED,
            vec![change("name", None, Some("Clerks"))]
        )]
    );
    assert_eq!(
        only(&db, Event::GROUP_EDITED, || s.rename_group(g.id, "Staff"))?,
        [change("name", Some("Clerks"), Some("Staff"))]
    );
    assert_eq!(
        only(&db, Event::GROUP_EDITED, || s
            .set_group_member(g.id, ann.id, true))?,
        [change("member", Some("false"), Some("true"))]
    );
    let (_, none) = during(&db, || s.set_group_member(g.id, ann.id, true))?;
    assert!(none.is_empty(), "already a member: {none:#?}");

    let (r, events) = during(&db, || s.create_role("Clerk"))?;
    assert_eq!(
        summary(&events),
        [(
            Event::ROLE_EDITED,
            vec![change("label", None, Some("Clerk"))]
        )]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s.rename_role(r.id, "Teller"))?,
        [change("label", Some("Clerk"), Some("Teller"))]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s
            .set_role_group(r.id, g.id, true))?,
        [change("assigned", Some("false"), Some("true"))]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s
            .grant_global(P::UserView, r.id))?,
        [change(
            "permissions",
            Some(""),
            Some("user_management.user_view")
        )]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s
            .grant_global(P::GroupView, r.id))?,
        [change(
            "permissions",
            Some("user_management.user_view"),
            Some("user_management.group_view,user_management.user_view")
        )]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s
            .revoke_global(P::UserView, r.id))?,
        [change(
            "permissions",
            Some("user_management.group_view,user_management.user_view"),
            Some("user_management.group_view")
        )]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s
            .set_role_group(r.id, g.id, false))?,
        [change("assigned", Some("true"), Some("false"))]
    );
    assert_eq!(
        only(&db, Event::ROLE_EDITED, || s.delete_role(r.id))?,
        [change("label", Some("Teller"), None)]
    );
    assert_eq!(
        only(&db, Event::GROUP_EDITED, || s
            .set_group_member(g.id, ann.id, false))?,
        [change("member", Some("true"), Some("false"))]
    );
    assert_eq!(
        only(&db, Event::GROUP_EDITED, || s.delete_group(g.id))?,
        [change("name", Some("Staff"), None)]
    );
    assert_eq!(
        only(&db, Event::USER_EDITED, || s.delete_user(ann.id))?,
        [
            change("username", Some("anne"), None),
            change("is_superuser", Some("false"), None),
            change("is_active", Some("false"), None),
        ]
    );
    Ok(())
}

#[test]
fn acl_events_carry_the_permission_keys_before_and_after() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?.id;
    let doc = doc_ref(s.create_document(dt, "INV-1", &[])?.document.id);
    let role = s.create_role("Clerk")?.id;
    let (_, events) = during(&db, || s.create_acl(doc, role))?;
    assert_eq!(
        summary(&events),
        [(
            Event::ACL_CREATED,
            vec![change("permissions", None, Some(""))]
        )]
    );
    assert_eq!(
        only(&db, Event::ACL_EDITED, || s.grant(
            P::DocumentView,
            role,
            doc
        ))?,
        [change(
            "permissions",
            Some(""),
            Some("documents.document_view")
        )]
    );
    assert_eq!(
        only(&db, Event::ACL_EDITED, || s.grant(
            P::DocumentEdit,
            role,
            doc
        ))?,
        [change(
            "permissions",
            Some("documents.document_view"),
            Some("documents.document_edit,documents.document_view")
        )]
    );
    assert_eq!(
        only(&db, Event::ACL_EDITED, || s.revoke(
            P::DocumentEdit,
            role,
            doc
        ))?,
        [change(
            "permissions",
            Some("documents.document_edit,documents.document_view"),
            Some("documents.document_view")
        )]
    );
    // The last permission revoked deletes the ACL.
    let (_, events) = during(&db, || s.revoke(P::DocumentView, role, doc))?;
    assert_eq!(
        summary(&events),
        [
            (
                Event::ACL_EDITED,
                vec![change(
                    "permissions",
                    Some("documents.document_view"),
                    Some("")
                )]
            ),
            (
                Event::ACL_DELETED,
                vec![change("permissions", Some(""), None)]
            ),
        ]
    );
    // A grant on an object without an ACL for the role creates it first.
    let (_, events) = during(&db, || s.grant(P::DocumentEdit, role, doc))?;
    assert_eq!(
        summary(&events),
        [
            (
                Event::ACL_CREATED,
                vec![change("permissions", None, Some(""))]
            ),
            (
                Event::ACL_EDITED,
                vec![change(
                    "permissions",
                    Some(""),
                    Some("documents.document_edit")
                )]
            ),
        ]
    );
    let acl = s.acls(doc, PageRequest::ALL)?.items[0].acl.id;
    assert_eq!(
        only(&db, Event::ACL_DELETED, || s.delete_acl(doc, acl))?,
        [change("permissions", Some("documents.document_edit"), None)]
    );
    Ok(())
}

#[test]
fn cabinet_and_workflow_events_carry_their_fields() -> Result<()> {
    let db = open()?;
    let s = db.system();
    let (root, events) = during(&db, || s.create_cabinet("Archive", None))?;
    assert_eq!(
        summary(&events),
        [(
            Event::CABINET_EDITED,
            vec![change("label", None, Some("Archive"))]
        )]
    );
    let (child, events) = during(&db, || s.create_cabinet("2025", Some(root.id)))?;
    assert_eq!(
        summary(&events),
        [(
            Event::CABINET_EDITED,
            vec![
                change("label", None, Some("2025")),
                change("parent", None, Some(&root.id.to_string())),
            ]
        )]
    );
    assert_eq!(
        only(&db, Event::CABINET_EDITED, || s
            .rename_cabinet(child.id, "2026"))?,
        [change("label", Some("2025"), Some("2026"))]
    );
    let dt = s.create_document_type("Invoice")?.id;
    let flow = s.create_workflow("Approval", &[dt])?.id;
    let draft = s.create_workflow_state(flow, "draft", true)?.id;
    let done = s.create_workflow_state(flow, "done", false)?.id;
    let go = s
        .create_workflow_transition(flow, "approve", draft, done, "")?
        .id;
    let doc = s.create_document(dt, "INV-1", &[])?.document.id;
    assert_eq!(
        only(&db, Event::CABINET_EDITED, || {
            s.set_cabinet_document(child.id, doc, true)
        })?,
        [change("member", Some("false"), Some("true"))]
    );
    assert_eq!(
        only(&db, Event::CABINET_EDITED, || {
            s.set_cabinet_document(child.id, doc, false)
        })?,
        [change("member", Some("true"), Some("false"))]
    );
    let instance = s.workflow_instances(doc)?[0].id;
    assert_eq!(
        only(&db, Event::WORKFLOW_INSTANCE_TRANSITIONED, || {
            s.transition_workflow(doc, instance, go, "ok")
        })?,
        [change(
            "state",
            Some(&draft.to_string()),
            Some(&done.to_string())
        )]
    );
    let (_, events) = during(&db, || s.delete_cabinet(root.id))?;
    assert_eq!(
        summary(&events),
        [(
            Event::CABINET_EDITED,
            vec![change("label", Some("Archive"), None)]
        )]
    );
    Ok(())
}

// ----- who sees what -------------------------------------------------------------------------

/// `ann`, holding the role `Clerk` (no permission yet) through her group.
struct Reader {
    db: Docmeta,
    ann: UserId,
    clerk: RoleId,
}

fn reader() -> Result<Reader> {
    let db = open()?;
    let s = db.system();
    let ann = s.create_user("ann", "a long password 1", false)?.id;
    let group = s.create_group("Clerks")?.id;
    s.set_group_member(group, ann, true)?;
    let clerk = s.create_role("Clerk")?.id;
    s.set_role_group(clerk, group, true)?;
    Ok(Reader { db, ann, clerk })
}

impl Reader {
    fn ann(&self) -> Session {
        self.db.session(self.ann)
    }
}

const DOC: &str = "documents.document";
const GROUP: &str = "user_management.group";

/// The events `s` is shown named `name` about the target `kind` `id`, oldest first.
fn shown(s: &Session, name: &str, (kind, id): (&str, i64)) -> Result<Vec<EventView>> {
    let mut events = s.events(&EventQuery {
        limit: Some(1000),
        ..Default::default()
    })?;
    events
        .retain(|e| e.event.name == name && e.event.target.kind == kind && e.event.target.id == id);
    events.reverse();
    Ok(events)
}

#[test]
fn a_value_is_shown_only_to_readers_who_may_view_it_now() -> Result<()> {
    let w = reader()?;
    let s = w.db.system();
    let dt = s.create_document_type("Employee")?.id;
    let note = s
        .create_metadata_type(MetadataTypeInput::new("note", "Note"))?
        .id;
    let salary = s
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?
        .id;
    s.associate(dt, note, false)?;
    s.associate(dt, salary, false)?;
    let doc = s
        .create_document(dt, "E-1", &[(note, "friendly"), (salary, "73519")])?
        .document
        .id;
    let value = s
        .document_metadata_details(doc)?
        .1
        .into_iter()
        .find(|(m, _)| m.metadata_type_id == salary)
        .map(|(m, _)| m.id)
        .expect("salary");
    s.edit_document_metadata(doc, value, "80000", None)?;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.0);
    s.grant(P::DocumentView, w.clerk, dt_ref)?;
    s.grant(P::DocumentMetadataView, w.clerk, dt_ref)?;
    s.grant(
        P::DocumentMetadataView,
        w.clerk,
        ObjectRef::new(ObjectKind::METADATA_TYPE, note.0),
    )?;

    // Ann sees every event of the document, the note's value, and no salary.
    let ann = w.ann();
    let added = shown(&ann, Event::DOCUMENT_METADATA_ADDED, (DOC, doc.0))?;
    assert_eq!(added.len(), 2);
    assert_eq!(
        added[0].event.changes,
        [change("value", None, Some("friendly"))]
    );
    assert_eq!(added[1].event.changes, [change("value", None, None)]);
    let edited = shown(&ann, Event::DOCUMENT_METADATA_EDITED, (DOC, doc.0))?;
    assert_eq!(edited.len(), 1, "the event is shown");
    assert_eq!(edited[0].event.changes, [change("value", None, None)]);
    let text = format!("{:?}", ann.events(&EventQuery::default())?);
    assert!(
        !text.contains("73519") && !text.contains("80000"),
        "a hidden value leaked: {text}"
    );
    // The document's own events are Ann's to read whole.
    let created = shown(&ann, Event::DOCUMENT_CREATED, (DOC, doc.0))?;
    assert_eq!(
        created[0].event.changes[0],
        change("label", None, Some("E-1"))
    );

    // Granted view on the salary's values, she sees them, on the events already written too.
    s.grant(
        P::DocumentMetadataView,
        w.clerk,
        ObjectRef::new(ObjectKind::METADATA_TYPE, salary.0),
    )?;
    let edited = shown(&ann, Event::DOCUMENT_METADATA_EDITED, (DOC, doc.0))?;
    assert_eq!(
        edited[0].event.changes,
        [change("value", Some("73519"), Some("80000"))]
    );
    // Viewing a metadata type's values needs no view of the type itself, as listing them.
    assert!(
        edited[0].event.action_object.is_none(),
        "without metadata_type_view the type is not named"
    );
    assert_eq!(
        ann.metadata_value(doc, value)?.value.value,
        "80000",
        "the rule that lists the value"
    );

    // Without view on the document's metadata, no value is shown at all.
    s.revoke(P::DocumentMetadataView, w.clerk, dt_ref)?;
    for e in shown(&ann, Event::DOCUMENT_METADATA_ADDED, (DOC, doc.0))? {
        assert_eq!(e.event.changes, [change("value", None, None)]);
    }
    Ok(())
}

#[test]
fn acl_permissions_are_shown_to_readers_of_the_acls_and_links_with_their_second_object()
-> Result<()> {
    let w = reader()?;
    let s = w.db.system();
    let dt = s.create_document_type("Invoice")?.id;
    let dt_ref = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.0);
    let doc = s.create_document(dt, "INV-1", &[])?.document.id;
    let other = s.create_role("Auditor")?.id;
    s.grant(P::DocumentView, w.clerk, dt_ref)?;
    s.grant(P::DocumentEdit, other, doc_ref(doc))?;

    let ann = w.ann();
    let edited = shown(&ann, Event::ACL_EDITED, (DOC, doc.0))?;
    assert_eq!(edited.len(), 1, "the event about the document is shown");
    assert_eq!(edited[0].event.changes, [change("permissions", None, None)]);
    s.grant(P::AclView, w.clerk, dt_ref)?;
    let edited = shown(&ann, Event::ACL_EDITED, (DOC, doc.0))?;
    assert_eq!(
        edited[0].event.changes,
        [change(
            "permissions",
            Some(""),
            Some("documents.document_edit")
        )]
    );

    // A group's member: named by the event only to who may view that user, and so is the
    // change of membership.
    let bob = s.create_user("bob", "a long password 1", false)?.id;
    let staff = s.create_group("Staff")?.id;
    s.set_group_member(staff, bob, true)?;
    s.grant_global(P::GroupView, w.clerk)?;
    let events = shown(&ann, Event::GROUP_EDITED, (GROUP, staff.0))?;
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0].event.changes,
        [change("name", None, Some("Staff"))]
    );
    assert!(events[1].event.action_object.is_none());
    assert_eq!(events[1].event.changes, [change("member", None, None)]);
    s.grant_global(P::UserView, w.clerk)?;
    let events = shown(&ann, Event::GROUP_EDITED, (GROUP, staff.0))?;
    assert_eq!(
        events[1].event.action_object.as_ref().map(|o| o.id),
        Some(bob.0)
    );
    assert_eq!(
        events[1].event.changes,
        [change("member", Some("false"), Some("true"))]
    );
    Ok(())
}

#[test]
fn superusers_and_docmeta_itself_see_every_change() -> Result<()> {
    let w = reader()?;
    let s = w.db.system();
    let root = s.create_user("root", "a long password 1", true)?.id;
    let dt = s.create_document_type("Employee")?.id;
    let salary = s
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?
        .id;
    s.associate(dt, salary, false)?;
    let doc = s
        .create_document(dt, "E-1", &[(salary, "73519")])?
        .document
        .id;
    for reader in [w.db.session(root), s] {
        let added = shown(&reader, Event::DOCUMENT_METADATA_ADDED, (DOC, doc.0))?;
        assert_eq!(
            added[0].event.changes,
            [change("value", None, Some("73519"))]
        );
    }
    Ok(())
}

// ----- passwords -------------------------------------------------------------------------------

#[test]
fn a_password_never_appears_in_any_event() -> Result<()> {
    const CANARIES: [&str; 4] = [
        "cnry-first-password",
        "cnry-second-password",
        "cnry-third-password",
        "cnry-root-password",
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open_in(dir.path())?;
    let s = db.system();
    let ann = s.create_user("ann", CANARIES[0], false)?.id;
    assert!(
        only(&db, Event::USER_EDITED, || s.set_password(ann, CANARIES[1]))?.is_empty(),
        "a password change changes no field an event shows"
    );
    let changes = only(&db, Event::USER_EDITED, || {
        s.update_user(
            ann,
            UserUpdate {
                username: Some("anne".into()),
                password: Some(CANARIES[2].into()),
                ..Default::default()
            },
        )
    })?;
    assert_eq!(changes, [change("username", Some("ann"), Some("anne"))]);
    let root = s.create_user("root", CANARIES[3], true)?.id;
    db.session(ann).set_password(ann, "cnry-own-password")?;
    db.session(root).set_password(ann, "cnry-reset-password")?;

    let mut texts = vec![format!(
        "{:?}",
        db.events(&EventQuery {
            limit: Some(1000),
            ..Default::default()
        })?
    )];
    for reader in [db.session(root), db.session(ann), s] {
        texts.push(format!(
            "{:?}",
            reader.events(&EventQuery {
                limit: Some(1000),
                ..Default::default()
            })?
        ));
    }
    drop(db);
    // And the stored rows, every column.
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("db");
    let mut stmt = conn.prepare("SELECT * FROM events").expect("select");
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect::<std::result::Result<Vec<_>, _>>()
        })
        .expect("rows");
    for row in rows {
        texts.push(row.expect("row").join(", "));
    }
    assert!(texts.iter().any(|t| t.contains("anne")), "events were read");
    for text in &texts {
        for canary in CANARIES
            .iter()
            .chain(&["cnry-own-password", "cnry-reset-password"])
        {
            assert!(!text.contains(canary), "{canary} in an event: {text}");
        }
        assert!(
            !text.contains("argon2"),
            "a password hash in an event: {text}"
        );
        assert!(
            !text.contains("password"),
            "a password field in an event: {text}"
        );
    }
    Ok(())
}

// ----- storage ---------------------------------------------------------------------------------

#[test]
fn events_written_before_changes_were_recorded_read_as_changing_nothing() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let staged = upgrade::stage(&open_in(dir.path())?)?;
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("db");
    conn.execute_batch(upgrade::BACK_TO_SCHEMA_9)
        .expect("back to schema 9");
    drop(conn);
    let db = open_in(dir.path())?;
    assert_eq!(
        db.store().schema_version()?.0,
        docmeta_core::store::SCHEMA_VERSION
    );
    upgrade::check(&db, &staged)
}

#[test]
fn a_backup_carries_every_change_to_the_restored_instance() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open_in(&dir.path().join("a"))?;
    let s = db.system();
    let dt = s.create_document_type("Invoice")?.id;
    let number = s
        .create_metadata_type(MetadataTypeInput::new("number", "Number"))?
        .id;
    s.associate(dt, number, false)?;
    let doc = s
        .create_document(dt, "INV-1", &[(number, "A-1")])?
        .document
        .id;
    s.update_document(doc, "INV-2")?;
    let all = EventQuery {
        limit: Some(1000),
        ..Default::default()
    };
    let before = db.events(&all)?;
    let archive = dir.path().join("backup.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    drop(s);
    drop(db);
    let target = dir.path().join("b");
    docmeta_core::restore(&[archive], &target, None)?;
    let after = open_in(&target)?.events(&all)?;
    assert_eq!(after, before);
    assert!(
        after.iter().any(|e| e
            .changes
            .contains(&change("label", Some("INV-1"), Some("INV-2")))),
        "{after:#?}"
    );
    Ok(())
}
