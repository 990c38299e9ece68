//! What schema migration 7 gives the templates stored before it, on either store:
//! a metadata type's default and lookup get every actor of the type's created and edited events
//! as shapers (docmeta itself for an event without actor), a transition's condition its recorded
//! author. Staged on a current database, which is then taken back to schema 6 (the columns of
//! migration 7 dropped) and opened again, as an installation of the previous version would be.

use docmeta_core::{
    Docmeta, DocumentTypeId, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef, Permission,
    Result, UserId, WorkflowId,
};

/// Takes a database of this version back to schema 6 (the same SQL on SQLite and PostgreSQL):
/// what migration 7 and the later ones added goes.
pub const BACK_TO_SCHEMA_6: &str = "ALTER TABLE metadata_types DROP COLUMN default_shapers; \
     ALTER TABLE metadata_types DROP COLUMN lookup_shapers; \
     ALTER TABLE workflow_transitions DROP COLUMN condition_shapers; \
     DROP INDEX users_by_username_key; ALTER TABLE users DROP COLUMN username_key; \
     DROP INDEX events_followed; ALTER TABLE events DROP COLUMN follow; \
     ALTER TABLE metadata_types DROP COLUMN value_type; DROP TABLE audit_checkpoints; DROP INDEX events_history; DROP INDEX events_unsealed; ALTER TABLE events DROP COLUMN hash; ALTER TABLE events DROP COLUMN seq; DROP TABLE device_creates; DROP INDEX cabinet_documents_by_document; DROP TABLE device_documents; DROP TABLE devices; DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhooks; \
     ALTER TABLE events DROP COLUMN changes; \
     DELETE FROM schema_version WHERE version > 6;";

const SALARY: &str = "73519";
const READS_SALARY: &str = "{{ document.metadata_value_of.salary }}";

/// What [`stage`] made.
pub struct Staged {
    root: UserId,
    employee: DocumentTypeId,
    salary: MetadataTypeId,
    by_root: MetadataTypeId,
    by_docmeta: MetadataTypeId,
    renamed_by_eve: MetadataTypeId,
    lookup_renamed_by_eve: MetadataTypeId,
    flow: WorkflowId,
}

/// Templates of an administrator (`root`), of docmeta itself, and of the administrator on
/// types a narrow user (`eve`) later renamed; a workflow whose condition `root` wrote.
pub fn stage(db: &Docmeta) -> Result<Staged> {
    let system = db.system();
    let root_id = system.create_user("root", "a long password 1", true)?.id;
    let eve_id = system.create_user("eve", "a long password 1", false)?.id;
    let group = system.create_group("eve")?.id;
    system.set_group_member(group, eve_id, true)?;
    let role = system.create_role("eve")?.id;
    system.set_role_group(role, group, true)?;
    let root = db.session(root_id);
    let employee = root.create_document_type("Employee")?.id;
    let salary = root
        .create_metadata_type(MetadataTypeInput::new("salary", "Salary"))?
        .id;
    let mt = |s: &docmeta_core::Session, input: MetadataTypeInput| -> Result<MetadataTypeId> {
        let t = s.create_metadata_type(input)?.id;
        root.associate(employee, t, false)?;
        Ok(t)
    };
    let by_root = mt(
        &root,
        MetadataTypeInput::new("by_root", "R").default_value(READS_SALARY),
    )?;
    let by_docmeta = mt(
        &system,
        MetadataTypeInput::new("by_docmeta", "D").default_value(READS_SALARY),
    )?;
    let renamed_by_eve = mt(
        &root,
        MetadataTypeInput::new("renamed", "N").default_value(READS_SALARY),
    )?;
    let lookup_renamed_by_eve = mt(
        &root,
        MetadataTypeInput::new("picked", "P").lookup(format!("{READS_SALARY},other")),
    )?;
    root.associate(employee, salary, false)?;
    let eve = db.session(eve_id);
    for t in [renamed_by_eve, lookup_renamed_by_eve] {
        let object = ObjectRef::new(ObjectKind::METADATA_TYPE, t.0);
        system.grant(Permission::MetadataTypeView, role, object)?;
        system.grant(Permission::MetadataTypeEdit, role, object)?;
        let mut input = MetadataTypeInput::from(&eve.metadata_type(t)?);
        input.label.push_str(" (renamed)");
        eve.update_metadata_type(t, input)?;
    }
    let flow = root.create_workflow("gate", &[employee])?.id;
    let draft = root.create_workflow_state(flow, "draft", true)?.id;
    let done = root.create_workflow_state(flow, "done", false)?.id;
    root.create_workflow_transition(
        flow,
        "go",
        draft,
        done,
        &format!("{{% if workflow_instance.document.metadata_value_of.salary == '{SALARY}' %}}True{{% endif %}}"),
    )?;
    Ok(Staged {
        root: root_id,
        employee,
        salary,
        by_root,
        by_docmeta,
        renamed_by_eve,
        lookup_renamed_by_eve,
        flow,
    })
}

/// After the upgrade, for the administrator: their own templates and docmeta's keep seeing the
/// salary; those Eve touched see no more than she may; the condition keeps its author's view.
pub fn check(db: &Docmeta, staged: &Staged) -> Result<()> {
    let root = db.session(staged.root);
    let doc = root
        .create_document(staged.employee, "E-1", &[(staged.salary, SALARY)])?
        .document
        .id;
    let default_of =
        |t| -> Result<String> { Ok(root.add_document_metadata(doc, t, "")?.value.value) };
    assert_eq!(
        default_of(staged.by_root)?,
        SALARY,
        "the administrator's own"
    );
    assert_eq!(default_of(staged.by_docmeta)?, SALARY, "docmeta's");
    assert_ne!(
        default_of(staged.renamed_by_eve)?,
        SALARY,
        "Eve was an editor"
    );
    let choices = root
        .lookup_choices(staged.lookup_renamed_by_eve, Some(doc))?
        .unwrap_or_default();
    assert!(!choices.contains(&SALARY.to_owned()), "{choices:?}");
    let instance = root
        .workflow_instances(doc)?
        .into_iter()
        .find(|i| i.workflow_id == staged.flow)
        .expect("an instance");
    assert_eq!(
        root.available_transitions(doc, instance.id)?.len(),
        1,
        "the condition keeps its author's view"
    );
    Ok(())
}
