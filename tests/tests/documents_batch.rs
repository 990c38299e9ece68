//! `Session::create_documents`: many documents with their values in one transaction, each
//! created exactly as `create_document` creates one (checks, pipeline, defaults, events), all
//! or nothing, bounded, and a refused entry naming itself.

use docmeta_core::{
    Docmeta, DocumentTypeId, Error, EventQuery, MAX_DOCUMENT_BATCH, MetadataTypeId,
    MetadataTypeInput, NewDocument, ObjectKind, ObjectRef, Permission as P, Result, Session,
};

const V: &str = "svc.apps.metadata.metadata_validators.";
const PARSER: &str = "svc.apps.metadata.metadata_parsers.";

struct Fixture {
    db: Docmeta,
    admin: Session,
    invoice: DocumentTypeId,
    due: MetadataTypeId,
    status: MetadataTypeId,
}

/// Invoices with a date-parsed, date-validated `due` and a required `status` defaulting to
/// "draft".
fn fixture() -> Result<Fixture> {
    let db = Docmeta::in_memory()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?.id;
    let due = admin
        .create_metadata_type(
            MetadataTypeInput::new("due", "Due")
                .parser(format!("{PARSER}DateParser"), "")
                .validation(format!("{V}DateValidator"), ""),
        )?
        .id;
    let status = admin
        .create_metadata_type(MetadataTypeInput::new("status", "Status").default_value("draft"))?
        .id;
    admin.associate(invoice, due, false)?;
    admin.associate(invoice, status, true)?;
    Ok(Fixture {
        db,
        admin,
        invoice,
        due,
        status,
    })
}

fn field_of(e: &Error) -> Option<&str> {
    match e {
        Error::Validation { field, .. } | Error::Conflict { field, .. } => Some(field),
        _ => None,
    }
}

#[test]
fn a_batch_creates_every_document_in_the_order_given_with_its_values() -> Result<()> {
    let f = fixture()?;
    let values = [(f.due, "2030-01-31"), (f.status, "paid")];
    let created = f.admin.create_documents(&[
        NewDocument {
            document_type: f.invoice,
            label: "first",
            values: &values,
        },
        NewDocument {
            document_type: f.invoice,
            label: "second",
            values: &[],
        },
    ])?;
    let labels: Vec<&str> = created.iter().map(|d| d.document.label.as_str()).collect();
    assert_eq!(labels, ["first", "second"]);
    assert!(created[0].document.id < created[1].document.id);
    assert_eq!(
        f.admin
            .metadata_value_of(created[0].document.id, "status")?
            .as_deref(),
        Some("paid")
    );
    Ok(())
}

#[test]
fn a_batch_runs_the_pipeline_and_adds_required_defaults() -> Result<()> {
    let f = fixture()?;
    let values = [(f.due, "31/01/2030")];
    let created = f.admin.create_documents(&[NewDocument {
        document_type: f.invoice,
        label: "parsed",
        values: &values,
    }])?;
    let doc = created[0].document.id;
    assert_eq!(
        f.admin.metadata_value_of(doc, "due")?.as_deref(),
        Some("2030-01-31"),
        "the date parser ran"
    );
    assert_eq!(
        f.admin.metadata_value_of(doc, "status")?.as_deref(),
        Some("draft"),
        "the required type's default was added"
    );
    Ok(())
}

#[test]
fn a_refused_value_in_a_batch_names_its_entry_and_creates_nothing() -> Result<()> {
    let f = fixture()?;
    let good = [(f.due, "2030-01-31")];
    let bad = [(f.status, "ok"), (f.due, "soon")];
    let err = f
        .admin
        .create_documents(&[
            NewDocument {
                document_type: f.invoice,
                label: "good",
                values: &good,
            },
            NewDocument {
                document_type: f.invoice,
                label: "bad",
                values: &bad,
            },
        ])
        .expect_err("refused");
    assert_eq!(
        field_of(&err),
        Some("documents[1].metadata[1].value"),
        "{err}"
    );
    assert!(
        f.admin.document_ids(None)?.is_empty(),
        "the good entry was undone too"
    );
    Ok(())
}

#[test]
fn a_blank_label_in_a_batch_names_its_entry() -> Result<()> {
    let f = fixture()?;
    let err = f
        .admin
        .create_documents(&[
            NewDocument {
                document_type: f.invoice,
                label: "fine",
                values: &[],
            },
            NewDocument {
                document_type: f.invoice,
                label: "  ",
                values: &[],
            },
        ])
        .expect_err("refused");
    assert_eq!(field_of(&err), Some("documents[1].label"), "{err}");
    assert!(f.admin.document_ids(None)?.is_empty());
    Ok(())
}

#[test]
fn a_batch_above_the_bound_is_refused_before_anything_is_created() -> Result<()> {
    let f = fixture()?;
    let one = NewDocument {
        document_type: f.invoice,
        label: "many",
        values: &[],
    };
    let err = f
        .admin
        .create_documents(&vec![one; MAX_DOCUMENT_BATCH + 1])
        .expect_err("refused");
    assert_eq!(field_of(&err), Some("documents"), "{err}");
    assert!(f.admin.document_ids(None)?.is_empty());
    Ok(())
}

#[test]
fn an_empty_batch_creates_nothing() -> Result<()> {
    let f = fixture()?;
    assert!(f.admin.create_documents(&[])?.is_empty());
    Ok(())
}

#[test]
fn a_batch_needs_document_create_on_every_type_it_names() -> Result<()> {
    let f = fixture()?;
    let other = f.admin.create_document_type("Contract")?.id;
    let user = f.admin.create_user("ann", "a long password", false)?.id;
    let group = f.admin.create_group("Clerks")?.id;
    let role = f.admin.create_role("Clerk")?.id;
    f.admin.set_group_member(group, user, true)?;
    f.admin.set_role_group(role, group, true)?;
    f.admin.grant(
        P::DocumentCreate,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, f.invoice.0),
    )?;
    let ann = f.db.session(user);
    let err = ann
        .create_documents(&[
            NewDocument {
                document_type: f.invoice,
                label: "allowed",
                values: &[],
            },
            NewDocument {
                document_type: other,
                label: "not allowed",
                values: &[],
            },
        ])
        .expect_err("refused");
    assert_eq!(
        field_of(&err),
        Some("documents[1].document_type_id"),
        "an invisible type is an invalid reference: {err}"
    );
    assert!(f.admin.document_ids(None)?.is_empty());
    Ok(())
}

#[test]
fn a_batch_records_the_events_of_one_by_one_creation() -> Result<()> {
    let f = fixture()?;
    let one_by_one = fixture()?;
    let values = [(f.due, "2030-01-31")];
    f.admin.create_documents(&[NewDocument {
        document_type: f.invoice,
        label: "doc",
        values: &values,
    }])?;
    one_by_one.admin.create_document(
        one_by_one.invoice,
        "doc",
        &[(one_by_one.due, "2030-01-31")],
    )?;
    let names = |s: &Session| -> Result<Vec<String>> {
        Ok(s.events(&EventQuery {
            oldest_first: true,
            ..Default::default()
        })?
        .into_iter()
        .map(|e| e.event.name)
        .collect())
    };
    assert_eq!(names(&f.admin)?, names(&one_by_one.admin)?);
    Ok(())
}
