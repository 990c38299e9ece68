//! Spec 2.4 lifecycle rules as durable tasks, spec 6 events, the data directory, and the
//! uniqueness rule under concurrent writers.

use std::sync::{Arc, Mutex};

use docmeta_core::{Config, Docmeta, Error, EventQuery, MetadataTypeInput, PageRequest, Result};

fn names_of(db: &Docmeta) -> Result<Vec<String>> {
    Ok(db
        .events(&EventQuery {
            oldest_first: true,
            limit: Some(100_000),
            ..Default::default()
        })?
        .into_iter()
        .map(|e| e.name)
        .collect())
}

#[test]
fn rule_1_required_association_adds_the_rendered_default_to_existing_documents() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let invoice = s.create_document_type("Invoice")?;
    let other = s.create_document_type("Other")?;
    let docs: Vec<_> = (0..1200)
        .map(|i| s.create_document(invoice.id, &format!("inv {i}"), &[]))
        .collect::<Result<_>>()?;
    let untouched = s.create_document(other.id, "other", &[])?.document;
    let status = s.create_metadata_type(
        MetadataTypeInput::new("status", "Status").default_value("{{ document.label|upper }}"),
    )?;
    let plain = s.create_metadata_type(MetadataTypeInput::new("note", "Note"))?;
    s.associate(invoice.id, status.id, true)?;
    s.associate(invoice.id, plain.id, true)?;
    s.associate(other.id, plain.id, false)?;
    // The work is a task: nothing happened yet.
    assert!(
        s.document_metadata(docs[0].document.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .is_empty()
    );
    assert_eq!(db.open_tasks()?.len(), 2);
    assert_eq!(db.run_pending_tasks()?, 2);
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(
            s.metadata_value_of(d.document.id, "status")?,
            Some(format!("INV {i}"))
        );
        assert_eq!(
            s.metadata_value_of(d.document.id, "note")?.as_deref(),
            Some(""),
            "no default: empty value"
        );
    }
    assert!(
        s.document_metadata(untouched.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .is_empty(),
        "other types untouched (optional)"
    );
    let added = names_of(&db)?
        .iter()
        .filter(|n| *n == docmeta_core::Event::DOCUMENT_METADATA_ADDED)
        .count();
    assert_eq!(added, 2400, "one event per value");
    // Idempotent: running the rule again adds nothing.
    let rerun = db.system().associate(invoice.id, status.id, true);
    assert!(matches!(rerun, Err(Error::Conflict { .. })));
    let a = s
        .associations(invoice.id, PageRequest::ALL)?
        .items
        .into_iter()
        .find(|a| a.association.metadata_type_id == status.id)
        .expect("association");
    s.update_association(invoice.id, a.association.id, true)?;
    db.run_pending_tasks()?;
    assert_eq!(
        s.document_metadata(docs[0].document.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .len(),
        2
    );
    Ok(())
}

#[test]
fn rule_1_when_an_association_becomes_required() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("T")?;
    let d = s.create_document(dt.id, "d", &[])?.document;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M").default_value("x"))?;
    let a = s.associate(dt.id, mt.id, false)?.association;
    assert!(db.open_tasks()?.is_empty(), "optional: no task");
    s.update_association(dt.id, a.id, true)?;
    db.run_pending_tasks()?;
    assert_eq!(s.metadata_value_of(d.id, "m")?.as_deref(), Some("x"));
    Ok(())
}

#[test]
fn rule_2_deleting_an_association_removes_values_of_that_document_type_only() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let a_type = s.create_document_type("A")?;
    let b_type = s.create_document_type("B")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    let assoc_a = s.associate(a_type.id, mt.id, false)?.association;
    s.associate(b_type.id, mt.id, false)?;
    let a = s.create_document(a_type.id, "a", &[(mt.id, "1")])?.document;
    let b = s.create_document(b_type.id, "b", &[(mt.id, "2")])?.document;
    s.delete_association(a_type.id, assoc_a.id)?;
    assert_eq!(
        s.metadata_value_of(a.id, "m")?.as_deref(),
        Some("1"),
        "removal is a task"
    );
    db.run_pending_tasks()?;
    assert_eq!(s.metadata_value_of(a.id, "m")?, None);
    assert_eq!(s.metadata_value_of(b.id, "m")?.as_deref(), Some("2"));
    Ok(())
}

#[test]
fn rule_2_task_skips_a_type_that_was_associated_again() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("A")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    let a = s.associate(dt.id, mt.id, false)?.association;
    let d = s.create_document(dt.id, "a", &[(mt.id, "1")])?.document;
    s.delete_association(dt.id, a.id)?;
    s.associate(dt.id, mt.id, false)?;
    db.run_pending_tasks()?;
    assert_eq!(s.metadata_value_of(d.id, "m")?.as_deref(), Some("1"));
    Ok(())
}

#[test]
fn rule_3_deleting_a_metadata_type_cascades_with_events() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("A")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    s.associate(dt.id, mt.id, true)?;
    let d1 = s.create_document(dt.id, "1", &[(mt.id, "x")])?.document;
    let d2 = s.create_document(dt.id, "2", &[(mt.id, "y")])?.document;
    let before = names_of(&db)?.len();
    s.delete_metadata_type(mt.id)?;
    let after: Vec<String> = names_of(&db)?.split_off(before);
    assert_eq!(
        after,
        [
            docmeta_core::Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
            docmeta_core::Event::DOCUMENT_METADATA_REMOVED,
            docmeta_core::Event::DOCUMENT_METADATA_REMOVED,
            docmeta_core::Event::METADATA_TYPE_DELETED
        ]
    );
    assert!(s.associations(dt.id, PageRequest::ALL)?.items.is_empty());
    assert!(
        s.document_metadata(d1.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .is_empty()
            && s.document_metadata(d2.id, PageRequest::ALL)
                .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
                .is_empty()
    );
    assert!(matches!(s.metadata_type(mt.id), Err(Error::NotFound(_))));
    Ok(())
}

#[test]
fn rule_4_changing_a_document_type() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let old = s.create_document_type("Old")?;
    let new = s.create_document_type("New")?;
    let shared = s.create_metadata_type(MetadataTypeInput::new("shared", "Shared"))?;
    let only_old = s.create_metadata_type(MetadataTypeInput::new("only_old", "Only old"))?;
    let required_new = s.create_metadata_type(
        MetadataTypeInput::new("required_new", "Required new")
            .default_value("{{ document.metadata_value_of.shared }}!"),
    )?;
    s.associate(old.id, shared.id, false)?;
    s.associate(old.id, only_old.id, false)?;
    s.associate(new.id, shared.id, false)?;
    s.associate(new.id, required_new.id, true)?;
    let d = s
        .create_document(
            old.id,
            "d",
            &[(shared.id, "kept"), (only_old.id, "dropped")],
        )?
        .document;
    let changed = s.change_document_type(d.id, new.id)?.document;
    assert_eq!(changed.document_type_id, new.id);
    assert_eq!(
        s.metadata_value_of(d.id, "shared")?.as_deref(),
        Some("kept")
    );
    assert_eq!(s.metadata_value_of(d.id, "only_old")?, None);
    assert_eq!(
        s.metadata_value_of(d.id, "required_new")?.as_deref(),
        Some("kept!")
    );
    assert!(names_of(&db)?.contains(&docmeta_core::Event::DOCUMENT_TYPE_CHANGED.to_string()));
    Ok(())
}

#[test]
fn events_of_spec_6_with_targets_and_subscribers() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let sub = db.subscribe(move |e| sink.lock().expect("lock").push(e.name.clone()));
    db.subscribe(|_| panic!("a faulty subscriber does not stop the others"));
    let s = db.system();
    let dt = s.create_document_type("T")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    let mut input = MetadataTypeInput::new("m", "M2");
    s.update_metadata_type(mt.id, input.clone())?;
    let a = s.associate(dt.id, mt.id, false)?.association;
    let d = s.create_document(dt.id, "d", &[])?.document;
    let v = s.add_document_metadata(d.id, mt.id, "1")?.value;
    s.edit_document_metadata(d.id, v.id, "2", None)?;
    s.edit_document_metadata(d.id, v.id, "2", None)?;
    s.remove_document_metadata(d.id, v.id)?;
    s.update_association(dt.id, a.id, false)?;
    s.delete_association(dt.id, a.id)?;
    // A refused change publishes nothing.
    input.name = "bad name".into();
    assert!(s.update_metadata_type(mt.id, input).is_err());
    let expected = [
        docmeta_core::Event::DOCUMENT_TYPE_CREATED,
        docmeta_core::Event::METADATA_TYPE_CREATED,
        docmeta_core::Event::METADATA_TYPE_EDITED,
        docmeta_core::Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
        docmeta_core::Event::DOCUMENT_CREATED,
        docmeta_core::Event::DOCUMENT_METADATA_ADDED,
        docmeta_core::Event::DOCUMENT_METADATA_EDITED,
        docmeta_core::Event::DOCUMENT_METADATA_REMOVED,
        docmeta_core::Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
        docmeta_core::Event::METADATA_TYPE_RELATIONSHIP_UPDATED,
    ];
    assert_eq!(
        *seen.lock().expect("lock"),
        expected,
        "editing to the same value is no edit"
    );
    assert_eq!(
        names_of(&db)?,
        expected,
        "the log matches what subscribers saw"
    );
    let of_doc = db.events(&EventQuery {
        object: Some(("documents.document".into(), d.id.0)),
        ..Default::default()
    })?;
    assert_eq!(
        of_doc[0].name,
        docmeta_core::Event::DOCUMENT_METADATA_REMOVED,
        "newest first"
    );
    assert_eq!(
        of_doc[0]
            .action_object
            .as_ref()
            .map(|o| (o.kind.as_str(), o.id)),
        Some(("metadata.metadatatype", mt.id.0))
    );
    assert_eq!(of_doc[0].target.label, "d");
    let of_type = db.events(&EventQuery {
        object: Some(("metadata.metadatatype".into(), mt.id.0)),
        ..Default::default()
    })?;
    assert_eq!(of_type.len(), 8);
    db.unsubscribe(sub);
    s.create_document_type("U")?;
    assert_eq!(seen.lock().expect("lock").len(), expected.len());
    Ok(())
}

#[test]
fn the_data_directory_and_task_durability_across_restarts() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dt, mt, d) = {
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .worker(false)
            .open()?;
        let s = db.system();
        let dt = s.create_document_type("T")?;
        let d = s.create_document(dt.id, "d", &[])?.document;
        let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M").default_value("v"))?;
        s.associate(dt.id, mt.id, true)?;
        (dt, mt, d)
        // Dropped before the task ran: a crash between the change and the work.
    };
    for entry in [
        "config.yml",
        "system/SECRET_KEY",
        "db.sqlite3",
        "document_file_storage",
    ] {
        assert!(dir.path().join(entry).exists(), "{entry}");
    }
    let db = Docmeta::open(dir.path())?;
    assert!(
        db.wait_for_tasks(std::time::Duration::from_secs(20))?,
        "the worker thread ran the task"
    );
    let s = db.system();
    assert_eq!(s.metadata_value_of(d.id, "m")?.as_deref(), Some("v"));
    let _ = (dt, mt);
    Ok(())
}

#[test]
fn failing_tasks_are_retried_then_kept_with_their_error() -> Result<()> {
    let db = Docmeta::builder()
        .config(Config {
            task_max_attempts: 2,
            ..Config::default()
        })
        .open()?;
    {
        let mut tx = db.store().begin(docmeta_core::store::Mode::Write)?;
        tx.execute(
            "INSERT INTO tasks (name, payload, state, attempts, error, run_after, created, updated) \
             VALUES ('task_that_does_not_exist', '{}', 'pending', 0, '', 0, 0, 0)",
            &[],
        )?;
        tx.commit()?;
    }
    db.run_pending_tasks()?;
    let open = db.open_tasks()?;
    assert_eq!(
        (open[0].state, open[0].attempts),
        (docmeta_core::TaskState::Pending, 1),
        "retried later"
    );
    assert!(open[0].error.contains("unknown task"));
    {
        let mut tx = db.store().begin(docmeta_core::store::Mode::Write)?;
        tx.execute("UPDATE tasks SET run_after = 0", &[])?;
        tx.commit()?;
    }
    db.run_pending_tasks()?;
    let open = db.open_tasks()?;
    assert_eq!(
        (open[0].state, open[0].attempts),
        (docmeta_core::TaskState::Failed, 2)
    );
    Ok(())
}

#[test]
fn one_value_per_document_and_type_under_concurrent_writers() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Docmeta::builder().data_dir(dir.path()).open()?;
    let s = db.system();
    let dt = s.create_document_type("T")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M"))?;
    s.associate(dt.id, mt.id, false)?;
    let d = s.create_document(dt.id, "d", &[])?.document;
    let results: Vec<Result<_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = db.system();
                scope.spawn(move || s.add_document_metadata(d.id, mt.id, &i.to_string()))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(e, Error::Conflict { .. }))
    );
    assert_eq!(
        s.document_metadata(d.id, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .len(),
        1
    );
    Ok(())
}

#[test]
fn required_metadata_cannot_be_removed_and_empty_edit_reapplies_default() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let dt = s.create_document_type("T")?;
    let mt = s.create_metadata_type(MetadataTypeInput::new("m", "M").default_value("dflt"))?;
    s.associate(dt.id, mt.id, true)?;
    let d = s.create_document(dt.id, "d", &[(mt.id, "given")])?.document;
    let v = s
        .document_metadata(d.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .remove(0);
    assert_eq!(v.value, "given");
    let err = s
        .remove_document_metadata(d.id, v.id)
        .expect_err("required");
    assert!(matches!(err, Error::Validation { ref field, .. } if field == "non_field_errors"));
    assert_eq!(
        s.edit_document_metadata(d.id, v.id, "", None)?.value.value,
        "dflt"
    );
    let doc_type_with_docs = s.delete_document_type(dt.id).expect_err("has documents");
    assert!(matches!(doc_type_with_docs, Error::Validation { .. }));
    Ok(())
}

#[test]
fn schema_export_apply_round_trip_dry_run_and_atomicity() -> Result<()> {
    use docmeta_core::{Change, Schema, apply_schema, export_schema};
    let source = Docmeta::in_memory()?;
    let s = source.system();
    let dt = s.create_document_type("Invoice")?;
    let mt = s.create_metadata_type(
        MetadataTypeInput::new("due", "Due")
            .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
    )?;
    s.associate(dt.id, mt.id, true)?;
    let role = s.create_role("Clerks")?.id;
    s.grant_global(docmeta_core::Permission::DocumentView, role)?;
    let yaml = export_schema(&source)?.to_yaml()?;
    let schema = Schema::from_yaml(&yaml)?;

    let target = Docmeta::in_memory()?;
    let planned = apply_schema(&target, &schema, true)?;
    assert_eq!(planned.len(), 5, "{planned:?}");
    assert!(
        target.system().metadata_types()?.is_empty(),
        "a dry run changes nothing"
    );
    let applied = apply_schema(&target, &schema, false)?;
    assert_eq!(
        applied, planned,
        "the dry run reports exactly what apply does"
    );
    assert_eq!(export_schema(&target)?, schema);
    assert!(
        apply_schema(&target, &schema, false)?.is_empty(),
        "idempotent"
    );

    let mut changed = schema.clone();
    changed.metadata_types[0].label = "Due date".into();
    changed.roles[0].permissions = vec!["documents.document_edit".into()];
    let changes = apply_schema(&target, &changed, false)?;
    assert!(
        matches!(&changes[0], Change::Update(what, how) if what == "metadata type due" && how.contains("\"Due\" -> \"Due date\""))
    );
    assert_eq!(changes.len(), 3, "{changes:?}");

    // All or nothing: a bad entry late in the file leaves nothing behind.
    let mut bad = changed.clone();
    bad.document_types.push(docmeta_core::DocumentTypeSpec {
        label: "New".into(),
        metadata_types: vec![],
    });
    bad.roles.push(docmeta_core::RoleSpec {
        label: "R".into(),
        permissions: vec!["no.such_permission".into()],
    });
    assert!(apply_schema(&target, &bad, false).is_err());
    assert_eq!(target.system().document_types()?.len(), 1);
    Ok(())
}
