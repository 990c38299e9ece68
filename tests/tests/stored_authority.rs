//! Authority borrowed through stored artifacts. Nothing a user stores
//! (a default, a lookup, a condition, an action, a trigger) may later cause an effect its author
//! could not cause directly when it runs: templates see what every one of their shapers and
//! their runner may view; changing when a workflow's actions run needs what they do; an action
//! does only what its author could do directly, each time it runs.
//!
//! Each test stages the attack as it was reported (a user holding one narrow permission,
//! an administrator or a task acting afterwards) and looks for the hidden value or the widened
//! access everywhere the attacker could read it.

use docmeta_core::{ActionKind, TransitionUpdate};
use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentTypeId, Error, MetadataTypeId, MetadataTypeInput,
    ObjectKind, ObjectRef, PageRequest, Permission as P, Result, RoleId, Session, UserId,
    UserUpdate, WorkflowId,
};

/// The salary only the administrator may view.
const SALARY: &str = "73519";
const PASSWORD: &str = "a long password 1";

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
fn user(system: &Session, name: &str) -> Result<(UserId, RoleId)> {
    let u = system.create_user(name, PASSWORD, false)?.id;
    let g = system.create_group(name)?.id;
    system.set_group_member(g, u, true)?;
    let r = system.create_role(name)?.id;
    system.set_role_group(r, g, true)?;
    Ok((u, r))
}

fn dt_ref(t: DocumentTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)
}
fn mt_ref(t: MetadataTypeId) -> ObjectRef {
    ObjectRef::new(ObjectKind::METADATA_TYPE, t.0)
}
fn wf_ref(w: WorkflowId) -> ObjectRef {
    ObjectRef::new(ObjectKind::WORKFLOW, w.0)
}

struct World {
    db: Docmeta,
    system: Session,
    /// An administrator: a superuser account, as on a server.
    root: Session,
    employee: DocumentTypeId,
    salary: MetadataTypeId,
    note: MetadataTypeId,
    eve: UserId,
    eve_role: RoleId,
    /// An employee whose salary is [`SALARY`].
    doc: DocumentId,
}

/// An `Employee` type with a `salary` only the administrator views and a `note` Eve may view
/// and redefine (`metadata.metadata_type_edit` on it, nothing more on metadata).
fn world() -> Result<World> {
    let db = db()?;
    let system = db.system();
    let root = db.session(system.create_user("root", PASSWORD, true)?.id);
    let employee = root.create_document_type("Employee")?.id;
    let salary = root
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?
        .id;
    let note = root
        .create_metadata_type(MetadataTypeInput::new("note", "Note"))?
        .id;
    root.associate(employee, salary, false)?;
    root.associate(employee, note, false)?;
    let (eve, eve_role) = user(&system, "eve")?;
    for p in [
        P::DocumentView,
        P::DocumentTypeView,
        P::DocumentMetadataView,
    ] {
        system.grant(p, eve_role, dt_ref(employee))?;
    }
    for p in [
        P::MetadataTypeView,
        P::MetadataTypeEdit,
        P::DocumentMetadataView,
    ] {
        system.grant(p, eve_role, mt_ref(note))?;
    }
    let doc = root
        .create_document(employee, "E-1", &[(salary, SALARY)])?
        .document
        .id;
    Ok(World {
        db,
        system,
        root,
        employee,
        salary,
        note,
        eve,
        eve_role,
        doc,
    })
}

/// Saves `t` with its default (or lookup) replaced, as a PATCH of that one field does.
fn set_template(
    s: &Session,
    t: MetadataTypeId,
    default: Option<&str>,
    lookup: Option<&str>,
) -> Result<()> {
    let mut input = MetadataTypeInput::from(&s.metadata_type(t)?);
    if let Some(d) = default {
        input.default = d.to_owned();
    }
    if let Some(l) = lookup {
        input.lookup = l.to_owned();
    }
    s.update_metadata_type(t, input).map(drop)
}

/// Every value of `name` Eve can read on the documents she sees.
fn values_eve_reads(w: &World, name: &str) -> Result<Vec<String>> {
    let eve = w.db.session(w.eve);
    let mut out = Vec::new();
    for d in eve.document_ids(None)? {
        out.extend(eve.metadata_value_of(d, name)?);
    }
    Ok(out)
}

fn assert_hidden(values: &[String]) {
    assert!(
        values.iter().all(|v| !v.contains(SALARY)),
        "the hidden salary leaked: {values:?}"
    );
}

#[test]
fn a_planted_default_does_not_read_what_its_planter_may_not_view() -> Result<()> {
    let w = world()?;
    let eve = w.db.session(w.eve);
    set_template(
        &eve,
        w.note,
        Some(
            "{{ document.metadata_value_of.salary }}|{% for m in document.metadata.all %}{{ m.value }};{% endfor %}",
        ),
        None,
    )?;
    // An administrator saves an empty value: the default renders for them, seeing no more than
    // Eve may.
    let m = w.root.add_document_metadata(w.doc, w.note, "")?;
    assert_hidden(&[m.value.value]);
    // A new employee of the administrator, then the type made required: the backfill task
    // renders for the administrator who saved the association.
    let other = w
        .root
        .create_document(w.employee, "E-2", &[(w.salary, SALARY)])?;
    let association = w
        .root
        .associations(w.employee, PageRequest::ALL)?
        .items
        .into_iter()
        .find(|a| a.association.metadata_type_id == w.note)
        .expect("note is associated");
    w.root
        .update_association(w.employee, association.association.id, true)?;
    w.db.run_pending_tasks()?;
    assert!(
        w.root
            .metadata_value_of(other.document.id, "note")?
            .is_some(),
        "backfilled"
    );
    // Required defaults of new documents too.
    w.root
        .create_document(w.employee, "E-3", &[(w.salary, SALARY)])?;
    let read = values_eve_reads(&w, "note")?;
    assert_eq!(read.len(), 3, "{read:?}");
    assert_hidden(&read);
    // The same through docmeta itself (the application): the default's shapers still bind it.
    w.system
        .create_document(w.employee, "E-4", &[(w.salary, SALARY)])?;
    assert_hidden(&values_eve_reads(&w, "note")?);
    Ok(())
}

#[test]
fn a_planted_lookup_does_not_read_what_its_planter_may_not_view() -> Result<()> {
    let w = world()?;
    let eve = w.db.session(w.eve);
    set_template(
        &eve,
        w.note,
        None,
        Some("{{ document.metadata_value_of.salary or 'hidden' }},low,high"),
    )?;
    let choices = w
        .root
        .lookup_choices(w.note, Some(w.doc))?
        .unwrap_or_default();
    assert_eq!(
        choices,
        ["hidden", "low", "high"],
        "the lookup read the salary"
    );
    let choices = w
        .root
        .document_lookup_choices(w.doc, w.note)?
        .unwrap_or_default();
    assert_eq!(choices, ["hidden", "low", "high"]);
    // Nor does it accept the salary as a choice (a one-bit oracle on every save).
    let err = w
        .root
        .add_document_metadata(w.doc, w.note, SALARY)
        .expect_err("not a choice");
    assert!(
        matches!(err, Error::Validation { ref field, .. } if field == "value"),
        "{err}"
    );
    w.root.add_document_metadata(w.doc, w.note, "low")?;
    Ok(())
}

#[test]
fn an_administrators_own_templates_keep_their_view_until_someone_else_changes_them() -> Result<()> {
    let w = world()?;
    let reads_salary = "{{ document.metadata_value_of.salary }}";
    let summary = w
        .root
        .create_metadata_type(
            MetadataTypeInput::new("summary", "Summary").default_value(reads_salary),
        )?
        .id;
    w.root.associate(w.employee, summary, false)?;
    w.system
        .grant(P::MetadataTypeEdit, w.eve_role, mt_ref(summary))?;
    w.system
        .grant(P::MetadataTypeView, w.eve_role, mt_ref(summary))?;
    let new_value = |label: &str| -> Result<String> {
        let d = w
            .root
            .create_document(w.employee, label, &[(w.salary, SALARY)])?
            .document;
        Ok(w.root.add_document_metadata(d.id, summary, "")?.value.value)
    };
    assert_eq!(new_value("A")?, SALARY, "the administrator's own default");
    // Eve renames it: she did not change the template, which keeps its view.
    let eve = w.db.session(w.eve);
    let mut input = MetadataTypeInput::from(&eve.metadata_type(summary)?);
    input.label = "Summary (renamed)".into();
    eve.update_metadata_type(summary, input)?;
    assert_eq!(new_value("B")?, SALARY);
    // She changes it (even to the same meaning): from now on it sees what she may.
    set_template(
        &eve,
        summary,
        Some("{{ document.metadata_value_of.salary }} "),
        None,
    )?;
    assert_ne!(new_value("C")?.trim(), SALARY);
    // The administrator writing it again does not wash her out ...
    set_template(&w.root, summary, Some(reads_salary), None)?;
    assert_ne!(new_value("D")?, SALARY);
    // ... clearing it and writing it again does.
    set_template(&w.root, summary, Some(""), None)?;
    set_template(&w.root, summary, Some(reads_salary), None)?;
    assert_eq!(new_value("E")?, SALARY);
    // A shaper who is deactivated sees nothing: nor does the template.
    let other_admin = w.system.create_user("admin2", PASSWORD, true)?.id;
    set_template(
        &w.db.session(other_admin),
        summary,
        Some(&format!("{reads_salary}!")),
        None,
    )?;
    assert_eq!(new_value("F")?, format!("{SALARY}!"));
    w.system.update_user(
        other_admin,
        UserUpdate {
            is_active: Some(false),
            ..UserUpdate::default()
        },
    )?;
    assert_ne!(new_value("G")?, format!("{SALARY}!"));
    Ok(())
}

/// A workflow bound to `types` whose `draft` (initial) → `done` transition `go` has
/// `condition`; returns it with its states and transition.
fn gate(
    s: &Session,
    label: &str,
    types: &[DocumentTypeId],
    condition: &str,
) -> Result<(
    WorkflowId,
    docmeta_core::WorkflowStateId,
    docmeta_core::WorkflowStateId,
    docmeta_core::WorkflowTransitionId,
)> {
    let w = s.create_workflow(label, types)?.id;
    let draft = s.create_workflow_state(w, "draft", true)?.id;
    let done = s.create_workflow_state(w, "done", false)?.id;
    let t = s
        .create_workflow_transition(w, "go", draft, done, condition)?
        .id;
    Ok((w, draft, done, t))
}

/// Lets Eve edit (and view) one workflow, and nothing else of workflows.
fn let_eve_edit(w: &World, flow: WorkflowId) -> Result<()> {
    for p in [P::WorkflowTemplateView, P::WorkflowTemplateEdit] {
        w.system.grant(p, w.eve_role, wf_ref(flow))?;
    }
    Ok(())
}

#[test]
fn a_rewritten_condition_renders_with_its_rewriters_view() -> Result<()> {
    let w = world()?;
    let (flow, draft, _, t) = gate(
        &w.root,
        "gate",
        &[w.employee],
        "{% if workflow_instance.document.metadata_value_of.note == 'ready' %}True{% endif %}",
    )?;
    w.root
        .add_workflow_trigger(flow, t, "document_metadata_edited")?;
    let_eve_edit(&w, flow)?;
    let eve = w.db.session(w.eve);
    // The workflow has no action, so changing it borrows no right: Eve may rename it and
    // rewrite the condition into a probe of the salary ...
    let probe = format!(
        "{{% if workflow_instance.document.metadata_value_of.salary == '{SALARY}' %}}True{{% endif %}}"
    );
    eve.update_workflow_transition(
        flow,
        t,
        TransitionUpdate {
            condition: Some(probe),
            ..TransitionUpdate::default()
        },
    )?;
    eve.update_workflow(flow, Some("gate (Eve's)"), None)?;
    // ... but it renders with no more than she may view: the administrator's edit fires the
    // trigger, and the instance stays where it was whatever the salary.
    let doc =
        w.root
            .create_document(w.employee, "E-2", &[(w.salary, SALARY), (w.note, "draft")])?;
    let note = w
        .root
        .document_metadata(doc.document.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    let note = note
        .iter()
        .find(|m| m.metadata_type_id == w.note)
        .expect("note");
    w.root
        .edit_document_metadata(doc.document.id, note.id, "changed", None)?;
    let instance = w.root.workflow_instances(doc.document.id)?.remove(0);
    assert_eq!(instance.state_id, Some(draft), "the probe saw the salary");
    // Nor does the administrator's own listing see through it.
    assert!(
        w.root
            .available_transitions(doc.document.id, instance.id)?
            .is_empty()
    );
    Ok(())
}

#[test]
fn rewiring_a_workflow_needs_the_rights_its_actions_exercise() -> Result<()> {
    let w = world()?;
    // A secret document type: Eve sees nothing of it.
    let secret = w.root.create_document_type("Secret")?.id;
    w.root.associate(secret, w.note, false)?;
    let (flow, draft, done, publish) = gate(&w.root, "publish", &[secret], "")?;
    w.root.create_workflow_action(
        flow,
        done,
        "let Eve's role see it",
        true,
        false,
        ActionKind::GrantDocumentAccess {
            role_id: w.eve_role,
            permission: P::DocumentView.key().to_owned(),
        },
    )?;
    w.root.create_workflow_transition(
        flow,
        "guarded",
        draft,
        done,
        "{% if workflow_instance.document.metadata_value_of.salary %}True{% endif %}",
    )?;
    let_eve_edit(&w, flow)?;
    let eve = w.db.session(w.eve);
    let denied = |r: Result<_>, what: &str| match r {
        Err(Error::PermissionDenied(_)) => {}
        other => panic!("{what}: {:?}", other.map(|_| ())),
    };
    // Every way of making the grant run on others' edits is refused.
    denied(
        eve.add_workflow_trigger(flow, publish, "document_metadata_edited")
            .map(drop),
        "a trigger",
    );
    denied(
        eve.create_workflow_transition(flow, "mine", draft, done, "")
            .map(drop),
        "a transition",
    );
    let guarded = eve
        .workflow_transitions(flow)?
        .into_iter()
        .find(|t| t.label == "guarded")
        .expect("guarded")
        .id;
    denied(
        eve.update_workflow_transition(
            flow,
            guarded,
            TransitionUpdate {
                condition: Some("True".into()),
                ..TransitionUpdate::default()
            },
        )
        .map(drop),
        "a condition",
    );
    denied(
        eve.update_workflow_transition(
            flow,
            publish,
            TransitionUpdate {
                origin: Some(done),
                destination: Some(draft),
                ..TransitionUpdate::default()
            },
        )
        .map(drop),
        "rewired states",
    );
    denied(
        eve.update_workflow_state(flow, done, None, Some(true))
            .map(drop),
        "an initial state",
    );
    denied(
        eve.create_workflow_state(flow, "extra", false).map(drop),
        "a state",
    );
    denied(eve.delete_workflow_transition(flow, publish), "a deletion");
    // Labels are inputs of the workflow's templates (`current_state.label`, `workflow.label`):
    // renaming is a change of the definition too.
    denied(
        eve.update_workflow_state(flow, done, Some("draft2"), None)
            .map(drop),
        "a state's label",
    );
    denied(
        eve.update_workflow(flow, Some("renamed"), None).map(drop),
        "the workflow's label",
    );
    // Changing nothing needs nothing.
    eve.update_workflow_state(flow, done, Some("done"), Some(false))?;
    assert!(
        w.root
            .workflow_transition(flow, publish)?
            .triggers
            .is_empty()
    );
    // An administrator edits a value of a secret document: nothing fires, Eve still sees
    // nothing of it.
    let doc = w.root.create_document(secret, "S-1", &[(w.note, "a")])?;
    let note = w
        .root
        .document_metadata(doc.document.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .remove(0);
    w.root
        .edit_document_metadata(doc.document.id, note.id, "b", None)?;
    assert!(matches!(
        eve.document(doc.document.id),
        Err(Error::NotFound(_))
    ));
    // The condition Eve could not rewrite still renders with its author's view.
    let instance = w.root.workflow_instances(doc.document.id)?.remove(0);
    assert_eq!(instance.state_id, Some(draft));
    Ok(())
}

#[test]
fn metadata_actions_need_the_metadata_rights_of_their_author() -> Result<()> {
    let w = world()?;
    let (editor, editor_role) = user(&w.system, "editor")?;
    for p in [
        P::WorkflowTemplateCreate,
        P::WorkflowTemplateEdit,
        P::WorkflowTemplateView,
        P::DocumentTypeView,
    ] {
        w.system.grant_global(p, editor_role)?;
    }
    w.system
        .grant(P::MetadataTypeView, editor_role, mt_ref(w.note))?;
    let s = w.db.session(editor);
    let flow = s.create_workflow("overwrite", &[w.employee])?.id;
    let start = s.create_workflow_state(flow, "start", true)?.id;
    for action in [
        ActionKind::EditMetadata {
            metadata_type_id: w.note,
            value: "overwritten".into(),
        },
        ActionKind::RemoveMetadata {
            metadata_type_ids: vec![w.note],
        },
        ActionKind::AddMetadata {
            metadata_type_ids: vec![w.note],
        },
    ] {
        let err = s
            .create_workflow_action(flow, start, "act", true, false, action.clone())
            .expect_err("no metadata rights");
        assert!(
            matches!(err, Error::PermissionDenied(_)),
            "{action:?}: {err}"
        );
    }
    assert!(
        s.workflow_actions(flow, start)?.is_empty(),
        "nothing stored"
    );
    let doc = w
        .root
        .create_document(w.employee, "E-2", &[(w.note, "original")])?
        .document;
    assert_eq!(
        w.root.metadata_value_of(doc.id, "note")?.as_deref(),
        Some("original")
    );
    Ok(())
}

#[test]
fn an_action_whose_author_lost_the_right_fails_instead_of_writing() -> Result<()> {
    let w = world()?;
    let (clerk, clerk_role) = user(&w.system, "clerk")?;
    for p in [
        P::DocumentView,
        P::DocumentTypeView,
        P::DocumentMetadataView,
        P::DocumentMetadataAdd,
        P::DocumentMetadataEdit,
    ] {
        w.system.grant(p, clerk_role, dt_ref(w.employee))?;
    }
    for p in [
        P::MetadataTypeView,
        P::DocumentMetadataView,
        P::DocumentMetadataAdd,
        P::DocumentMetadataEdit,
    ] {
        w.system.grant(p, clerk_role, mt_ref(w.note))?;
    }
    for p in [
        P::WorkflowTemplateCreate,
        P::WorkflowTemplateEdit,
        P::WorkflowTemplateView,
    ] {
        w.system.grant_global(p, clerk_role)?;
    }
    let s = w.db.session(clerk);
    let stamp = |critical: bool| -> Result<(WorkflowId, docmeta_core::WorkflowTransitionId)> {
        let label = if critical { "critical stamp" } else { "stamp" };
        let (flow, _, done, t) = gate(&s, label, &[w.employee], "")?;
        s.create_workflow_action(
            flow,
            done,
            label,
            true,
            critical,
            ActionKind::EditMetadata {
                metadata_type_id: w.note,
                value: format!("{label}ed"),
            },
        )?;
        Ok((flow, t))
    };
    let (plain, plain_go) = stamp(false)?;
    let (critical, critical_go) = stamp(true)?;
    let take = |doc: DocumentId, flow: WorkflowId, t| -> Result<()> {
        let instance = w
            .root
            .workflow_instances(doc)?
            .into_iter()
            .find(|i| i.workflow_id == flow)
            .expect("instance");
        w.root
            .transition_workflow(doc, instance.id, t, "")
            .map(drop)
    };
    // While the clerk holds the right, the action does what they could do.
    let doc = w
        .root
        .create_document(w.employee, "E-2", &[(w.note, "original")])?
        .document
        .id;
    take(doc, plain, plain_go)?;
    assert_eq!(
        w.root.metadata_value_of(doc, "note")?.as_deref(),
        Some("stamped")
    );
    // They lose it: the action fails, logged on the instance, and writes nothing.
    w.system
        .revoke(P::DocumentMetadataEdit, clerk_role, mt_ref(w.note))?;
    let doc = w
        .root
        .create_document(w.employee, "E-3", &[(w.note, "original")])?
        .document
        .id;
    take(doc, plain, plain_go)?;
    assert_eq!(
        w.root.metadata_value_of(doc, "note")?.as_deref(),
        Some("original")
    );
    let instance = w
        .root
        .workflow_instances(doc)?
        .into_iter()
        .find(|i| i.workflow_id == plain)
        .expect("instance");
    let log = w.root.workflow_log(doc, instance.id)?;
    assert!(
        log.iter().any(|e| e.error && e.comment.contains("stamp")),
        "{log:?}"
    );
    // A critical one refuses the whole transition.
    let err = take(doc, critical, critical_go).expect_err("critical action refused");
    assert!(matches!(err, Error::Validation { .. }), "{err}");
    assert_eq!(
        w.root.metadata_value_of(doc, "note")?.as_deref(),
        Some("original")
    );
    // A deactivated author may do nothing either, even with the right back.
    w.system
        .grant(P::DocumentMetadataEdit, clerk_role, mt_ref(w.note))?;
    w.system.update_user(
        clerk,
        UserUpdate {
            is_active: Some(false),
            ..UserUpdate::default()
        },
    )?;
    let doc = w
        .root
        .create_document(w.employee, "E-4", &[(w.note, "original")])?
        .document
        .id;
    take(doc, plain, plain_go)?;
    assert_eq!(
        w.root.metadata_value_of(doc, "note")?.as_deref(),
        Some("original")
    );
    Ok(())
}

#[path = "upgrade/template_shapers.rs"]
mod template_shapers;

#[test]
fn templates_stored_before_shapers_were_recorded_get_every_author_of_their_type() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let open = || {
        Docmeta::builder()
            .data_dir(dir.path())
            .config(Config {
                password_hash_memory_kib: 64,
                password_hash_iterations: 1,
                ..Config::default()
            })
            .worker(false)
            .open()
    };
    let staged = template_shapers::stage(&open()?)?;
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("db");
    conn.execute_batch(template_shapers::BACK_TO_SCHEMA_6)
        .expect("back to schema 6");
    drop(conn);
    template_shapers::check(&open()?, &staged)
}

#[test]
fn an_action_stored_before_authors_were_recorded_does_nothing() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let open = || {
        Docmeta::builder()
            .data_dir(dir.path())
            .config(Config {
                password_hash_memory_kib: 64,
                password_hash_iterations: 1,
                ..Config::default()
            })
            .worker(false)
            .open()
    };
    let (employee, note, flow, go) = {
        let db = open()?;
        let system = db.system();
        let employee = system.create_document_type("Employee")?.id;
        let note = system
            .create_metadata_type(MetadataTypeInput::new("note", "Note"))?
            .id;
        system.associate(employee, note, false)?;
        let (flow, _, done, go) = gate(&system, "stamp", &[employee], "")?;
        system.create_workflow_action(
            flow,
            done,
            "stamp",
            true,
            false,
            ActionKind::EditMetadata {
                metadata_type_id: note,
                value: "stamped".into(),
            },
        )?;
        (employee, note, flow, go)
    };
    // As a database from before schema 4 (which records authors) holds it: no author.
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("db");
    conn.execute_batch("UPDATE workflow_state_actions SET author_id = NULL")
        .expect("forget the author");
    drop(conn);
    let db = open()?;
    let system = db.system();
    let doc = system
        .create_document(employee, "E-1", &[(note, "original")])?
        .document
        .id;
    let instance = system.workflow_instances(doc)?.remove(0);
    assert_eq!(instance.workflow_id, flow);
    system.transition_workflow(doc, instance.id, go, "")?;
    assert_eq!(
        system.metadata_value_of(doc, "note")?.as_deref(),
        Some("original")
    );
    let log = system.workflow_log(doc, instance.id)?;
    assert!(
        log.iter()
            .any(|e| e.error && e.comment.contains("author is unknown")),
        "{log:?}"
    );
    Ok(())
}
