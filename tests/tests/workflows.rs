//! Workflows (spec 4.5, 6, 5.3): an invoice workflow driven only by metadata edits
//! through triggers and conditions, actions (metadata, access), failures logged, bounded trigger
//! chains, ACL inheritance from workflow to instance to log.

use docmeta_core::WorkflowTransitionId;
use docmeta_core::{ActionKind, MAX_WORKFLOW_CHAIN, WorkflowInstance};
use docmeta_core::{
    Config, Docmeta, DocumentId, Error, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission, Result, RoleId, Session, UserId,
};

const V: &str = "svc.apps.metadata.metadata_validators.";

struct Invoice {
    db: Docmeta,
    admin: Session,
    invoice_type: docmeta_core::DocumentTypeId,
    amount: MetadataTypeId,
    status: MetadataTypeId,
    approved_amount: MetadataTypeId,
    reference: MetadataTypeId,
    workflow: docmeta_core::WorkflowId,
    submit: WorkflowTransitionId,
    approve: WorkflowTransitionId,
    auditors: RoleId,
    auditor: UserId,
}

fn db() -> Result<Docmeta> {
    Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .open()
}

/// draft (initial) --submit--> review --approve--> approved. `submit` fires when an amount is
/// added or edited; `approve` when the status is edited to "approved". Entering `approved` copies
/// the amount (a value template through the pipeline) and grants the auditors view access.
fn invoice_workflow() -> Result<Invoice> {
    let db = db()?;
    let admin = db.system();
    let invoice_type = admin.create_document_type("Invoice")?.id;
    let mt = |name: &str| {
        admin
            .create_metadata_type(MetadataTypeInput::new(name, name))
            .map(|t| t.id)
    };
    let amount = mt("amount")?;
    let status = mt("status")?;
    let approved_amount = mt("approved_amount")?;
    let reference = admin
        .create_metadata_type(MetadataTypeInput::new("reference", "Reference").validation(
            format!("{V}RegularExpressionValidator"),
            "pattern: 'REF-[0-9]+'",
        ))?
        .id;
    for t in [amount, status, approved_amount, reference] {
        admin.associate(invoice_type, t, false)?;
    }
    let workflow = admin
        .create_workflow("Invoice approval", &[invoice_type])?
        .id;
    let draft = admin.create_workflow_state(workflow, "draft", true)?.id;
    let review = admin.create_workflow_state(workflow, "review", false)?.id;
    let approved = admin.create_workflow_state(workflow, "approved", false)?.id;
    let submit = admin
        .create_workflow_transition(
            workflow,
            "submit",
            draft,
            review,
            "{% if workflow_instance.document.metadata_value_of.amount %}True{% endif %}",
        )?
        .id;
    let approve = admin
        .create_workflow_transition(
            workflow,
            "approve",
            review,
            approved,
            "{% for m in workflow_instance.document.metadata.all %}{% if m.metadata_type.name == 'status' and m.value == 'approved' %}True{% endif %}{% endfor %}",
        )?
        .id;
    admin.add_workflow_trigger(workflow, submit, "document_metadata_added")?;
    admin.add_workflow_trigger(workflow, submit, "document_metadata_edited")?;
    admin.add_workflow_trigger(workflow, approve, "metadata.document_metadata_edited")?;
    admin.create_workflow_action(
        workflow,
        draft,
        "add the status",
        true,
        false,
        ActionKind::AddMetadata {
            metadata_type_ids: vec![status],
        },
    )?;
    admin.create_workflow_action(
        workflow,
        approved,
        "copy the amount",
        true,
        false,
        ActionKind::EditMetadata {
            metadata_type_id: approved_amount,
            value: "{{ workflow_instance.document.metadata_value_of.amount }} ({{ workflow_instance.current_state.label }})".into(),
        },
    )?;
    let auditors = admin.create_role("Auditors")?.id;
    admin.create_workflow_action(
        workflow,
        approved,
        "let the auditors see it",
        true,
        false,
        ActionKind::GrantDocumentAccess {
            role_id: auditors,
            permission: "documents.document_view".into(),
        },
    )?;
    let auditor = admin.create_user("audrey", "a long password", false)?.id;
    let group = admin.create_group("Audit")?.id;
    admin.set_group_member(group, auditor, true)?;
    admin.set_role_group(auditors, group, true)?;
    Ok(Invoice {
        db,
        admin,
        invoice_type,
        amount,
        status,
        approved_amount,
        reference,
        workflow,
        submit,
        approve,
        auditors,
        auditor,
    })
}

fn instance(s: &Session, doc: DocumentId) -> Result<WorkflowInstance> {
    Ok(s.workflow_instances(doc)?.remove(0))
}

fn state_label(s: &Session, w: &Invoice, doc: DocumentId) -> Result<String> {
    let i = instance(s, doc)?;
    let states = s.workflow_states(w.workflow)?;
    Ok(states
        .into_iter()
        .find(|st| Some(st.id) == i.state_id)
        .map(|st| st.label)
        .unwrap_or_default())
}

fn value(s: &Session, doc: DocumentId, name: &str) -> Result<Option<String>> {
    s.metadata_value_of(doc, name)
}

#[test]
fn an_invoice_moves_through_its_workflow_by_metadata_edits_alone() -> Result<()> {
    let w = invoice_workflow()?;
    let a = &w.admin;
    let doc = a.create_document(w.invoice_type, "INV-1", &[])?.document.id;
    assert_eq!(state_label(a, &w, doc)?, "draft", "launched on creation");
    assert_eq!(
        value(a, doc, "status")?.as_deref(),
        Some(""),
        "initial entry action ran"
    );
    let auditor = w.db.session(w.auditor);
    assert!(matches!(auditor.document(doc), Err(Error::NotFound(_))));
    // Adding the amount fires `submit` (its condition now holds).
    a.add_document_metadata(doc, w.amount, "120.50")?;
    assert_eq!(state_label(a, &w, doc)?, "review");
    // Editing the status to something else fires nothing (the condition refuses).
    let status = a
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == w.status)
        .expect("status")
        .id;
    a.edit_document_metadata(doc, status, "checking", None)?;
    assert_eq!(state_label(a, &w, doc)?, "review");
    a.edit_document_metadata(doc, status, "approved", None)?;
    assert_eq!(state_label(a, &w, doc)?, "approved");
    assert_eq!(
        value(a, doc, "approved_amount")?.as_deref(),
        Some("120.50 (approved)"),
        "the edit action's template sees the instance in its new state"
    );
    // The grant action changed what the auditor may see.
    assert_eq!(auditor.document(doc)?.document.label, "INV-1");
    let i = instance(a, doc)?;
    let log = a.workflow_log(doc, i.id)?;
    let taken: Vec<_> = log.iter().filter_map(|e| e.transition_id).collect();
    assert_eq!(taken, vec![w.submit, w.approve]);
    assert!(
        log.iter()
            .all(|e| !e.error && e.user_id.is_none() && e.comment.starts_with("Triggered by"))
    );
    // Once per event: editing again in `approved` fires nothing more.
    a.edit_document_metadata(doc, status, "approved again", None)?;
    assert_eq!(a.workflow_log(doc, i.id)?.len(), 2);
    Ok(())
}

#[test]
fn a_transition_a_users_edit_triggers_commits_with_it_as_docmeta() -> Result<()> {
    let w = invoice_workflow()?;
    let editor = w.admin.create_user("sam", "a long password", true)?.id;
    let sam = w.db.session(editor);
    let doc = sam
        .create_document(w.invoice_type, "INV-9", &[])?
        .document
        .id;
    sam.add_document_metadata(doc, w.amount, "80.00")?;
    assert_eq!(state_label(&w.admin, &w, doc)?, "review");
    let events = w.db.events(&docmeta_core::EventQuery {
        object: Some(("documents.document".to_owned(), doc.0)),
        ..Default::default()
    })?;
    let added = events
        .iter()
        .find(|e| e.name == docmeta_core::Event::DOCUMENT_METADATA_ADDED)
        .expect("the edit's event");
    let moved = events
        .iter()
        .find(|e| e.name == docmeta_core::Event::WORKFLOW_INSTANCE_TRANSITIONED)
        .expect("the transition's event");
    assert_eq!(added.actor, Some(editor), "the edit is the user's");
    assert_eq!(moved.actor, None, "the transition is docmeta's own");
    assert!(moved.id > added.id, "the transition follows the edit");
    Ok(())
}

#[test]
fn a_revoke_action_takes_access_away_and_changing_type_launches() -> Result<()> {
    let w = invoice_workflow()?;
    let a = &w.admin;
    let other = a.create_document_type("Draft")?.id;
    let doc = a
        .create_document(other, "Not yet an invoice", &[])?
        .document
        .id;
    assert!(a.workflow_instances(doc)?.is_empty());
    a.change_document_type(doc, w.invoice_type)?;
    assert_eq!(
        state_label(a, &w, doc)?,
        "draft",
        "launched on a change of type"
    );
    // Back from approved to review revokes the auditors' access.
    let states = a.workflow_states(w.workflow)?;
    let (review, approved) = (states[1].id, states[2].id);
    let reopen = a
        .create_workflow_transition(w.workflow, "reopen", approved, review, "")?
        .id;
    a.create_workflow_action(
        w.workflow,
        approved,
        "hide from the auditors",
        false,
        false,
        ActionKind::RevokeDocumentAccess {
            role_id: w.auditors,
            permission: "documents.document_view".into(),
        },
    )?;
    a.add_document_metadata(doc, w.amount, "5")?;
    let i = instance(a, doc)?;
    a.transition_workflow(doc, i.id, w.approve, "approved by hand")
        .expect_err("the condition refuses: the status is not approved");
    let status = a
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == w.status)
        .expect("status")
        .id;
    a.edit_document_metadata(doc, status, "approved", None)?;
    let auditor = w.db.session(w.auditor);
    assert!(auditor.document(doc).is_ok());
    let entry = a.transition_workflow(doc, i.id, reopen, "needs a second look")?;
    assert_eq!(
        (entry.transition_id, entry.comment.as_str()),
        (Some(reopen), "needs a second look")
    );
    assert!(
        matches!(auditor.document(doc), Err(Error::NotFound(_))),
        "revoked on exit"
    );
    // A transition that does not leave the current state is a conflict.
    assert!(matches!(
        a.transition_workflow(doc, i.id, reopen, ""),
        Err(Error::Conflict { .. })
    ));
    Ok(())
}

#[test]
fn failing_actions_are_logged_and_critical_ones_abort() -> Result<()> {
    let w = invoice_workflow()?;
    let a = &w.admin;
    let states = a.workflow_states(w.workflow)?;
    let review = states[1].id;
    // The pipeline refuses this value (the reference validator): a user could not store it,
    // so neither can the workflow. Not critical: logged, the transition goes on.
    a.create_workflow_action(
        w.workflow,
        review,
        "set a bad reference",
        true,
        false,
        ActionKind::EditMetadata {
            metadata_type_id: w.reference,
            value: "not a reference".into(),
        },
    )?;
    let doc = a.create_document(w.invoice_type, "INV-2", &[])?.document.id;
    a.add_document_metadata(doc, w.amount, "7")?;
    assert_eq!(state_label(a, &w, doc)?, "review");
    assert_eq!(
        value(a, doc, "reference")?,
        None,
        "rolled back to its savepoint"
    );
    let i = instance(a, doc)?;
    let log = a.workflow_log(doc, i.id)?;
    let error = log.iter().find(|e| e.error).expect("an error entry");
    assert!(
        error.comment.contains("set a bad reference"),
        "{}",
        error.comment
    );
    // Critical: the whole transition is refused, nothing changes.
    let approved = states[2].id;
    a.create_workflow_action(
        w.workflow,
        approved,
        "must set a reference",
        true,
        true,
        ActionKind::EditMetadata {
            metadata_type_id: w.reference,
            value: "{{ 'nope' }}".into(),
        },
    )?;
    let status = a
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == w.status)
        .expect("status")
        .id;
    a.edit_document_metadata(doc, status, "approved", None)?;
    assert_eq!(
        state_label(a, &w, doc)?,
        "review",
        "a critical failure aborts the transition"
    );
    assert_eq!(value(a, doc, "approved_amount")?, None);
    assert_eq!(
        value(a, doc, "status")?.as_deref(),
        Some("approved"),
        "the edit that triggered the failed transition is kept"
    );
    let log = a.workflow_log(doc, i.id)?;
    assert!(
        log.last()
            .is_some_and(|e| e.error && e.comment.contains("Automatic transition failed"))
    );
    Ok(())
}

#[test]
fn a_trigger_loop_stops_after_a_bounded_chain() -> Result<()> {
    let db = db()?;
    let a = db.system();
    let t = a.create_document_type("Ping")?.id;
    let counter = a
        .create_metadata_type(MetadataTypeInput::new("counter", "Counter"))?
        .id;
    a.associate(t, counter, false)?;
    let w = a.create_workflow("Ping-pong", &[t])?.id;
    let ping = a.create_workflow_state(w, "ping", true)?.id;
    let pong = a.create_workflow_state(w, "pong", false)?.id;
    for (label, from, to) in [("to pong", ping, pong), ("to ping", pong, ping)] {
        let tr = a.create_workflow_transition(w, label, from, to, "")?.id;
        a.add_workflow_trigger(w, tr, "document_metadata_edited")?;
        // Each entry edits the counter, which triggers the next transition.
        a.create_workflow_action(
            w,
            to,
            "count",
            true,
            false,
            ActionKind::EditMetadata {
                metadata_type_id: counter,
                value: "{{ workflow_instance.document.metadata_value_of.counter|int + 1 }}".into(),
            },
        )?;
    }
    // Launching enters `ping`, whose entry action edits the counter: the loop starts at once
    // and must stop by itself.
    let doc = a.create_document(t, "loop", &[(counter, "0")])?.document.id;
    let i = a.workflow_instances(doc)?.remove(0);
    let log = a.workflow_log(doc, i.id)?;
    let transitions = log.iter().filter(|e| e.transition_id.is_some()).count();
    assert_eq!(transitions as u32, MAX_WORKFLOW_CHAIN, "{log:#?}");
    assert!(
        log.last()
            .is_some_and(|e| e.error && e.comment.contains("in a row"))
    );
    assert_eq!(
        a.metadata_value_of(doc, "counter")?.as_deref(),
        Some("9"),
        "one edit at launch, then one per transition"
    );
    // A later edit starts a new chain, bounded the same way.
    let m = a
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .remove(0)
        .id;
    a.edit_document_metadata(doc, m, "100", None)?;
    let log = a.workflow_log(doc, i.id)?;
    assert_eq!(log.iter().filter(|e| e.error).count(), 2);
    Ok(())
}

#[test]
fn instances_and_logs_inherit_from_their_workflow() -> Result<()> {
    let w = invoice_workflow()?;
    let a = &w.admin;
    let doc = a.create_document(w.invoice_type, "INV-3", &[])?.document.id;
    let clerk = a.create_user("clerk", "a long password", false)?.id;
    let group = a.create_group("Clerks")?.id;
    let role = a.create_role("Clerk")?.id;
    a.set_group_member(group, clerk, true)?;
    a.set_role_group(role, group, true)?;
    a.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT, doc.0),
    )?;
    let s = w.db.session(clerk);
    assert!(
        s.workflow_instances(doc)?.is_empty(),
        "no view on the workflow yet"
    );
    let wf = ObjectRef::new(ObjectKind::WORKFLOW, w.workflow.0);
    a.grant(Permission::WorkflowTemplateView, role, wf)?;
    let i = instance(&s, doc)?;
    assert!(s.workflow_log(doc, i.id)?.is_empty());
    // The explanation walks instance -> workflow; log entries inherit the same way.
    let explained = w.db.explain(
        clerk,
        Permission::WorkflowTemplateView,
        ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, i.id.0),
    );
    assert!(explained.grant.is_some(), "{explained:?}");
    let states = a.workflow_states(w.workflow)?;
    let skip = a
        .create_workflow_transition(w.workflow, "skip", states[0].id, states[2].id, "")?
        .id;
    assert!(matches!(
        s.transition_workflow(doc, i.id, skip, ""),
        Err(Error::PermissionDenied(_))
    ));
    a.grant(Permission::WorkflowInstanceTransition, role, wf)?;
    let entry = s.transition_workflow(doc, i.id, skip, "by the clerk")?;
    assert_eq!(entry.user_id, Some(clerk));
    let log_entry = ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY, entry.id.0);
    assert!(w.db.check(clerk, Permission::WorkflowTemplateView, log_entry));
    a.revoke(Permission::WorkflowTemplateView, role, wf)?;
    assert!(
        !w.db
            .check(clerk, Permission::WorkflowTemplateView, log_entry)
    );
    assert!(matches!(s.workflow_log(doc, i.id), Err(Error::NotFound(_))));
    Ok(())
}

#[test]
fn bad_definitions_are_refused_with_the_field() -> Result<()> {
    let w = invoice_workflow()?;
    let a = &w.admin;
    let states = a.workflow_states(w.workflow)?;
    let bad =
        a.create_workflow_transition(w.workflow, "broken", states[0].id, states[1].id, "{% if %}");
    assert!(
        matches!(bad, Err(Error::Validation { ref field, .. }) if field == "condition"),
        "{bad:?}"
    );
    let bad = a.add_workflow_trigger(w.workflow, w.submit, "document_created");
    assert!(matches!(bad, Err(Error::Validation { ref field, .. }) if field == "event_type"));
    let bad = a.create_workflow_action(
        w.workflow,
        states[0].id,
        "x",
        true,
        false,
        ActionKind::GrantDocumentAccess {
            role_id: w.auditors,
            permission: "cabinets.cabinet_create".into(),
        },
    );
    assert!(matches!(bad, Err(Error::Validation { ref field, .. }) if field == "permission"));
    let dup = a.create_workflow_state(w.workflow, "draft", false);
    assert!(
        matches!(
            dup,
            Err(Error::Conflict { .. }) | Err(Error::Validation { .. })
        ),
        "{dup:?}"
    );
    let _ = w.approved_amount;
    Ok(())
}

#[test]
fn deleting_a_document_type_unbinds_its_workflows() -> Result<()> {
    let db = db()?;
    let s = db.system();
    let kept = s.create_document_type("Kept")?.id;
    let gone = s.create_document_type("Gone")?.id;
    let workflow = s.create_workflow("Review", &[kept, gone])?.id;
    s.delete_document_type(gone)?;
    assert_eq!(s.workflow(workflow)?.document_type_ids, [kept]);
    Ok(())
}

/// A workflow `open → closed` bound to a fresh type, and a document with an instance in `open`.
fn open_closed() -> Result<(
    Session,
    docmeta_core::WorkflowId,
    [docmeta_core::WorkflowStateId; 2],
    WorkflowTransitionId,
    DocumentId,
)> {
    let db = db()?;
    let s = db.system();
    let t = s.create_document_type("Memo")?;
    let w = s.create_workflow("Review", &[t.id])?.id;
    let open = s.create_workflow_state(w, "open", true)?.id;
    let closed = s.create_workflow_state(w, "closed", false)?.id;
    let close = s
        .create_workflow_transition(w, "close", open, closed, "")?
        .id;
    let doc = s.create_document(t.id, "memo", &[])?.document.id;
    Ok((s, w, [open, closed], close, doc))
}

#[test]
fn a_state_is_read_renamed_made_initial_and_deleted() -> Result<()> {
    let (s, w, [open, _], _, _) = open_closed()?;
    let spare = s.create_workflow_state(w, "spare", false)?.id;
    assert_eq!(s.workflow_state(w, spare)?.label, "spare");
    let renamed = s.update_workflow_state(w, spare, Some("parked"), Some(true))?;
    assert_eq!((renamed.label.as_str(), renamed.initial), ("parked", true));
    assert!(!s.workflow_state(w, open)?.initial, "one initial state");
    s.delete_workflow_state(w, spare)?;
    assert!(matches!(
        s.workflow_state(w, spare),
        Err(Error::NotFound(_))
    ));
    Ok(())
}

#[test]
fn a_state_that_transitions_or_instances_use_is_not_deleted() -> Result<()> {
    let (s, w, [open, closed], _, _) = open_closed()?;
    for state in [open, closed] {
        assert!(matches!(
            s.delete_workflow_state(w, state),
            Err(Error::Validation { ref field, .. }) if field == "non_field_errors"
        ));
    }
    Ok(())
}

#[test]
fn a_transition_is_read_and_changed() -> Result<()> {
    let (s, w, [open, closed], close, _) = open_closed()?;
    assert_eq!(s.workflow_transition(w, close)?.label, "close");
    let changed = s.update_workflow_transition(
        w,
        close,
        docmeta_core::TransitionUpdate {
            label: Some("reopen".into()),
            origin: Some(closed),
            destination: Some(open),
            condition: Some("{{ true }}".into()),
        },
    )?;
    assert_eq!(
        (
            changed.label.as_str(),
            changed.origin_state_id,
            changed.destination_state_id
        ),
        ("reopen", closed, open)
    );
    assert_eq!(s.workflow_transition(w, close)?.condition, "{{ true }}");
    Ok(())
}

#[test]
fn a_transition_the_log_records_is_not_deleted_an_unused_one_is() -> Result<()> {
    let (s, w, [open, closed], close, doc) = open_closed()?;
    let i = instance(&s, doc)?;
    s.transition_workflow(doc, i.id, close, "done")?;
    let err = s
        .delete_workflow_transition(w, close)
        .expect_err("the log records it");
    assert!(
        matches!(&err, Error::Validation { field, message } if field == "non_field_errors" && message.contains("log")),
        "{err}"
    );
    let unused = s
        .create_workflow_transition(w, "again", open, closed, "")?
        .id;
    s.delete_workflow_transition(w, unused)?;
    assert!(matches!(
        s.workflow_transition(w, unused),
        Err(Error::NotFound(_))
    ));
    Ok(())
}

/// Every change of a workflow's definition is logged as `document_states.workflow_edited` on the
/// workflow, shown to whoever may view the workflow and to nobody else.
#[test]
fn a_change_of_a_workflow_s_definition_is_an_event_shown_to_its_viewers() -> docmeta_core::Result<()>
{
    use docmeta_core::{Event, EventQuery, ObjectKind, ObjectRef, Permission};
    let db = docmeta_core::Docmeta::in_memory()?;
    let admin = db.system();
    let memo = admin.create_document_type("Memo")?;
    let wf = admin.create_workflow("Review", &[memo.id])?;
    let draft = admin.create_workflow_state(wf.id, "draft", true)?;
    let done = admin.create_workflow_state(wf.id, "done", false)?;
    let t = admin.create_workflow_transition(wf.id, "finish", draft.id, done.id, "")?;
    admin.update_workflow_transition(
        wf.id,
        t.id,
        docmeta_core::TransitionUpdate {
            label: Some("complete".into()),
            ..Default::default()
        },
    )?;
    admin.delete_workflow_transition(wf.id, t.id)?;
    let edited = |s: &docmeta_core::Session| -> docmeta_core::Result<usize> {
        Ok(s.events(&EventQuery {
            limit: Some(1000),
            ..EventQuery::default()
        })?
        .iter()
        .filter(|e| e.event.name == Event::WORKFLOW_EDITED && e.event.target.id == wf.id.0)
        .count())
    };
    // Created, two states, a transition added, changed and deleted.
    assert_eq!(edited(&admin)?, 6);
    let ann = admin.create_user("ann", "a long password", false)?.id;
    let ann_s = db.session(ann);
    assert_eq!(
        edited(&ann_s)?,
        0,
        "not shown to a user who may not view the workflow"
    );
    let group = admin.create_group("g")?.id;
    let role = admin.create_role("r")?.id;
    admin.set_group_member(group, ann, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::WorkflowTemplateView,
        role,
        ObjectRef::new(ObjectKind::WORKFLOW, wf.id.0),
    )?;
    assert_eq!(edited(&ann_s)?, 6);
    Ok(())
}

#[test]
fn an_action_naming_no_such_metadata_type_is_refused_under_the_field_that_named_it() -> Result<()> {
    let db = db()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?.id;
    let flow = admin.create_workflow("flow", &[invoice])?.id;
    let start = admin.create_workflow_state(flow, "start", true)?.id;
    let missing = MetadataTypeId(999);
    for (action, named) in [
        (
            ActionKind::EditMetadata {
                metadata_type_id: missing,
                value: "x".into(),
            },
            "metadata_type_id",
        ),
        (
            ActionKind::AddMetadata {
                metadata_type_ids: vec![missing],
            },
            "metadata_type_ids",
        ),
        (
            ActionKind::RemoveMetadata {
                metadata_type_ids: vec![missing],
            },
            "metadata_type_ids",
        ),
    ] {
        match admin.create_workflow_action(flow, start, "a", true, false, action) {
            Err(Error::Validation { field, message }) => {
                assert_eq!(field, named);
                assert!(message.contains("999"), "{message}");
            }
            other => panic!("refused under {named}: {other:?}"),
        }
    }
    Ok(())
}
